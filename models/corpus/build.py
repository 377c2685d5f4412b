"""`make corpus`: the training corpus rebuilt from pinned sources, deduplicated by content.

Every repository of models/corpus/manifest.json is checked out at its pinned commit under
models/.work/corpus/<owner>+<name>/, as a clone has it (codecompass_dev/corpus/mirrors.py: the same
checkout the benchmark's workspaces use), out of the mirrors in $BENCH_MIRRORS.

Then TypeScript/JavaScript source files (the extensions the index chunks, declaration files
left out) are deduplicated across repositories by the SHA-256 of their contents with line
endings normalised to LF (a vendored or copied file is the same file whatever its endings):

- a train file whose contents also appear in one of the benchmark's dev/test repositories (at
  the commits codecompass_dev/corpus/assemble.py pins) is removed from the train checkout: no dev or test
  code may be training data;
- a file repeated across train repositories is kept once, in the best-ranked repository that
  has it, and removed from the others.

Hashes are taken from the pinned commits' blobs, not from the checkouts, so the result depends
only on the manifest, and a rerun rebuilds only the checkouts whose commit or removals changed.
models/.work/corpus/dedup.json records the counts and every removed file with the copy it
duplicates; `removed_paths()` reads it back for the miners.

Usage: python -m models.corpus.build [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from codecompass_dev.corpus.assemble import QUALITY_REPOS, is_source
from codecompass_dev.corpus.mirrors import MirrorError, checkout, ensure_mirror, folder_name, git
from models.corpus.select import MANIFEST_PATH, WORK_DIR

CORPUS_DIR = WORK_DIR / "corpus"
DEDUP_NAME = "dedup.json"
# Bump when the hashing or the checkout layout changes: every cached hash and checkout is rebuilt.
LAYOUT = "v1: checkout as a clone has it; TS/JS sources hashed with LF endings; duplicates removed"


@dataclass(frozen=True)
class Source:
    """A repository at a pinned commit, and its role: 'train', or the 'dev'/'test' split it is held out for."""

    github: str
    commit: str
    split: str


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()


def source_blobs(mirror: Path, commit: str) -> dict[str, str]:
    """Path -> blob id of every TS/JS source file in the tree of `commit`."""
    blobs = {}
    for entry in git(mirror, "ls-tree", "-r", "-z", commit).split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob" and is_source(Path(path)):
                blobs[path] = sha
    return blobs


def blob_hashes(mirror: Path, shas: Iterable[str]) -> dict[str, str]:
    """Blob id -> content hash, read in one `git cat-file --batch`; blobs the mirror lacks are left out.

    A snapshot lacks files of 4 MiB and more: generated bundles, never hand-written sources.
    """
    wanted = sorted(set(shas))
    proc = subprocess.Popen(
        ["git", "--git-dir", str(mirror), "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    # Feeding all names first could fill both pipes; a thread-free way is one name at a time.
    hashes = {}
    for sha in wanted:
        proc.stdin.write(f"{sha}\n".encode())
        proc.stdin.flush()
        header = proc.stdout.readline().split()
        if len(header) == 3:
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after the contents
            hashes[sha] = content_hash(data)
    proc.stdin.close()
    if proc.wait() != 0:
        raise MirrorError(f"git cat-file --batch in {mirror} failed")
    return hashes


def tree_hashes(source: Source, corpus_dir: Path) -> dict[str, str]:
    """Path -> content hash of the TS/JS sources of a pinned tree, cached per commit."""
    cache = corpus_dir / ".hashes" / f"{folder_name(source.github)}-{source.commit}.json"
    if cache.is_file():
        cached = json.loads(cache.read_text())
        if cached.get("layout") == LAYOUT:
            return cached["hashes"]
    mirror = ensure_mirror(source.github, source.commit)
    blobs = source_blobs(mirror, source.commit)
    by_blob = blob_hashes(mirror, blobs.values())
    hashes = {path: by_blob[sha] for path, sha in sorted(blobs.items()) if sha in by_blob}
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"layout": LAYOUT, "hashes": hashes}))
    return hashes


def deduplicate(train: list[tuple[str, dict[str, str]]], held_out: list[tuple[str, dict[str, str]]]) -> dict:
    """Which train files to remove, given each repository's path -> content hash.

    `train` is in rank order: a file repeated across train repositories stays in the first one
    that has it. A file repeated inside one repository stays (it is that repository's own layout).
    """
    held_out_copy = {}
    for github, hashes in held_out:
        for path, digest in hashes.items():
            held_out_copy.setdefault(digest, f"{github}:{path}")
    first_owner: dict[str, tuple[str, str]] = {}
    removed: dict[str, dict[str, dict[str, str]]] = {}
    counts = {"train_files": 0, "kept": 0, "removed_held_out": 0, "removed_repeated": 0, "held_out_files": 0}
    counts["held_out_files"] = sum(len(hashes) for _, hashes in held_out)
    for github, hashes in train:
        for path, digest in sorted(hashes.items()):
            counts["train_files"] += 1
            if digest in held_out_copy:
                removed.setdefault(github, {})[path] = {"reason": "held_out", "copy_of": held_out_copy[digest]}
                counts["removed_held_out"] += 1
                continue
            owner = first_owner.setdefault(digest, (github, path))
            if owner[0] != github:
                removed.setdefault(github, {})[path] = {"reason": "repeated", "copy_of": f"{owner[0]}:{owner[1]}"}
                counts["removed_repeated"] += 1
            else:
                counts["kept"] += 1
    return {"counts": counts, "removed": removed}


def build_checkout(source: Source, removals: dict[str, dict[str, str]], corpus_dir: Path, force: bool) -> str:
    """Check out `source` under `corpus_dir` with `removals` taken away; 'kept' when it already is."""
    dest = corpus_dir / folder_name(source.github)
    stamp_path = corpus_dir / ".stamps" / f"{folder_name(source.github)}.json"
    stamp = {"layout": LAYOUT, "commit": source.commit, "removed": sorted(removals)}
    if not force and dest.is_dir() and stamp_path.is_file() and json.loads(stamp_path.read_text()) == stamp:
        return "kept"
    mirror = ensure_mirror(source.github, source.commit)
    partial = dest.with_name(dest.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    # The snapshot lacks files of 4 MiB and more: the checkout is the rest of the tree.
    checkout(mirror, source.commit, partial, may_lack=lambda _path: True)
    for path in removals:
        (partial / path).unlink(missing_ok=True)
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    stamp_path.parent.mkdir(parents=True, exist_ok=True)
    stamp_path.write_text(json.dumps(stamp))
    return "built"


def train_sources(manifest: dict) -> list[Source]:
    """The train repositories in rank order."""
    return [Source(r["github"], r["commit"], r["split"]) for r in manifest["repositories"] if r["split"] == "train"]


# The benchmark's dev/test repositories at the commits its workspaces are built from.
HELD_OUT = tuple(Source(repo.github, repo.commit, repo.split) for repo in QUALITY_REPOS)


def removed_paths(corpus_dir: Path = CORPUS_DIR) -> dict[str, set[str]]:
    """Per train repository, the files `make corpus` removed (copies of held-out or better-ranked files)."""
    dedup = corpus_dir / DEDUP_NAME
    if not dedup.is_file():
        raise SystemExit(f"{dedup} is missing: run make corpus")
    return {github: set(paths) for github, paths in json.loads(dedup.read_text())["removed"].items()}


def count_lines(root: Path) -> tuple[int, int]:
    """TS/JS source files and lines left in a checkout."""
    files = lines = 0
    for path in root.rglob("*"):
        if is_source(path) and path.is_file() and not path.is_symlink():
            files += 1
            with path.open("rb") as handle:
                lines += sum(1 for _ in handle)
    return files, lines


def build(
    manifest_path: Path = MANIFEST_PATH,
    held_out: tuple[Source, ...] = HELD_OUT,
    corpus_dir: Path = CORPUS_DIR,
    force: bool = False,
) -> int:
    """Check out and deduplicate the corpus; 0 when built, 1 with one line saying why not."""
    if not manifest_path.is_file():
        print(f"{manifest_path} is missing: run python -m models.corpus.select manifest")
        return 1
    started = time.monotonic()
    train = train_sources(json.loads(manifest_path.read_text()))
    try:
        train_hashes = [(s.github, tree_hashes(s, corpus_dir)) for s in train]
        held_out_hashes = [(s.github, tree_hashes(s, corpus_dir)) for s in held_out]
        dedup = deduplicate(train_hashes, held_out_hashes)
        built = [build_checkout(s, dedup["removed"].get(s.github, {}), corpus_dir, force) for s in train]
    except MirrorError as error:
        print(f"corpus not built: {error} (fetch github:<owner>/<name> brings a mirror)")
        return 1
    names = {folder_name(s.github) for s in train}
    for folder in corpus_dir.iterdir():  # repositories no longer in the manifest
        if folder.is_dir() and not folder.name.startswith(".") and folder.name not in names:
            shutil.rmtree(folder)
    files = lines = 0
    for source in train:
        repo_files, repo_lines = count_lines(corpus_dir / folder_name(source.github))
        files, lines = files + repo_files, lines + repo_lines
    dedup["counts"].update(
        {
            "repositories": len(train),
            "held_out_repositories": len(held_out),
            "ts_js_files_left": files,
            "ts_js_lines_left": lines,
        }
    )
    dedup_path = corpus_dir / DEDUP_NAME
    dedup_path.write_text(json.dumps({"layout": LAYOUT, **dedup}, indent=1) + "\n")
    counts = dedup["counts"]
    print(
        f"{len(train)} repositories ({built.count('built')} checked out, {built.count('kept')} up to date) in "
        f"{time.monotonic() - started:.0f} s: {counts['train_files']} TS/JS files, removed "
        f"{counts['removed_held_out']} copies of dev/test files and {counts['removed_repeated']} repeats; "
        f"{files} files, {lines} lines left -> {dedup_path}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.corpus.build", description=__doc__.split("\n")[0])
    parser.add_argument("--force", action="store_true", help="check every repository out again")
    return build(force=parser.parse_args(argv).force)


if __name__ == "__main__":
    sys.exit(main())
