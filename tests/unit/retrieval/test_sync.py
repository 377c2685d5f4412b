"""Incremental sync, background embedding and search through the engine, against real
in-process gRPC fakes of the analysis and embedding services.

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
from datetime import timedelta
from pathlib import Path

import grpc
import lancedb
import numpy as np
import pytest

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import RetrievalSettings, Settings
from codecompass.common.identifiers import split_identifiers
from codecompass.common.serving import ServiceSpec, start_server
from codecompass.contracts.retrieval.errors import InvalidWorkspace, WorkspaceNotFound
from codecompass.contracts.retrieval.model import (
    FreshnessStatus,
    IndexingStatus,
    IndexPhase,
    ResultCompleteness,
    SearchQuery,
    SyncOutcome,
)
from codecompass.retrieval import catalog as catalog_module
from codecompass.retrieval import servicer
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.background_embedder import BackgroundEmbedder
from codecompass.retrieval.index.sync import SyncInterrupted, SyncTuning
from codecompass.retrieval.index.workspace_writer import WorkspaceWriter
from codecompass.v1 import (
    analysis_pb2,
    analysis_pb2_grpc,
    chunk_pb2,
    embedding_pb2,
    embedding_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
)

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
        return analysis_pb2.ScanWorkspaceResponse(
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


class SimulatedKill(BaseException):
    """Like a kill, nothing in the service catches it as an ordinary error."""


def _func(name: str, args: str = "input: string", ret: str = "string", body: str = "return input;") -> str:
    return f"export function {name}({args}): {ret} {{\n  {body}\n}}\n"


@pytest.fixture
def harness(tmp_path: Path, request) -> Iterator[Harness]:
    # A test's parameter is its SyncTuning, or (SyncTuning, RetrievalSettings overrides).
    param = getattr(request, "param", SyncTuning())
    tuning, overrides = (param, {}) if isinstance(param, SyncTuning) else param
    fake_analysis, fake_embedding = FakeAnalysis(), FakeEmbedding()
    analysis_server, analysis_addr = _serve(analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server, fake_analysis)
    embedding_server, embedding_addr = _serve(embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server, fake_embedding)
    root = tmp_path / "ws"
    root.mkdir()
    settings = Settings(state_dir=tmp_path / "state", retrieval=RetrievalSettings(compact_every_n_syncs=3, **overrides))
    h = Harness(root, fake_analysis, fake_embedding, None, embedding_server, settings, analysis_addr, embedding_addr)  # type: ignore[arg-type]
    h.engine = h.new_engine(tuning)
    yield h
    h.engine.close()
    analysis_server.stop(None)
    embedding_server.stop(None)


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


def test_first_index_writes_and_embeds_every_chunk(harness: Harness) -> None:
    _seed(harness)
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    progress = harness.index()
    assert progress[0].phase == IndexPhase.SCANNING
    assert progress[-1].phase == IndexPhase.DONE
    stats = progress[-1].stats
    assert (stats.files_added, stats.chunks_upserted, stats.chunks_deleted) == (3, expected, 0)
    assert stats.chunks_embedded == expected
    status = harness.engine.status(str(harness.root))
    assert (status.indexing_status, status.files, status.chunks, status.embedded_chunks) == (
        IndexingStatus.READY,
        3,
        expected,
        expected,
    )
    assert status.embedding_model_id == "hash-bow"
    assert sorted(harness.all_rows()) == sorted({c for c in harness.all_rows()})


def test_unchanged_workspace_sync_does_no_work(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    calls, embedded = len(harness.analysis.chunk_calls), len(harness.embedding.documents)
    sync, outcome = harness.synced_search("validate token")
    assert (sync.files_added, sync.files_changed, sync.files_removed, sync.chunks_upserted) == (0, 0, 0, 0)
    assert len(harness.analysis.chunk_calls) == calls
    assert len(harness.embedding.documents) == embedded
    assert outcome.results[0].chunk.name == "validateToken"
    assert outcome.metadata.indexing_status == IndexingStatus.READY
    assert outcome.metadata.result_completeness == ResultCompleteness.COMPLETE


def test_edit_rechunks_only_that_file_and_embeds_only_the_changed_chunk(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.write(
        "src/util/strings.ts",
        _func("slugify", body="return input.toLowerCase().replace(' ', '-');") + _func("capitalize"),
    )
    before = len(harness.embedding.documents)
    sync, outcome = harness.synced_search("lower case dash replace")
    assert harness.analysis.chunk_calls[-1] == ["src/util/strings.ts"]
    assert (sync.files_changed, sync.chunks_upserted, sync.chunks_embedded, sync.embeddings_reused) == (1, 2, 1, 1)
    assert len(harness.embedding.documents) == before + 1
    assert "toLowerCase" in harness.embedding.documents[-1]
    assert outcome.results[0].chunk.name == "slugify"
    assert "toLowerCase" in outcome.results[0].chunk.full_source


def test_removed_function_and_removed_file_leave_the_index(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.write("src/util/strings.ts", _func("slugify"))
    sync = harness.sync().stats
    assert (sync.files_changed, sync.chunks_deleted) == (1, 1)
    assert chunk_id("src/util/strings.ts", "capitalize") not in harness.all_rows()

    (harness.root / "src/auth/token.ts").unlink()
    sync, outcome = harness.synced_search("validate token signature")
    assert (sync.files_removed, sync.chunks_deleted) == (1, 2)
    assert all(r.chunk.relative_path != "src/auth/token.ts" for r in outcome.results)
    assert harness.engine.status(str(harness.root)).files == 2


def test_moving_a_file_reuses_every_vector(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    before = len(harness.embedding.documents)
    (harness.root / "src/util/strings.ts").rename(harness.root / "src/strings.ts")
    sync = harness.sync().stats
    assert (sync.files_added, sync.files_removed, sync.chunks_upserted, sync.chunks_deleted) == (1, 1, 2, 2)
    assert (sync.chunks_embedded, sync.embeddings_reused) == (0, 2)
    assert len(harness.embedding.documents) == before
    status = harness.engine.status(str(harness.root))
    assert (status.chunks, status.embedded_chunks, status.indexing_status) == (5, 5, IndexingStatus.READY)


def test_signature_change_re_embeds_the_chunks_that_quote_it(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    router_id = chunk_id("src/http/router.ts", "routeRequest")
    harness.write(
        "src/auth/token.ts",
        _func("validateToken", "token: string, audience: string", "boolean", "return checkSignature(token);")
        + _func("checkSignature", "token: string", "boolean", "return token.length > 0;"),
    )
    before = len(harness.embedding.documents)
    sync = harness.sync().stats
    assert sync.cascade_reembedded == 1
    assert ["src/http/router.ts"] in harness.analysis.chunk_calls
    (router,) = harness.store().get_chunks([router_id])
    assert "audience: string" in router.embedding_text
    new_docs = harness.embedding.documents[before:]
    assert any("audience" in d and "routeRequest" in d for d in new_docs)
    # An implementation-only change of a referenced function does not cascade.
    harness.write(
        "src/auth/token.ts",
        _func(
            "validateToken",
            "token: string, audience: string",
            "boolean",
            "return checkSignature(token) && audience !== '';",
        )
        + _func("checkSignature", "token: string", "boolean", "return token.length > 0;"),
    )
    assert harness.sync().stats.cascade_reembedded == 0


def test_skipped_files_are_counted_and_lose_their_chunks(harness: Harness) -> None:
    _seed(harness)
    harness.write("src/bundle.min.ts", "var a=1;" * 100)
    stats = harness.index()[-1].stats
    assert stats.files_skipped == 1
    assert not any(r.startswith("src/bundle")
                   for r in harness.engine.writer.workspace(str(harness.root)).catalog.entries())
    harness.write("src/util/strings.ts", "var b=2;" * 100)
    sync = harness.sync().stats
    assert (sync.files_skipped, sync.chunks_deleted) == (2, 2)
    assert all(r.chunk.relative_path != "src/util/strings.ts" for r in harness.search("slugify").results)


# The static channel off: today's behaviour (test_static_channel.py tests it on).
STATIC_OFF = {"static_channel": False}


@pytest.mark.parametrize("harness", [(SyncTuning(inline_embed_limit=0), STATIC_OFF)], indirect=True)
def test_cold_index_serves_lexically_while_embeddings_fill_in(harness: Harness) -> None:
    for i in range(12):
        harness.write(f"src/mod{i}.ts", _func(f"handler{i}", body=f"return input + '{i}';"))
    harness.write("tests/mod.test.ts", _func("testsHandler"))
    harness.embedding.delay_s = 1.5
    harness.index(wait=False)
    outcome = harness.search("handler3")
    assert outcome.results[0].chunk.name == "handler3"
    assert outcome.metadata.indexing_status == IndexingStatus.INDEXING
    assert outcome.metadata.result_completeness == ResultCompleteness.PARTIAL
    assert outcome.metadata.embedded_chunks < outcome.metadata.total_chunks == 13
    harness.embedding.delay_s = 0.0
    _wait_ready(harness)
    done = harness.search("handler3")
    assert done.metadata.result_completeness == ResultCompleteness.COMPLETE
    assert done.metadata.embedded_chunks == done.metadata.total_chunks == 13
    assert harness.embedding.documents[-1].startswith("[TypeScript] tests/mod.test.ts")


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_wait_for_embeddings_streams_embedding_progress(harness: Harness) -> None:
    _seed(harness)
    progress = harness.index(wait=True)
    embedding = [p for p in progress if p.phase == IndexPhase.EMBEDDING]
    assert embedding and embedding[-1].embeddings_done == embedding[-1].embeddings_total == 5
    assert harness.engine.status(str(harness.root)).indexing_status == IndexingStatus.READY


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_embedding_service_down_answers_lexically(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.embedding_server.stop(None)
    harness.write("src/extra.ts", _func("parseHeaders"))
    sync, outcome = harness.synced_search("is the token signature long enough")
    meta = outcome.metadata
    assert outcome.results[0].chunk.name == "checkSignature"
    assert meta.semantic_fallback and meta.semantic_skipped_reason == "embedding_unavailable"
    assert sync.files_added == 1
    assert meta.result_completeness == ResultCompleteness.PARTIAL


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_a_slow_query_embedding_falls_back_to_lexical_within_the_deadline(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    engine = RetrievalEngine(
        harness.settings,
        AnalysisClient(harness.analysis_addr, timeout_s=10),
        EmbeddingClient(harness.embedding_addr, timeout_s=10, batch_size=16),
        query_embed_timeout_s=0.3,
    )
    harness.embedding.query_delay_s = 2.0
    try:
        started = time.perf_counter()
        outcome = engine.search(SearchQuery(workspace_root=str(harness.root), query="is the token signature long"))
        assert time.perf_counter() - started < 1.5
    finally:
        engine.close()
    assert outcome.metadata.semantic_fallback
    assert outcome.metadata.semantic_skipped_reason == "embedding_unavailable"
    assert outcome.results[0].chunk.name == "checkSignature"


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_a_new_embedding_model_version_moves_the_workspace_to_a_new_index(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    old_table = harness.store().table_name
    harness.embedding.model_version = "2"
    switched = harness.search("is the token signature long enough")
    assert switched.metadata.semantic_fallback
    assert switched.metadata.semantic_skipped_reason == "embedding_model_changed"
    assert switched.results[0].chunk.name == "checkSignature"
    # The search noticed the new model; the next sync moves the index to it.
    reindex = harness.sync().stats
    assert reindex.files_added == 3 and reindex.chunks_upserted == 5
    assert harness.store().table_name != old_table
    _wait_ready(harness)
    status = harness.engine.status(str(harness.root))
    assert (status.embedding_model_version, status.chunks, status.embedded_chunks) == ("2", 5, 5)


def test_searches_run_while_a_slow_index_is_in_progress(harness: Harness) -> None:
    for i in range(30):
        harness.write(f"src/m{i}.ts", _func(f"worker{i}"))
    harness.analysis.chunk_delay_s = 0.05
    indexing = threading.Thread(target=harness.index, kwargs={"wait": False})
    indexing.start()
    errors: list[BaseException] = []

    def search() -> None:
        try:
            harness.search("worker")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    while indexing.is_alive():
        threads = [threading.Thread(target=search) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.05)
    indexing.join()
    assert not errors
    assert harness.search("worker7").results[0].chunk.name == "worker7"


def test_crash_between_table_write_and_catalog_commit_neither_loses_nor_duplicates(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(harness)
    harness.index()
    clean = sorted(harness.all_rows())
    harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize") + _func("truncate"))
    harness.write("src/new.ts", _func("fresh"))

    def crash(*args, **kwargs):
        raise SimulatedKill("killed between the table write and the catalog commit")

    monkeypatch.setattr(catalog_module.Catalog, "commit", crash)
    with pytest.raises(SimulatedKill):
        harness.sync()
    monkeypatch.undo()
    # While "down", the user deletes a function the crashed sync already wrote.
    harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize"))
    harness.engine.close()
    harness.engine = harness.new_engine()
    stats = harness.index()[-1].stats
    assert stats.chunks_deleted == 1  # truncate, known only to the table
    rows = harness.all_rows()
    assert len(rows) == len(set(rows))
    assert sorted(rows) == sorted([*clean, chunk_id("src/new.ts", "fresh")])
    assert harness.engine.writer.workspace(str(harness.root)).catalog.pending() == frozenset()


def test_invalid_roots_are_refused(harness: Harness) -> None:
    with pytest.raises(InvalidWorkspace):
        harness.engine.status("relative/path")
    with pytest.raises(InvalidWorkspace):
        harness.engine.status("")
    with pytest.raises(WorkspaceNotFound):
        harness.engine.status(str(harness.root / "missing"))
    (harness.root / "file.ts").write_text("")
    with pytest.raises(WorkspaceNotFound):
        harness.engine.status(str(harness.root / "file.ts"))


def test_analysis_service_down_is_unavailable(harness: Harness, tmp_path: Path) -> None:
    engine = RetrievalEngine(
        harness.settings,
        AnalysisClient("127.0.0.1:1", timeout_s=2),
        EmbeddingClient(harness.embedding_addr, timeout_s=2, batch_size=8),
    )
    try:
        synced = engine.sync(str(harness.root), None)
        assert synced.freshness_status == FreshnessStatus.FAILED and synced.finished
        assert "analysis service unreachable at 127.0.0.1:1" in synced.error
        assert engine.status(str(harness.root)).indexing_status == IndexingStatus.FAILED
        # A failed sync fails no search: it answers from the index as it stands (none here).
        outcome = engine.search(SearchQuery(workspace_root=str(harness.root), query="x"))
        assert outcome.results == () and outcome.metadata.indexing_status == IndexingStatus.FAILED
    finally:
        engine.close()


def test_grpc_service_maps_errors_and_serves_search(harness: Harness) -> None:
    _seed(harness)
    running = start_server(
        ServiceSpec(
            name="retrieval",
            register=lambda s: servicer.register(s, harness.engine),
            warmup=harness.engine.warmup,
        ),
    )
    running.wait_until_serving(10)
    channel = grpc.insecure_channel(running.address)
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    try:
        for root, code in (
            ("rel/dir", grpc.StatusCode.INVALID_ARGUMENT),
            (str(harness.root / "nope"), grpc.StatusCode.NOT_FOUND),
        ):
            with pytest.raises(grpc.RpcError) as err:
                stub.Search(retrieval_pb2.SearchRequest(workspace_root=root, query="x"), timeout=10)
            assert err.value.code() == code
            assert "Traceback" not in err.value.details()
        with pytest.raises(grpc.RpcError) as err:
            stub.Search(
                retrieval_pb2.SearchRequest(
                    workspace_root=str(harness.root),
                    query="x",
                    filters=retrieval_pb2.SearchFilters(path_patterns=["src/[abc"]),
                ),
                timeout=10,
            )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        responses = list(
            stub.IndexWorkspace(
                retrieval_pb2.IndexWorkspaceRequest(workspace_root=str(harness.root), wait_for_embeddings=True),
                timeout=30,
            )
        )
        assert responses[-1].phase == retrieval_pb2.INDEX_PHASE_DONE
        assert responses[-1].stats.files_added == 3
        response = stub.Search(
            retrieval_pb2.SearchRequest(workspace_root=str(harness.root), query="check token signature"), timeout=10
        )
        assert response.results[0].chunk.name in ("checkSignature", "validateToken")
        assert response.metadata.indexing_status == retrieval_pb2.INDEXING_STATUS_READY
        assert response.metadata.embedding_model_id == "hash-bow"
        status = stub.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=str(harness.root)), timeout=10)
        assert (status.files, status.chunks, status.embedded_chunks) == (3, 5, 5)
        assert status.index_bytes > 0
        # Sync over the wire: a bad root is refused like everywhere else; an edit is synced.
        with pytest.raises(grpc.RpcError) as err:
            stub.Sync(retrieval_pb2.SyncRequest(workspace_root="rel/dir"), timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize") + _func("kebabCase"))
        synced = stub.Sync(retrieval_pb2.SyncRequest(workspace_root=str(harness.root), budget_ms=0), timeout=10)
        assert synced.finished and synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH
        assert (synced.stats.files_changed, synced.stats.chunks_upserted) == (1, 3) and not synced.pending_paths
    finally:
        channel.close()
        running.stop(0)


@pytest.mark.parametrize("harness", [SyncTuning(files_per_call=2, first_flush_chunks=2)], indirect=True)
def test_shutdown_stops_a_long_sync_at_a_batch_boundary_and_the_next_run_resumes(harness: Harness) -> None:
    for i in range(20):
        harness.write(f"src/m{i}.ts", _func(f"job{i}"))
    harness.analysis.chunk_delay_s = 0.05
    ws = harness.engine.writer.workspace(str(harness.root))
    job = ws.request_sync()
    while not harness.analysis.chunk_calls:
        time.sleep(0.01)
    harness.engine.close()
    with pytest.raises(SyncInterrupted):
        job.future.result(timeout=10)
    chunked_before_restart = sum(len(c) for c in harness.analysis.chunk_calls)
    assert chunked_before_restart < 20

    harness.analysis.chunk_delay_s = 0.0
    harness.engine = harness.new_engine()
    stats = harness.index()[-1].stats
    assert stats.files_added + chunked_before_restart >= 20
    rows = harness.all_rows()
    assert sorted(rows) == sorted(chunk_id(f"src/m{i}.ts", f"job{i}") for i in range(20))


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_a_restart_resumes_missing_embeddings_without_a_new_sync(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(harness)
    monkeypatch.setattr(BackgroundEmbedder, "WRITE_BATCH", 1)
    harness.embedding.delay_s = 0.3
    harness.index(wait=False)
    harness.engine.close()  # stops the embedder after its in-flight batch
    harness.embedding.delay_s = 0.0
    harness.engine = harness.new_engine()
    restarted = harness.engine.status(str(harness.root))
    assert restarted.chunks == 5 and restarted.embedded_chunks < 5
    _wait_ready(harness)
    assert harness.engine.status(str(harness.root)).embedded_chunks == 5
    assert len(harness.analysis.chunk_calls) == 1


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2)], indirect=True)
def test_large_cold_sync_writes_syntactic_chunks_first_then_embeds_only_full_text(harness: Harness) -> None:
    _seed(harness)
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    stats = harness.index()[-1].stats
    assert harness.analysis.lexical_flags == [True, False]
    assert harness.analysis.reference_flags[-1] is True
    assert stats.chunks_upserted == expected
    assert sorted(harness.all_rows()) == sorted(set(harness.all_rows()))
    assert len(harness.all_rows()) == expected
    # Every chunk is embedded once, from the text that carries its referenced signatures.
    assert len(harness.embedding.documents) == expected
    router_text = next(d for d in harness.embedding.documents if "> routeRequest" in d)
    assert "validateToken(token: string): boolean" in router_text
    assert harness.search("route request").results[0].chunk.name == "routeRequest"


def _tables(h: Harness) -> set[str]:
    """The chunk and source tables of the index (its catalog table aside)."""
    return set(lancedb.connect(h.store().uri).list_tables().tables) - {"catalog"}


def _eventually(check, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_the_old_model_s_table_is_dropped_once_the_new_one_is_complete_and_not_before(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    old_tables = _tables(harness)
    assert len(old_tables) == 2  # chunks and their sources
    harness.embedding.model_version = "2"
    harness.embedding.delay_s = 0.3
    harness.search("is the token signature long enough")  # notices the new model
    harness.sync()  # moves the index to the new model's table; its vectors fill in slowly
    status = harness.engine.status(str(harness.root))
    assert (status.embedding_model_version, status.indexing_status) == ("2", IndexingStatus.INDEXING)
    # The new table is still being embedded: the old one stays (a switch back would reuse it).
    assert old_tables < _tables(harness)
    harness.embedding.delay_s = 0.0
    _wait_ready(harness)
    _eventually(lambda: _tables(harness).isdisjoint(old_tables))
    assert len(_tables(harness)) == 2
    assert harness.search("checkSignature").results[0].chunk.name == "checkSignature"


def test_versions_left_by_a_cold_index_are_cleaned_once_past_the_retention(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WorkspaceWriter, "VERSION_RETENTION", timedelta(seconds=1))
    for i in range(20):
        harness.write(f"src/m{i}.ts", _func(f"fn{i}") + _func(f"other{i}"))
    harness.index()
    _wait_ready(harness)
    store = harness.store()
    _eventually(lambda: store.version_count() == 1 and store.cleanup_due_at(timedelta(seconds=1)) is None)
    assert store.counts() == (40, 40)
    assert harness.search("fn7").results[0].chunk.name == "fn7"


def test_a_search_never_syncs_and_answers_from_the_index_as_it_stands(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    calls = len(harness.analysis.chunk_calls)
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    before = harness.search("slugify").results[0].chunk
    assert before.name == "slugify" and "toLowerCase" not in before.full_source
    assert len(harness.analysis.chunk_calls) == calls
    assert harness.sync().stats.files_changed == 1
    assert "toLowerCase" in harness.search("slugify").results[0].chunk.full_source


def test_a_search_of_a_never_indexed_workspace_starts_no_indexing(harness: Harness) -> None:
    _seed(harness)
    outcome = harness.search("validate token")
    assert outcome.results == () and outcome.metadata.indexing_status == IndexingStatus.NOT_INDEXED
    time.sleep(0.2)
    assert harness.analysis.chunk_calls == []
    assert harness.engine.status(str(harness.root)).indexing_status == IndexingStatus.NOT_INDEXED


def test_sync_past_its_budget_lists_what_it_has_not_written_and_finishes_in_the_background(
    harness: Harness,
) -> None:
    _seed(harness)
    harness.index()
    harness.analysis.chunk_delay_s = 0.3
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    harness.write("src/http/router.ts", _func("routeRequest", "path: string", "string", "return path;"))
    (harness.root / "src/auth/token.ts").unlink()
    changed = ("src/auth/token.ts", "src/http/router.ts", "src/util/strings.ts")

    first = harness.sync(0.001)
    assert not first.finished and first.freshness_status == FreshnessStatus.SYNCING and first.stats is None
    # Once the running sync has diffed its scan, every Sync lists what it has not written yet.
    outcome = first
    deadline = time.monotonic() + 10
    while outcome.pending_paths != changed and time.monotonic() < deadline:
        outcome = harness.sync(0.01)
    assert outcome.pending_paths == changed and outcome.pending_count == 3
    assert outcome.freshness_status == FreshnessStatus.SYNCING
    # Meanwhile a search answers from the index as it stands.
    assert "toLowerCase" not in harness.search("slugify").results[0].chunk.full_source

    done = harness.sync()
    assert done.finished and done.freshness_status == FreshnessStatus.FRESH and done.pending_paths == ()
    assert "toLowerCase" in harness.search("slugify").results[0].chunk.full_source
    assert harness.engine.writer.workspace(str(harness.root)).pending() == ([], 0)
    # Every Sync of the burst shared the one sync that saw the edits: each file was chunked once.
    chunked = [p for call in harness.analysis.chunk_calls[1:] for p in call]
    assert sorted(chunked) == ["src/http/router.ts", "src/util/strings.ts"]


def test_sync_of_a_cold_workspace_past_its_budget_is_not_indexed_yet(harness: Harness) -> None:
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.3
    outcome = harness.sync(0.001)
    assert not outcome.finished and outcome.freshness_status == FreshnessStatus.NOT_INDEXED
    assert harness.sync().freshness_status == FreshnessStatus.FRESH
    assert harness.search("validate token").results


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2, files_per_call=1)], indirect=True)
def test_new_files_are_counted_apart_from_the_stale_ones(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.analysis.chunk_delay_s = 0.2
    for i in range(3):
        harness.write(f"src/new{i}.ts", _func(f"fresh{i}"))
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    harness.sync(0.001)
    deadline = time.monotonic() + 10
    outcome = harness.sync(0.01)
    while outcome.pending_new_files == 0 and time.monotonic() < deadline:
        outcome = harness.sync(0.01)
    # Whatever the index holds of a new file was written from its current content (first by
    # the lexical pass): a search may miss it, but never shows it stale.
    assert outcome.pending_paths == ("src/util/strings.ts",) and outcome.pending_count == 1
    assert outcome.pending_new_files == 3
    done = harness.sync()
    assert (done.pending_paths, done.pending_new_files) == ((), 0)
    assert harness.search("fresh2").results[0].chunk.name == "fresh2"


def test_a_sync_that_would_outlast_the_call_s_deadline_answers_before_it(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    running = start_server(ServiceSpec(name="retrieval", register=lambda s: servicer.register(s, harness.engine)))
    running.wait_until_serving(10)
    channel = grpc.insecure_channel(running.address)
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    try:
        harness.analysis.chunk_delay_s = 1.0
        harness.write("src/util/strings.ts", _func("slugify", body="return input.trim();") + _func("capitalize"))
        started = time.monotonic()
        # budget_ms 0 waits until done, but never past the caller's deadline: it answers first.
        synced = stub.Sync(retrieval_pb2.SyncRequest(workspace_root=str(harness.root), budget_ms=0), timeout=0.5)
        assert time.monotonic() - started < 0.5
        assert not synced.finished and synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_SYNCING
        with pytest.raises(grpc.RpcError) as err:
            stub.Sync(retrieval_pb2.SyncRequest(workspace_root="relative"), timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert harness.sync().freshness_status == FreshnessStatus.FRESH
    finally:
        channel.close()
        running.stop(0)


@pytest.mark.parametrize("report_vanished", [True, False])
@pytest.mark.parametrize("harness", [SyncTuning(files_per_call=2)], indirect=True)
def test_files_edited_under_a_sync_are_counted_and_the_next_sync_converges(harness: Harness,
                                                                            report_vanished: bool) -> None:
    """A checkout while the index runs: one file deleted, one rewritten, one added after the
    scan. The run drops the first, indexes the second as it read it, and says so; the next sync
    ends with exactly the index a clean run of the final files makes."""
    _seed(harness)
    harness.write("src/extra/gone.ts", _func("goneSoon"))
    harness.analysis.report_vanished = report_vanished
    edited: list[str] = []

    def checkout(rel: str) -> None:
        if edited:
            return
        edited.append(rel)
        (harness.root / "src/extra/gone.ts").unlink()
        harness.write("src/util/strings.ts", _func("slugify", body="return input.trim();") + _func("titleCase"))
        harness.write("src/extra/late.ts", _func("arrivedLate"))

    harness.analysis.before_read = checkout
    stats = harness.index()[-1].stats
    assert (stats.files_vanished, stats.files_changed_during_sync) == (1, 1)
    names = {r.chunk.name for r in harness.search("titleCase slugify goneSoon arrivedLate", limit=20).results}
    assert "goneSoon" not in names and "titleCase" in names and "arrivedLate" not in names

    harness.analysis.before_read = lambda _rel: None
    again = harness.sync().stats
    assert (again.files_added, again.files_vanished, again.files_changed_during_sync) == (1, 0, 0)
    expected = {chunk_id(p.relative_to(harness.root).as_posix(), f.name)
                for p in harness.root.rglob("*.ts") for f in parse_functions(p.read_text())}
    assert sorted(harness.all_rows()) == sorted(expected)
    assert harness.sync().stats.chunks_upserted == 0


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2, files_per_call=1,
                                                first_flush_chunks=2)], indirect=True)
def test_index_progress_reports_each_step_once_in_order_with_what_it_has_found(harness: Harness) -> None:
    """No `writing` line between chunking reports, no `chunks 0` while chunks come in, a
    first lexical pass that says how much is searchable, and no ETA before evidence."""
    _seed(harness)
    for i in range(6):
        harness.write(f"src/more/m{i}.ts", _func(f"more{i}") + _func(f"other{i}"))
    progress = harness.index(wait=False)
    phases = [p.phase for p in progress]
    order = [phase for i, phase in enumerate(phases) if i == 0 or phases[i - 1] != phase]
    assert order == [IndexPhase.SCANNING, IndexPhase.LEXICAL, IndexPhase.CHUNKING, IndexPhase.WRITING,
                     IndexPhase.DONE]
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    lexical = [p for p in progress if p.phase == IndexPhase.LEXICAL]
    assert lexical[-1].files_done == lexical[-1].files_total == 9 and lexical[-1].chunks_done == expected
    chunking = [p for p in progress if p.phase == IndexPhase.CHUNKING and p.files_done]
    assert [p.chunks_done for p in chunking] == sorted(p.chunks_done for p in chunking)
    assert all(p.chunks_done > 0 for p in chunking) and chunking[-1].files_done == 9
    # Nine quick files never give the ETA the evidence it waits for.
    assert all(p.eta_seconds < 0 for p in [*lexical[:-1], *chunking])


def test_the_eta_waits_for_evidence_then_extrapolates_from_the_first_answer(monkeypatch) -> None:
    from codecompass.retrieval.index import sync as sync_module

    clock = iter([100.0, 101.0, 130.0, 140.0])
    monkeypatch.setattr(sync_module.time, "perf_counter", lambda: next(clock))
    rate = sync_module._Rate(100)
    assert rate.eta(1) == -1.0  # the first answer (after the type checker's warm-up) starts the clock
    assert rate.eta(3) == -1.0  # 1 s and 3 % in: too early to promise
    assert rate.eta(11) == pytest.approx(89 * 30 / 10)  # 10 files in 30 s
    assert rate.eta(21) == pytest.approx(79 * 40 / 20)


def test_a_sync_that_cannot_wait_says_how_far_the_running_one_is(harness: Harness) -> None:
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.3
    harness.sync(0.001)
    outcome = harness.sync(0.5)
    assert not outcome.finished
    assert outcome.phase == IndexPhase.CHUNKING and outcome.phase_files_total == 3
    assert outcome.chunks_written == len(harness.all_rows())
    assert harness.sync().phase is None


def test_an_index_that_arrives_during_another_sync_reports_what_that_one_wrote(harness: Harness) -> None:
    """The MCP server's background index (or a search's sync) is writing the workspace when
    `codecompass index` asks: the index follows that sync too and says what was added, not
    "0 added" from the sync queued after it, which finds everything done."""
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.2
    assert not harness.sync(0.05).finished  # another caller's sync, now running
    progress = harness.index(wait=False)
    assert IndexPhase.CHUNKING in {p.phase for p in progress}
    stats = progress[-1].stats
    assert (stats.files_added, stats.chunks_upserted) == (3, 5)
