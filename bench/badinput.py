"""The bad-input suite as a results file: runs exactly the tests marked `badinput` (across
tests/), and records each case, the behaviour its test asserts and the outcome, the number of
tracebacks in any output the tests captured (every CLI run echoes its output there) and the
failures, into bench/results/badinput-<UTC>.json (+ badinput-latest.json). `make bench-report`
turns that into the README's "Bad input and faults" table.

Run: .venv/bin/python -m bench.badinput [pytest args...]   (or `make bench-badinput`)
Exits 1 when a case failed or a traceback was seen; the results file is written either way.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from codecompass_dev.evaluation.results import REPO_ROOT, write_results

TRACEBACK = "Traceback (most recent call last)"
MARKER = "badinput"
COMMAND = "make bench-badinput"


@dataclass
class CaseRecord:
    nodeid: str
    case: str
    behaviour: str
    result: str = "not run"
    xfail_reason: str = ""
    duration_s: float = 0.0
    tracebacks: int = 0


# eq=False: pytest registers plugins in sets, so a plugin must hash by identity.
@dataclass(eq=False)
class BadInputRecorder:
    """A pytest plugin: one CaseRecord per test carrying the `badinput` marker."""

    cases: dict[str, CaseRecord] = field(default_factory=dict)
    unmarked_tracebacks: int = 0

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            marker = item.get_closest_marker(MARKER)
            if marker is None:
                continue
            case, behaviour = marker.kwargs.get("case", item.name), marker.kwargs.get("behaviour", "")
            self.cases[item.nodeid] = CaseRecord(item.nodeid, case, behaviour)
        # One marker on a parametrized test names several cases: the parameters tell them apart.
        seen: dict[str, list[CaseRecord]] = {}
        for record in self.cases.values():
            seen.setdefault(record.case, []).append(record)
        for records in seen.values():
            if len(records) > 1:
                for record in records:
                    params = record.nodeid.rpartition("[")[2].rstrip("]") if "[" in record.nodeid else record.nodeid
                    record.case = f"{record.case} [{params}]"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tracebacks = sum(content.count(TRACEBACK) for _name, content in report.sections)
        record = self.cases.get(report.nodeid)
        if record is None:
            self.unmarked_tracebacks += tracebacks
            return
        record.tracebacks += tracebacks
        record.duration_s += report.duration
        xfail = getattr(report, "wasxfail", None)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if xfail is not None:
                record.result = "xfailed" if report.skipped else "xpassed"
                record.xfail_reason = xfail.removeprefix("reason: ")
            elif report.skipped:
                record.result = "skipped"
            else:
                record.result = "passed" if report.passed else ("failed" if report.when == "call" else "error")
        elif report.when == "teardown" and report.failed:
            record.result = "error"

    def payload(self, duration_s: float, exit_code: int) -> dict[str, Any]:
        records = list(self.cases.values())
        results = [r.result for r in records]
        counts = {
            "cases": len(records),
            "passed": results.count("passed"),
            "xfailed": results.count("xfailed"),
            "xpassed": results.count("xpassed"),
            "failed": sum(r in ("failed", "error") for r in results),
            "not_run": sum(r in ("skipped", "not run") for r in results),
            "tracebacks": sum(r.tracebacks for r in records),
        }
        return {
            "command": COMMAND,
            "duration_s": round(duration_s, 1),
            "pytest_exit_code": int(exit_code),
            "counts": counts,
            "cases": [{"case": r.case, "behaviour": r.behaviour, "result": r.result, "xfail_reason": r.xfail_reason,
                       "tracebacks": r.tracebacks, "duration_s": round(r.duration_s, 2), "test": r.nodeid}
                      for r in records],
        }


def main(argv: list[str] | None = None) -> int:
    recorder = BadInputRecorder()
    started = time.monotonic()
    extra = list(sys.argv[1:] if argv is None else argv)
    # Every marked test under tests/ unless paths were given.
    paths = [] if any(not a.startswith("-") for a in extra) else [str(REPO_ROOT / "tests")]
    args = ["-q", "-m", MARKER, *extra, *paths]
    exit_code = pytest.main(args, plugins=[recorder])
    if exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        print(f"bench.badinput: pytest exited {int(exit_code)}; no results written", file=sys.stderr)
        return 2
    payload = recorder.payload(time.monotonic() - started, exit_code)
    path = write_results("badinput", payload)
    counts = payload["counts"]
    print(f"{counts['cases']} cases: {counts['passed']} passed, {counts['xfailed']} xfailed, "
          f"{counts['failed']} failed, {counts['tracebacks']} tracebacks -> {path.relative_to(REPO_ROOT)}")
    return 1 if counts["failed"] or counts["tracebacks"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
