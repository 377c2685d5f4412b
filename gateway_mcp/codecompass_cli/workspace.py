"""Which workspace a path belongs to."""

from __future__ import annotations

from pathlib import Path

from codecompass.common.inputs import QUOTE_CHARS, path_problem, quoted
from codecompass_cli.errors import EXIT_USAGE, CliError

ROOT_MARKERS = (".git", "package.json", "tsconfig.json", "jsconfig.json")


def find_workspace_root(path: Path) -> Path:
    """Nearest ancestor (or the folder itself) holding .git, package.json or a tsconfig."""
    start = path if path.is_dir() else path.parent
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in ROOT_MARKERS):
            return candidate
    return start


def shown(raw: str) -> str:
    """A path as a message shows it: as typed, or a prefix of one too long to be any path."""
    return raw if len(raw) <= QUOTE_CHARS else quoted(raw)


def existing_path(raw: str) -> Path:
    if (problem := path_problem(raw, "the path")) is not None:
        raise CliError(problem, EXIT_USAGE)
    path = Path(raw).expanduser()
    if not path.exists():
        raise CliError(f"no such file or folder: {shown(raw)}", EXIT_USAGE)
    return path.resolve()


def workspace_dir(raw: str) -> Path:
    path = existing_path(raw)
    if not path.is_dir():
        raise CliError(f"not a folder: {shown(raw)} (a workspace is a folder)", EXIT_USAGE)
    return path


def resolve_target(raw_path: str, raw_workspace: str | None) -> tuple[Path, str]:
    """(workspace root, path relative to it) for a file or folder to chunk."""
    path = existing_path(raw_path)
    root = workspace_dir(raw_workspace) if raw_workspace else find_workspace_root(path)
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise CliError(f"{shown(raw_path)} is outside the workspace {root}", EXIT_USAGE) from None
    return root, relative.as_posix()
