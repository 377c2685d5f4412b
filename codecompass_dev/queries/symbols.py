"""Symbols of TS/JS files as the TypeScript compiler sees them, by extract_symbols.js (node).

One record per file: its path, line count, JSDoc spans, file card and named symbols, named the
way the analysis service names chunks. Every query rule (the benchmark's and the training
corpus's) reads symbols through here, so all of them name a target by one rule.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

EXTRACTOR = Path(__file__).resolve().parent / "extract_symbols.js"
# Files per node process: keeps the command line short on repositories of thousands of files.
BATCH = 400
# Generous: a batch of large files (a commit's post-images of a generated module) takes minutes.
TIMEOUT_S = 1200


def extract(root: Path, rels: list[str]) -> list[dict]:
    """The records of `rels` (paths relative to `root`), in the order extracted."""
    records: list[dict] = []
    for i in range(0, len(rels), BATCH):
        out = subprocess.run(
            ["node", str(EXTRACTOR), str(root), *rels[i : i + BATCH]],
            check=True,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        records.extend(json.loads(line) for line in out.stdout.splitlines() if line.strip())
    return records


def symbols_by_path(root: Path, rels: list[str]) -> dict[str, list[dict]]:
    """Path -> its symbols, for the rules that look a changed line's symbol up by file."""
    return {record["path"]: record["symbols"] for record in extract(root, rels)}
