"""`codecompass index` and `search` against the real retrieval service (in-process, over gRPC,
with the fake analysis and embedding services of sync_harness): what is refused without --force,
with which line and exit code, and what --show-skipped prints."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.retrieval.sync_harness import FakeEmbedding, _func, _serve
from tests.unit.retrieval.test_index_guards import SkippingAnalysis

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import RetrievalSettings, Settings
from codecompass.common.serving import ServiceSpec, start_server
from codecompass.retrieval import servicer
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.v1 import analysis_pb2_grpc, embedding_pb2_grpc

EXIT_USAGE = 2


@pytest.fixture
def retrieval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    analysis_server, analysis_addr = _serve(analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server,
                                            SkippingAnalysis())
    embedding_server, embedding_addr = _serve(embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server,
                                              FakeEmbedding())
    engine = RetrievalEngine(Settings(state_dir=tmp_path / "state", retrieval=RetrievalSettings()),
                             AnalysisClient(analysis_addr, timeout_s=10),
                             EmbeddingClient(embedding_addr, timeout_s=10, batch_size=16))
    running = start_server(ServiceSpec("retrieval", lambda s: servicer.register(s, engine)))
    running.wait_until_serving(10)
    monkeypatch.setenv("RETRIEVAL_ADDR", running.address)
    yield
    running.stop(0)
    engine.close()
    analysis_server.stop(None)
    embedding_server.stop(None)


def _refusal(path: Path | str, why: str) -> str:
    return (f"codecompass: retrieval: refusing to index {path}: {why}, not a project; index a project folder, "
            f"or run `codecompass index --force {path}` to index it anyway")


@pytest.mark.badinput(case="index / search of `/`", behaviour="exit 2: refused, naming the reason and --force")
def test_index_and_search_of_the_filesystem_root_are_refused_with_the_reason(retrieval, run_cli) -> None:
    for argv in (["index", "/"], ["search", "/", "where is the config read"]):
        result = run_cli(*argv)
        assert (result.code, result.err.strip(), result.out) == (
            EXIT_USAGE, _refusal("/", "it is the filesystem root"), ""), argv


@pytest.mark.badinput(case="index of the home folder", behaviour="exit 2 until --force, naming the reason")
def test_the_home_folder_needs_force(retrieval, run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / "src").mkdir(parents=True)
    (home / "src" / "a.ts").write_text(_func("alpha"), encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    refused = run_cli("index", str(home))
    assert (refused.code, refused.err.strip()) == (EXIT_USAGE, _refusal(home, "it is your home folder"))
    assert run_cli("index", "~").err.strip() == _refusal(home, "it is your home folder")

    forced = run_cli("index", "--force", "--no-wait", str(home))
    assert forced.code == 0, forced.err
    assert forced.out.splitlines()[1] == (
        "  files       1 added, 0 changed, 0 removed, 2 skipped (1 declaration file, 1 excluded)")


@pytest.mark.badinput(case="index --show-skipped", behaviour="every skipped path listed with its reason")
def test_show_skipped_lists_each_path_with_its_reason(retrieval, run_cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.ts").write_text(_func("alpha"), encoding="utf-8")
    (root / "src" / "bundle.ts").write_text("var a=1;" * 100, encoding="utf-8")
    result = run_cli("index", "--show-skipped", "--no-wait", str(root))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1].endswith("3 skipped (1 declaration file, 1 excluded, 1 minified)")
    assert lines[lines.index("skipped:") + 1:] == [
        "  node_modules/   excluded               dependencies or build output, left out by default",
        "  src/bundle.ts   minified",
        "  src/types.d.ts  declaration file",
    ]
    # Without the flag the summary line says why, and no list follows.
    assert "skipped:" not in run_cli("index", "--no-wait", str(root)).out
