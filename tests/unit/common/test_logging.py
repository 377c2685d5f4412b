"""JSON log lines: fields, trace correlation, levels, secret scrubbing."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from codecompass.common import names
from codecompass.common.config import ConfigError
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.telemetry import tracer


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


def _lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


@pytest.mark.usefixtures("restore_root_logger")
def test_each_record_is_one_json_object_with_the_standard_fields() -> None:
    stream = io.StringIO()
    configure_logging(names.EMBEDDING, stream=stream)
    get_logger("codecompass.embedding.model").info("loaded %s", "minilm", extra={"dims": 384})
    (entry,) = _lines(stream)
    assert entry["level"] == "INFO"
    assert entry["service"] == names.EMBEDDING
    assert entry["logger"] == "codecompass.embedding.model"
    assert entry["msg"] == "loaded minilm"
    assert entry["dims"] == 384
    assert entry["ts"].endswith("Z") and "T" in entry["ts"]
    assert "trace_id" not in entry


@pytest.mark.usefixtures("restore_root_logger")
def test_records_inside_a_span_carry_its_ids() -> None:
    stream = io.StringIO()
    configure_logging("svc", stream=stream)
    with tracer("test").start_as_current_span("work") as span:
        get_logger("t").warning("inside")
        ctx = span.get_span_context()
    (entry,) = _lines(stream)
    assert entry["trace_id"] == format(ctx.trace_id, "032x")
    assert entry["span_id"] == format(ctx.span_id, "016x")


@pytest.mark.usefixtures("restore_root_logger")
def test_exceptions_are_logged_as_a_field_of_the_same_line() -> None:
    stream = io.StringIO()
    configure_logging("svc", stream=stream)
    try:
        raise ValueError("bad chunk")
    except ValueError:
        get_logger("t").exception("failed")
    (entry,) = _lines(stream)
    assert entry["level"] == "ERROR"
    assert "ValueError: bad chunk" in entry["exc"]


@pytest.mark.usefixtures("restore_root_logger")
def test_log_level_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setenv("LOG_LEVEL", "warn")
    configure_logging("svc", stream=stream)
    get_logger("t").info("hidden")
    get_logger("t").warning("shown")
    assert [entry["msg"] for entry in _lines(stream)] == ["shown"]


@pytest.mark.usefixtures("restore_root_logger")
def test_a_bad_log_level_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_LEVEL", "loud")
    with pytest.raises(ConfigError, match="^LOG_LEVEL:"):
        configure_logging("svc", stream=io.StringIO())


@pytest.mark.usefixtures("restore_root_logger")
def test_secret_looking_extra_fields_and_key_values_are_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECOMPASS_EMBEDDING_API_KEY", "pa-0123456789abcdef")
    stream = io.StringIO()
    configure_logging("svc", stream=stream)
    get_logger("t").error("request failed: 401 for key pa-0123456789abcdef",
                          extra={"authorization": "Bearer xyz", "tokens": 12})
    (entry,) = _lines(stream)
    assert entry["msg"] == "request failed: 401 for key ***"
    assert entry["authorization"] == "***"
    assert entry["tokens"] == 12
    assert "pa-0123456789abcdef" not in stream.getvalue()


@pytest.mark.usefixtures("restore_root_logger")
def test_configuring_twice_keeps_one_handler() -> None:
    stream = io.StringIO()
    configure_logging("svc", stream=io.StringIO())
    configure_logging("svc", stream=stream)
    get_logger("t").info("once")
    assert len(_lines(stream)) == 1
    assert len(logging.getLogger().handlers) == 1
