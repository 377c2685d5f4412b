"""gRPC failures as one error type that names the service, its address and what happened."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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

_KINDS = {
    grpc.StatusCode.UNAVAILABLE: UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED: DEADLINE,
    grpc.StatusCode.INVALID_ARGUMENT: INVALID,
    grpc.StatusCode.NOT_FOUND: NOT_FOUND,
    grpc.StatusCode.UNIMPLEMENTED: UNIMPLEMENTED,
}


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
        raise ServiceError(service, address, _KINDS.get(code, FAILED), details, upstream=upstream,
                           status=code.name if code is not None else "UNKNOWN") from None
