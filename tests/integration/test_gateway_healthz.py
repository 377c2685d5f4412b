"""The gateway as a container runs it (deploy/compose.yaml): no --workspace, its folders from
CODECOMPASS_GATEWAY_WORKSPACES, bound to 0.0.0.0 with a token and one allowed Host; probed on
GET /healthz the way a kubelet and the compose health check do, which no Host list or token gates.
The backends are not running: /healthz says whether the HTTP server is up, nothing more."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from codecompass_gateway.wire import HEALTH_PATH
from tests.fixtures.gateway import wait_until_listening

TOKEN = "healthz-test-token-5d1e"
START_TIMEOUT_S = 120.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_gateway_configured_by_settings_answers_healthz_to_any_host_and_guards_the_rest(tmp_path: Path) -> None:
    workspace = tmp_path / "workspaces" / "app"
    workspace.mkdir(parents=True)
    (workspace / "index.ts").write_text("export const answer = 42;\n")
    port, dead = _free_port(), f"127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
           "CODECOMPASS_GATEWAY_WORKSPACES": str(workspace),
           "CODECOMPASS_GATEWAY_ALLOWED_ROOTS": str(workspace.parent),
           "CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN, "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": f"localhost:{port}",
           "CODECOMPASS_BIND_HOST": "0.0.0.0",
           **{f"{name}_ADDR": dead for name in ("ANALYSIS", "EMBEDDING", "RETRIEVAL", "RERANK", "SELECTION")}}
    log = tmp_path / "gateway.err"
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--transport", "streamable-http",
                                    "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_until_listening(process, port, START_TIMEOUT_S, log.read_text)
        base = f"http://127.0.0.1:{port}"
        # The compose health check, from inside the container: its Host (127.0.0.1) is not allowed.
        probe = subprocess.run([sys.executable, "-m", "codecompass.clients.health", f"{base}{HEALTH_PATH}"],
                               check=False, capture_output=True, text=True, timeout=60)
        assert (probe.returncode, probe.stderr) == (0, "")
        # A kubelet's probe: the pod's IP as Host, no token. It learns "ok" and nothing else.
        healthz = httpx.get(f"{base}{HEALTH_PATH}", headers={"Host": f"10.1.2.3:{port}"}, timeout=10)
        assert (healthz.status_code, healthz.text) == (200, "ok\n")
        assert {key.lower() for key in healthz.headers} <= {"content-type", "content-length", "date", "server"}
        # Everything else stays behind the Host check, then the token.
        assert httpx.get(f"{base}/mcp", headers={"Host": f"10.1.2.3:{port}"}, timeout=10).status_code == 421
        assert httpx.post(f"{base}{HEALTH_PATH}", headers={"Host": f"10.1.2.3:{port}"}, timeout=10).status_code == 421
        assert httpx.get(f"{base}/mcp", headers={"Host": f"localhost:{port}"}, timeout=10).status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    # It served the workspace the setting named, as the default one.
    assert str(workspace) in log.read_text()
