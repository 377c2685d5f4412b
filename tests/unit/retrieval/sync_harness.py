"""The sync tests' world: real in-process gRPC fakes of the analysis and embedding services, and a
harness that drives a RetrievalEngine over them (test_sync*.py, test_static_channel.py,
test_index_guards.py; the fixture that builds one is `harness` in conftest.py).

The fake analysis service really scans and chunks its input: every top-level
`function name(args): ret {` ... `}` block of a .ts file is a chunk, calls to other
functions of the workspace become references (with the callee's signature quoted in the
embedding text, as the real chunker does). The fake embedding service turns text into a
normalised bag of hashed words, so similar texts get similar vectors and every vector is
reproducible. Expected numbers are computed from the files each test writes.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import Settings
from codecompass.common.identifiers import split_identifiers
from codecompass.contracts.retrieval.model import FreshnessStatus, IndexingStatus, SearchQuery, SyncOutcome
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, chunk_pb2, embedding_pb2, embedding_pb2_grpc

_HEADER = re.compile(r"^(?:export )?function (\w+)\((.*?)\)(?:: ([^{]+))? \{$")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")
_MAX_LINE = 400



def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Func:
    name: str
    signature: str
    lines: tuple[str, ...]
    start: int

    @property
    def source(self) -> str:
        return "\n".join(self.lines)


def parse_functions(text: str) -> list[_Func]:
    funcs: list[_Func] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _HEADER.match(lines[i])
        if match:
            end = i
            while end < len(lines) and lines[end] != "}":
                end += 1
            funcs.append(_Func(match.group(1), lines[i][: -len(" {")], tuple(lines[i : end + 1]), i + 1))
            i = end + 1
        else:
            i += 1
    return funcs


def chunk_id(rel: str, name: str) -> str:
    return _digest(f"{rel}:{name}")[:16]


class FakeAnalysis(analysis_pb2_grpc.CodeAnalysisServiceServicer):
    def __init__(self) -> None:
        self.chunk_calls: list[list[str]] = []
        self.reference_flags: list[bool] = []
        self.lexical_flags: list[bool] = []
        self.chunk_delay_s = 0.0
        # Called with each path just before it is read: a test edits the workspace under a sync.
        self.before_read: Callable[[str], None] = lambda _rel: None
        # A file gone at read time: the real service answers with a `vanished` skip; an older
        # one sent nothing for it.
        self.report_vanished = True
        # Like the real service's folder watch: a token per scan, honoured while no file's
        # path, size or mtime differs (the fake still looks; it only answers as the watch would).
        self.watch = False
        self.unchanged_since: list[str] = []  # the token of each scan request ('' when none)
        self.answered_unchanged = 0

    def _source_files(self, root: Path) -> Iterator[tuple[str, Path]]:
        for path in sorted(root.rglob("*.ts")):
            yield path.relative_to(root).as_posix(), path

    def _skip_reason(self, data: bytes) -> int:
        if b"\0" in data:
            return analysis_pb2.SKIP_REASON_BINARY
        if any(len(line) > _MAX_LINE for line in data.split(b"\n")):
            return analysis_pb2.SKIP_REASON_MINIFIED
        return analysis_pb2.SKIP_REASON_UNSPECIFIED

    def ScanWorkspace(self, request, context):
        root = Path(request.workspace_root)
        previous = {f.relative_path: f for f in request.previous}
        files, skipped = [], []
        for rel, path in self._source_files(root):
            data = path.read_bytes()
            reason = self._skip_reason(data)
            if reason:
                skipped.append(analysis_pb2.SkippedFile(relative_path=rel, reason=reason))
                continue
            stat = path.stat()
            files.append(
                analysis_pb2.FileEntry(
                    relative_path=rel,
                    size_bytes=stat.st_size,
                    mtime_ns=stat.st_mtime_ns,
                    content_hash=hashlib.sha256(data).hexdigest(),
                    language=chunk_pb2.LANGUAGE_TYPESCRIPT,
                )
            )
        current = {f.relative_path: f for f in files}
        self.unchanged_since.append(request.unchanged_since)
        token = ""
        if self.watch:
            token = _digest(repr(sorted((f.relative_path, f.size_bytes, f.mtime_ns) for f in files)))
            if request.unchanged_since == token:
                self.answered_unchanged += 1
                return analysis_pb2.ScanWorkspaceResponse(unchanged=True, watch_token=token)
        if request.previous_omitted:
            return analysis_pb2.ScanWorkspaceResponse(previous_needed=True)
        return analysis_pb2.ScanWorkspaceResponse(
            watch_token=token,
            files=files,
            added=[p for p in current if p not in previous],
            changed=[p for p in current if p in previous and previous[p].content_hash != current[p].content_hash],
            removed=[p for p in previous if p not in current],
            skipped=skipped,
            duration_ms=1.0,
        )

    def _symbols(self, root: Path) -> dict[str, tuple[str, str]]:
        """name -> (signature, relative path): what the type checker would resolve a call to."""
        symbols: dict[str, tuple[str, str]] = {}
        for rel, path in self._source_files(root):
            data = path.read_bytes()
            if self._skip_reason(data):
                continue
            for func in parse_functions(data.decode("utf-8")):
                symbols.setdefault(func.name, (func.signature, rel))
        return symbols

    def ChunkFiles(self, request, context):
        root = Path(request.workspace_root)
        self.chunk_calls.append(list(request.paths))
        self.reference_flags.append(request.include_references)
        self.lexical_flags.append(request.lexical_only)
        # Like the real service, no references are resolved unless asked for.
        symbols = self._symbols(root) if request.include_references and not request.lexical_only else {}
        for rel in request.paths:
            time.sleep(self.chunk_delay_s)
            self.before_read(rel)
            path = root / rel
            if not path.is_file():
                if self.report_vanished:
                    yield analysis_pb2.ChunkFilesResponse(relative_path=rel, status=analysis_pb2.FILE_STATUS_SKIPPED,
                                                          skip_reason=analysis_pb2.SKIP_REASON_VANISHED)
                continue
            data = path.read_bytes()
            stat = path.stat()
            common = {
                "relative_path": rel,
                "content_hash": hashlib.sha256(data).hexdigest(),
                "mtime_ns": stat.st_mtime_ns,
                "size_bytes": stat.st_size,
            }
            reason = self._skip_reason(data)
            if reason:
                yield analysis_pb2.ChunkFilesResponse(
                    status=analysis_pb2.FILE_STATUS_SKIPPED, skip_reason=reason, **common
                )
                continue
            chunks = [self._chunk(root, rel, func, symbols) for func in parse_functions(data.decode("utf-8"))]
            if request.lexical_only:
                for chunk in chunks:
                    chunk.embedding_text = ""
            yield analysis_pb2.ChunkFilesResponse(status=analysis_pb2.FILE_STATUS_OK, chunks=chunks, **common)

    def _chunk(self, root: Path, rel: str, func: _Func, symbols: dict[str, tuple[str, str]]) -> chunk_pb2.Chunk:
        body = "\n".join(func.lines[1:])
        called = sorted({name for name in _CALL.findall(body) if name in symbols and name != func.name})
        references = [
            chunk_pb2.SymbolReference(
                name=name,
                signature=symbols[name][0],
                relative_path=symbols[name][1],
                chunk_id=chunk_id(symbols[name][1], name),
            )
            for name in called
        ]
        embedding_text = "\n".join(
            [f"[TypeScript] {rel} > {func.name}", f"Signature: {func.signature}", "Referenced symbols:"]
            + [r.signature for r in references]
            + ["---", func.source]
        )
        return chunk_pb2.Chunk(
            id=chunk_id(rel, func.name),
            snippet_hash=_digest(func.source)[:16],
            relative_path=rel,
            language=chunk_pb2.LANGUAGE_TYPESCRIPT,
            node_kind=chunk_pb2.NODE_KIND_FUNCTION,
            name=func.name,
            qualified_name=func.name,
            depth=0,
            signature=func.signature,
            full_source=func.source,
            collapsed_source=func.source,
            start_line=func.start,
            end_line=func.start + len(func.lines) - 1,
            is_test=".test." in rel,
            embedding_text=embedding_text,
            references=references,
            embedding_token_count=len(embedding_text.split()),
        )



DIMS = 64



def hash_vector(text: str) -> list[float]:
    vector = np.zeros(DIMS, dtype=np.float64)
    for word in re.findall(r"[a-z]+", split_identifiers(text).lower()):
        vector[int(_digest(word)[:8], 16) % DIMS] += 1.0
    norm = np.linalg.norm(vector)
    if norm == 0:
        vector[0] = 1.0
        norm = 1.0
    return (vector / norm).tolist()


class FakeEmbedding(embedding_pb2_grpc.EmbeddingServiceServicer):
    def __init__(self) -> None:
        self.documents: list[str] = []
        self.delay_s = 0.0
        self.query_delay_s = 0.0
        self.model_version = "1"
        self._lock = threading.Lock()

    @property
    def model(self) -> embedding_pb2.ModelInfo:
        return embedding_pb2.ModelInfo(
            provider="fake",
            model_id="hash-bow",
            model_version=self.model_version,
            dimensions=DIMS,
            max_input_tokens=512,
        )

    def Embed(self, request, context):
        if request.input_type == embedding_pb2.INPUT_TYPE_QUERY:
            time.sleep(self.query_delay_s)
        else:
            time.sleep(self.delay_s)
            with self._lock:
                self.documents.extend(request.texts)
        return embedding_pb2.EmbedResponse(
            vectors=[embedding_pb2.Vector(values=hash_vector(t)) for t in request.texts], model=self.model
        )

    def GetModelInfo(self, request, context):
        return embedding_pb2.GetModelInfoResponse(model=self.model)


def _serve(add, servicer_obj) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    add(servicer_obj, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@dataclass
class Harness:
    root: Path
    analysis: FakeAnalysis
    embedding: FakeEmbedding
    engine: RetrievalEngine
    embedding_server: grpc.Server
    settings: Settings
    analysis_addr: str
    embedding_addr: str

    def write(self, rel: str, text: str) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def index(self, *, wait: bool = True):
        return list(self.engine.index(str(self.root), wait_for_embeddings=wait))

    def search(self, query: str, **kwargs):
        return self.engine.search(SearchQuery(workspace_root=str(self.root), query=query, **kwargs))

    def sync(self, budget_s: float | None = None) -> SyncOutcome:
        return self.engine.sync(str(self.root), budget_s)

    def synced_search(self, query: str, **kwargs):
        """What the gateway does: sync until done, then search. Returns (sync stats, outcome)."""
        synced = self.sync()
        assert synced.freshness_status == FreshnessStatus.FRESH, synced
        return synced.stats, self.search(query, **kwargs)

    def store(self):
        return self.engine.writer.workspace(str(self.root)).store

    def all_rows(self) -> list:
        store = self.store()
        total, _ = store.counts()
        return store._table.to_arrow().column("id").to_pylist() if total else []

    def new_engine(self, tuning: SyncTuning | None = None) -> RetrievalEngine:
        return RetrievalEngine(
            self.settings,
            AnalysisClient(self.analysis_addr, timeout_s=10),
            EmbeddingClient(self.embedding_addr, timeout_s=10, batch_size=16),
            tuning,
        )


def _func(name: str, args: str = "input: string", ret: str = "string", body: str = "return input;") -> str:
    return f"export function {name}({args}): {ret} {{\n  {body}\n}}\n"



# The static channel off: today's behaviour (test_static_channel.py tests it on).
STATIC_OFF = {"static_channel": False}



def _seed(h: Harness) -> None:
    h.write(
        "src/auth/token.ts",
        _func("validateToken", "token: string", "boolean", "return checkSignature(token);")
        + _func("checkSignature", "token: string", "boolean", "return token.length > 0;"),
    )
    h.write(
        "src/http/router.ts", _func("routeRequest", "path: string", "string", "return validateToken(path) ? path : '';")
    )
    h.write("src/util/strings.ts", _func("slugify") + _func("capitalize"))


def _wait_ready(h: Harness, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if h.engine.status(str(h.root)).indexing_status == IndexingStatus.READY:
            return
        time.sleep(0.05)
    raise AssertionError(f"not ready: {h.engine.status(str(h.root))}")
