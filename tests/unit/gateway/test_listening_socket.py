"""Where the HTTP gateway listens: `::` is both families (dual-stack, as the gRPC services are, so an
IPv6 or dual-stack cluster reaches it), every IPv4 address where the machine has no IPv6, and a
taken port is one clear line."""

from __future__ import annotations

import errno
import socket

import pytest
from codecompass_gateway import server
from codecompass_gateway.server import ListenError, listening_socket


def _reaches(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_the_ipv6_wildcard_takes_both_families() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    sock = listening_socket("::", 0)
    try:
        port = sock.getsockname()[1]
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 0
        assert _reaches("127.0.0.1", port) and _reaches("::1", port)
    finally:
        sock.close()


def test_without_ipv6_the_wildcard_is_every_ipv4_address(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.socket

    def no_ipv6(family: int = socket.AF_INET, *args, **kwargs):
        if family == socket.AF_INET6:
            raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol")
        return real(family, *args, **kwargs)

    monkeypatch.setattr(server.socket, "socket", no_ipv6)
    sock = listening_socket("::", 0)
    try:
        assert sock.family == socket.AF_INET and sock.getsockname()[0] == "0.0.0.0"
        assert _reaches("127.0.0.1", sock.getsockname()[1])
    finally:
        sock.close()


def test_a_taken_port_is_one_line() -> None:
    taken = listening_socket("127.0.0.1", 0)
    try:
        with pytest.raises(ListenError, match=r"cannot listen on 127\.0\.0\.1:\d+: address already in use"):
            listening_socket("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
