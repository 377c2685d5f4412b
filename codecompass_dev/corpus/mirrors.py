"""Git mirrors of the benchmark's repositories, and checkouts of a pinned commit out of them.

A workspace is built "as a clone has it": every file of the commit's tree, written by git's
own checkout (`read-tree` + `checkout-index`, with a private index file, so the mirror is only
read), which applies `.gitattributes` the way a clone does and writes symlinks as symlinks.
The settings a user's git config could change (line endings, symlinks) are pinned, so the
same commit gives the same bytes on any machine.

Mirrors live in $BENCH_MIRRORS (default bench/.mirrors/, gitignored), one per repository,
either `<owner>+<name>.git` (`git clone --mirror`, what `ensure_mirror` makes when one is
missing) or `<owner>+<name>/repo` (a bare repository fetched by other tooling, or a clone
whose git directory is `repo/.git`). The same
mirrors serve the commit miner (codecompass_dev/queries/commits.py) and the training corpus
(models/corpus/), which read their history.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

# The mirrors are the benchmark's data, kept where they always were: bench/.mirrors.
BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
MIRRORS_ENV = "BENCH_MIRRORS"
DEFAULT_MIRRORS_DIR = BENCH_DIR / ".mirrors"
# A checkout must not depend on the user's git config: LF as stored, symlinks as symlinks.
CHECKOUT_CONFIG = ("-c", "core.autocrlf=false", "-c", "core.eol=lf", "-c", "core.symlinks=true")


class MirrorError(Exception):
    """A mirror is missing, lacks a pinned commit, or git failed; the message says which."""


def mirrors_dir() -> Path:
    return Path(os.environ.get(MIRRORS_ENV) or DEFAULT_MIRRORS_DIR)


def folder_name(github: str) -> str:
    """`owner/name` as one path component: the name of its mirror and of its checkouts."""
    return github.replace("/", "+")


def mirror_candidates(github: str, base: Path | None = None) -> list[Path]:
    """Where the mirror of `owner/name` may be, in the order looked at."""
    base = base or mirrors_dir()
    stem = folder_name(github)
    # A fetched snapshot is a bare repository, or now and then a clone with its git directory inside.
    return [base / f"{stem}.git", base / stem / "repo", base / stem / "repo" / ".git"]


def _last_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    return lines[-1] if lines else "no message"


def _run(args: list[str], *, text: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """A git command whose exit status the caller judges (a probe's failure is an answer)."""
    return subprocess.run(
        ["git", *args], check=False, capture_output=True, text=text, errors="replace" if text else None, **kwargs
    )


def _checked(mirror: Path, args: tuple[str, ...], text: bool) -> subprocess.CompletedProcess:
    result = _run(["--git-dir", str(mirror), *args], text=text)
    if result.returncode != 0:
        stderr = result.stderr if text else result.stderr.decode(errors="replace")
        raise MirrorError(f"git {' '.join(args[:2])} in {mirror} failed: {_last_line(stderr)}")
    return result


def git(mirror: Path, *args: str) -> str:
    """Output of `git --git-dir=<mirror> <args>` as text; a failure is a MirrorError naming the command."""
    return _checked(mirror, args, text=True).stdout


def git_bytes(mirror: Path, *args: str) -> bytes:
    """The same, as bytes (file contents)."""
    return _checked(mirror, args, text=False).stdout


def has_commit(mirror: Path, commit: str) -> bool:
    return _run(["--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}"]).returncode == 0


def find_mirror(github: str) -> Path | None:
    return next((path for path in mirror_candidates(github) if (path / "HEAD").is_file()), None)


def ensure_mirror(github: str, commit: str) -> Path:
    """The mirror of `github` holding `commit`; cloned from GitHub when there is none."""
    mirror = find_mirror(github)
    if mirror is None:
        mirror = mirror_candidates(github)[0]
        mirror.parent.mkdir(parents=True, exist_ok=True)
        url = f"https://github.com/{github}.git"
        clone = _run(["clone", "--quiet", "--mirror", url, str(mirror)])
        if clone.returncode != 0:
            shutil.rmtree(mirror, ignore_errors=True)
            raise MirrorError(
                f"no mirror of {github} in {mirrors_dir()} and cloning {url} failed "
                f"({_last_line(clone.stderr)}); set {MIRRORS_ENV} to a folder of mirrors"
            )
    if not has_commit(mirror, commit):
        raise MirrorError(f"{mirror} lacks commit {commit} of {github}: update the mirror (git remote update)")
    return mirror


def tag_commit(mirror: Path, tag: str) -> str | None:
    """The commit a tag points to in the mirror, or None when the mirror has no such tag."""
    probe = _run(["--git-dir", str(mirror), "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}"])
    return probe.stdout.strip() or None


def absent_files(mirror: Path, commit: str) -> list[str]:
    """Paths of `commit` whose contents the mirror lacks (a partial mirror leaves out its largest blobs)."""
    paths_by_blob: dict[str, list[str]] = {}
    for entry in git(mirror, "ls-tree", "-r", "-z", commit).split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob":
                paths_by_blob.setdefault(sha, []).append(path)
    probe = _run(
        ["--git-dir", str(mirror), "cat-file", "--batch-check"], input="".join(f"{sha}\n" for sha in paths_by_blob)
    )
    absent = [line.split()[0] for line in probe.stdout.splitlines() if line.endswith(" missing")]
    return sorted(path for sha in absent for path in paths_by_blob[sha])


def checkout(mirror: Path, commit: str, dest: Path, may_lack: Callable[[str], bool]) -> list[str]:
    """Write the tree of `commit` into the empty folder `dest`, as `git clone` + `git checkout` would.

    Files whose contents the mirror lacks are left out when `may_lack(path)` allows it (they
    are returned); any other such file is a MirrorError.
    """
    absent = absent_files(mirror, commit)
    needed = [path for path in absent if not may_lack(path)]
    if needed:
        raise MirrorError(f"{mirror} lacks the contents of {len(needed)} file(s) of {commit}, e.g. {needed[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-checkout-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        steps = [("read-tree", commit)]
        if absent:
            steps.append(("update-index", "--force-remove", "-z", "--stdin"))
        steps.append(("checkout-index", "--all", "--force"))
        for args in steps:
            result = _run(
                [*CHECKOUT_CONFIG, "--git-dir", str(mirror), "--work-tree", str(dest), *args],
                input="".join(f"{path}\0" for path in absent) if "--stdin" in args else None,
                env=env,
            )
            if result.returncode != 0:
                raise MirrorError(f"checking out {commit} of {mirror} failed: {_last_line(result.stderr)}")
    return absent
