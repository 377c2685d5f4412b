"""The service token (issue 31 §4), on real service processes: a Python service (rerank) and the Node
analysis service bound beyond loopback refuse to start without one, in one line; with one, a call
without it or with a wrong one is refused (UNAUTHENTICATED, one line), the right one is answered,
health needs none, reflection needs it; the clients send it from the same setting, and a token file
rotates under a running service and its clients. TLS: tests/integration/test_service_tls.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2
from tests.conftest import NODE_ENTRY

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import ServiceError
from codecompass.clients.rerank import RerankClient
from codecompass.common.config import GRPC_AUTH_TOKEN_ENV, GRPC_AUTH_TOKEN_FILE_ENV, load_settings
from codecompass.common.transport import UNAUTHENTICATED_MESSAGE
from codecompass.contracts.analysis.model import TraceQuery
from codecompass.contracts.rerank.model import Candidate, RerankQuery
from codecompass.v1 import rerank_pb2

TOKEN = "service-token-for-tests-1f3a9c"
NEXT_TOKEN = "service-token-next-rotation-7e21"
RERANK = "/codecompass.v1.RerankService/Rerank"
REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"
REFUSED_LINE = ("CODECOMPASS_BIND_HOST 0.0.0.0 listens beyond this machine: set CODECOMPASS_GRPC_AUTH_TOKEN or "
                "CODECOMPASS_GRPC_AUTH_TOKEN_FILE to the service token clients must send, or listen on 127.0.0.1")


def _refused_start(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env={**os.environ, "CODECOMPASS_BIND_HOST": "0.0.0.0", **env}, capture_output=True,
                          text=True, timeout=60, check=False)


def _plain(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("{")]


def test_a_python_service_beyond_loopback_without_a_usable_token_refuses_to_start_in_one_line() -> None:
    rerank = [sys.executable, "-m", "codecompass.rerank"]
    result = _refused_start(rerank, {"RERANK_PORT": "0"})
    assert (result.returncode, result.stdout) == (2, "")
    assert _plain(result.stderr) == [f"error: {REFUSED_LINE}"]
    short = _refused_start(rerank, {"RERANK_PORT": "0", GRPC_AUTH_TOKEN_ENV: "abc123"})
    assert (short.returncode, short.stdout) == (2, "")
    assert _plain(short.stderr) == [
        "error: the bearer token from CODECOMPASS_GRPC_AUTH_TOKEN is 6 characters long: a token must have at least "
        "16 characters; make one with `python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"]
    assert "Traceback" not in result.stderr + short.stderr


def test_the_node_service_beyond_loopback_without_a_token_refuses_to_start_in_one_line() -> None:
    result = _refused_start(["node", str(NODE_ENTRY)], {"ANALYSIS_PORT": "0"})
    assert (result.returncode, result.stdout) == (2, "")
    # The Node service's own shape of a bad setting: the variable, then what is wrong with it.
    detail = REFUSED_LINE.removeprefix("CODECOMPASS_BIND_HOST ")
    assert result.stderr == f"analysis: invalid CODECOMPASS_BIND_HOST: {detail}\n"


def _call(address: str, method: str, request: bytes, token: str | None) -> grpc.RpcError | bytes:
    metadata = () if token is None else (("authorization", token),)
    with grpc.insecure_channel(address) as channel:
        try:
            return channel.unary_unary(method)(request, metadata=metadata, timeout=20)
        except grpc.RpcError as exc:
            return exc


def _assert_refused(answer: grpc.RpcError | bytes) -> None:
    assert isinstance(answer, grpc.RpcError), "expected UNAUTHENTICATED, got an answer"
    assert (answer.code(), answer.details()) == (grpc.StatusCode.UNAUTHENTICATED, UNAUTHENTICATED_MESSAGE)


def _health(address: str) -> str:
    with grpc.insecure_channel(address) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def _reflected_services(address: str, token: str | None) -> list[str] | grpc.RpcError:
    metadata = () if token is None else (("authorization", f"Bearer {token}"),)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    with grpc.insecure_channel(address) as channel:
        stream = channel.stream_stream(
            REFLECTION, request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
        try:
            reply = next(stream(iter([request]), metadata=metadata, timeout=10))
        except grpc.RpcError as exc:
            return exc
    return [service.name for service in reply.list_services_response.service]


def test_a_python_service_with_a_token_checks_every_call_but_health(start_python_service, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "service-token"
    token_file.write_text(f"# the service token\n{TOKEN}\n")
    # The test process is a client of the same deployment: the same setting.
    monkeypatch.setenv(GRPC_AUTH_TOKEN_FILE_ENV, str(token_file))
    _, address = start_python_service("codecompass.rerank", {"CODECOMPASS_BIND_HOST": "0.0.0.0"})
    request = rerank_pb2.RerankRequest(query="q").SerializeToString()
    _assert_refused(_call(address, RERANK, request, None))
    _assert_refused(_call(address, RERANK, request, f"Bearer {TOKEN[:-1]}"))
    _assert_refused(_call(address, RERANK, request, f"Basic {TOKEN}"))
    assert isinstance(_call(address, RERANK, request, f"Bearer {TOKEN}"), bytes)
    assert _health(address) == "SERVING"
    _assert_refused(_reflected_services(address, None))
    assert "codecompass.v1.RerankService" in _reflected_services(address, TOKEN)

    client = RerankClient(address)
    query = RerankQuery("q", (Candidate("a", "text"),))
    try:
        assert client.rerank(query, timeout_s=10).provider == "local"
        # Rotation (docs/runbooks.md): the new token added below the current one, taken by the server;
        # then first, sent by the clients from their next call; then the old one removed.
        token_file.write_text(f"{TOKEN}\n{NEXT_TOKEN}\n")
        assert isinstance(_call(address, RERANK, request, f"Bearer {NEXT_TOKEN}"), bytes)
        token_file.write_text(f"{NEXT_TOKEN}\n{TOKEN}\n")
        assert client.rerank(query, timeout_s=10).provider == "local"
        token_file.write_text(f"{NEXT_TOKEN}\n")
        _assert_refused(_call(address, RERANK, request, f"Bearer {TOKEN}"))
        assert client.rerank(query, timeout_s=10).provider == "local"
        # A rotation caught half-way (an empty file) keeps the tokens read before, on both ends.
        token_file.write_text("")
        assert client.rerank(query, timeout_s=10).provider == "local"
    finally:
        client.close()
    log = next(tmp_path.glob("rerank-*.log")).read_text()
    assert TOKEN not in log and NEXT_TOKEN not in log
    assert "refused a call without a valid service token" in log and "kept the bearer tokens read before" in log


def test_a_client_without_the_token_hears_unauthenticated_in_one_line(start_python_service,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRPC_AUTH_TOKEN_ENV, TOKEN)
    _, address = start_python_service("codecompass.rerank", {"CODECOMPASS_BIND_HOST": "0.0.0.0"})
    monkeypatch.setenv(GRPC_AUTH_TOKEN_ENV, NEXT_TOKEN)
    load_settings.cache_clear()  # the settings are read once a process; this test plays a second one
    client = RerankClient(address)
    try:
        with pytest.raises(ServiceError) as refused:
            client.rerank(RerankQuery("q", (Candidate("a", "text"),)), timeout_s=10)
    finally:
        client.close()
    assert (refused.value.status, str(refused.value)) == ("UNAUTHENTICATED", UNAUTHENTICATED_MESSAGE)


def test_the_node_service_with_a_token_checks_every_call_but_health(start_analysis_service, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GRPC_AUTH_TOKEN_ENV, TOKEN)
    _, address = start_analysis_service({"CODECOMPASS_BIND_HOST": "0.0.0.0"})
    trace = "/codecompass.v1.CodeAnalysisService/Trace"
    _assert_refused(_call(address, trace, b"", None))
    _assert_refused(_call(address, trace, b"", f"Bearer {NEXT_TOKEN}"))
    assert _health(address) == "SERVING"
    _assert_refused(_reflected_services(address, None))
    assert "codecompass.v1.CodeAnalysisService" in _reflected_services(address, TOKEN)
    # The right token reaches the service itself, which answers this empty request as it would any.
    answered = _call(address, trace, b"", f"Bearer {TOKEN}")
    assert isinstance(answered, grpc.RpcError) and answered.code() == grpc.StatusCode.INVALID_ARGUMENT
    client = AnalysisClient(address)
    try:
        (tmp_path / "a.ts").write_text("export function a(): number { return 1; }\n")
        outcome = client.trace(TraceQuery(str(tmp_path), "a", "callers"), timeout_s=30)
    finally:
        client.close()
    assert outcome is not None
