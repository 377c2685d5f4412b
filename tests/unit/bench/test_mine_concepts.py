"""The concept miner's rules on a small synthetic repository: docs, a package, a commit history.

The repository is written here and committed with the local git (no network, no benchmark
mirror); symbols come from codecompass_dev/queries/extract_symbols.js as for every query type.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from bench.quality import mine_concepts

from codecompass_dev.corpus.assemble import QualityRepo
from codecompass_dev.queries.concepts import (
    Candidate,
    Pinned,
    api_names,
    body_sentence,
    doc_files,
    explanatory,
    heading_spans,
    named_files,
    pick_sentence,
)

SCHEDULER = """'use strict'

class Scheduler {
  constructor () {
    this.queue = []
  }

  enqueue (job) {
    this.queue.push(job)
  }

  drain () {
    return Promise.all(this.queue.splice(0))
  }
}

module.exports = { Scheduler }
"""
POOL = """'use strict'

function createPool (size) {
  const workers = []
  for (let i = 0; i < size; i++) workers.push({ busy: false })
  return workers
}

module.exports = { createPool }
"""
GUIDE = """---
title: Guide
---

Widget keeps a queue of jobs and hands each one to a free worker.

## How jobs wait

Jobs wait in [the scheduler](../lib/scheduler.js) until a worker is free. The queue keeps them in arrival
order so no job starves.

## `createPool(size)`

Starts a fixed number of workers that take jobs from the shared queue.

## Draining

Call `drain()` before exit. It settles once every queued job has run, so pending work is never lost.

## Options

Every option can also be given in the environment, as the `get` helper reads it.

## Pitfalls

Use `enqueue` for every job you schedule. This PR changed how jobs are queued.
"""
FILES = {
    "package.json": '{"name": "widget", "description": "Runs queued jobs on a small pool of worker threads",'
    ' "main": "lib/index.js"}\n',
    "lib/index.js": "module.exports = { ...require('./scheduler'), ...require('./worker-pool') }\n",
    "lib/scheduler.js": SCHEDULER,
    "lib/worker-pool.js": POOL,
    "lib/timers/clock.js": "function tick () {\n  return Date.now()\n}\n\nmodule.exports = { tick }\n",
    "lib/timers/README.md": "# Timers\n\nHelpers that measure how long each job has been waiting in the queue.\n",
    "docs/guide.md": GUIDE,
    "CHANGELOG.md": "## `createPool`\n\nPools now start lazily and grow when the queue is long.\n",
    "test/notes.md": "## `createPool`\n\nThe tests start a pool of two workers for every case.\n",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "A",
           "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> None:
    """Write the files (a value starting with "+" is prepended to the file as it is) and commit."""
    for rel, text in files.items():
        if text.startswith("+"):
            text = text[1:] + (repo / rel).read_text(encoding="utf-8")
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Candidate], Counter]:
    mirrors = tmp_path_factory.mktemp("mirrors")
    repo = mirrors / "someone+widget" / "repo"  # a clone: codecompass_dev/corpus/mirrors.py finds its .git
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    commit(repo, FILES, "Initial import of the widget scheduler library")
    commit(
        repo,
        {
            "lib/scheduler.js": SCHEDULER.replace("this.queue.splice(0)", "this.queue.splice(0).map((j) => j.done)"),
            "lib/worker-pool.js": POOL.replace("busy: false", "busy: false, idle: true"),
        },
        "fix(scheduler): wait for running jobs when draining\n\n"
        "* fix(scheduler): wait for running jobs when draining\n\n"
        "The pool now tracks which workers are busy, so that a drain settles only after every worker has\n"
        "gone idle.\n\nCo-authored-by: Someone <s@example.com>\n",
    )
    commit(
        repo,
        {"lib/scheduler.js": "+// The queue.\n", "lib/worker-pool.js": "+// The pool.\n"},
        "docs: describe the queue\n\nThe queue is described in detail now, with an example of every option.\n",
    )
    commit(
        repo,
        {"lib/scheduler.js": "+// Priorities.\n", "lib/worker-pool.js": "+// Priorities.\n"},
        "add priorities to the job queue\n\nThis PR adds priorities to the queue of every scheduler.\n",
    )
    commit(
        repo,
        {"lib/timers/clock.js": FILES["lib/timers/clock.js"].replace("Date.now()", "Date.now() + 1")},
        "make the clock tick one millisecond later\n\nThe clock now reports a time one millisecond ahead of now.\n",
    )
    head = git(repo, "rev-parse", "HEAD").strip()
    stats: Counter = Counter()
    widget = QualityRepo("widget", "someone/widget", "v1.0.0", head, "dev", ("lib",))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BENCH_MIRRORS", str(mirrors))
        return mine_concepts.mine_repo(widget, 100, 20261122, stats), stats


def by_rule(candidates: list[Candidate], rule: str) -> dict[str, Candidate]:
    return {c.query: c for c in candidates if c.rule == rule}


def test_a_docs_section_linking_a_file_asks_its_first_sentence_that_does_not_name_it(mined) -> None:
    found = by_rule(mined[0], "docs-file")
    # "Jobs wait in the scheduler ..." names the file (scheduler.js): the next sentence is asked.
    assert list(found) == ["The queue keeps them in arrival order so no job starves."]
    row = found["The queue keeps them in arrival order so no job starves."]
    assert (row.files, row.targets, row.leaks_name) == (["lib/scheduler.js"], [], False)
    assert (row.source["file"], row.source["line"], row.source["heading"]) == ("docs/guide.md", 9, "How jobs wait")


def test_docs_api_sections_target_the_files_defining_the_names_they_write(mined) -> None:
    found = by_rule(mined[0], "docs-api")
    # Not `get` (too short to place), not the changelog, not test/ notes.
    assert {q: (c.files, [t["qualified_name"] for t in c.targets], c.leaks_name) for q, c in found.items()} == {
        "Starts a fixed number of workers that take jobs from the shared queue.": (
            ["lib/worker-pool.js"],
            ["createPool"],
            False,
        ),
        "It settles once every queued job has run, so pending work is never lost.": (
            ["lib/scheduler.js"],
            ["Scheduler.drain"],
            False,
        ),
        # Every explanatory sentence of the paragraph names `enqueue`: kept, marked.
        "Use enqueue for every job you schedule.": (["lib/scheduler.js"], ["Scheduler.enqueue"], True),
    }
    assert found["Starts a fixed number of workers that take jobs from the shared queue."].source["names_from"] == (
        "heading"
    )
    assert found["Use enqueue for every job you schedule."].source["names_from"] == "paragraph"


def test_a_package_description_and_a_folder_readme_target_the_entry_and_the_folder(mined) -> None:
    found = by_rule(mined[0], "package")
    assert {q: c.files for q, c in found.items()} == {
        "Runs queued jobs on a small pool of worker threads": ["lib/index.js"],
        "Helpers that measure how long each job has been waiting in the queue.": ["lib/timers/clock.js"],
    }


def test_a_commit_body_across_two_files_targets_them_and_the_symbols_it_changed(mined) -> None:
    candidates, stats = mined
    found = by_rule(candidates, "commit-body")
    query = "The pool now tracks which workers are busy, so that a drain settles only after every worker has gone idle."
    assert list(found) == [query]  # the squashed subject bullet is a list item, not the body's prose
    row = found[query]
    assert row.files == ["lib/scheduler.js", "lib/worker-pool.js"]
    assert [(t["path"], t["qualified_name"]) for t in row.targets] == [
        ("lib/scheduler.js", "Scheduler.drain"),
        ("lib/worker-pool.js", "createPool"),
    ]
    start = SCHEDULER.splitlines().index("  drain () {") + 1 + 2  # two comment lines were added on top since
    assert (row.targets[0]["start_line"], row.targets[0]["end_line"]) == (start, start + 2)
    assert row.leaks_name  # "a drain settles": the name of a changed symbol
    assert (row.source["subject"], row.source["files_in_commit"]) == (
        "fix(scheduler): wait for running jobs when draining",
        2,
    )
    # The docs commit is no behaviour change; "This PR ..." explains nothing; the clock commit has one file.
    assert stats["commit_not_a_behaviour_change"] == 1
    assert stats["commit_no_explanatory_body"] == 2  # the PR boilerplate, and the initial import (no body)
    assert stats["commit_files_out_of_range"] == 1


@pytest.mark.parametrize(
    ("sentence", "ok"),
    [
        ("The pool tracks which workers are busy.", True),
        ("createPool starts the workers in order.", True),  # opens with a name the code defines
        ("only include the protocol, hostname and port.", False),  # a wrapped list item's tail
        ("Its available methods on the client are:", False),
        ("Why does the queue never shrink at all?", False),
        ("It's probably best to play by the rules!", False),
        ("This PR changes how the queue is drained.", False),
        ("This commit prepares the watch mode for later work.", False),
        ("See the queue section for how jobs are drained.", False),
        ("Also removes the second queue from the scheduler.", False),
        ("Added unit tests for the drain of the scheduler.", False),
        ("The queue drains jobs as described in #1234 of the tracker.", False),
        ("Details are at https://example.com/queue for every reader.", False),
        ("Operator Subscriber AsyncSubject ConnectableObservable TimeoutError", False),  # names, no prose
        ("Supported validations include: - body: validates the body.", False),
        ("The queue (a list of jobs keeps the order.", False),
        ("Too short to ask.", False),
        ("队列会按到达的顺序保存每一个任务 so that the order of jobs holds.", False),  # a translation
    ],
)
def test_an_explanatory_sentence(sentence: str, ok: bool) -> None:
    assert explanatory(sentence, frozenset({"createPool"})) is ok


def test_a_paragraph_gives_its_first_sentence_that_names_no_target_else_its_first_marked() -> None:
    known = frozenset()
    paragraph = "The Scheduler keeps every job in order. Jobs leave the queue one at a time, oldest first."
    assert pick_sentence(paragraph, {"Scheduler"}, known) == (
        "Jobs leave the queue one at a time, oldest first.",
        False,
    )
    assert pick_sentence("The Scheduler keeps every job in order.", {"Scheduler"}, known) == (
        "The Scheduler keeps every job in order.",
        True,
    )
    assert pick_sentence("Short one.", set(), known) is None


def test_a_commit_body_gives_its_first_prose_sentence_not_its_list_or_trailers() -> None:
    body = (
        "* feat: retry failed jobs\n\n* test: cover retries\n\n"
        "  A job that throws goes back to the queue until it has failed three times.\n\n"
        "---------\n\nCo-authored-by: B <b@example.com>\n"
    )
    assert body_sentence(body, "retry failed jobs", frozenset()) == (
        5,
        "A job that throws goes back to the queue until it has failed three times.",
    )
    assert body_sentence("Retry failed jobs in the queue.\n", "Retry failed jobs in the queue", frozenset()) is None


def pinned(
    tmp_path: Path, paths: list[str], code: list[str], packages: list[str], code_paths: tuple[str, ...]
) -> Pinned:
    for rel in paths:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n", encoding="utf-8")
    repo = QualityRepo("query", "someone/query", "v1", "0" * 40, "dev", code_paths)
    return Pinned(repo, tmp_path, sorted(paths), {path: [] for path in code}, packages)


def test_docs_of_another_package_of_a_monorepo_are_not_this_librarys(tmp_path: Path) -> None:
    paths = [
        "README.md", "CONTRIBUTING.md", ".github/ISSUE_TEMPLATE/bug.md", "docs/reference/QueryCache.md",
        "docs/framework/react/guides/queries.md", "docs/framework/vue/guides/queries.md", "docs/eslint/rule.md",
        "packages/query-core/src/queryCache.ts", "packages/vue-query/README.md", "packages/eslint-plugin-query/x.md",
        "packages/react-query/src/useQuery.ts", "test/fixtures/notes.md",
    ]  # fmt: skip
    code = ["packages/query-core/src/queryCache.ts", "packages/react-query/src/useQuery.ts"]
    packages = ["", "packages/query-core", "packages/react-query", "packages/vue-query", "packages/eslint-plugin-query"]
    tree = pinned(tmp_path, paths, code, packages, ("packages/query-core/src", "packages/react-query/src"))
    assert tree.code_packages() == ["packages/query-core", "packages/react-query"]
    assert doc_files(tree) == ["README.md", "docs/framework/react/guides/queries.md", "docs/reference/QueryCache.md"]


def test_files_are_named_by_path_link_or_unique_suffix_never_by_bare_name(tmp_path: Path) -> None:
    paths = ["lib/core/scheduler.js", "lib/server.js", "examples/server.js", "test/core/scheduler.js"]
    tree = pinned(tmp_path, paths, ["lib/core/scheduler.js", "lib/server.js"], [""], ("lib",))
    by_basename: dict[str, list[str]] = {}
    for path in paths:
        by_basename.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def named(text: str) -> list[str]:
        return named_files(text, tree, by_basename)

    assert named("see `lib/core/scheduler.js`") == ["lib/core/scheduler.js"]
    assert named("[code](https://github.com/o/r/blob/main/lib/server.js#L10)") == ["lib/server.js"]
    assert named("<!-- source_link=lib/server.js -->") == ["lib/server.js"]
    assert named("start `server.js` with node") == []  # a bare name: a user's file as often as ours
    assert named("in core/scheduler.js") == []  # two files end so: lib/ and test/
    assert named("[x](../lib/core/scheduler.js) and lib/server.js") == ["lib/core/scheduler.js", "lib/server.js"]


def test_api_names_are_what_code_spans_and_one_name_headings_write() -> None:
    spans = ["queryClient.fetchQuery(options)", "new QueryClient()", "useQuery<TData>(opts)", "package.json",
             "get", "staleTime?: number", "widget", "QueryClient"]  # fmt: skip
    assert api_names(spans, frozenset({"widget"})) == ["fetchQuery", "QueryClient", "useQuery"]
    assert heading_spans("`queryCache.find`") == ["queryCache.find"]
    assert heading_spans("whereIn [-MY -SQ]") == ["whereIn"]
    assert heading_spans("How jobs wait") == []
