"""`codecompass run` (what `make run` calls) on the sample workspace, across real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _cli(state_dir: Path, *args: str, timeout: float = 110) -> subprocess.CompletedProcess:
    env = {**os.environ, "CODECOMPASS_STATE_DIR": str(state_dir)}
    return subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_run_starts_services_summarizes_and_leaves_them_running(tmp_path: Path, sample_workspace: Path) -> None:
    state_dir = tmp_path / "state"
    try:
        run = _cli(state_dir, "run", "--workspace", str(sample_workspace))
        assert run.returncode == 0, run.stdout + run.stderr
        out = run.stdout
        assert "files     17 chunked (0 with syntax errors), 0 skipped" in out
        assert "largest   src/auth/tokenService.ts:" in out
        assert "stop:   " in out and "down" in out

        assert f"indexed {sample_workspace}" in out
        assert '== sample query: "' in out
        assert "   1. " in out
        assert "search: " in out

        started = json.loads((state_dir / "runtime.json").read_text())["services"]
        # The rerank service runs only for a model reranker (the default ranks inside retrieval).
        assert set(started) == {"analysis", "embedding", "retrieval", "selection"}
        status = _cli(state_dir, "status", "--json")
        assert status.returncode == 0, status.stdout
        assert all(row["health"] == "SERVING" for row in json.loads(status.stdout)["services"]
                   if row["name"] in started)
    finally:
        assert _cli(state_dir, "down").returncode == 0
