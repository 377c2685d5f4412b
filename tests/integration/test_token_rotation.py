"""Rotating the gateway's bearer token (docs/runbooks.md) on a real gateway over streamable HTTP:
`deploy/runbooks/rotate-gateway-token.sh begin` puts a new token first in the token file and keeps
the old one, `finish` drops the old one; the running gateway reads the file again when it changes,
so an MCP session opened with the old token goes on with the new one, in the same process, and the
old token is refused from `finish` on. What a Kubernetes Secret volume adds (the kubelet rewriting
the file within its sync period) only a cluster shows; the script's edit of the Secret is checked
against a stand-in for kubectl that keeps the Secret in a file."""

from __future__ import annotations

import base64
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
from mcp.types.version import LATEST_HANDSHAKE_VERSION
from tests.fixtures.gateway import jsonrpc, wait_until_listening

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "runbooks" / "rotate-gateway-token.sh"
OLD = "old-token-7c1e9a"
START_TIMEOUT_S = 120.0
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rotate(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, check=False,
                          env=env)


class Session:
    """One MCP session over raw HTTP, each request with the token given."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.id = ""

    def post(self, token: str, body: str) -> httpx.Response:
        headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
        if self.id:
            headers["mcp-session-id"] = self.id
        return httpx.post(self.url, content=body, headers=headers, timeout=30)

    def open(self, token: str) -> None:
        response = self.post(token, jsonrpc("initialize", 1, {"protocolVersion": LATEST_HANDSHAKE_VERSION,
                                                           "capabilities": {},
                                                           "clientInfo": {"name": "rotation", "version": "0"}}))
        assert response.status_code == 200, response.text
        self.id = response.headers["mcp-session-id"]
        assert self.post(token, jsonrpc("notifications/initialized")).status_code == 202

    def ping(self, token: str) -> int:
        response = self.post(token, jsonrpc("ping", 2))
        if response.status_code == 200:
            assert '"result"' in response.text, response.text
        return response.status_code


def test_a_token_rotates_on_a_running_gateway_without_losing_the_session(tmp_path: Path) -> None:
    token_file = tmp_path / "gateway-token"
    token_file.write_text(f"{OLD}\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "index.ts").write_text("export const answer = 42;\n")
    port, dead = _free_port(), f"127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
           "CODECOMPASS_GATEWAY_AUTH_TOKEN_FILE": str(token_file),
           "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": f"127.0.0.1:{port}",
           **{f"{name}_ADDR": dead for name in ("ANALYSIS", "EMBEDDING", "RETRIEVAL", "RERANK", "SELECTION")}}
    env.pop("CODECOMPASS_GATEWAY_AUTH_TOKEN", None)
    log = tmp_path / "gateway.err"
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace", str(workspace),
                                    "--transport", "streamable-http", "--host", "0.0.0.0", "--port", str(port)],
                                   env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_until_listening(process, port, START_TIMEOUT_S, log.read_text)
        session = Session(f"http://127.0.0.1:{port}/mcp")
        session.open(OLD)
        inode = token_file.stat().st_ino

        begun = _rotate("begin", str(token_file))
        assert (begun.returncode, begun.stderr) == (0, "")
        new = begun.stdout.strip()
        assert len(new) == 64 and new != OLD
        assert token_file.read_text() == f"{new}\n{OLD}\n"
        # Rewritten in place: a compose bind mount of this one file sees the change.
        assert token_file.stat().st_ino == inode
        # Both tokens open the same session while clients move over.
        assert session.ping(OLD) == 200
        assert session.ping(new) == 200

        finished = _rotate("finish", str(token_file))
        assert (finished.returncode, finished.stdout, finished.stderr) == (0, "", "")
        assert token_file.read_text() == f"{new}\n"
        assert session.ping(OLD) == 401
        # The session opened with the old token goes on with the new one: the process never restarted.
        assert session.ping(new) == 200
        assert process.poll() is None

        # A file caught empty (a writer half-way) keeps the tokens read before: nobody is locked
        # out, nobody is let in without one.
        token_file.write_text("")
        assert session.ping(new) == 200
        assert session.ping("guess") == 401
        token_file.write_text(f"{new}\n")
    finally:
        process.terminate()
        process.wait(timeout=30)
    text = log.read_text()
    assert "Traceback" not in text
    assert new not in text and OLD not in text  # never logged
    logged = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert [r["tokens"] for r in logged if r.get("msg") == "bearer tokens read again"][:2] == [2, 1]
    assert any(r.get("msg", "").startswith("kept the bearer tokens read before: gateway.auth_token_file")
               for r in logged)


def test_the_script_refuses_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("# no token yet\n")
    for args, message in ((("rotate",), "usage:"), (("twist", str(empty)), "the first argument is begin or finish"),
                          (("begin", str(tmp_path / "missing")), "no such token file"),
                          (("begin", str(empty)), "no token there to rotate from")):
        run = _rotate(*args)
        assert run.returncode == 2, run
        assert len(run.stderr.splitlines()) == 1 and message in run.stderr, run.stderr
    assert empty.read_text() == "# no token yet\n"


# A stand-in for the API server's side of `kubectl get secret -o jsonpath` and `kubectl patch
# --type merge`: the Secret's data in a JSON file. The real propagation (the kubelet rewriting the
# mounted file) is a cluster's to show.
FAKE_KUBECTL = textwrap.dedent('''\
    #!/usr/bin/env python3
    import json, os, sys
    store = os.environ["FAKE_SECRET_FILE"]
    args = sys.argv[1:]
    assert args[:2] == ["-n", "codecompass"], args
    secret = json.load(open(store))
    if args[2:5] == ["get", "secret", "codecompass-secrets"]:
        key = args[6].removeprefix("jsonpath={.data.").removesuffix("}")
        sys.stdout.write(secret["data"][key])
    elif args[2:5] == ["patch", "secret", "codecompass-secrets"] and args[5:7] == ["--type", "merge"]:
        secret["data"].update(json.loads(args[8])["data"])
        json.dump(secret, open(store, "w"))
    else:
        sys.exit("unexpected: " + " ".join(args))
''')


def test_the_script_rotates_the_kubernetes_secret_key_and_keeps_the_others(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(FAKE_KUBECTL)
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IXUSR)
    store = tmp_path / "secret.json"

    def encoded(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    store.write_text(json.dumps({"data": {"CODECOMPASS_GATEWAY_AUTH_TOKEN": encoded(f"{OLD}\n"),
                                          "CODECOMPASS_RERANK_API_KEY": encoded("rerank-key")}}))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_SECRET_FILE": str(store)}

    def token_key() -> str:
        return base64.b64decode(json.loads(store.read_text())["data"]["CODECOMPASS_GATEWAY_AUTH_TOKEN"]).decode()

    begun = _rotate("begin", "--kubernetes", env=env)
    assert (begun.returncode, begun.stderr) == (0, "")
    new = begun.stdout.strip()
    assert token_key() == f"{new}\n{OLD}\n"
    finished = _rotate("finish", "--kubernetes", "codecompass", env=env)
    assert (finished.returncode, finished.stderr) == (0, "")
    assert token_key() == f"{new}\n"
    assert json.loads(store.read_text())["data"]["CODECOMPASS_RERANK_API_KEY"] == encoded("rerank-key")

