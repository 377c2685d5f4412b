"""How many cores this process may use: what sizes thread pools and caps worker processes."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the platform has one (a
    container's cpuset, `taskset`), else the machine's count."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else os.cpu_count() or 1


def one_blas_thread() -> None:
    """numpy's BLAS on one thread in a serving process. A search's BLAS calls are small (one
    query against the version's vectors, a few hundred candidates' features), and after each one
    OpenBLAS's extra threads spin waiting for the next: on ws-300k with two cores they burned 61
    ms of CPU per answer in the retrieval service against 37 ms of real work, and the answers a
    machine serves fell by half. Concurrency comes from the server's request threads instead."""
    import numpy  # noqa: F401 - loads the BLAS library the limit applies to
    from threadpoolctl import threadpool_limits  # only serving processes need it

    threadpool_limits(limits=1, user_api="blas")
