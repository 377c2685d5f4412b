"""The indexes a retrieval service knows, asked of it (ListIndexes / DropIndex), so `gc` and
`status` work the same on a local state dir and on a team's index on object storage; and
removing every local index for `down --purge`.
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.config import Settings
from codecompass.common.files import tree_bytes
from codecompass.contracts.retrieval.model import IndexSummary, base_repository, repository_of
from codecompass_cli.errors import CliError, service_errors

# The folders of a local state dir that hold indexes: the index root, and the catalogs kept
# beside it by versions before the catalog moved into the index.
_STATE_FOLDERS = ("index", "workspaces")


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


def list_indexes(address: str, timeout_s: float) -> list[IndexSummary]:
    """Every index the retrieval service at `address` can read, largest first."""
    client = RetrievalClient(address)
    try:
        with service_errors():
            indexes = client.list_indexes(timeout_s)
    finally:
        client.close()
    return sorted(indexes, key=lambda ix: (-ix.status.index_bytes, ix.workspace_id))


def drop_index(address: str, workspace_id: str, timeout_s: float) -> int:
    """Drop one index through the index writer; the bytes it held on a local disk."""
    client = RetrievalClient(address)
    try:
        with service_errors():
            return client.drop_index(timeout_s, workspace_id=workspace_id)[1]
    finally:
        client.close()


def workspace_gone(index: IndexSummary) -> bool | None:
    """True when the folder the index was synced from is gone from this machine; None when that
    folder is on another machine (a shared index: this one cannot tell)."""
    if index.host != socket.gethostname() or not index.root:
        return None
    return not Path(index.root).is_dir()


def base_unused(base: IndexSummary, indexes: list[IndexSummary], removed: set[str]) -> bool:
    """Whether no checkout's index of the base's repository is left (those in `removed` aside)."""
    repository = base_repository(base.workspace_id)
    return not any(i.kind != "base" and i.workspace_id not in removed and repository_of(i.workspace_id) == repository
                   for i in indexes)


def remove_all_indexes(settings: Settings) -> Removed:
    """Delete the local index root and legacy catalogs of this state dir (services stopped)."""
    count = size = 0
    for kind in _STATE_FOLDERS:
        base = settings.state_dir / kind
        try:
            children = [child for child in base.iterdir() if child.is_dir()]
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise CliError(f"cannot list {base}: {exc.strerror}") from None
        if kind == "index":
            count += sum(1 for child in children if not child.name.endswith(".lance"))
        size += sum(tree_bytes(child) for child in children)
        try:
            shutil.rmtree(base)
        except OSError as exc:
            raise CliError(f"cannot remove {base}: {exc.strerror}") from None
    return Removed(count, size)
