"""Every server listens where CODECOMPASS_BIND_HOST says, and a service has one name everywhere.

A real rerank process bound to every interface (0.0.0.0, as in a container) answers on loopback,
says in one line that it listens beyond this machine, and reports its one name
(codecompass.common.names) in its log lines and its spans. The Node service's side is
node_ts_service/test/server.test.ts ("bind host") and tests/integration/test_tracing.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from codecompass_cli.processes import spawn, stop_pids, wait_for_listening, wait_until_serving

from codecompass.clients.rerank import RerankClient
from codecompass.common import names
from codecompass.common.config import GRPC_AUTH_TOKEN_ENV
from codecompass.contracts.rerank.model import Candidate, RerankQuery

START_TIMEOUT_S = 60.0
RERANK_RPC = "codecompass.v1.RerankService/Rerank"
TOKEN = "bind-host-test-token-8d1e"


def test_a_python_service_listens_on_the_bind_host_and_names_itself_one_way(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    log, spans = tmp_path / "rerank.log", tmp_path / "spans.jsonl"
    # Beyond loopback a service needs its token (tests/integration/test_service_auth.py); the client
    # below sends it, from the same setting.
    monkeypatch.setenv(GRPC_AUTH_TOKEN_ENV, TOKEN)
    env = {**os.environ, "CODECOMPASS_BIND_HOST": "0.0.0.0", names.port_env(names.RERANK): "0",
           "CODECOMPASS_TRACE_FILE": str(spans), "OTEL_SERVICE_NAME": "another-name"}
    process = spawn(names.RERANK, [sys.executable, "-m", "codecompass.rerank"], env, log)
    try:
        address = wait_for_listening(names.RERANK, process, log, 0, START_TIMEOUT_S)
        listening = re.search(r"^LISTENING (\S+)$", log.read_text(), re.MULTILINE).group(1)
        port = listening.rpartition(":")[2]
        # Bound to every interface; the launcher dials it on loopback.
        assert (listening, address) == (f"0.0.0.0:{port}", f"127.0.0.1:{port}")
        wait_until_serving(names.RERANK, process, address, "codecompass.v1.RerankService", log, START_TIMEOUT_S)
        client = RerankClient(address)
        try:
            outcome = client.rerank(RerankQuery("q", (Candidate("a", "text"),)), timeout_s=10)
        finally:
            client.close()
        assert outcome.provider == "local"
    finally:
        stop_pids([process.pid], 15)
        process.wait(timeout=15)
    records = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert records and {record["service"] for record in records} == {names.RERANK}
    beyond = [record for record in records if record["msg"].startswith("listening beyond this machine")]
    assert [(record["level"], record["address"]) for record in beyond] == [("WARNING", listening)]
    (server,) = [span for span in map(json.loads, spans.read_text().splitlines()) if span["name"] == RERANK_RPC]
    assert (server["service"], server["service_namespace"]) == (names.RERANK, names.NAMESPACE)


def test_a_loopback_bind_says_nothing_about_the_network(start_python_service, tmp_path: Path) -> None:
    _, address = start_python_service("codecompass.rerank", {"CODECOMPASS_BIND_HOST": "127.0.0.2"})
    assert address.startswith("127.0.0.2:")
    log = next(tmp_path.glob("rerank-*.log")).read_text()
    assert "listening beyond this machine" not in log


def test_a_bind_host_that_is_no_host_stops_the_service_in_one_line() -> None:
    env = {**os.environ, "CODECOMPASS_BIND_HOST": "0.0.0.0:50054"}
    result = subprocess.run([sys.executable, "-m", "codecompass.rerank"], env=env, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2 and result.stdout == ""
    plain = [line for line in result.stderr.splitlines() if not line.startswith("{")]
    assert plain == [("error: CODECOMPASS_BIND_HOST: expected an IP address or host name to listen on "
                      "(e.g. 127.0.0.1, 0.0.0.0, ::), got '0.0.0.0:50054'")]
    assert "Traceback" not in result.stderr
