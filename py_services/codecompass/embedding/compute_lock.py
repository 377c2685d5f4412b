"""One model run at a time, with queries ahead of waiting document batches.

The local models already use every core for one batch, so running two batches
at once only makes both slower. Background indexing sends long streams of
document batches; a search query queued behind them would wait for all of
them, so a query takes the model as soon as the batch in flight ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class PriorityLock:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._busy = False
        self._urgent_waiting = 0

    @contextmanager
    def hold(self, *, urgent: bool) -> Iterator[None]:
        with self._condition:
            if urgent:
                self._urgent_waiting += 1
            try:
                while self._busy or (not urgent and self._urgent_waiting):
                    self._condition.wait()
            finally:
                if urgent:
                    self._urgent_waiting -= 1
            self._busy = True
        try:
            yield
        finally:
            with self._condition:
                self._busy = False
                self._condition.notify_all()
