"""CLI failures as one-line messages with an exit code, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from codecompass.clients.errors import INVALID, ServiceError

EXIT_FAILURE = 1
EXIT_USAGE = 2


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = EXIT_FAILURE, detail: str = "") -> None:
        super().__init__(message)
        self.exit_code = exit_code
        # Extra lines (e.g. a service's log tail) printed after the message.
        self.detail = detail


@contextmanager
def service_errors() -> Iterator[None]:
    """Failures the clients package raised, as CliErrors that say what to do."""
    try:
        yield
    except ServiceError as exc:
        raise CliError(exc.user_message(), EXIT_USAGE if exc.kind == INVALID else EXIT_FAILURE) from None
