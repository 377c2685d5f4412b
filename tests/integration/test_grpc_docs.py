"""docs/grpc.md's grpcurl commands, run as written against real services (issue 31 §5): grpcurl
has no protos here, only server reflection. The page's default addresses and workspace path are
replaced by the running services' and an indexed copy of the sample workspace."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "grpc.md"
WORKSPACE = "/path/to/project"
# The page's addresses: `codecompass up`'s default ports, by the service's address key.
DEFAULT_ADDRESSES = {"127.0.0.1:50051": "ANALYSIS_ADDR", "127.0.0.1:50052": "EMBEDDING_ADDR",
                     "127.0.0.1:50053": "RETRIEVAL_ADDR", "127.0.0.1:50054": "RERANK_ADDR",
                     "127.0.0.1:50055": "SELECTION_ADDR"}


def _grpcurl() -> str:
    found = shutil.which("grpcurl", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("grpcurl is missing from the environment: run `make setup`", pytrace=False)
    return found


def page_commands() -> list[str]:
    """Every grpcurl command line of the page's shell blocks."""
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip().startswith("grpcurl ")]


def _field(message: dict, name: str) -> object:
    """A field of grpcurl's JSON, by its proto name: grpcurl writes the descriptor's json_name
    where the server's descriptors set one (the Node service's, built by buf: lowerCamelCase)
    and the proto name where they do not (protoc's Python descriptors)."""
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
    return message[name] if name in message else message[camel]


def _run(command: str, stack: dict[str, str]) -> subprocess.CompletedProcess[str]:
    for default, key in DEFAULT_ADDRESSES.items():
        command = command.replace(default, stack[key])
    argv = shlex.split(command.replace(WORKSPACE, stack["root"]))
    return subprocess.run([_grpcurl(), *argv[1:]], capture_output=True, text=True, timeout=600, check=False)


def test_the_page_shows_each_common_call() -> None:
    calls = " ".join(page_commands())
    for wanted in (" list", "describe ", "Health/Check", "RetrievalService/IndexWorkspace", "RetrievalService/Sync",
                   "RetrievalService/Search", "RetrievalService/GetIndexStatus", "RetrievalService/ListIndexes",
                   "CodeAnalysisService/Trace"):
        assert wanted in calls, wanted


def test_every_command_of_the_page_runs_through_reflection_alone(indexed_stack: dict[str, str]) -> None:
    commands = page_commands()
    assert len(commands) >= 10
    for command in commands:
        done = _run(command, indexed_stack)
        if '"query": ""' in command:
            # The page's example of an error: its code and message as the page says.
            assert done.returncode != 0 and "Code: InvalidArgument" in done.stderr, done.stderr
            assert "query must not be empty" in done.stderr
            continue
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        if " list" in command:
            assert "codecompass.v1.RetrievalService" in done.stdout.split()
        elif "/Search" in command:
            answer = json.loads(done.stdout)
            first = answer["results"][0]["chunk"]
            assert str(_field(first, "relative_path")).startswith("src/"), answer
        elif "/Trace" in command:
            root = json.loads(done.stdout)["root"]
            assert str(_field(root, "qualified_name")).startswith("TokenService"), (command, done.stdout[:600])
        elif "/GetIndexStatus" in command:
            assert _field(json.loads(done.stdout), "indexing_status") == "INDEXING_STATUS_READY", done.stdout
        elif "Health/Check" in command:
            assert json.loads(done.stdout) == {"status": "SERVING"}
