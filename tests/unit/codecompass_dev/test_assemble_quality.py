"""The quality workspaces are the repositories as a clone has them, rebuilt byte for byte from a pinned commit.

A real git repository stands in for a quality repository: its mirror is a real `git clone
--mirror`, and the workspace is built by codecompass_dev.corpus.assemble exactly as for the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from codecompass_dev.corpus import assemble
from codecompass_dev.corpus.assemble import QualityRepo

JSDOC = "/** Adds two numbers and returns their sum. */"
INDEX_TS = f"{JSDOC}\nexport function add(a: number, b: number): number {{\n  return a + b;\n}}\n"
TEST_TS = "import { add } from './index';\n\ndescribe('add', () => {\n  it('adds', () => add(1, 2));\n});\n"


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A repository with code, a test beside it, docs, a symlink and a binary; its mirror; a jsdoc query."""
    work = tmp_path / "work"
    files = {
        "src/index.ts": INDEX_TS,
        "src/add.test.ts": TEST_TS,
        "test/add.test.ts": TEST_TS,
        "examples/demo.js": "const { add } = require('../src');\nconsole.log(add(1, 2));\n",
        "docs/guide.md": "# Guide\n",
        ".gitignore": "dist/\n",
        ".gitattributes": "* text=auto eol=lf\n",
    }
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    (work / "media").mkdir()
    (work / "media" / "logo.bin").write_bytes(bytes(range(256)) * 4)
    (work / "src" / "alias.ts").symlink_to("index.ts")
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "first")
    git(work, "tag", "v1.0.0")
    commit = git(work, "rev-parse", "HEAD")
    mirrors = tmp_path / "mirrors"
    mirror = mirrors / "acme+demo.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(work), str(mirror)], check=True)
    monkeypatch.setenv("BENCH_MIRRORS", str(mirrors))
    monkeypatch.setattr(
        assemble, "QUALITY_REPOS", (QualityRepo("demo", "acme/demo", "v1.0.0", commit, "dev", ("src",)),)
    )
    start = INDEX_TS.index(JSDOC)
    query = {"id": "jsdoc-demo-0001", "type": "jsdoc", "repo": "demo", "split": "dev", "query": "Adds two numbers",
             "targets": [], "source": {"blanked_jsdoc": [{"path": "src/index.ts",
                                                          "spans": [[start, start + len(JSDOC)]]}]}}  # fmt: skip
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps(query) + "\n")
    return {"work": work, "mirror": mirror, "commit": commit, "queries": queries, "dest": tmp_path / "quality"}


def build(repo: dict, force: bool = True) -> Path:
    return assemble.assemble_quality(force, queries_path=repo["queries"], dest=repo["dest"]) / "demo"


def blob_object(repo: dict, rel: str) -> Path:
    sha = git(repo["work"], "rev-parse", f"HEAD:{rel}")
    return repo["mirror"] / "objects" / sha[:2] / sha[2:]


def test_the_workspace_is_everything_a_clone_has_with_only_the_queried_jsdoc_blanked(repo: dict) -> None:
    workspace = build(repo)
    for rel in ("src/add.test.ts", "test/add.test.ts", "examples/demo.js", "docs/guide.md", ".gitignore"):
        assert (workspace / rel).read_text() == (repo["work"] / rel).read_text(), rel
    assert (workspace / "media" / "logo.bin").read_bytes() == (repo["work"] / "media" / "logo.bin").read_bytes()
    assert os.readlink(workspace / "src" / "alias.ts") == "index.ts"
    blanked = (workspace / "src" / "index.ts").read_text()
    assert blanked == " " * len(JSDOC) + INDEX_TS[len(JSDOC) :]
    # Queries come from the library's code only; the test beside it is in the workspace, not a query source.
    assert assemble.code_files(assemble.QUALITY_REPOS[0], workspace) == ["src/alias.ts", "src/index.ts"]


def test_a_rebuild_is_byte_identical_and_an_unchanged_build_is_kept(
    repo: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    first = assemble.workspace_digest(build(repo))
    assert assemble.workspace_digest(build(repo)) == first
    marker = repo["dest"] / "demo" / "marker"
    marker.write_text("kept")
    build(repo, force=False)
    assert marker.exists() and "up to date" in capsys.readouterr().out
    # New queries (other spans to blank) are a different build: rebuilt without being forced.
    repo["queries"].write_text(repo["queries"].read_text().replace('"Adds two numbers"', '"Adds numbers"'))
    build(repo, force=False)
    assert not marker.exists()


def test_a_partial_mirror_may_lack_what_the_index_never_reads_but_not_code(repo: dict) -> None:
    blob_object(repo, "media/logo.bin").unlink()
    workspace = build(repo)
    assert not (workspace / "media" / "logo.bin").exists() and (workspace / "src" / "index.ts").is_file()
    blob_object(repo, "examples/demo.js").unlink()
    with pytest.raises(SystemExit, match=r"quality/demo: .* lacks the contents of 1 file\(s\) .*examples/demo\.js"):
        build(repo)


def test_a_tag_that_moved_away_from_the_pin_is_refused(repo: dict) -> None:
    (repo["work"] / "src" / "index.ts").write_text(INDEX_TS + "// changed\n")
    git(repo["work"], "commit", "-q", "-am", "second")
    git(repo["work"], "tag", "-f", "v1.0.0")
    subprocess.run(["git", "--git-dir", str(repo["mirror"]), "fetch", "-q", "--force", "--tags"], check=True)
    with pytest.raises(SystemExit, match=rf"tag v1\.0\.0 of acme/demo is [0-9a-f]{{40}} .*pinned {repo['commit']}"):
        build(repo)


def test_a_missing_mirror_that_cannot_be_cloned_is_one_line(repo: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_MIRRORS", str(repo["dest"].parent / "nowhere"))
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "file")  # no network: https is refused at once
    with pytest.raises(SystemExit, match=r"quality/demo: no mirror of acme/demo in .*nowhere and cloning .* failed"):
        build(repo)


def test_ws_1m_takes_whole_train_repositories_in_manifest_order_their_sources_only(
    repo: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = tmp_path / "manifest.json"
    entries = [{"github": "acme/held", "commit": repo["commit"], "split": "test"},  # held out: never taken
               {"github": "acme/demo", "commit": repo["commit"], "split": "train"},
               {"github": "acme/later", "commit": repo["commit"], "split": "train"}]  # past the lines: not reached
    manifest.write_text(json.dumps({"repositories": entries}))
    monkeypatch.setattr(assemble, "MANIFEST_PATH", manifest)
    monkeypatch.setattr(assemble, "WORK_DIR", tmp_path / "work-dir")
    monkeypatch.setattr(assemble, "WS_1M_LINES", 3)
    workspace = assemble.assemble_ws_1m(force=True)
    taken = sorted(p.relative_to(workspace).as_posix() for p in workspace.rglob("*") if p.is_file())
    # Sources, not tests, docs, binaries or symlinks; one folder per repository.
    assert taken == [".gitignore", "acme+demo/examples/demo.js", "acme+demo/src/index.ts"]
    assert (workspace / "acme+demo/src/index.ts").read_text() == INDEX_TS
