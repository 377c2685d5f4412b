"""gRPC failures as one error type that names the service, its address and what happened.

A status code is read here once, into a kind; what each kind means to whoever acts on a failure
(the gateway's tool error code, whether the caller can fix the request, whether the service was
reached at all) is one row of `KINDS`. Callers read a row; none maps kinds again."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc

UNAVAILABLE = "unavailable"
DEADLINE = "deadline_exceeded"
INVALID = "invalid_argument"
NOT_FOUND = "not_found"
UNIMPLEMENTED = "unimplemented"
FAILED = "failed"
# Trailing metadata of an UNAVAILABLE a server sends because a service *it* depends on is down:
# the server itself answered, so "not running" would blame the wrong one.
UPSTREAM_KEY = "codecompass-upstream-unavailable"
# The trailer a server sets to tell gRPC's retries not to try again (common/serving.py NO_RETRY).
PUSHBACK_KEY = "grpc-retry-pushback-ms"



@dataclass(frozen=True)
class Kind:
    """What one kind of failure means to those who act on it."""

    status: grpc.StatusCode | None  # the gRPC status code read as this kind; None: every code no row names
    tool_code: str  # the gateway's MCP tool error code (registered in codecompass_gateway.errors)
    callers_to_fix: bool  # the request named something wrong or absent: the message says what to change
    reached: bool  # False: the service was down or too slow, upstream of whoever depends on it


KINDS: dict[str, Kind] = {
    UNAVAILABLE: Kind(grpc.StatusCode.UNAVAILABLE, "service_unavailable", callers_to_fix=False, reached=False),
    DEADLINE: Kind(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline_exceeded", callers_to_fix=False, reached=False),
    INVALID: Kind(grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument", callers_to_fix=True, reached=True),
    NOT_FOUND: Kind(grpc.StatusCode.NOT_FOUND, "not_found", callers_to_fix=True, reached=True),
    UNIMPLEMENTED: Kind(grpc.StatusCode.UNIMPLEMENTED, "service_error", callers_to_fix=False, reached=True),
    FAILED: Kind(None, "service_error", callers_to_fix=False, reached=True),
}
_KIND_OF_STATUS = {row.status: kind for kind, row in KINDS.items() if row.status is not None}


class ServiceError(Exception):
    """A call to `service` failed; `kind` is one of the constants above, `message` one line."""

    def __init__(self, service: str, address: str, kind: str, message: str, *, upstream: bool = False,
                 status: str = "") -> None:
        super().__init__(message)
        self.service = service
        self.address = address
        self.kind = kind
        # The gRPC status code's name ("INTERNAL"), for messages that must say more than `kind`.
        self.status = status
        # The service answered; one it depends on is down (the message names it).
        self.upstream = upstream

    @property
    def meaning(self) -> Kind:
        return KINDS.get(self.kind, KINDS[FAILED])

    def user_message(self) -> str:
        if self.upstream:
            return f"{self.service}: {self}"
        if self.kind == UNAVAILABLE:
            return f"{self.service} service not running at {self.address}; run `codecompass up`"
        if self.kind == DEADLINE:
            return f"{self.service} service at {self.address} did not answer in time ({self})"
        if self.kind == UNIMPLEMENTED:
            return f"{self.service} service at {self.address} does not implement this call ({self})"
        if self.kind in (INVALID, NOT_FOUND):
            return f"{self.service}: {self}"
        return f"{self.service} service error: {self}"


@contextmanager
def mapped(service: str, address: str) -> Iterator[None]:
    try:
        yield
    except grpc.RpcError as exc:
        code = exc.code() if hasattr(exc, "code") else None
        details = (exc.details() if hasattr(exc, "details") else None) or str(code)
        trailing = (exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None) or ()
        upstream = any(key == UPSTREAM_KEY for key, _value in trailing)
        # A server that asked not to be retried (gRPC retry pushback) answered: it is not down.
        pushed_back = any(key == PUSHBACK_KEY for key, _value in trailing)
        raise ServiceError(service, address, _KIND_OF_STATUS.get(code, FAILED), details,
                           upstream=upstream or pushed_back,
                           status=code.name if code is not None else "UNKNOWN") from None
