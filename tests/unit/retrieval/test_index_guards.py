"""The guards on what is indexed: protected folders and the first-index size limits, as pure
functions and through the engine (real in-process gRPC fakes of the analysis and embedding
services, from sync_harness)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from tests.unit.retrieval.sync_harness import FakeAnalysis, FakeEmbedding, _func, _serve

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.chunks import Language
from codecompass.common.config import RetrievalSettings, Settings
from codecompass.contracts.analysis.model import FileEntry
from codecompass.contracts.retrieval.errors import IndexRefused
from codecompass.contracts.retrieval.model import FreshnessStatus, IndexingStatus, IndexPhase, SearchQuery
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.guards import folder_refusal, protected_folder, size_refusal
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, embedding_pb2_grpc

HOME = PurePosixPath("/home/me")


@pytest.mark.parametrize(("root", "why"), [
    ("/", "it is the filesystem root"),
    ("/home/me", "it is your home folder"),
    ("/usr", "it is a system folder (/usr)"),
    ("/usr/lib/node_modules", "it is a system folder (/usr)"),
    ("/etc/nginx", "it is a system folder (/etc)"),
    ("/proc/1", "it is a system folder (/proc)"),
    ("/System/Library", "it is a system folder (/System)"),
    ("/var", "it is a system folder"),
    ("/opt", "it is a system folder"),
    ("/home", "it is a system folder"),
    ("/tmp", "it is a system folder"),
])
def test_protected_folders(root: str, why: str) -> None:
    assert protected_folder(PurePosixPath(root), HOME) == why


@pytest.mark.parametrize("root", ["/home/me/project", "/var/www/app", "/opt/app", "/tmp/ws", "/srv/git/repo",
                                  "/work/main"])
def test_project_folders_pass(root: str) -> None:
    assert protected_folder(PurePosixPath(root), HOME) is None


def test_windows_folders() -> None:
    home = PureWindowsPath("C:/Users/me")
    assert protected_folder(PureWindowsPath("C:/"), home) == "it is the filesystem root"
    assert protected_folder(PureWindowsPath("C:/Users/me"), home) == "it is your home folder"
    assert protected_folder(PureWindowsPath("c:/windows/System32"), home) == r"it is a system folder (C:\Windows)"
    assert protected_folder(PureWindowsPath("D:/Program Files/app"), home) == (
        r"it is a system folder (D:\Program Files)")
    assert protected_folder(PureWindowsPath("C:/Users"), home) == r"it is a system folder (C:\Users)"
    assert protected_folder(PureWindowsPath("C:/Users/me/src/app"), home) is None


def test_the_refusal_is_one_line_naming_the_path_and_the_flag() -> None:
    assert folder_refusal(PurePosixPath("/"), HOME) == (
        "refusing to index /: it is the filesystem root, not a project; index a project folder, "
        "or run `codecompass index --force /` to index it anyway")
    # A path a shell would split is quoted, so the hint can be pasted as it is.
    assert folder_refusal(PurePosixPath("/home/me/My Project"), PurePosixPath("/home/me/My Project")).endswith(
        "or run `codecompass index --force '/home/me/My Project'` to index it anyway")
    assert folder_refusal(PurePosixPath("/home/me/app"), HOME) is None


def _files(*specs: tuple[str, int]) -> list[FileEntry]:
    return [FileEntry(path, size, 0, "h", Language.TYPESCRIPT) for path, size in specs]


def test_size_refusal_names_files_bytes_and_the_largest_folders() -> None:
    files = _files(*((f"packages/a/f{i}.ts", 1_000_000) for i in range(3)),
                   *((f"vendor/v{i}.js", 10) for i in range(4)),
                   ("docs/x.ts", 5), ("index.ts", 7))
    assert size_refusal(PurePosixPath("/w"), files, max_files=100, max_mb=200) is None
    assert size_refusal(PurePosixPath("/w"), files, max_files=9, max_mb=3) == (
        "refusing to index /w: 9 source files, 3.0 MB (largest: vendor/ 4 files 0.0 MB, packages/ 3 files 3.0 MB, "
        "(top level) 1 files 0.0 MB) is above the first-index limits (retrieval.large_index_files 9, "
        "retrieval.large_index_mb 3); index a narrower folder, leave folders out in .codecompassignore, "
        "or run `codecompass index --force /w` to index it anyway")
    assert size_refusal(PurePosixPath("/w"), files, max_files=8, max_mb=200) is not None
    assert size_refusal(PurePosixPath("/w"), files, max_files=100, max_mb=2) is not None


class SkippingAnalysis(FakeAnalysis):
    """Scans like the real scanner does around what it indexes: a folder left out whole, and
    declaration files."""

    def ScanWorkspace(self, request, context):
        response = super().ScanWorkspace(request, context)
        response.skipped.add(relative_path="node_modules", reason=analysis_pb2.SKIP_REASON_EXCLUDED,
                             detail="dependencies or build output, left out by default", folder=True)
        response.skipped.add(relative_path="src/types.d.ts", reason=analysis_pb2.SKIP_REASON_DECLARATION_FILE)
        return response


@pytest.fixture
def engine_for(tmp_path: Path) -> Iterator:
    servers = []
    engines: list[RetrievalEngine] = []

    def make(**limits: int) -> RetrievalEngine:
        analysis_server, analysis_addr = _serve(analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server,
                                                SkippingAnalysis())
        embedding_server, embedding_addr = _serve(embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server,
                                                  FakeEmbedding())
        servers.extend([analysis_server, embedding_server])
        settings = Settings(state_dir=tmp_path / "state", retrieval=RetrievalSettings(**limits))
        engine = RetrievalEngine(settings, AnalysisClient(analysis_addr, timeout_s=10),
                                 EmbeddingClient(embedding_addr, timeout_s=10, batch_size=16))
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        engine.close()
    for server in servers:
        server.stop(None)


def _workspace(root: Path, files: int) -> Path:
    for i in range(files):
        path = root / "src" / f"m{i}.ts"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_func(f"job{i}"), encoding="utf-8")
    return root


def test_the_home_folder_is_refused_until_forced_and_then_kept_in_sync(engine_for, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    home = _workspace(tmp_path / "home", 2)
    monkeypatch.setenv("HOME", str(home))
    engine = engine_for()
    expected = (f"refusing to index {home}: it is your home folder, not a project; index a project folder, "
                f"or run `codecompass index --force {home}` to index it anyway")
    with pytest.raises(IndexRefused) as refused:
        list(engine.index(str(home), wait_for_embeddings=False))
    assert str(refused.value) == expected
    with pytest.raises(IndexRefused):
        engine.sync(str(home), None)
    # Refused before anything exists: no index for the folder, not even an empty one.
    assert not (tmp_path / "state" / "index").exists() or not any((tmp_path / "state" / "index").iterdir())

    done = list(engine.index(str(home), wait_for_embeddings=False, force=True))[-1]
    assert done.phase is IndexPhase.DONE and done.stats.files_added == 2
    # Indexed on purpose once: a search's sync keeps it fresh without force, here and after a restart.
    assert engine.sync(str(home), None).freshness_status is FreshnessStatus.FRESH
    restarted = engine_for()
    assert restarted.sync(str(home), None).freshness_status is FreshnessStatus.FRESH


@pytest.mark.badinput(case="a first index above the file-count or size limits",
                      behaviour="refused until --force, saying what it would hold")
def test_a_first_index_above_the_limits_is_refused_with_what_it_would_hold(engine_for, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", 3)
    engine = engine_for(large_index_files=2)
    with pytest.raises(IndexRefused) as refused:
        list(engine.index(str(root), wait_for_embeddings=False))
    message = str(refused.value)
    assert message.startswith(f"refusing to index {root}: 3 source files, 0.0 MB (largest: src/ 3 files 0.0 MB)")
    assert "retrieval.large_index_files 2" in message and message.endswith(
        f"`codecompass index --force {root}` to index it anyway")
    # The same answer to a search's sync; the status says why nothing is indexed.
    with pytest.raises(IndexRefused):
        engine.sync(str(root), None)
    status = engine.status(str(root))
    assert (status.indexing_status, status.error, status.chunks) == (IndexingStatus.FAILED, message, 0)

    assert list(engine.index(str(root), wait_for_embeddings=False, force=True))[-1].stats.files_added == 3
    # Growing past the limit later needs no force: the limits guard a first index only.
    _workspace(root, 5)
    assert engine.sync(str(root), None).stats.files_added == 2


@pytest.mark.badinput(case="skipped files, .d.ts included",
                      behaviour="every skip listed with its reason (`declaration file` for .d.ts)")
def test_the_final_report_lists_every_skip_with_its_reason(engine_for, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", 1)
    (root / "src" / "bundle.ts").write_text("var a=1;" * 100, encoding="utf-8")
    done = list(engine_for().index(str(root), wait_for_embeddings=False))[-1]
    assert [(s.relative_path, s.reason, s.folder) for s in done.skipped] == [
        ("node_modules", "excluded", True),
        ("src/bundle.ts", "minified", False),
        ("src/types.d.ts", "declaration_file", False),
    ]
    assert done.stats.files_skipped == 3


def test_a_read_of_a_workspace_with_no_index_creates_nothing(engine_for, tmp_path: Path) -> None:
    """Search and status are reads: a workspace never indexed answers NOT_INDEXED, and no folder,
    table or registry row appears for it (LanceDB would create a folder just by connecting)."""
    workspace = _workspace(tmp_path / "ws", 2)
    engine = engine_for()
    outcome = engine.search(SearchQuery(workspace_root=str(workspace), query="job0", semantic_ratio=0.0))
    assert outcome.results == () and outcome.metadata.indexing_status is IndexingStatus.NOT_INDEXED
    assert engine.status(str(workspace)).indexing_status is IndexingStatus.NOT_INDEXED
    assert engine.list_indexes() == []
    index_root = tmp_path / "state" / "index"
    assert not index_root.exists() or [p.name for p in index_root.iterdir()] == []
