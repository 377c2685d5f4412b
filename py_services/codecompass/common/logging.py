"""Structured JSON logs on stderr, one object per line, joined to traces.

Fields: ts, level, service, logger, msg, trace_id, span_id (when a span is
current), any ``extra=`` fields, and ``exc`` for tracebacks. Values of secret
env vars are scrubbed from every line as a last line of defence: a key that
slips into an exception message still never reaches a log file.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, TextIO

from codecompass.common.config import API_KEY_ENV, parse_log_level
from codecompass.common.telemetry import current_trace_ids

SECRET_ENV_VARS = (API_KEY_ENV,)
_SECRET_FIELD_MARKERS = ("api_key", "apikey", "authorization", "password", "secret", "access_token")
_REDACTED = "***"
# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD_ATTRS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self._service = service
        # Longest first so a secret that contains another is replaced whole.
        self._secrets = tuple(sorted((s for s in secrets if len(s) >= 4), key=len, reverse=True))

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "service": self._service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        ids = current_trace_ids()
        if ids is not None:
            entry["trace_id"], entry["span_id"] = ids
        for key, value in record.__dict__.items():
            if key in _STANDARD_ATTRS or key.startswith("_") or key in entry:
                continue
            entry[key] = _REDACTED if _looks_secret(key) else value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        line = json.dumps(entry, default=str, ensure_ascii=False)
        for secret in self._secrets:
            line = line.replace(secret, _REDACTED)
        return line


def _looks_secret(field_name: str) -> bool:
    lowered = field_name.lower()
    return any(marker in lowered for marker in _SECRET_FIELD_MARKERS)


def _resolve_level(level: str | None) -> int:
    # Services set up logging before they load their settings (so a bad setting is logged),
    # hence LOG_LEVEL is read here, with the parser the settings use.
    if level is not None:
        return getattr(logging, parse_log_level(level, "level"))
    return getattr(logging, parse_log_level(os.environ.get("LOG_LEVEL", "INFO"), "LOG_LEVEL"))


def configure_logging(service_name: str, level: str | None = None, *, stream: TextIO | None = None) -> None:
    """Send every log record of this process as JSON lines to stderr (or ``stream``)."""
    secrets = tuple(os.environ[name] for name in SECRET_ENV_VARS if os.environ.get(name))
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter(service_name, secrets))
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(_resolve_level(level))
    # HTTP client libraries log every request at INFO; their warnings still show.
    for noisy in ("httpx", "httpcore", "urllib3", "filelock"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(name)
