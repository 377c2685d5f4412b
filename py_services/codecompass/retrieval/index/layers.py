"""Bases: what the checkouts of one repository share, so a new worktree or clone costs its diff.

Each checkout has an index of its own (`location.checkout_id`): two worktrees on two branches
never write each other's rows. What they share is a *base*: an immutable copy of a checkout's
index taken when that checkout was clean at a commit (every file as committed, every vector
written). A checkout whose index does not exist yet starts from the base nearest its files (the
fewest files differing, by git): its tables are shallow clones of the base's (LanceDB/Lance
`shallow_clone`: new manifests that point at the base's data files, milliseconds and no copy;
its indexes are its own, built again), and its first sync is then an ordinary incremental
one: the catalog's content hashes say which files differ, and only those are chunked and
embedded, into the checkout's own files. A sync never writes into a base: the clone's writes
(new fragments, deletion files, compaction, its version cleanup) are all under its own index.

On object storage the checkout's tables are deep clones of the base's instead (a copy in the
bucket, no chunking or embedding either): a shallow clone's manifests name the base's data files
by their s3:// path, which a searcher's local mirror (`mirror.py`) copies without the files they
name and then cannot read, and which Lance (pylance 14) cannot deep-clone again when that
checkout is clean and writes a base of its own ("contained empty path segment"); both seen
against a local S3 server.

A base is a *deep* copy of the checkout's tables (`deep_clone`), not a tag on them: the
checkout's index goes on changing and its maintenance deletes old versions' files, which the
base's readers may still point at. A base is written once and never changed. The writer drops a
repository's older bases no checkout started from when it writes a newer one; `gc` drops a base
with the last checkout of its repository; DropIndex refuses a base a checkout reads.

Everything here needs the git binary and a repository: without them there are no bases, and a
checkout is indexed from its files as before.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import lance
import lancedb

from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.contracts.retrieval.model import base_id, base_repository
from codecompass.retrieval.location import (
    BASE,
    CHECKOUT,
    IndexRegistry,
    RegisteredIndex,
    index_exists,
    index_key,
    index_root,
    index_uri,
    is_local_uri,
    list_tables,
)

_log = get_logger(__name__)

# A git command slower than this is not worth waiting for: the index is built from the files.
GIT_TIMEOUT_S = 10.0
# Bases compared by their diff to a new checkout, newest first: each costs one `git diff`.
MAX_BASES_COMPARED = 8
_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
# The manifest values of a checkout's index that started from a base.
BASE_META, BASE_COMMIT_META = "base", "base_commit"


def _git(root: Path, *args: str) -> str | None:
    """git's output in `root`, or None when git is missing, fails or hangs. Optional locks off:
    a status must not take the index lock an agent's own git command is about to need."""
    try:
        done = subprocess.run(["git", "--no-optional-locks", "-C", str(root), *args], capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def head_commit(root: Path) -> str | None:
    """The commit `root`'s checkout is at, or None outside a repository (or before its first
    commit). Every sync asks, so the common layouts are read from the git directory's files
    (~0.1 ms; `git rev-parse` costs a process, 2-3 ms of each warm search's sync); anything
    else asks git."""
    if not any(name in os.environ for name in _GIT_ENV):
        try:
            git_dir = _git_dir(root.resolve())
        except (OSError, UnicodeDecodeError):
            git_dir = None
        if git_dir is None:
            return None  # no repository above it: git would find none either
        commit = _head_from_files(git_dir)
        if commit is not None:
            return commit
    out = _git(root, "rev-parse", "HEAD")
    commit = out.strip() if out else ""
    return commit if _COMMIT.match(commit) else None


# Variables that point git elsewhere than the folder's own repository: then git is asked.
_GIT_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM")
_REF = re.compile(r"^ref: (refs/[^\s]+)$")


def _head_from_files(git_dir: Path) -> str | None:
    """HEAD's commit read from the files of `git_dir` (a repository's or a linked worktree's),
    its branch resolved in the loose refs, then in packed-refs; None for any other layout
    (reftable, a branch with no commit yet), which the caller leaves to git."""
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        if _COMMIT.match(head):
            return head
        ref = _REF.match(head)
        if ref is None:
            return None
        common = git_dir
        if (git_dir / "commondir").is_file():
            common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
        for where in dict.fromkeys((git_dir, common)):
            loose = where / ref.group(1)
            if loose.is_file():
                value = loose.read_text(encoding="utf-8").strip()
                return value if _COMMIT.match(value) else None
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                value, _, name = line.partition(" ")
                if name == ref.group(1) and _COMMIT.match(value):
                    return value
    except (OSError, UnicodeDecodeError):
        return None
    return None


def _git_dir(start: Path) -> Path | None:
    """The git directory of the repository `start` is in: the nearest `.git` folder above it,
    or the one a `.git` file names (`gitdir: …`, a linked worktree or a submodule)."""
    for folder in (start, *start.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            text = dot.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir: "):
                return None
            named = Path(text[len("gitdir: "):])
            return named if named.is_absolute() else (folder / named).resolve()
    return None


def clean_commit(root: Path) -> str | None:
    """The commit `root`'s checkout is at when its files are exactly that commit's (nothing
    modified, staged or untracked and not ignored), else None."""
    commit = head_commit(root)
    if commit is None:
        return None
    status = _git(root, "status", "--porcelain", "--untracked-files=normal")
    return commit if status == "" else None


def files_differing(root: Path, commit: str) -> int | None:
    """How many files of `root`'s checkout differ from `commit` (committed, staged or not), or
    None when this repository does not have that commit."""
    out = _git(root, "diff", "--name-only", "--no-renames", commit, "--", ".")
    return None if out is None else len(out.splitlines())


@dataclass(frozen=True)
class Base:
    key: str
    commit: str
    differing: int  # files of the checkout that differ from it


def bases_of(entries: list[RegisteredIndex], repository_id: str) -> list[RegisteredIndex]:
    """The repository's bases, newest first."""
    return sorted((e for e in entries if e.kind == BASE and e.workspace_id == base_id(repository_id, e.commit)),
                  key=lambda e: e.registered_at, reverse=True)


def nearest_base(settings: Settings, root: Path, repository_id: str) -> Base | None:
    """The base of the repository whose files differ least from `root`'s, if any."""
    registry = IndexRegistry(index_root(settings), dict(settings.retrieval.storage_options))
    best: Base | None = None
    for entry in bases_of(registry.entries(), repository_id)[:MAX_BASES_COMPARED]:
        differing = files_differing(root, entry.commit)
        if differing is not None and (best is None or differing < best.differing) \
                and index_exists(settings, entry.key):
            best = Base(entry.key, entry.commit, differing)
    return best


def _dataset_uri(index: str, table: str) -> str:
    return f"{index}/{table}.lance"


def start_from_base(settings: Settings, key: str, base: Base) -> list[str]:
    """The tables of the index `key` (which does not exist yet) as clones of `base`'s: shallow on
    a local disk, deep on object storage (above); their names. A clone that fails midway leaves
    nothing: the index is then built from its files."""
    source, target = index_uri(settings, base.key), index_uri(settings, key)
    options = dict(settings.retrieval.storage_options) or None
    tables = list_tables(lancedb.connect(source, storage_options=options))
    shallow = is_local_uri(target)
    try:
        for table in tables:
            dataset = lance.dataset(_dataset_uri(source, table), storage_options=options)
            copy = dataset.shallow_clone if shallow else dataset.deep_clone
            clone = copy(_dataset_uri(target, table), dataset.version, storage_options=options)
            # Without the base's indexes: Lance (pylance 14) writes an index it updates in a shallow clone
            # into the clone's folder but records it as the base's, which then cannot be read (seen
            # as "Not found: <base>/_indices/<uuid>/tokens.lance" after the clone's first update).
            # The writer builds its own full-text index at once.
            for index in clone.list_indices():
                clone.drop_index(index["name"])
    except (OSError, RuntimeError, ValueError):
        _remove(settings, target)
        raise
    return tables


def write_base(settings: Settings, source_key: str, tables: dict[str, int], repository_id: str, commit: str,
               root: Path) -> str:
    """A base of `repository_id` at `commit`: a deep copy of the index `source_key`'s `tables`
    at the given versions (one consistent state, read under its writer's lock), registered once
    every table is copied. Its key."""
    key = index_key(base_id(repository_id, commit))
    source, target = index_uri(settings, source_key), index_uri(settings, key)
    options = dict(settings.retrieval.storage_options) or None
    _remove(settings, target)  # what a writer killed while copying left
    try:
        for table, version in tables.items():
            dataset = lance.dataset(_dataset_uri(source, table), storage_options=options)
            dataset.deep_clone(_dataset_uri(target, table), version, storage_options=options)
    except (OSError, RuntimeError, ValueError):
        _remove(settings, target)
        raise
    IndexRegistry(index_root(settings), dict(settings.retrieval.storage_options)).register(
        key, base_id(repository_id, commit), str(root), kind=BASE, base=source_key, commit=commit)
    return key


def collectable_bases(entries: list[RegisteredIndex]) -> list[RegisteredIndex]:
    """Bases no checkout's index started from, except each repository's newest."""
    used = {e.base for e in entries if e.kind == CHECKOUT}
    newest: dict[str, RegisteredIndex] = {}
    for entry in entries:
        if entry.kind == BASE:
            repository = base_repository(entry.workspace_id)
            if repository not in newest or entry.registered_at > newest[repository].registered_at:
                newest[repository] = entry
    keep = {e.key for e in newest.values()} | used
    return [e for e in entries if e.kind == BASE and e.key not in keep]


def _remove(settings: Settings, uri: str) -> None:
    """Whatever tables are at `uri` (a partial copy), gone."""
    if is_local_uri(uri):
        shutil.rmtree(Path(uri.removeprefix("file://")), ignore_errors=True)
        return
    db = lancedb.connect(uri, storage_options=dict(settings.retrieval.storage_options) or None)
    for table in list_tables(db):
        db.drop_table(table)
