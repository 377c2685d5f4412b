"""The socket guard catches what it must, in Python, in native code and in Node, and lets the
loopback through: without this, an empty violations log in the privacy test would prove nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.fixtures.socket_guard import SocketGuard, build_socket_guard

# TEST-NET-1 (RFC 5737): never routed, so a guard that failed open would not reach anyone either.
UNROUTED = "192.0.2.1"

PYTHON_PROBE = textwrap.dedent(f"""
    import ctypes, socket

    def attempt(what, call):
        try:
            call()
            print(what, "went through")
        except OSError as exc:
            print(what, "refused", type(exc).__name__)

    attempt("tcp", lambda: socket.create_connection(("{UNROUTED}", 9), timeout=5))
    attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("{UNROUTED}", 9)))
    attempt("lookup", lambda: socket.getaddrinfo("example.com", 443))
    # What a native library does (onnxruntime's telemetry uploader resolves its host this way).
    libc = ctypes.CDLL(None)
    result = ctypes.c_void_p()
    print("native lookup returned", libc.getaddrinfo(b"telemetry.example.net", None, None, ctypes.byref(result)))

    server = socket.create_server(("127.0.0.1", 0))
    with socket.create_connection(server.getsockname(), timeout=5):
        print("loopback connected")
    print("localhost resolves", bool(socket.getaddrinfo("localhost", 80)))
""")

NODE_PROBE = textwrap.dedent(f"""
    const net = require('node:net');
    const dns = require('node:dns');
    const done = (what) => (err) => console.log(what, err ? 'refused ' + err.code : 'went through');
    const socket = net.connect({{ host: '{UNROUTED}', port: 9 }});
    socket.on('connect', () => {{ done('tcp')(); socket.destroy(); }});
    socket.on('error', done('tcp'));
    dns.lookup('example.com', done('lookup'));
    // c-ares, not getaddrinfo: it sends to the configured name server itself.
    const resolver = new dns.Resolver({{ timeout: 500, tries: 1 }});
    resolver.resolve4('example.org', done('resolve'));
""")


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory) -> SocketGuard:
    return build_socket_guard(tmp_path_factory.mktemp("socket-guard"))


def run_guarded(guard: SocketGuard, argv: list[str]) -> str:
    done = subprocess.run(argv, env={**os.environ, **guard.env()}, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def targets(guard: SocketGuard) -> set[tuple[str, str]]:
    """(call, target) of every violation, the process left out."""
    return {tuple(line.split(" ", 3)[2:]) for line in guard.violations()}


def test_python_and_native_code_are_refused_and_recorded(guard: SocketGuard, tmp_path: Path) -> None:
    guard.log.unlink(missing_ok=True)
    script = tmp_path / "probe.py"
    script.write_text(PYTHON_PROBE)
    out = run_guarded(guard, [sys.executable, str(script)])
    assert "tcp refused OSError" in out and "udp refused OSError" in out, out
    assert "lookup refused gaierror" in out and "native lookup returned 0" not in out, out
    assert "loopback connected" in out and "localhost resolves True" in out, out
    assert targets(guard) == {("connect", f"{UNROUTED}:9"), ("sendto", f"{UNROUTED}:9"),
                              ("getaddrinfo", "example.com"), ("getaddrinfo", "telemetry.example.net")}


def test_node_connections_and_both_resolvers_are_refused_and_recorded(guard: SocketGuard) -> None:
    guard.log.unlink(missing_ok=True)
    out = run_guarded(guard, ["node", "-e", NODE_PROBE])
    for what in ("tcp", "lookup", "resolve"):
        assert f"{what} refused" in out, out
    calls = targets(guard)
    assert {("connect", f"{UNROUTED}:9"), ("getaddrinfo", "example.com")} <= calls, calls
    # The name server's address depends on the machine; that it was refused does not.
    assert any(target.endswith(":53") for _, target in calls), calls
