"""How many cores this process may use: what sizes thread pools and caps worker processes."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform has one (a
    container's cpuset, `taskset`), else the machine's count."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1
