"""Calls to an address naming several servers (a headless Service's DNS name in Kubernetes, an
address list here) are spread over every server, and a server that goes away costs no call."""

from __future__ import annotations

import threading
from collections import Counter
from types import SimpleNamespace

import grpc

from codecompass.clients.channel import ServiceChannel
from codecompass.common.serving import ServiceSpec, start_server

_METHOD = "/codecompass.test.Echo/Ping"


def _echo_server(name: str, served: Counter, lock: threading.Lock):
    def ping(request: bytes, _context: grpc.ServicerContext) -> bytes:
        with lock:
            served[name] += 1
        return name.encode()

    def register(server: grpc.Server) -> list[str]:
        handler = grpc.method_handlers_generic_handler("codecompass.test.Echo", {
            "Ping": grpc.unary_unary_rpc_method_handler(ping, lambda b: b, lambda b: b)})
        server.add_generic_rpc_handlers((handler,))
        return ["codecompass.test.Echo"]

    running = start_server(ServiceSpec(name=name, register=register, scaled_out=True))
    running.wait_until_serving(5)
    return running


def _stub(channel: grpc.Channel) -> SimpleNamespace:
    return SimpleNamespace(Ping=channel.unary_unary(_METHOD, request_serializer=lambda b: b,
                                                    response_deserializer=lambda b: b))


def test_calls_spread_over_every_server_and_survive_one_stopping() -> None:
    served: Counter = Counter()
    lock = threading.Lock()
    first, second = _echo_server("one", served, lock), _echo_server("two", served, lock)
    channel = ServiceChannel("retrieval", f"ipv4:127.0.0.1:{first.port},127.0.0.1:{second.port}", _stub)
    try:
        answers = [channel.call("Ping", b"", 5.0) for _ in range(40)]
        assert served["one"] > 5 and served["two"] > 5, served
        assert set(answers) == {b"one", b"two"}

        first.stop(0)
        after = [channel.call("Ping", b"", 5.0) for _ in range(20)]
        assert after == [b"two"] * 20
    finally:
        channel.close()
        first.stop(0)
        second.stop(0)
