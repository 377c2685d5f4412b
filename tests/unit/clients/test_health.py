"""The health client and its command, against real servers on 127.0.0.1:0."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import grpc
import pytest
from grpc_health.v1 import health as health_servicer
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.clients import health

SERVICE = "codecompass.v1.TestService"


@pytest.fixture()
def grpc_server() -> Iterator[tuple[str, health_servicer.HealthServicer]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer = health_servicer.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        server.stop(None)


@pytest.fixture()
def http_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code = 200 if self.path == "/healthz" else 404
            self.send_response(code)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_check_reports_each_status_the_server_sets(grpc_server) -> None:
    address, servicer = grpc_server
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    servicer.set(SERVICE, health_pb2.HealthCheckResponse.SERVING)
    assert health.check(address) == health.Health("NOT_SERVING")
    assert health.check(address, SERVICE).serving
    unknown = health.check(address, "codecompass.v1.Nothing")
    assert unknown.status == health.SERVICE_UNKNOWN and "codecompass.v1.Nothing" in unknown.detail


def test_check_of_a_port_nobody_listens_on_is_unreachable_with_the_reason(free_port: int) -> None:
    result = health.check(f"127.0.0.1:{free_port}", timeout_s=1.0)
    assert result.status == health.UNREACHABLE
    assert result.detail.startswith(("UNAVAILABLE", "DEADLINE_EXCEEDED"))


def test_main_exits_0_only_when_serving_and_says_why_in_one_line(grpc_server, capsys) -> None:
    address, servicer = grpc_server
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert health.main([address]) == 0
    assert capsys.readouterr().err == ""
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    assert health.main([address, "--timeout", "2"]) == 1
    assert capsys.readouterr().err == f"{address}: NOT_SERVING\n"
    assert health.main([address, "--service", "codecompass.v1.Nothing"]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_main_asks_a_url_with_a_get(http_server, free_port: int, capsys) -> None:
    assert health.main([f"{http_server}/healthz"]) == 0
    assert health.main([f"{http_server}/elsewhere"]) == 1
    assert capsys.readouterr().err == f"{http_server}/elsewhere: NOT_SERVING (HTTP 404)\n"
    assert health.main([f"http://127.0.0.1:{free_port}/healthz", "--timeout", "1"]) == 1
    assert "UNREACHABLE" in capsys.readouterr().err


def test_main_refuses_a_service_for_a_url_and_a_timeout_of_zero(capsys) -> None:
    for argv in (["http://127.0.0.1:1/healthz", "--service", "x"], ["127.0.0.1:1", "--timeout", "0"]):
        with pytest.raises(SystemExit) as exited:
            health.main(argv)
        assert exited.value.code == 2
    capsys.readouterr()


def test_the_module_runs_as_the_container_health_check(grpc_server) -> None:
    address, servicer = grpc_server
    command = [sys.executable, "-m", "codecompass.clients.health", address]
    servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    assert subprocess.run(command, check=False, capture_output=True, text=True, timeout=30).returncode == 0
    servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stderr) == (1, f"{address}: NOT_SERVING\n")
