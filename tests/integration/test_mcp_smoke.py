"""deploy/mcp_smoke.py, the call CI makes through the gateway that `docker compose up --wait`
started (.github/workflows/images.yml), against a real gateway set up as compose sets it up: bound
to 0.0.0.0, a bearer token, one allowed Host, over the indexed sample workspace."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.deploy.contract import REPO
from tests.fixtures.gateway import gateway_env, wait_until_listening

SMOKE = REPO / "deploy" / "mcp_smoke.py"
TOKEN = "smoke-test-token-8c2e41"


@pytest.fixture(scope="module")
def gateway(indexed_stack: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("smoke") / "gateway.err"
    env = {**gateway_env(indexed_stack), "CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN,
           "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": f"127.0.0.1:{port}"}
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace", indexed_stack["root"],
                                    "--transport", "streamable-http", "--host", "0.0.0.0", "--port", str(port)],
                                   env=env, stdout=subprocess.DEVNULL, stderr=err)
    try:
        wait_until_listening(process, port, 60, log.read_text)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def smoke(url: str, token_file: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SMOKE), "--url", url, "--token-file", str(token_file),
                           "--query", "verify a JWT token", *more], capture_output=True, text=True, timeout=120,
                          check=False)


def test_one_call_with_the_token_answers_with_the_expected_file(gateway: str, tmp_path: Path) -> None:
    token_file = tmp_path / "gateway-token"
    token_file.write_text(TOKEN + "\n")
    done = smoke(gateway, token_file, "--expect", "src/auth/tokenService.ts", "--wait-s", "60")
    assert done.returncode == 0, done.stderr
    assert "src/auth/tokenService.ts" in done.stdout


def test_a_wrong_token_or_an_answer_without_the_path_fails_with_one_line(gateway: str, tmp_path: Path) -> None:
    token_file = tmp_path / "gateway-token"
    token_file.write_text("not-the-token\n")
    refused = smoke(gateway, token_file, "--expect", "src/auth/tokenService.ts", "--wait-s", "1")
    # The SDK reports the 401 as an error response, without its status.
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.startswith("no answer naming src/auth/tokenService.ts within 1 s; last MCPError: ")
    token_file.write_text(TOKEN + "\n")
    missing = smoke(gateway, token_file, "--expect", "src/no/such/file.ts", "--wait-s", "1")
    assert missing.returncode == 1, missing.stderr
    assert missing.stderr.startswith("no answer naming src/no/such/file.ts within 1 s; last answer: ")
