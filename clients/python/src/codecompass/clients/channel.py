"""One service's connection, shared by every client of this package: a deadline on each call,
gRPC failures as `ServiceError`, the service token and TLS of its transport (transport.py: by
default the process's, which the services set from their `grpc` settings), retries by the
published service config, and calls that follow a service `codecompass up` restarted elsewhere.

Retries and deadlines are a gRPC service config published beside this module (service_config.json,
described in docs/grpc.md), which any gRPC client may load. Every call of these services is safe
to repeat: the reads, and the two writes (Sync, IndexWorkspace) bring an index to the state of the
files, so a second one finds nothing more to do. So a call that fails UNAVAILABLE is tried again,
up to 3 attempts within 0.07 s: a searcher pod going away behind round_robin, a dropped
connection. Short on purpose: a service that is down must fail a call within the gateway's 300 ms
freshness budget (the answer then says the sync failed, not that it is still running); a service
restarted on its port is reached by one more try on a fresh channel (below). gRPC
retries a server stream only before its first message: after that, the caller has acted on part of
the answer. A server whose own dependency is down answers UNAVAILABLE with pushback (retrieval's
servicer), so retries never multiply across hops. The config's timeouts are ceilings for a caller
that sets no deadline; every call here sets its own (the settings' rpc_timeout_s,
long_rpc_timeout_s), under them. No retry throttling: a channel to a service that is down fails
its attempts at once, with no traffic, and throttling would leave the first call after the service
came back one attempt only.

What the service config cannot do: a channel whose service died waits out a reconnect backoff
after the service came back (on the port it had: `codecompass up` restarts it there), failing
every call at once meanwhile; so a call still UNAVAILABLE from the service itself (not the
upstream kind: there the service answered, and one it depends on is down) is tried once more, on a
fresh channel, within the same deadline. And `up` restarts a dead service on the port it had, or
on a new one when another program took that port; runtime.json says where each service is. A
client given a resolver asks it before each call where the service is now, and moves its channel
when the answer changed (the runtime's resolver reads runtime.json only when the file changed): a
port taken by another program may accept connections and never answer, so waiting for a failure
would not do.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import grpc

from codecompass.clients import transport as transports
from codecompass.clients.errors import FAILED, UNAVAILABLE, ServiceError, mapped
from codecompass.clients.transport import ClientTransport
from codecompass.common.channels import CHANNEL_OPTIONS, RECONNECT_OPTIONS, traced

# Where a service is: a fixed address, or a function that says where it is now (asked again
# after the service was unreachable).
Address = str | Callable[[], str]
# A service's name -> its address now (for `codecompass`: the local runtime's runtime.json).
Locate = Callable[[str], str]

StubT = TypeVar("StubT")

# A second try with less time left than this could only end in DEADLINE_EXCEEDED, which would
# hide that the service was unreachable.
MIN_RETRY_S = 0.05

SERVICE_CONFIG_FILE = Path(__file__).with_name("service_config.json")
# The channel options that apply it; the file is read once per process.
SERVICE_CONFIG_OPTIONS = (
    ("grpc.service_config", SERVICE_CONFIG_FILE.read_text(encoding="utf-8")),
    ("grpc.enable_retries", 1),
    # The published file is the policy: no DNS TXT record may replace it.
    ("grpc.service_config_disable_resolution", 1),
)


def address_for(service: str, configured: str, locate: Locate | None) -> Address:
    """The configured address when nothing locates services, else `service` as `locate` finds it."""
    if locate is None:
        return configured
    return lambda: locate(service)


@dataclass(eq=False)
class _Connection(Generic[StubT]):
    address: str
    channel: grpc.Channel
    stub: StubT
    calls: int = 0  # calls in flight: a replaced channel is closed when the last one ends
    replaced: bool = False


class ServiceChannel(Generic[StubT]):
    """The channel to one service, moved to where the service is now."""

    def __init__(self, service: str, address: Address, stub: Callable[[grpc.Channel], StubT],
                 transport: ClientTransport | None = None) -> None:
        """`transport`: how to dial and what token to send; by default the process's (which the
        services, the gateway and the CLI set from their `grpc` settings), so every caller does as
        the deployment says."""
        self.service = service
        self._transport = transport if transport is not None else transports.default()
        self._resolve: Callable[[], str] = address if callable(address) else (lambda: address)
        self._make_stub = stub
        self._lock = threading.Lock()
        # Held while a call is created and while the channel closes, never while a call waits:
        # gRPC's C core can crash creating a call on a channel another thread is closing (seen as
        # a segfault when a session ended while a background status call started). A call made
        # before the close is cancelled by it, which is safe.
        self._creating = threading.Lock()
        self._closed = False
        self._current = self._open(self._resolve())

    @property
    def address(self) -> str:
        """The address calls go to now."""
        return self._current.address

    def call(self, method: str, request: Any, timeout_s: float) -> Any:
        """The unary `method`, retried by the service config, and once more on a fresh channel
        when the service was still unreachable."""
        deadline = time.monotonic() + timeout_s
        connection = self._acquire()
        try:
            return self._unary(connection, method, request, timeout_s)
        except ServiceError as exc:
            if not self._worth_retrying(exc, deadline):
                raise
        finally:
            self._release(connection)
        connection = self._acquire(failed=connection)
        try:
            return self._unary(connection, method, request, deadline - time.monotonic())
        finally:
            self._release(connection)

    def stream(self, method: str, request: Any, timeout_s: float) -> Iterator[Any]:
        """The server stream `method`, retried as a unary call is, before its first message only."""
        deadline = time.monotonic() + timeout_s
        connection = self._acquire()
        received = False
        try:
            with mapped(self.service, connection.address):
                for reply in self._start(connection, method, request, timeout_s):
                    received = True
                    yield reply
            return
        except ServiceError as exc:
            if received or not self._worth_retrying(exc, deadline):
                raise
        finally:
            self._release(connection)
        connection = self._acquire(failed=connection)
        try:
            with mapped(self.service, connection.address):
                yield from self._start(connection, method, request, deadline - time.monotonic())
        finally:
            self._release(connection)

    def _worth_retrying(self, exc: ServiceError, deadline: float) -> bool:
        return (exc.kind == UNAVAILABLE and not exc.upstream and not self._closed
                and deadline - time.monotonic() > MIN_RETRY_S)

    def close(self) -> None:
        with self._creating:
            with self._lock:
                self._closed = True
                connection = self._current
            connection.channel.close()

    def _unary(self, connection: _Connection[StubT], method: str, request: Any, timeout_s: float) -> Any:
        with mapped(self.service, connection.address):
            return self._start(connection, method, request, timeout_s, unary=True).result()

    def _start(self, connection: _Connection[StubT], method: str, request: Any, timeout_s: float,
               unary: bool = False) -> Any:
        """The call, created (a unary one as a future, which returns at once) unless the client
        closed meanwhile."""
        with self._creating:
            if self._closed:
                raise ServiceError(self.service, connection.address, FAILED, "the client was closed")
            callable_ = getattr(connection.stub, method)
            # The token is read per call: a rotated token file is sent from the next call on.
            metadata = self._transport.metadata()
            return (callable_.future(request, timeout=timeout_s, metadata=metadata) if unary
                    else callable_(request, timeout=timeout_s, metadata=metadata))

    def _open(self, address: str) -> _Connection[StubT]:
        channel = traced(self._transport.channel(address, CHANNEL_OPTIONS + RECONNECT_OPTIONS + SERVICE_CONFIG_OPTIONS))
        return _Connection(address, channel, self._make_stub(channel))

    def _acquire(self, failed: _Connection[StubT] | None = None) -> _Connection[StubT]:
        """The connection for the next call: the current one, or a new one where the resolver says
        the service is now, or (after `failed`) a fresh one, which connects at once where the
        failed one may wait out its reconnect backoff. Another call may have replaced it first:
        then that replacement serves."""
        with self._lock:
            if self._closed and failed is None:
                # gRPC's C core can crash on a call through a closed channel: refuse it here.
                raise ServiceError(self.service, self._current.address, FAILED, "the client was closed")
        address = self._resolve()
        with self._lock:
            current = self._current
        fresh = None
        if current.address != address or current is failed:
            fresh = self._open(address)
        with self._lock:
            unused = None
            if fresh is not None:
                if self._current is current and not self._closed:
                    self._current, current.replaced = fresh, True
                    unused = current if current.calls == 0 else None
                else:
                    unused = fresh
            connection = self._current
            connection.calls += 1
        if unused is not None:
            unused.channel.close()
        return connection

    def _release(self, connection: _Connection[StubT]) -> None:
        with self._lock:
            connection.calls -= 1
            finished = connection.replaced and connection.calls == 0
        if finished:
            connection.channel.close()
