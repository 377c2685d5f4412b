"""The indexes in a state dir: which workspace each belongs to, its size, and removing it.

A workspace's state is two folders of the same key (a digest of its path): its catalog under
``workspaces/<key>`` and its LanceDB tables under ``index/<key>``. The retrieval service
records the workspace's path beside the catalog (``retrieval.state.WORKSPACE_RECORD``);
indexes built before it did are listed with an unknown workspace and never removed by `gc`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from codecompass.common.config import Settings
from codecompass.common.files import tree_bytes
from codecompass.retrieval.state import recorded_workspace_root
from codecompass_cli.errors import CliError

# The two folders that hold one workspace's state, each keyed by the workspace digest.
_STATE_FOLDERS = ("workspaces", "index")


@dataclass(frozen=True)
class IndexEntry:
    key: str
    workspace: Path | None
    size_bytes: int
    folders: tuple[Path, ...]

    @property
    def workspace_exists(self) -> bool | None:
        """None when the workspace was never recorded."""
        return None if self.workspace is None else self.workspace.is_dir()


@dataclass(frozen=True)
class Removed:
    count: int
    size_bytes: int

    @property
    def size_text(self) -> str:
        return human_size(self.size_bytes)


def human_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def list_indexes(settings: Settings) -> list[IndexEntry]:
    """Every workspace state in the state dir, largest first."""
    folders: dict[str, list[Path]] = {}
    for kind in _STATE_FOLDERS:
        base = settings.state_dir / kind
        try:
            children = sorted(base.iterdir())
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CliError(f"cannot list {base}: {exc.strerror}") from None
        for child in children:
            # Folders only: the retrieval service also writes probe files here.
            if child.is_dir():
                folders.setdefault(child.name, []).append(child)
    entries = [
        IndexEntry(key=key,
                   workspace=recorded_workspace_root(settings.state_dir / "workspaces" / key),
                   size_bytes=sum(tree_bytes(folder) for folder in paths),
                   folders=tuple(paths))
        for key, paths in folders.items()
    ]
    return sorted(entries, key=lambda entry: (-entry.size_bytes, entry.key))


def remove_index(entry: IndexEntry) -> None:
    for folder in entry.folders:
        try:
            shutil.rmtree(folder)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CliError(f"cannot remove {folder}: {exc.strerror}") from None


def remove_all_indexes(settings: Settings) -> Removed:
    entries = list_indexes(settings)
    for entry in entries:
        remove_index(entry)
    return Removed(len(entries), sum(entry.size_bytes for entry in entries))
