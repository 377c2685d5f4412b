"""Background embedding steps aside for searches and syncs: it starts a request only once
interactive work has been quiet for a moment, and never waits longer than a bound."""

from __future__ import annotations

import threading
import time

import pytest

from codecompass.retrieval.interactive import InteractiveWork


def _hold(work: InteractiveWork, seconds: float) -> threading.Thread:
    entered = threading.Event()

    def run() -> None:
        with work.running():
            entered.set()
            time.sleep(seconds)

    thread = threading.Thread(target=run)
    thread.start()
    entered.wait()
    return thread


def test_background_waits_for_a_search_in_flight_and_a_quiet_moment_after_it() -> None:
    work = InteractiveWork()
    started = time.monotonic()
    thread = _hold(work, 0.4)
    work.wait_quiet(threading.Event())
    waited = time.monotonic() - started
    thread.join()
    assert 0.4 + InteractiveWork.QUIET_S - 0.05 <= waited < InteractiveWork.MAX_WAIT_S


def test_background_is_never_starved_and_stops_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(InteractiveWork, "MAX_WAIT_S", 0.3)
    work = InteractiveWork()
    thread = _hold(work, 1.5)
    started = time.monotonic()
    work.wait_quiet(threading.Event())
    assert 0.25 <= time.monotonic() - started < 1.0
    stop = threading.Event()
    stop.set()
    started = time.monotonic()
    work.wait_quiet(stop)
    assert time.monotonic() - started < 0.05
    thread.join()


def test_with_nothing_interactive_the_background_goes_on_at_once() -> None:
    started = time.monotonic()
    InteractiveWork().wait_quiet(threading.Event())
    assert time.monotonic() - started < 0.05


def test_reading_ahead_waits_for_quiet_as_long_as_searches_keep_coming_and_stops_at_once() -> None:
    work = InteractiveWork()
    stop = threading.Event()
    started = time.monotonic()
    first = _hold(work, 0.3)
    # A second search starts before the first ends: the quiet is counted from the last end.
    second = threading.Thread(target=lambda: (time.sleep(0.2), _hold(work, 0.4).join()))
    second.start()
    work.wait_idle(stop, 0.2)
    waited = time.monotonic() - started
    first.join()
    second.join()
    assert waited >= 0.2 + 0.4 + 0.2 - 0.05
    # No bound: with a call in flight it waits until stopped.
    holding = _hold(work, 1.5)
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    work.wait_idle(stop, 0.1)
    assert time.monotonic() - started < 1.4
    holding.join()
