"""Concept pairs for training (models/corpus/concepts.py) on a small synthetic monorepo: the
benchmark's four rules run by its own functions, with the corpus's code, code paths, leak and cap
rules. The repository is written and committed here with the local git; symbols come from
codecompass_dev/queries/extract_symbols.js, as for every pair."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from models.corpus import concepts
from models.corpus.mine import write_gzip
from models.corpus.pairs import Pair, Repo, finalize
from tests.unit.bench.test_mine_concepts import POOL, SCHEDULER

from codecompass_dev.evaluation.metrics import FileTarget, Target

GUIDE = """# Guide

## How jobs wait

Jobs wait in [the scheduler](../packages/core/lib/scheduler.js) until a worker is free. The queue keeps
them in arrival order so no job starves.

## Callouts

The site shows every warning in a box drawn by `docs/components/alert.tsx` on each page.

## Copies

Some helpers were copied from another project, see `packages/core/lib/copied.js` for the details.

## `createPool(size)`

Starts a fixed number of workers that take jobs from the shared queue.

## `drain()`

Use drain when the process exits. Drain settles once every queued job has run.
"""
# A commit body's first sentence, wrapped as a commit message wraps it.
BODY = "Workers now report when they are busy, so that waiting on the queue settles only after every worker has gone" \
    " idle."
FILES = {
    "package.json": '{"name": "widget-monorepo", "private": true}\n',
    "packages/core/package.json": '{"name": "@widget/core", "description": "Runs queued jobs on a small pool of'
    ' worker threads", "main": "lib/index.js"}\n',
    "packages/core/README.md": "# Core\n\nThe core package runs every job that the widget schedules for you.\n",
    "packages/core/lib/index.js": "module.exports = { ...require('./scheduler'), ...require('./pool') }\n",
    "packages/core/lib/scheduler.js": SCHEDULER,
    "packages/core/lib/pool.js": POOL,
    "packages/core/lib/copied.js": "function copied () {\n  return 1\n}\n\nmodule.exports = { copied }\n",
    "packages/core/lib/timers/clock.js": "function tick () {\n  return Date.now()\n}\n\nmodule.exports = { tick }\n",
    "packages/core/lib/timers/README.md": "# Timers\n\nHelpers that measure how long each job has been waiting in"
    " the queue.\n",
    "packages/core/rollup.config.js": "module.exports = { input: 'lib/index.js' }\n",
    "docs/components/alert.tsx": "export function Alert () {\n  return null\n}\n",
    "docs/guide.md": GUIDE,
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def widget(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    root = tmp_path_factory.mktemp("widget")
    git(root, "init", "-q")
    commit(root, FILES, "Initial import of the widget scheduler library")
    commit(
        root,
        {
            "packages/core/lib/scheduler.js": SCHEDULER.replace("splice(0)", "splice(0).map((j) => j.done)"),
            "packages/core/lib/pool.js": POOL.replace("busy: false", "busy: false, idle: true"),
            "packages/core/rollup.config.js": "module.exports = { input: 'lib/index.js', treeshake: true }\n",
        },
        "fix(core): wait for running jobs when draining\n\n"
        + BODY.replace("every worker ", "every worker\n") + "\n",
    )
    # `make corpus` removed this file as a copy of another repository's: named in the docs, no answer.
    (root / "packages/core/lib/copied.js").unlink()
    return Repo("someone/widget", git(root, "rev-parse", "HEAD").strip(), root, root / ".git")


@pytest.fixture(scope="module")
def mined(widget: Repo) -> tuple[list[Pair], Counter]:
    stats: Counter = Counter()
    return concepts.mine_repo(widget, 100, 400, stats), stats


def answers(pairs: list[Pair]) -> dict[str, tuple[str, list[str], list[str]]]:
    return {p.query: (p.source["kind"], [f.path for f in p.files], [t.qualified_name for t in p.targets])
            for p in pairs}


def test_the_four_rules_give_file_targets_and_symbol_targets_where_they_name_symbols(mined) -> None:
    pairs, stats = mined
    assert answers(pairs) == {
        # docs-file: the section's first sentence names the file (scheduler), so the next one is asked.
        "The queue keeps them in arrival order so no job starves.": (
            "docs-file", ["packages/core/lib/scheduler.js"], []),
        "Starts a fixed number of workers that take jobs from the shared queue.": (
            "docs-api", ["packages/core/lib/pool.js"], ["createPool"]),
        # package: the code package's description -> its entry; a folder README -> that folder's code.
        "Runs queued jobs on a small pool of worker threads": ("package", ["packages/core/lib/index.js"], []),
        "Helpers that measure how long each job has been waiting in the queue.": (
            "package", ["packages/core/lib/timers/clock.js"], []),
        # commit-body: the tool configuration it also changed is no library code, so two files remain.
        BODY: (
            "commit-body", ["packages/core/lib/pool.js", "packages/core/lib/scheduler.js"],
            ["createPool", "Scheduler.drain"]),
    }  # fmt: skip
    # The `drain()` section says its name in every sentence: dropped, as the corpus drops every leak.
    assert stats["docs-api_leaks_name"] == 1
    # `copied.js` is in the pinned tree but not in the deduplicated checkout.
    assert stats["docs-file_file_not_in_checkout"] == 1
    assert {k: v for k, v in stats.items() if k.startswith("pairs_")} == {
        "pairs_docs-file": 1, "pairs_docs-api": 1, "pairs_package": 2, "pairs_commit-body": 1}  # fmt: skip


def test_a_pair_is_a_training_pair_with_rule_concept_and_whole_file_targets(widget: Repo, mined) -> None:
    pairs, _ = mined
    records = [pair.record(widget, n) for n, pair in enumerate(pairs, start=1)]
    assert {r["rule"] for r in records} == {"concept"}
    assert records[0]["id"] == "concept-someone+widget-0001"
    assert all(r["blank"] == [] and r["files"] for r in records)
    assert all(f["start_line"] == f["end_line"] == 0 for r in records for f in r["files"])
    body = next(r for r in records if r["source"]["kind"] == "commit-body")
    drain = next(t for t in body["targets"] if t["qualified_name"] == "Scheduler.drain")
    assert (drain["path"], drain["start_line"], drain["end_line"]) == ("packages/core/lib/scheduler.js", 12, 14)


def test_mining_is_deterministic(widget: Repo, mined, tmp_path: Path) -> None:
    rows = [p.record(widget, n) for n, p in enumerate(concepts.mine_repo(widget, 100, 400, Counter()), 1)]
    assert rows == [p.record(widget, n) for n, p in enumerate(mined[0], 1)]
    lines = [(json.dumps(r, sort_keys=True) + "\n").encode() for r in rows]
    write_gzip(lines, tmp_path / "a.jsonl.gz")
    write_gzip(lines, tmp_path / "b.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    with gzip.open(tmp_path / "a.jsonl.gz", "rt", encoding="utf-8") as fh:
        assert [json.loads(line) for line in fh] == rows


def test_library_code_leaves_out_docs_sites_examples_built_code_and_tool_configuration() -> None:
    library = ["lib/a.js", "packages/core/src/index.ts", "index.js", "bin/cli.js"]
    other = ["docs/components/alert.tsx", "examples/basic/app.js", "dist/a.js", "test/a.test.js", "src/__tests__/x.ts",
             "rollup.config.js", "packages/core/karma.conf.js", ".eslintrc.js", "Gulpfile.js", "a.min.js"]  # fmt: skip
    assert [p for p in library + other if concepts.is_library_code(p)] == library


def test_code_paths_are_innermost_packages_else_top_level_entries() -> None:
    code = ["packages/core/lib/a.js", "packages/core/lib/nested/b.js", "packages/cli/index.js", "src/x.ts", "index.js"]
    assert concepts.code_paths(code, ["", "packages/core", "packages/cli"]) == (
        "index.js", "packages/cli", "packages/core", "src")  # fmt: skip


def test_finalize_tells_file_answers_apart_and_caps_them() -> None:
    def pair(query: str, *paths: str) -> Pair:
        return Pair("concept", query, [], [], {"kind": "docs-file"}, [FileTarget(p) for p in paths])

    pairs = [pair("how jobs wait in order", "a.js"), pair("How jobs wait in order", "b.js"),  # one text, two answers
             pair("the pool of workers starts", "a.js", "b.js"), pair("the pool of workers starts", "a.js", "b.js")]
    pairs += [pair(f"the clock ticks every {n} seconds", "c.js") for n in range(7)]
    drain = [Target("d.js", "drain", 1, 3)]
    pairs.append(Pair("concept", "drains the queue on exit", drain, [], {}, [FileTarget("d.js")]))
    kept, stats = finalize(pairs, 100, "seed")
    assert stats["same_text_other_answer"] == 2 and stats["duplicate_text"] == 1 and stats["over_answer_cap"] == 2
    assert len(kept) == 7 and {p.query for p in kept} >= {"drains the queue on exit", "the pool of workers starts"}
    assert kept == finalize(list(reversed(pairs)), 100, "seed")[0]  # seeded, whatever the input order


def test_the_summary_counts_pairs_per_rule_and_repositories_with_any() -> None:
    reports = [{"repo": "a/b", "pairs": 3, "pairs_docs-api": 2, "pairs_package": 1, "mined_docs-api": 5,
                "docs-api_leaks_name": 3},
               {"repo": "c/d", "pairs": 0}]  # fmt: skip
    summary = concepts.summary(reports)
    assert summary["pairs"] == {"docs-file": 0, "docs-api": 2, "package": 1, "commit-body": 0}
    assert summary["repositories_with_pairs"] == {"docs-file": 0, "docs-api": 1, "package": 1, "commit-body": 0,
                                                  "any": 1}  # fmt: skip
    assert summary["leaks_name_dropped"]["docs-api"] == 3 and summary["repositories"] == 2
