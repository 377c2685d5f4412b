"""One service's connection, shared by every client of this package: a deadline on each call,
gRPC failures as `ServiceError`, and calls that follow a service `codecompass up` restarted.

`up` restarts a dead service on the port it had, or on a new one when another program took
that port; runtime.json says where each service is. A client made before the restart must not
fail from then on, so:
- a client given a resolver asks it before each call where the service is now, and moves its
  channel when the answer changed (the runtime's resolver reads runtime.json only when the file
  changed): a port taken by another program may accept connections and never answer, so waiting
  for a failure would not do;
- a call that fails with UNAVAILABLE from the service itself (not the upstream kind: there the
  service answered, and one it depends on is down) is tried once more on a fresh channel, within
  the same deadline: the old channel may still wait out a reconnect backoff after the service
  came back.

Every call of these services is safe to repeat: the reads, and the two writes (Sync,
IndexWorkspace) bring an index to the state of the files, so a second one finds nothing more to
do. A server stream is retried only before its first message: after that, the caller has acted
on part of the answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import grpc

from codecompass.clients.errors import FAILED, UNAVAILABLE, ServiceError, mapped
from codecompass.common.channels import traced_channel

# Where a service is: a fixed address, or a function that says where it is now (asked again
# after the service was unreachable).
Address = str | Callable[[], str]
# A service's name -> its address now (for `codecompass`: the local runtime's runtime.json).
Locate = Callable[[str], str]

StubT = TypeVar("StubT")

# A second try with less time left than this could only end in DEADLINE_EXCEEDED, which would
# hide that the service was unreachable.
MIN_RETRY_S = 0.05


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

    def __init__(self, service: str, address: Address, stub: Callable[[grpc.Channel], StubT]) -> None:
        self.service = service
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
        """The unary `method`; tried once more on a fresh channel when the service was unreachable."""
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
        """The server stream `method`; tried once more on a fresh channel when the service was
        unreachable before the first message."""
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
            return callable_.future(request, timeout=timeout_s) if unary else callable_(request, timeout=timeout_s)

    def _worth_retrying(self, exc: ServiceError, deadline: float) -> bool:
        return (exc.kind == UNAVAILABLE and not exc.upstream and not self._closed
                and deadline - time.monotonic() > MIN_RETRY_S)

    def _open(self, address: str) -> _Connection[StubT]:
        channel = traced_channel(address)
        return _Connection(address, channel, self._make_stub(channel))

    def _acquire(self, failed: _Connection[StubT] | None = None) -> _Connection[StubT]:
        """The connection for the next call: the current one, or a new one where the resolver says
        the service is now, or (after `failed`) a fresh one, which connects at once where the
        failed one may wait out its backoff. Another call may have replaced it first: then that
        replacement serves."""
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
