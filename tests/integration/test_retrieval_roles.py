"""The retrieval roles run apart, as on a cluster: one index writer and one searcher process over
one index root, nothing else shared. The CLI (the gateway's pipeline) sends indexing and syncs to
WRITER_ADDR and searches to RETRIEVAL_ADDR; a searcher asked to write says where writes go."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import SAMPLE_WORKSPACE


@pytest.fixture
def roles(start_python_service, analysis_server: str, tmp_path: Path) -> dict[str, str]:
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    common = {"ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding,
              "CODECOMPASS_EMBEDDING_PROFILE": "code-static", "CODECOMPASS_RETRIEVAL_DB_URI": str(tmp_path / "indexes")}
    _, writer = start_python_service("codecompass.retrieval", {
        **common, "CODECOMPASS_RETRIEVAL_ROLE": "writer", "CODECOMPASS_STATE_DIR": str(tmp_path / "writer")})
    _, searcher = start_python_service("codecompass.retrieval", {
        **common, "CODECOMPASS_RETRIEVAL_ROLE": "searcher", "CODECOMPASS_STATE_DIR": str(tmp_path / "searcher")})
    return {"writer": writer, "searcher": searcher}


def test_the_cli_indexes_through_the_writer_and_searches_through_the_searcher(
        roles: dict[str, str], run_cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(SAMPLE_WORKSPACE, workspace)
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(tmp_path / "cli"))
    monkeypatch.setenv("RETRIEVAL_ADDR", roles["searcher"])

    refused = run_cli("index", str(workspace))
    assert refused.code != 0
    assert refused.err.strip().endswith("IndexWorkspace goes to the index writer; this retrieval server is a "
                                        "searcher (retrieval.role)")

    monkeypatch.setenv("WRITER_ADDR", roles["writer"])
    # The sync must finish before the search reads: on a loaded machine (CI) the default 300 ms
    # budget can pass first, and the answer then comes from the index as it stood.
    monkeypatch.setenv("CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS", "30000")
    indexed = run_cli("index", str(workspace))
    assert indexed.code == 0, indexed.err
    # The search syncs through the writer (within its freshness budget) and reads from the searcher.
    (workspace / "src" / "auth" / "keys.ts").write_text(
        "export function rotateSigningKeys(count: number): string[] {\n  return [];\n}\n", encoding="utf-8")
    found = run_cli("search", str(workspace), "rotateSigningKeys", "--json", "--no-select")
    assert found.code == 0, found.err
    (payload,) = found.json_lines()
    assert payload["results"][0]["qualified_name"] == "rotateSigningKeys"
    assert payload["metadata"]["indexing_status"] == "ready"
