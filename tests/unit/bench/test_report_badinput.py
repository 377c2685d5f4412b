"""The bad-input table: what bench.badinput records from pytest's reports, and how it renders."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from bench.badinput import BadInputRecorder, CaseRecord
from bench.report.faults import render_badinput
from bench.report.sections import SECTIONS


@dataclass
class FakeReport:
    nodeid: str
    when: str
    outcome: str
    duration: float = 0.5
    sections: list[tuple[str, str]] = field(default_factory=list)
    wasxfail: str | None = None

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def skipped(self) -> bool:
        return self.outcome == "skipped"

    def __getattr__(self, name: str):
        raise AttributeError(name)


def _recorder(*cases: tuple[str, str, str]) -> BadInputRecorder:
    recorder = BadInputRecorder()
    for nodeid, case, behaviour in cases:
        recorder.cases[nodeid] = CaseRecord(nodeid, case, behaviour)
    return recorder


def _feed(recorder: BadInputRecorder, nodeid: str, call: str, **extra) -> None:
    recorder.pytest_runtest_logreport(FakeReport(nodeid, "setup", "passed"))
    recorder.pytest_runtest_logreport(FakeReport(nodeid, "call", call, **extra))
    recorder.pytest_runtest_logreport(FakeReport(nodeid, "teardown", "passed"))


def test_outcomes_tracebacks_and_counts() -> None:
    recorder = _recorder(("t.py::a", "binary file", "skipped"), ("t.py::b", "kill", "names it"),
                         ("t.py::c", "huge query", "exit 2"))
    _feed(recorder, "t.py::a", "passed", sections=[("Captured stdout call", "$ codecompass index\n[exit 0]")])
    _feed(recorder, "t.py::b", "skipped", wasxfail="owner: not yet")
    _feed(recorder, "t.py::c", "failed",
          sections=[("Captured stdout call", "Traceback (most recent call last):\n  File x")])
    # Output of a test without the marker still counts, apart.
    recorder.pytest_runtest_logreport(FakeReport("t.py::other", "call", "passed",
                                                 sections=[("Captured stderr call",
                                                            "Traceback (most recent call last)")]))
    payload = recorder.payload(12.34, 1)
    assert payload["counts"] == {"cases": 3, "passed": 1, "xfailed": 1, "xpassed": 0, "failed": 1, "not_run": 0,
                                 "tracebacks": 1}
    assert recorder.unmarked_tracebacks == 1
    assert [(c["case"], c["result"], c["xfail_reason"]) for c in payload["cases"]] == [
        ("binary file", "passed", ""), ("kill", "xfailed", "owner: not yet"), ("huge query", "failed", "")]
    assert payload["duration_s"] == 12.3 and payload["command"] == "make bench-badinput"


def test_the_recorder_registers_as_a_pytest_plugin() -> None:
    manager = pytest.PytestPluginManager()
    recorder = BadInputRecorder()
    manager.register(recorder)
    assert manager.is_registered(recorder)


def test_a_failed_setup_or_teardown_is_an_error() -> None:
    recorder = _recorder(("t.py::a", "a", ""), ("t.py::b", "b", ""))
    recorder.pytest_runtest_logreport(FakeReport("t.py::a", "setup", "failed"))
    _feed(recorder, "t.py::b", "passed")
    recorder.pytest_runtest_logreport(FakeReport("t.py::b", "teardown", "failed"))
    assert [c["result"] for c in recorder.payload(1.0, 1)["cases"]] == ["error", "error"]
    assert recorder.payload(1.0, 1)["counts"]["failed"] == 2


def test_the_table_has_one_row_per_case_and_the_totals() -> None:
    doc = {
        "kind": "badinput", "command": "make bench-badinput", "duration_s": 151.2,
        "run": {"date_utc": "2026-11-23T19:00:00+00:00", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "counts": {"cases": 3, "passed": 2, "xfailed": 1, "xpassed": 0, "failed": 0, "not_run": 0, "tracebacks": 0},
        "cases": [
            {"case": "binary file", "behaviour": "skipped with reason `binary`", "result": "passed",
             "xfail_reason": ""},
            {"case": "FTS-like syntax: OR (`a | b`)", "behaviour": "plain words", "result": "passed",
             "xfail_reason": ""},
            {"case": "kill -9 of analysis during index", "behaviour": "one line naming analysis",
             "result": "xfailed", "xfail_reason": "service outages (lead): says retrieval"},
        ],
    }
    text = render_badinput(doc)
    assert "**3 cases**: 2 pass, 1 known gaps" in text and "**0 tracebacks** in any output" in text
    assert "`make bench-badinput`, 151 s." in text
    assert "| Case | Behaviour | Result |" in text
    assert "| binary file | skipped with reason `binary` | pass |" in text
    assert "| FTS-like syntax: OR (`a \\| b`) | plain words | pass |" in text
    assert "| kill -9 of analysis during index | one line naming analysis | xfail: service outages (lead): " \
           "says retrieval |" in text
    assert SECTIONS["badinput"].kind == "badinput"
