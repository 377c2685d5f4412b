"""Server lifecycle: health through warmup and shutdown, error mapping, SIGTERM drain."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import grpc
import pytest
from codecompass_cli.processes import spawn, tail, wait_for_listening
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.common.channels import traced_channel
from codecompass.common.serving import RunningServer, ServiceSpec, WarmupFailed, start_server

SERVICE = "test.Echo"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _echo_register(behaviors: dict | None = None):
    """Registers a raw-bytes service; ``behaviors`` maps method name to handler."""

    def say(request: bytes, context: grpc.ServicerContext) -> bytes:
        return b"echo:" + request

    handlers = {"Say": grpc.unary_unary_rpc_method_handler(say)}
    for name, fn in (behaviors or {}).items():
        handlers[name] = fn

    def register(server: grpc.Server) -> list[str]:
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        return [SERVICE]

    return register


def _health(address: str, service: str) -> int:
    with grpc.insecure_channel(address) as channel:
        return health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=2).status


def test_health_is_not_serving_until_warmup_returns_then_serving() -> None:
    release = threading.Event()
    running = start_server(ServiceSpec("echo", _echo_register(), warmup=release.wait))
    try:
        assert _health(running.address, "") == NOT_SERVING
        assert _health(running.address, SERVICE) == NOT_SERVING
        release.set()
        running.wait_until_serving(5)
        assert _health(running.address, "") == SERVING
        assert _health(running.address, SERVICE) == SERVING
    finally:
        release.set()
        running.stop(0)


def test_stop_turns_health_not_serving_and_lets_in_flight_calls_finish() -> None:
    started = threading.Event()

    def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
        started.set()
        time.sleep(0.5)
        return b"done"

    running = start_server(ServiceSpec("echo", _echo_register({"Slow": grpc.unary_unary_rpc_method_handler(slow)})))
    running.wait_until_serving(5)
    channel = grpc.insecure_channel(running.address)
    watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=SERVICE), timeout=10)
    assert next(watch).status == SERVING
    in_flight = channel.unary_unary(f"/{SERVICE}/Slow").future(b"", timeout=10)
    assert started.wait(5)

    stopper = threading.Thread(target=running.stop, args=(5,))
    began = time.monotonic()
    stopper.start()

    assert next(watch).status == NOT_SERVING
    # An open Watch is itself an in-flight RPC; a watcher that saw NOT_SERVING goes away.
    watch.cancel()
    assert in_flight.result() == b"done"
    stopper.join(10)
    assert not stopper.is_alive()
    assert time.monotonic() - began < 4, "stop waited for the whole grace period"
    channel.close()


def test_what_loads_after_serving_loads_while_the_service_already_serves() -> None:
    release, health_then = threading.Event(), []

    def after() -> None:
        release.wait(5)
        health_then.append(_health(running.address, SERVICE))
        raise RuntimeError("no ranker here")  # said in the log; the service keeps serving

    running = start_server(ServiceSpec("echo", _echo_register(), after_serving=after))
    try:
        running.wait_until_serving(5)
        assert _health(running.address, SERVICE) == SERVING
        release.set()
        deadline = time.monotonic() + 5
        while not health_then and time.monotonic() < deadline:
            time.sleep(0.01)
        assert health_then == [SERVING] and _health(running.address, SERVICE) == SERVING
    finally:
        release.set()
        running.stop(0)


def test_a_failed_warmup_keeps_the_service_not_serving() -> None:
    def broken() -> None:
        raise RuntimeError("model file is corrupt")

    running = start_server(ServiceSpec("echo", _echo_register(), warmup=broken))
    try:
        with pytest.raises(WarmupFailed, match="model file is corrupt"):
            running.wait_until_serving(5)
        assert _health(running.address, SERVICE) == NOT_SERVING
    finally:
        running.stop(0)


def test_synchronous_warmup_is_done_when_start_returns() -> None:
    running = start_server(ServiceSpec("echo", _echo_register()), warmup_in_background=False)
    try:
        assert _health(running.address, SERVICE) == SERVING
    finally:
        running.stop(0)


@pytest.fixture
def echo_server() -> RunningServer:
    def invalid(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "path is outside the workspace")

    def buggy(request: bytes, context: grpc.ServicerContext) -> bytes:
        raise KeyError("secret internal detail")

    def buggy_stream(request: bytes, context: grpc.ServicerContext):
        yield b"first"
        raise ZeroDivisionError("division by zero in ranking")

    running = start_server(ServiceSpec("echo", _echo_register({
        "Invalid": grpc.unary_unary_rpc_method_handler(invalid),
        "Buggy": grpc.unary_unary_rpc_method_handler(buggy),
        "BuggyStream": grpc.unary_stream_rpc_method_handler(buggy_stream),
    })))
    running.wait_until_serving(5)
    yield running
    running.stop(0)


def test_aborts_keep_their_status_and_message(echo_server: RunningServer) -> None:
    with traced_channel(echo_server.address) as channel, pytest.raises(grpc.RpcError) as excinfo:
        channel.unary_unary(f"/{SERVICE}/Invalid")(b"", timeout=5)
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert excinfo.value.details() == "path is outside the workspace"


def test_unexpected_errors_become_internal_without_a_stack_trace(echo_server: RunningServer) -> None:
    with traced_channel(echo_server.address) as channel:
        with pytest.raises(grpc.RpcError) as excinfo:
            channel.unary_unary(f"/{SERVICE}/Buggy")(b"", timeout=5)
        assert excinfo.value.code() == grpc.StatusCode.INTERNAL
        assert "KeyError" in excinfo.value.details()
        assert "Traceback" not in excinfo.value.details()

        stream = channel.unary_stream(f"/{SERVICE}/BuggyStream")(b"", timeout=5)
        assert next(stream) == b"first"
        with pytest.raises(grpc.RpcError) as excinfo:
            next(stream)
        assert excinfo.value.code() == grpc.StatusCode.INTERNAL
        assert "ZeroDivisionError" in excinfo.value.details()


_CHILD = textwrap.dedent(
    """
    import sys, time, grpc
    from codecompass.common.config import GrpcSettings
    from codecompass.common.logging import configure_logging
    from codecompass.common.serving import ServiceSpec, serve_forever
    from codecompass.common.telemetry import init_telemetry

    def slow(request, context):
        time.sleep(float(request.decode()))
        return b"finished"

    def blas_threads(request, context):
        from threadpoolctl import threadpool_info
        return ",".join(str(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas").encode()

    def register(server):
        handler = grpc.method_handlers_generic_handler(
            "test.Echo", {"Slow": grpc.unary_unary_rpc_method_handler(slow),
                          "BlasThreads": grpc.unary_unary_rpc_method_handler(blas_threads)})
        server.add_generic_rpc_handlers((handler,))
        return ["test.Echo"]

    def warmup():
        if sys.argv[1] == "fail":
            raise RuntimeError("cannot load model")

    init_telemetry("codecompass-test")
    configure_logging("codecompass-test")
    sys.exit(serve_forever(ServiceSpec("echo", register, warmup), host="127.0.0.1", port=0, grace_s=3.0,
                           transport=GrpcSettings()))
    """
)


def _start_child(tmp_path: Path, mode: str) -> tuple[subprocess.Popen, str, Path]:
    log = tmp_path / "child.log"
    process = spawn("echo", [sys.executable, "-c", _CHILD, mode], dict(os.environ), log)
    return process, wait_for_listening("echo", process, log, 0, 30), log


def test_sigterm_drains_in_flight_calls_then_exits_zero(tmp_path: Path) -> None:
    process, address, log = _start_child(tmp_path, "ok")
    try:
        deadline = time.monotonic() + 10
        while _health(address, SERVICE) != SERVING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with grpc.insecure_channel(address) as channel:
            in_flight = channel.unary_unary(f"/{SERVICE}/Slow").future(b"1.0", timeout=10)
            time.sleep(0.3)
            sent = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert in_flight.result() == b"finished"
        assert process.wait(timeout=3.0 + 5) == 0, tail(log)
        assert time.monotonic() - sent < 3.0 + 2
        assert '"msg": "shutting down"' in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()


def test_a_served_process_runs_blas_on_one_thread(tmp_path: Path) -> None:
    """OpenBLAS's idle threads spin after each small call of a search: a served process holds it
    to one thread (before, two cores' machine: as many BLAS threads as cores)."""
    process, address, log = _start_child(tmp_path, "ok")
    try:
        with grpc.insecure_channel(address) as channel:
            found = channel.unary_unary(f"/{SERVICE}/BlasThreads")(b"", timeout=10, wait_for_ready=True)
        assert found.decode().split(",") == ["1"], tail(log)
    finally:
        process.kill()


def test_a_failed_warmup_exits_non_zero(tmp_path: Path) -> None:
    process, _, log = _start_child(tmp_path, "fail")
    try:
        assert process.wait(timeout=15) == 1
        assert "cannot load model" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
