"""Where the bytes of an index go: indexes one workspace through the real services (with
embeddings, until READY) and prints the state dir's size against the source size, split into
the catalog, the table's data files, its full-text/vector indexes and its version metadata,
plus the in-memory (Arrow) size of every column, which is what the data files mostly are.

It also samples the state dir's size every second while it indexes and until the size has
stopped changing: the peak is the transient growth (old versions and compaction's copies kept for
the version retention, the settled table's merge into large fragments).

Goals (issue 27): the settled state dir within 2.5x the source, and the peak within 2x the settled.

Results: bench/results/index-size-<stamp>.json (and -latest); the table in docs/benchmarks.md is
generated from it (`python -m bench.report`).

Run: .venv/bin/python -m bench.index_size --workspace bench/.work/ws-300k [--no-write]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

import lancedb

from bench.speed.run_speed import source_stats
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.files import tree_bytes
from codecompass.retrieval.index.chunk_writer import DEFAULT_VERSION_RETENTION
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.services import start_stack

MIB = 2**20


def _tree_bytes(root: Path) -> dict[str, int]:
    """Bytes per part of a state dir: per kind of Lance table (chunks, sources, catalog, the
    registry of indexes) its data files, indexes, manifests/transactions and deletion files."""
    parts: dict[str, int] = {}
    for dirpath, _dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        for name in files:
            size = os.lstat(os.path.join(dirpath, name)).st_size
            tables = [p for p in rel.parts if p.endswith(".lance")]
            if tables:
                kind = tables[0].removesuffix(".lance").split("_")[0]
                inner = rel.parts[rel.parts.index(tables[0]) + 1 :]
                key = f"{kind} {inner[0] if inner else '(root)'}"
            else:
                key = f"other {name}"
            parts[key] = parts.get(key, 0) + size
    return parts


def _column_bytes(db_dir: Path) -> tuple[dict[str, int], int, int]:
    """Arrow bytes per column summed over every chunk table, the row count and the version
    count."""
    db = lancedb.connect(str(db_dir))
    columns: dict[str, int] = {}
    rows = versions = 0
    for name in db.list_tables().tables:
        table = db.open_table(name)
        data = table.to_arrow()
        rows += data.num_rows
        versions += len(table.list_versions())
        for field, column in zip(data.schema, data.columns, strict=True):
            columns[field.name] = columns.get(field.name, 0) + column.nbytes
    return columns, rows, versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, help="fresh state dir (default: a new temp dir)")
    parser.add_argument("--max-embed-wait", type=float, default=900.0)
    parser.add_argument("--no-write", action="store_true", help="print only; write no results file")
    parser.add_argument(
        "--settle-s", type=float, default=20.0,
        help="measure once the state dir has not changed for the version retention plus this many seconds"
    )
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    state_dir = (args.state_dir or Path(tempfile.mkdtemp(prefix="cc-size-"))).resolve()
    env = {"CODECOMPASS_STATE_DIR": str(state_dir)}
    n_files, n_lines, source_bytes = source_stats(workspace)

    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(1.0):
            peak[0] = max(peak[0], tree_bytes(state_dir))

    sampler = threading.Thread(target=sample, daemon=True)
    stack = start_stack(env)
    sampler.start()
    try:
        started = time.perf_counter()
        client = RetrievalClient(stack.retrieval.address)
        try:
            for _ in client.index(str(workspace), True, args.max_embed_wait):
                pass
            indexed_s = time.perf_counter() - started
            ready_bytes = tree_bytes(state_dir)
            # Versions younger than the retention outlive the last maintenance of the run; the
            # service cleans them up once they are old enough, merges the settled table's
            # fragments, and drops the version that merge replaced one retention later. Measure
            # the index as it stays: once its size has not changed for a retention and more.
            quiet_s = DEFAULT_VERSION_RETENTION.total_seconds() + args.settle_s
            last_size, changed_at = tree_bytes(state_dir), time.monotonic()
            while time.monotonic() - changed_at < quiet_s and time.monotonic() - started < args.max_embed_wait * 2:
                time.sleep(2.0)
                size = tree_bytes(state_dir)
                if size != last_size:
                    last_size, changed_at = size, time.monotonic()
            status = client.status(str(workspace), 60)
        finally:
            client.close()
    finally:
        done.set()
        sampler.join()
        stack.stop()

    total = tree_bytes(state_dir)
    peak_bytes = max(peak[0], total)
    parts = _tree_bytes(state_dir)
    db_dirs = {p.parent for p in state_dir.rglob("*.lance")}
    columns: dict[str, int] = {}
    rows = versions = 0
    for db_dir in db_dirs:
        cols, n, v = _column_bytes(db_dir)
        rows += n
        versions += v
        for name, size in cols.items():
            columns[name] = columns.get(name, 0) + size

    results = {
        "workspace": {"name": workspace.name, "files": n_files, "lines": n_lines, "bytes": source_bytes},
        "goals": {"settled_over_source": 2.5, "peak_over_settled": 2.0},
        "state_dir_bytes": total,
        "ratio": total / max(source_bytes, 1),
        "state_dir_bytes_at_ready": ready_bytes,
        "state_dir_peak_bytes": peak_bytes,
        "peak_over_settled": peak_bytes / max(total, 1),
        "index_bytes_reported": status.index_bytes,
        "chunks": status.chunks,
        "embedded_chunks": status.embedded_chunks,
        "rows": rows,
        "versions": versions,
        "indexed_s": indexed_s,
        "parts": parts,
        "columns": columns,
    }
    print(f"{workspace.name}: {n_files} files, {n_lines:,} lines, {source_bytes / MIB:.2f} MiB of source")
    print(f"chunks {status.chunks} (embedded {status.embedded_chunks}), table versions {versions}, {indexed_s:.0f} s")
    print(
        f"state dir {total / MIB:.2f} MiB = {results['ratio']:.2f}x source"
        f" (at READY, before old versions passed the retention: {ready_bytes / MIB:.2f} MiB)"
    )
    print(f"peak while indexing {peak_bytes / MIB:.2f} MiB = {results['peak_over_settled']:.2f}x the settled size")
    print("| part | MiB |\n|---|---:|")
    for name, size in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {size / MIB:.2f} |")
    print("| column (Arrow, uncompressed) | MiB |\n|---|---:|")
    for name, size in sorted(columns.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {size / MIB:.2f} |")
    if not args.no_write:
        print(f"results: {write_results('index-size', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
