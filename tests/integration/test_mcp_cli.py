"""`codecompass mcp` as a client configures it: no services running, a workspace never indexed.
It starts the services, answers the handshake without waiting on the index, and its first search
answers while indexing runs; a second gateway reuses the running services."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow


def _cli(state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CODECOMPASS_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=env, capture_output=True, text=True,
                          check=False, timeout=90)


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    state = tmp_path / "state"
    yield state
    # The services `codecompass mcp` started outlive it, as `codecompass up`'s do: stop them.
    if (state / "runtime.json").exists():
        _cli(state, "down")


def _gateway(state_dir: Path, workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "codecompass_cli", "mcp", "--workspace", str(workspace)],
                                 env={**os.environ, "CODECOMPASS_STATE_DIR": str(state_dir), "PYTHONUNBUFFERED": "1"})


@pytest.mark.timeout(300)
def test_codecompass_mcp_starts_the_services_and_answers_a_cold_workspace(state_dir: Path, tmp_path: Path,
                                                                           sample_workspace: Path) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(sample_workspace, workspace)

    async def first_session() -> tuple[float, float, dict, str]:
        async with Client(_gateway(state_dir, workspace), read_timeout_seconds=120) as client:
            connected = time.monotonic()
            result = await client.call_tool("semantic_search", {"query": "validateToken", "min_relevance": 0})
            answered = time.monotonic() - connected
            assert not result.is_error, result.content[0].text
            status = await client.call_tool("index_status", {})
            return connected, answered, result.structured_content, status.content[0].text

    started = time.monotonic()
    connected, answered, structured, status = anyio.run(first_session)
    runtime = json.loads((state_dir / "runtime.json").read_text())
    # The rerank service only runs for a model reranker; the local one ranks inside retrieval.
    assert set(runtime["services"]) == {"analysis", "embedding", "retrieval", "selection"}
    assert any(r["qualified_name"].startswith("TokenService") for r in structured["results"])
    assert structured["metadata"]["workspace"] == str(workspace)
    assert answered < 60, f"first answer {answered:.1f}s after the handshake ({connected - started:.1f}s to start)"
    assert str(workspace) in status

    async def second_session() -> list[str]:
        async with Client(_gateway(state_dir, workspace), mode="legacy", read_timeout_seconds=60) as client:
            found = await client.call_tool("codebase_trace", {"symbol": "TokenService.validateToken",
                                                              "direction": "callers"})
            return [block.text for block in found.content]

    pids = {name: svc["pid"] for name, svc in runtime["services"].items()}
    texts = anyio.run(second_session)
    assert "requireAuth" in texts[0]
    reused = json.loads((state_dir / "runtime.json").read_text())
    assert {name: svc["pid"] for name, svc in reused["services"].items()} == pids
