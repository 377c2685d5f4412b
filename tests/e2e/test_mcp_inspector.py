"""The MCP Inspector CLI (issue 9 §7) calls a tool of the real server over stdio, as a user would
with `npx @modelcontextprotocol/inspector --cli …`.

The inspector is a pinned devDependency of node_ts_service (0.15.0: the last release that runs on
Node 20), so `make setup`'s `npm install` provides it and CI needs no network. It exits 0 even
when the tool failed, so the test reads `isError` and the content, not the exit code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import index_fully

from codecompass.clients.retrieval import RetrievalClient

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = REPO_ROOT / "node_ts_service" / "node_modules" / ".bin" / "mcp-inspector"
# Node starts, the SDK handshakes, then the gateway imports the MCP SDK and answers: seconds,
# but a loaded 2-core machine can stretch that.
INSPECTOR_TIMEOUT_S = 120


def inspector(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    if not INSPECTOR.is_file():
        pytest.fail(f"{INSPECTOR} is missing: run `make setup` (its npm install provides the pinned inspector)",
                    pytrace=False)
    # The README's form: `mcp-inspector --cli <command> <args…> --method … --tool-name …`.
    return subprocess.run([str(INSPECTOR), "--cli", *argv], env=env, capture_output=True, text=True,
                          timeout=INSPECTOR_TIMEOUT_S, check=False, cwd=REPO_ROOT)


@pytest.fixture
def indexed(start_analysis_service, start_python_service, tmp_path: Path) -> dict[str, str]:
    """The services index_status needs, and a copy of the sample workspace indexed with embeddings."""
    root = tmp_path / "ws"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "sample_workspace", root)
    _, analysis = start_analysis_service()
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    _, retrieval = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis, "EMBEDDING_ADDR": embedding, "CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
    index_fully(retrieval, root)
    return {"root": str(root), "RETRIEVAL_ADDR": retrieval, "ANALYSIS_ADDR": analysis}


def gateway_command(workspace: str) -> list[str]:
    return [sys.executable, "-m", "codecompass_gateway", "--workspace", workspace]


@pytest.mark.timeout(300)
def test_index_status_through_the_inspector_cli(indexed: dict[str, str]) -> None:
    env = {**os.environ, "RETRIEVAL_ADDR": indexed["RETRIEVAL_ADDR"], "ANALYSIS_ADDR": indexed["ANALYSIS_ADDR"]}
    # The tool argument goes through the inspector's schema-driven conversion too.
    run = inspector(*gateway_command(indexed["root"]), "--method", "tools/call", "--tool-name", "index_status",
                    "--tool-arg", f"workspace={indexed['root']}", env=env)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result.get("isError") is False, result
    (content,) = result["content"]
    assert content["type"] == "text"

    # What index_status returns: the retrieval service's own report on this workspace.
    client = RetrievalClient(indexed["RETRIEVAL_ADDR"])
    try:
        report = client.status(indexed["root"], 10)
    finally:
        client.close()
    structured = result["structuredContent"]
    assert structured["workspace"] == indexed["root"]
    assert structured["indexing_status"] == "ready"
    assert (structured["files"], structured["chunks"], structured["embedded_chunks"]) == (
        report.files, report.chunks, report.embedded_chunks)
    assert structured["files"] >= 10 and structured["chunks"] > 0 and structured["embedded_share"] == 1.0
    assert structured["embedding_model_id"] == report.embedding_model_id != ""
    assert len(structured["metadata"]["trace_id"]) == 32
    assert content["text"].startswith(f"{indexed['root']}: ready")
    assert f"{report.files} files" in content["text"] and f"{report.chunks} chunks" in content["text"]


def test_a_failed_call_exits_0_and_says_is_error(tmp_path: Path, free_port: int) -> None:
    """Why the test above reads the JSON: the exit code does not tell a failed call from a good one."""
    env = {**os.environ, "RETRIEVAL_ADDR": f"127.0.0.1:{free_port}"}
    run = inspector(*gateway_command(str(tmp_path)), "--method", "tools/call", "--tool-name", "index_status",
                    env=env)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["isError"] is True
    (content,) = result["content"]
    assert content["text"].startswith("index_status: ") and "retrieval" in content["text"]
