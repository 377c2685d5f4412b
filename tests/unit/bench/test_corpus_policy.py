"""No off-limits repository may be part of a benchmark corpus, query set or tuning decision.

The off-limits list is written out here on purpose, not imported: this test checks the
committed files (and codecompass_dev/corpus/policy.py itself) against it, so shrinking the policy's
list in code does not silently pass.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codecompass_dev.corpus import assemble
from codecompass_dev.corpus.policy import off_limits

REPO_ROOT = Path(__file__).resolve().parents[3]
BENCH = REPO_ROOT / "bench"
# The corpus's pinned npm packages (package.json + lock) live with the corpus code; the query files with the bench.
CORPUS = REPO_ROOT / "codecompass_dev" / "corpus"
QUERY_FILES = sorted((BENCH / "quality").glob("*.jsonl"))

OFF_LIMITS_NPM = {"zod", "hono", "date-fns", "express", "excalidraw", "@excalidraw/excalidraw", "vite", "vitest",
                  "axios", "redux"}  # fmt: skip
OFF_LIMITS_SCOPES = {"@trpc", "@continuedev", "@reduxjs"}
OFF_LIMITS_REPO_NAMES = {"zod", "hono", "date-fns", "express", "excalidraw", "vite", "vitest", "trpc", "continue",
                         "axios", "redux", "semble"}  # fmt: skip
OFF_LIMITS_GITHUB = {"colinhacks/zod", "honojs/hono", "date-fns/date-fns", "expressjs/express", "excalidraw/excalidraw",
                     "vitejs/vite", "vitest-dev/vitest", "trpc/trpc", "continuedev/continue", "axios/axios",
                     "reduxjs/redux", "reduxjs/redux-toolkit", "minishlab/semble"}  # fmt: skip


def forbidden_package(name: str) -> bool:
    lowered = name.lower()
    return lowered in OFF_LIMITS_NPM or lowered.split("/")[0] in OFF_LIMITS_SCOPES


def forbidden_path(path: str) -> bool:
    """A path with an off-limits repository or package as one of its segments (e.g. `packages/zod/...`)."""
    segments = [s.lower() for s in re.split(r"[/\\]", path)]
    return any(s in OFF_LIMITS_REPO_NAMES or s in OFF_LIMITS_SCOPES for s in segments) or any(
        forbidden_package("/".join(segments[i : i + 2])) for i in range(len(segments) - 1)
    )


def package_json_files() -> list[Path]:
    return sorted(p for root in (BENCH, CORPUS) for p in root.rglob("package.json")
                  if "node_modules" not in p.parts and ".work" not in p.parts)


def test_the_checks_catch_what_they_must() -> None:
    assert forbidden_package("zod") and forbidden_package("@trpc/server") and forbidden_package("@reduxjs/toolkit")
    assert not forbidden_package("rxjs") and not forbidden_package("@tanstack/query-core")
    assert forbidden_path("node_modules/@continuedev/core/index.js") and forbidden_path("packages/zod/src/a.ts")
    assert not forbidden_path("src/internal/operators/mergeMap.ts")


@pytest.mark.parametrize("name", sorted(OFF_LIMITS_NPM | OFF_LIMITS_REPO_NAMES | OFF_LIMITS_GITHUB))
def test_the_code_policy_refuses_every_listed_name(name: str) -> None:
    assert off_limits(name)


@pytest.mark.parametrize("path", package_json_files(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_no_off_limits_dependency_in_a_benchmark_manifest(path: Path) -> None:
    manifest = json.loads(path.read_text())
    names = [
        name
        for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
        for name in manifest.get(key, {})
    ]
    assert [n for n in names if forbidden_package(n)] == []


def test_no_off_limits_package_in_the_corpus_lock() -> None:
    lock = json.loads((CORPUS / "package-lock.json").read_text())
    installed = [key for key in lock.get("packages", {}) if key]
    names = [key.split("node_modules/")[-1] for key in installed]
    assert [n for n in names if forbidden_package(n)] == []
    assert [k for k in installed if forbidden_path(k)] == []
    for entry in lock.get("packages", {}).values():
        assert [n for n in entry.get("dependencies", {}) if forbidden_package(n)] == []


def test_no_off_limits_part_of_any_assembled_workspace() -> None:
    for part in assemble.CORPUS_PARTS:
        assert not forbidden_package(part.package), part
        assert not forbidden_path(part.subpath), part
    for repo in assemble.QUALITY_REPOS:
        assert repo.github.lower() not in OFF_LIMITS_GITHUB, repo
        assert repo.name.lower() not in OFF_LIMITS_REPO_NAMES, repo
        for path in repo.code_paths:
            assert not forbidden_path(path), repo


def test_query_files_exist() -> None:
    assert BENCH / "quality" / "queries.jsonl" in QUERY_FILES


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.name)
def test_no_off_limits_repository_in_committed_queries(path: Path) -> None:
    bad = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            query = json.loads(line)
            repo = str(query.get("repo", ""))
            url = str(query.get("source", {}).get("url") or query.get("source", {}).get("repo_url") or "")
            github = url.removeprefix("https://github.com/").lower()
            if repo.lower() in OFF_LIMITS_REPO_NAMES or forbidden_package(repo) or github in OFF_LIMITS_GITHUB:
                bad.append((n, repo, url))
            bad.extend((n, t["path"]) for t in query.get("targets", []) if forbidden_path(t["path"]))
            # A concept query's files: paths in concept_queries.jsonl, {"path", ...} in queries.jsonl.
            paths = [f if isinstance(f, str) else f["path"] for f in query.get("files", [])]
            bad.extend((n, path) for path in paths if forbidden_path(path))
    assert bad == []


def test_every_query_has_a_known_repository_and_its_split() -> None:
    splits = {repo.name: repo.split for repo in assemble.QUALITY_REPOS}
    with open(BENCH / "quality" / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            query = json.loads(line)
            assert query["repo"] in splits, query["id"]
            assert query["split"] == splits[query["repo"]], query["id"]
