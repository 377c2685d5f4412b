"""One results file per benchmark run, and the metadata every results file carries.

A benchmark builds a JSON-able payload and calls `write_results(kind, payload)`; it lands as
`bench/results/<kind>-<UTC timestamp>.json` plus a copy at `bench/results/<kind>-latest.json`
(a copy, not a symlink: it survives archives, Windows checkouts and `git diff` reads it).
`bench/report/` renders README tables from the `-latest` files only, so a table is never
typed by hand and two READMEs cannot disagree.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench" / "results"
CORPUS_PACKAGE_JSON = REPO_ROOT / "codecompass_dev" / "corpus" / "package.json"
SCHEMA_VERSION = 1


def utc_stamp(now: dt.datetime | None = None) -> str:
    """Filename-safe UTC timestamp, sortable as text: 20261122T143005Z."""
    now = now or dt.datetime.now(dt.UTC)
    return now.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=10
        ).stdout.rstrip("\n")
    except (OSError, subprocess.SubprocessError):
        return ""


def git_info() -> dict[str, Any]:
    """Commit the run measured; `dirty` lists changed tracked files outside bench/results."""
    changed = [line[3:] for line in _git("status", "--porcelain", "--untracked-files=no").splitlines()]
    changed = [p for p in changed if not p.startswith("bench/results/")]
    return {"commit": _git("rev-parse", "HEAD").strip(), "dirty_files": changed[:50]}


def reference_ms(repeats: int = 5) -> float:
    """The median time of a fixed pure-Python workload, in ms: how fast this machine's cores are
    when the run ended. Lent machines differ from day to day (a trivial MCP call took 13-17 ms on
    one and 8-9 ms on another), and a speed figure is only comparable with its reference."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        total = 0
        for i in range(200_000):
            total += i * i % 7
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def machine_info() -> dict[str, Any]:
    """What the numbers depend on: cores and their speed, memory, load while the run ended."""
    info: dict[str, Any] = {
        "nproc": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "reference_ms": reference_ms(),
    }
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        info["cpu_model"] = next((line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")), "")
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    info["ram_gib"] = round(int(line.split()[1]) / (1024 * 1024), 1)
                    break
    except OSError:
        pass
    with contextlib.suppress(OSError):
        info["load_avg"] = [round(x, 2) for x in os.getloadavg()]
    return info


def corpus_versions(package_json: Path = CORPUS_PACKAGE_JSON) -> dict[str, str]:
    """Pinned corpus package versions (codecompass_dev/corpus/package.json); empty when absent."""
    try:
        return dict(json.loads(package_json.read_text(encoding="utf-8")).get("dependencies", {}))
    except (OSError, ValueError):
        return {}


def run_metadata() -> dict[str, Any]:
    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "git": git_info(),
        "machine": machine_info(),
        "corpus": corpus_versions(),
    }


def _scalar(value: Any) -> Any:
    # JSON has no NaN: an empty group's mean is written as null.
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def to_json(value: Any, indent: int = 0) -> str:
    """JSON with objects indented, and every list of scalars (and short flat object) on one line.

    Per-query rows are lists of numbers: one line each keeps a file of a thousand queries
    small and its diffs readable, where `json.dumps(indent=...)` gives one line per number.
    """
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        if all(not isinstance(v, dict | list | tuple) for v in value.values()):
            flat = json.dumps({str(k): _scalar(v) for k, v in value.items()}, allow_nan=False)
            if len(flat) <= 240:
                return flat
        items = [f"{pad}{json.dumps(str(k))}: {to_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    if isinstance(value, list | tuple):
        if all(not isinstance(v, dict | list | tuple) for v in value):
            return json.dumps([_scalar(v) for v in value], separators=(",", ":"), allow_nan=False)
        items = [pad + to_json(v, indent + 1) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"
    return json.dumps(_scalar(value), allow_nan=False)


def latest_path(kind: str, results_dir: Path = RESULTS_DIR) -> Path:
    return results_dir / f"{kind}-latest.json"


def write_results(
    kind: str, payload: dict[str, Any], results_dir: Path = RESULTS_DIR, stamp: str | None = None
) -> Path:
    """Write `<kind>-<stamp>.json` and copy it to `<kind>-latest.json`; returns the stamped path.

    The payload gets `kind` and `schema_version` keys, and `run` metadata unless it has its own.
    """
    document = {"kind": kind, "schema_version": SCHEMA_VERSION, **payload}
    document.setdefault("run", run_metadata())
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{kind}-{stamp or utc_stamp()}.json"
    text = to_json(document) + "\n"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    shutil.copyfile(path, latest_path(kind, results_dir))
    return path


def load_latest(kind: str, results_dir: Path = RESULTS_DIR) -> dict[str, Any] | None:
    path = latest_path(kind, results_dir)
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))
