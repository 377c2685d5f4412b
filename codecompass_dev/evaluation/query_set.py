"""The quality benchmark's query set as evaluation reads it: queries, their targets, and whether a result
is one of them.

A line of bench/quality/queries.jsonl (bench/quality/build_queries.py writes it) is one query:
its text, repository, split, symbol targets and, for a `concept` query, file targets. The
quality and pipeline benchmarks score against it; the ranker's training labels its candidates by
the same `target_hit`, so a label and a score never disagree on what a hit is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codecompass_dev.evaluation.metrics import FileTarget, Target

# The committed query set: benchmark data, in bench/.
DEFAULT_QUERIES = Path(__file__).resolve().parents[2] / "bench" / "quality" / "queries.jsonl"


@dataclass(frozen=True)
class Query:
    id: str
    type: str
    repo: str | None  # None: the legacy single workspace
    split: str
    query: str
    targets: tuple[Target, ...]  # symbols; a `concept` query may have none
    leaks_name: bool | None = None
    files: tuple[FileTarget, ...] = ()  # file-level targets (0/0 lines: the whole file)

    @property
    def file_targets(self) -> tuple[FileTarget, ...]:
        """What file-level scoring reads: the query's files, and each symbol target's file with
        the symbol's lines as its span."""
        return self.files + tuple(FileTarget(t.path, t.start_line, t.end_line) for t in self.targets)


def parse_query(raw: dict) -> Query:
    """One line of a query file; `files` is optional (only `concept` lines have it)."""
    targets = tuple(
        Target(t["path"], t.get("qualified_name", ""), int(t.get("start_line", 0)), int(t.get("end_line", 0)))
        for t in raw["targets"]
    )
    files = tuple(
        FileTarget(f["path"], int(f.get("start_line", 0)), int(f.get("end_line", 0))) for f in raw.get("files", ())
    )
    leaks = raw.get("leaks_name")
    return Query(
        id=raw["id"],
        type=raw["type"],
        repo=raw.get("repo") or None,
        split=raw.get("split") or "dev",
        query=raw["query"],
        targets=targets,
        leaks_name=None if leaks is None else bool(leaks),
        files=files,
    )


def load_queries(path: Path, *, symbol_level: bool = False) -> list[Query]:
    """The queries of a file. `symbol_level`: only those with symbol targets, for tools that score
    or label symbols only (a `concept` query whose answer is files has no symbol to find)."""
    queries = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            query = parse_query(json.loads(line))
            if not query.targets and not query.files:
                raise SystemExit(f"{path}:{number}: query {query.id} has no targets")
            if query.targets or not symbol_level:
                queries.append(query)
    return queries


def target_hit(chunk, targets: Sequence[Target]) -> int | None:
    """Index of the target this chunk is, by qualified name or exact line range in the same file."""
    for index, target in enumerate(targets):
        if chunk.relative_path != target.path:
            continue
        if chunk.qualified_name == target.qualified_name or (
            chunk.start_line == target.start_line and chunk.end_line == target.end_line
        ):
            return index
    return None
