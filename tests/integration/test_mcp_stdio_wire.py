"""In stdio mode stdout is the protocol and nothing else: every line the gateway writes there is a
JSON-RPC message, and its logs are JSON lines on stderr. Checked on the raw pipes, as a client
that is stricter than the SDK's would see them (no services needed: they are down)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp.types.version import LATEST_HANDSHAKE_VERSION

from codecompass.common import names


def _request(request_id: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"


def test_stdout_carries_only_json_rpc(tmp_path: Path, free_port: int) -> None:
    dead = f"127.0.0.1:{free_port}"
    env = {**os.environ, "RETRIEVAL_ADDR": dead, "RERANK_ADDR": dead, "SELECTION_ADDR": dead, "ANALYSIS_ADDR": dead,
           "LOG_LEVEL": "INFO"}
    messages = "".join([
        _request(1, "initialize", {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                                   "clientInfo": {"name": "raw", "version": "0"}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n",
        _request(2, "tools/list", {}),
        _request(3, "tools/call", {"name": "semantic_search", "arguments": {"query": "tokens"}}),
        _request(4, "tools/call", {"name": "codebase_trace", "arguments": {"symbol": "x", "direction": "up"}}),
    ])
    process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace", str(tmp_path)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                               text=True)
    # stdin stays open until every reply is in: at end of input the server stops, mid-call or not.
    process.stdin.write(messages)
    process.stdin.flush()
    replies = {}
    while len(replies) < 4:
        line = process.stdout.readline()
        assert line, f"the gateway closed stdout: {process.stderr.read() if process.poll() is not None else ''}"
        message = json.loads(line)  # anything but JSON here would break the client
        assert message["jsonrpc"] == "2.0"
        if "id" in message:
            replies[message["id"]] = message
    rest, stderr = process.communicate(timeout=30)  # closes stdin: the server ends
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert replies[1]["result"]["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    assert replies[1]["result"]["serverInfo"]["name"] == "codecompass"
    assert len(replies[2]["result"]["tools"]) == 5
    for request_id in (3, 4):
        result = replies[request_id]["result"]
        assert result["isError"] is True and len(result["content"]) == 1, result
    assert "retrieval service not running" in replies[3]["result"]["content"][0]["text"]
    logged = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert logged and all(record["service"] == names.GATEWAY for record in logged)
