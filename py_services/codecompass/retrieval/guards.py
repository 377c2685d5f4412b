"""What the retrieval service refuses to index unless a request forces it.

Two guards, both checked only before a workspace's first index (once a workspace is indexed,
on purpose, its syncs need no force):
- the folder itself: the filesystem root, the home folder, a system folder. Indexing one is
  always a slip (a wrong argument, a tool started in the wrong folder), and it costs minutes of
  scanning and embedding for an index nobody wants;
- the size: a first index above the configured file count or bytes, reported with what it would
  hold (files, bytes, the largest top-level folders), so a folder that is much bigger than the
  user thought is caught before anything is written.

They live in the service, not the CLI, so every entry point gets them: `codecompass index`,
`codecompass search`, the MCP gateway's background indexing.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path, PurePath, PureWindowsPath

from codecompass.contracts.analysis.model import FileEntry

# Folders no project lives in: refused, and so is everything below them.
_SYSTEM_TREES_POSIX = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
                       "/sbin", "/sys", "/usr", "/System", "/Library", "/private/etc", "/private/var/db")
# Folders that hold projects below them (/var/www/app, /opt/app, /home/me/x, /tmp/x) but are not
# one themselves: refused only as they are.
_SYSTEM_FOLDERS_POSIX = ("/var", "/opt", "/srv", "/home", "/Users", "/mnt", "/media", "/tmp", "/private",
                         "/private/var", "/private/tmp", "/Applications", "/Volumes", "/root")
_SYSTEM_TREES_WINDOWS = ("Windows", "Program Files", "Program Files (x86)", "ProgramData")
_SYSTEM_FOLDERS_WINDOWS = ("Users",)
# Top-level folders named in the size warning.
_TOP_FOLDERS = 3


def force_hint(root: PurePath) -> str:
    return f"codecompass index --force {shlex.quote(str(root))}"


def _is_under(path: PurePath, folder: PurePath) -> bool:
    return path == folder or folder in path.parents


def protected_folder(root: PurePath, home: PurePath | None) -> str | None:
    """Why `root` (absolute, resolved) is not a project folder, or None when it may be one."""
    if root.parent == root:
        return "it is the filesystem root"
    if home is not None and root == home:
        return "it is your home folder"
    if isinstance(root, PureWindowsPath):
        drive = PureWindowsPath(root.anchor.upper())
        folded = PureWindowsPath(str(root).lower())
        for name in _SYSTEM_TREES_WINDOWS:
            if _is_under(folded, PureWindowsPath(str(drive / name).lower())):
                return f"it is a system folder ({drive / name})"
        for name in _SYSTEM_FOLDERS_WINDOWS:
            if folded == PureWindowsPath(str(drive / name).lower()):
                return f"it is a system folder ({drive / name})"
        return None
    # `root` is resolved (no "..", no trailing "/"): its text answers "under" as its parts would,
    # for a twentieth of the cost of comparing PurePaths (every sync of every search asks).
    text = str(root)
    for tree in _SYSTEM_TREES_POSIX:
        if text == tree or text.startswith(f"{tree}/"):
            return f"it is a system folder ({tree})"
    if text in _SYSTEM_FOLDERS_POSIX:
        return "it is a system folder"
    return None


def folder_refusal(root: PurePath, home: PurePath | None) -> str | None:
    """The one-line refusal for a protected folder, or None."""
    why = protected_folder(root, home)
    if why is None:
        return None
    return (f"refusing to index {root}: {why}, not a project; index a project folder, "
            f"or run `{force_hint(root)}` to index it anyway")


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"


def size_refusal(root: PurePath, files: Iterable[FileEntry], max_files: int, max_mb: int) -> str | None:
    """The one-line refusal for a first index above the limits, naming what it would hold."""
    count = total = 0
    folders: dict[str, list[int]] = {}
    for entry in files:
        count += 1
        total += entry.size_bytes
        head, sep, _ = entry.relative_path.partition("/")
        bucket = folders.setdefault(f"{head}/" if sep else "(top level)", [0, 0])
        bucket[0] += 1
        bucket[1] += entry.size_bytes
    if count <= max_files and total <= max_mb * 1_000_000:
        return None
    largest = sorted(folders.items(), key=lambda item: (-item[1][0], item[0]))[:_TOP_FOLDERS]
    where = ", ".join(f"{name} {n:,} files {_megabytes(size)}" for name, (n, size) in largest)
    return (f"refusing to index {root}: {count:,} source files, {_megabytes(total)} (largest: {where}) is above "
            f"the first-index limits (retrieval.large_index_files {max_files:,}, retrieval.large_index_mb "
            f"{max_mb:,}); index a narrower folder, leave folders out in .codecompassignore, or run "
            f"`{force_hint(root)}` to index it anyway")


def home_folder() -> Path | None:
    """The user's home folder, resolved; None when there is none (no HOME and no passwd entry)."""
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):
        return None
