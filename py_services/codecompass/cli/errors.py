"""CLI failures as one-line messages with an exit code, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc

EXIT_FAILURE = 1
EXIT_USAGE = 2


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = EXIT_FAILURE, detail: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        # Extra lines (e.g. a service's log tail) printed after the message.
        self.detail = detail


@contextmanager
def rpc_errors(service: str, address: str) -> Iterator[None]:
    """Map gRPC failures of a call to ``service`` into CliErrors that say what to do."""
    try:
        yield
    except grpc.RpcError as exc:
        code = exc.code() if hasattr(exc, "code") else None
        details = exc.details() if hasattr(exc, "details") else str(exc)
        if code == grpc.StatusCode.UNAVAILABLE:
            raise CliError(f"{service} service not running at {address}; run `codecompass up`") from None
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise CliError(f"{service} service at {address} did not answer in time ({details})") from None
        if code == grpc.StatusCode.UNIMPLEMENTED:
            raise CliError(f"{service} service at {address} does not implement this call ({details})") from None
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            raise CliError(f"{service}: {details}", EXIT_USAGE) from None
        name = code.name if code is not None else "ERROR"
        raise CliError(f"{service} service error {name}: {details}") from None
