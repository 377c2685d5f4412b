"""The training corpus: the committed manifest keeps the rules, and the build keeps dev/test code out of train.

The off-limits list and the quality repositories are written out here on purpose, not imported
(as tests/unit/bench/test_corpus_policy.py does): shrinking a list in code must not let a
forbidden repository into the training data unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from models.corpus import build as corpus_build
from models.corpus.build import Source
from models.corpus.select import MANIFEST_PATH, github_repo, judge, licence_of_text, permissive_licence

OFF_LIMITS_NAMES = {"zod", "hono", "date-fns", "express", "excalidraw", "vite", "vitest", "trpc", "continue",
                    "axios", "redux", "redux-toolkit", "semble"}  # fmt: skip
OFF_LIMITS_OWNERS = {"colinhacks", "honojs", "expressjs", "excalidraw", "vitejs", "vitest-dev", "trpc", "continuedev",
                     "axios", "reduxjs", "minishlab"}  # fmt: skip
OFF_LIMITS_NPM_SCOPES = {"@trpc", "@continuedev", "@reduxjs", "@excalidraw", "@vitest", "@hono"}
QUALITY_GITHUB = {"reactivex/rxjs", "tanstack/query", "fastify/fastify", "immerjs/immer", "knex/knex", "mobxjs/mobx",
                  "mochajs/mocha", "nodejs/undici", "pinojs/pino", "preactjs/preact"}  # fmt: skip
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "0BSD"}


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads(MANIFEST_PATH.read_text())


def test_the_manifest_has_at_least_150_pinned_train_repositories_once_each(manifest: dict) -> None:
    repos = manifest["repositories"]
    assert len(repos) >= 150 and {r["split"] for r in repos} == {"train"}
    assert all(re.fullmatch(r"[0-9a-f]{40}", r["commit"]) for r in repos)
    names = [r["github"].lower() for r in repos]
    assert len(set(names)) == len(names)
    assert all(r["ts_js_files"] >= manifest["rule"]["min_source_files"] for r in repos)
    assert all(r["ts_js_share"] >= manifest["rule"]["min_ts_js_share"] for r in repos)


def test_every_train_licence_is_permissive_by_the_registry_and_by_the_licence_file(manifest: dict) -> None:
    for repo in manifest["repositories"]:
        registry = re.split(r"\s+OR\s+", repo["licence_registry"].strip("()"))
        assert set(registry) & PERMISSIVE or repo["licence_registry"] in ("Apache 2.0", "BSD"), repo["github"]
        file_licences = repo["licence_file"].split(" AND ") if repo["licence_file"] else []
        assert set(file_licences) <= PERMISSIVE, repo["github"]


def test_no_off_limits_or_quality_repository_or_fork_of_one_is_train_data(manifest: dict) -> None:
    for repo in manifest["repositories"]:
        owner, name = repo["github"].lower().split("/")
        assert name not in OFF_LIMITS_NAMES and owner not in OFF_LIMITS_OWNERS, repo["github"]
        assert repo["github"].lower() not in QUALITY_GITHUB
        # A fork or mirror keeps the name: no train repository is named like a quality repository.
        assert name not in {github.split("/")[1] for github in QUALITY_GITHUB}, repo["github"]
        for package in repo["npm"]:
            assert package.lower() not in OFF_LIMITS_NAMES and package.split("/")[0] not in OFF_LIMITS_NPM_SCOPES
    held_out = {e["github"].lower(): e["split"] for e in manifest["excluded"] if e.get("split") in ("dev", "test")}
    assert held_out.keys() == QUALITY_GITHUB


def test_rejected_candidates_carry_their_reasons(manifest: dict) -> None:
    assert all(entry["reason"] for entry in manifest["rejected"] + manifest["excluded"])
    chosen = {r["github"].lower() for r in manifest["repositories"]}
    assert not chosen & {e["github"].lower() for e in manifest["rejected"] + manifest["excluded"]}


def test_the_rule_reads_registry_metadata_and_licence_files() -> None:
    monorepo = {"url": "git+https://github.com/eslint/eslint.git", "directory": "packages/js"}
    assert github_repo(monorepo) == "eslint/eslint"
    assert github_repo("github:sindresorhus/got") == "sindresorhus/got" and github_repo("a/b") == "a/b"
    assert github_repo({"url": "https://gitlab.com/a/b.git"}) is None
    assert permissive_licence("(MIT OR GPL-3.0)") and not permissive_licence("MIT AND GPL-3.0")
    assert not permissive_licence("BlueOak-1.0.0") and not permissive_licence(None)
    mit = "Permission is hereby granted, free of charge, to any person obtaining a copy"
    bsd = "Redistribution and use in source and binary forms, with or without modification, are permitted"
    assert licence_of_text(mit) == "MIT" and licence_of_text(bsd) == "BSD-2-Clause"
    assert licence_of_text(bsd + " Neither the name of the copyright holder") == "BSD-3-Clause"
    assert licence_of_text("GNU GENERAL PUBLIC LICENSE Version 3") == "GPL/LGPL"


# ---- the build on real git repositories standing in for the corpus's mirrors -------------------


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


def make_mirror(tmp_path: Path, github: str, files: dict[str, bytes], bare: bool = True) -> str:
    """A real repository with `files`, cloned into tmp_path/mirrors; its commit.

    `bare=False` lays it out as some fetched snapshots are: a clone whose git directory is repo/.git.
    """
    work = tmp_path / "work" / github.replace("/", "+")
    for rel, data in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(data)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "first")
    stem = github.replace("/", "+")
    if bare:
        subprocess.run(
            ["git", "clone", "-q", "--mirror", str(work), str(tmp_path / "mirrors" / f"{stem}.git")], check=True
        )
    else:
        subprocess.run(["git", "clone", "-q", str(work), str(tmp_path / "mirrors" / stem / "repo")], check=True)
    return git(work, "rev-parse", "HEAD")


DEV_CODE = b"export function parse(input: string): number {\n  return Number(input);\n}\n"
SHARED = b"module.exports = function clamp(n, lo, hi) {\n  return Math.min(hi, Math.max(lo, n));\n};\n"


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A dev repository and two train repositories: one vendors the dev code (CRLF endings), both copy a helper."""
    monkeypatch.setenv("BENCH_MIRRORS", str(tmp_path / "mirrors"))
    dev = make_mirror(tmp_path, "bench/dev", {"src/parse.ts": DEV_CODE, "README.md": b"# dev\n"})
    one = make_mirror(
        tmp_path,
        "acme/one",
        {
            "vendor/parse.ts": DEV_CODE.replace(b"\n", b"\r\n"),
            "lib/clamp.js": SHARED,
            "lib/own.ts": b"export const one = 1;\n",
            "README.md": b"# one\n",
        },
    )
    two = make_mirror(
        tmp_path, "acme/two", {"src/util/clamp.js": SHARED, "src/two.ts": b"export const two = 2;\n"}, bare=False
    )
    repos = [
        {"github": "acme/one", "commit": one, "split": "train"},
        {"github": "acme/two", "commit": two, "split": "train"},
    ]
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"repositories": repos}))
    return {
        "manifest": manifest,
        "held_out": (Source("bench/dev", dev, "dev"),),
        "dir": tmp_path / "corpus",
        "repos": repos,
    }


def run_build(corpus: dict, force: bool = False) -> int:
    return corpus_build.build(corpus["manifest"], corpus["held_out"], corpus["dir"], force)


def test_a_copy_of_dev_code_leaves_train_and_a_file_shared_by_two_train_repositories_is_kept_once(
    corpus: dict,
) -> None:
    assert run_build(corpus) == 0
    one, two = corpus["dir"] / "acme+one", corpus["dir"] / "acme+two"
    # The dev file is dropped although its line endings differ; the rest is the tree as committed.
    assert not (one / "vendor" / "parse.ts").exists()
    assert (one / "lib" / "own.ts").read_bytes() == b"export const one = 1;\n" and (one / "README.md").is_file()
    # The helper stays in the better-ranked repository (first in the manifest) only.
    assert (one / "lib" / "clamp.js").read_bytes() == SHARED and not (two / "src" / "util" / "clamp.js").exists()
    assert (two / "src" / "two.ts").is_file()
    dedup = json.loads((corpus["dir"] / "dedup.json").read_text())
    assert dedup["removed"] == {
        "acme/one": {"vendor/parse.ts": {"reason": "held_out", "copy_of": "bench/dev:src/parse.ts"}},
        "acme/two": {"src/util/clamp.js": {"reason": "repeated", "copy_of": "acme/one:lib/clamp.js"}},
    }
    counts = {key: dedup["counts"][key] for key in ("train_files", "kept", "removed_held_out", "removed_repeated")}
    assert counts == {"train_files": 5, "kept": 3, "removed_held_out": 1, "removed_repeated": 1}
    removed = corpus_build.removed_paths(corpus["dir"])
    assert removed == {"acme/one": {"vendor/parse.ts"}, "acme/two": {"src/util/clamp.js"}}


def test_an_unchanged_corpus_is_kept_and_a_new_ranking_rebuilds_what_it_changes(
    corpus: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_build(corpus) == 0
    marker = corpus["dir"] / "acme+two" / "marker"
    marker.write_text("kept")
    assert run_build(corpus) == 0 and marker.exists()
    assert "0 checked out, 2 up to date" in capsys.readouterr().out
    # With acme/two ranked first, the shared helper moves: both checkouts are rebuilt.
    manifest = json.loads(corpus["manifest"].read_text())
    manifest["repositories"].reverse()
    corpus["manifest"].write_text(json.dumps(manifest))
    assert run_build(corpus) == 0 and not marker.exists()
    assert (corpus["dir"] / "acme+two" / "src" / "util" / "clamp.js").is_file()
    assert not (corpus["dir"] / "acme+one" / "lib" / "clamp.js").exists()


def test_a_missing_mirror_is_one_line_naming_the_repository(
    corpus: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BENCH_MIRRORS", str(corpus["dir"].parent / "nowhere"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")  # no network: https is refused at once
    assert run_build(corpus) == 1
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1
    expected = r"corpus not built: no mirror of acme/one in .*nowhere and cloning .* failed .*fetch github:.*"
    assert re.fullmatch(expected, out)


MIT_TEXT = b"MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n"


def test_the_band_the_licence_file_and_a_shared_root_commit_decide_a_fetched_repository(tmp_path: Path) -> None:
    files = {f"src/m{i}.ts": f"export const m{i} = {i};\n".encode() for i in range(30)}
    commit = make_mirror(tmp_path, "acme/lib", {**files, "LICENSE": MIT_TEXT, "tool.py": b"print(1)\n"})
    mirror = tmp_path / "mirrors" / "acme+lib.git"
    record = judge({"github": "acme/lib"}, mirror, {})
    assert "reason" not in record and record["commit"] == commit and record["licence_file"] == "MIT"
    branch = git(tmp_path / "work" / "acme+lib", "branch", "--show-current")
    assert record["ts_js_files"] == 30 and record["default_branch"] == branch
    forked = judge({"github": "acme/lib"}, mirror, {record["root_commits"][0]: "bench/dev (a quality repository)"})
    assert forked["reason"] == "shares its root commit with bench/dev (a quality repository): a fork or mirror"
    make_mirror(tmp_path, "acme/small", {**dict(list(files.items())[:29]), "LICENSE": MIT_TEXT})
    small = judge({"github": "acme/small"}, tmp_path / "mirrors" / "acme+small.git", {})
    assert small["reason"] == "29 TS/JS source files (under 30)"
    make_mirror(tmp_path, "acme/gpl", {**files, "COPYING": b"GNU GENERAL PUBLIC LICENSE\nVersion 3\n"})
    gpl = judge({"github": "acme/gpl"}, tmp_path / "mirrors" / "acme+gpl.git", {})
    assert gpl["reason"] == "licence file reads as GPL/LGPL"
