"""Backup and restore of the indexes under an index root (`codecompass backup` / `restore`,
docs/runbooks.md), on a local disk or an object store, either way round.

A backup is a copy of committed versions, never of files as they happen to lie: each table is
copied with Lance's `deep_clone` of one version (the data, deletion and index files that version
names, then its manifest), so a writer committing meanwhile changes nothing in it.

Across the tables of one index the versions are cut at one moment: the catalog's newest version,
and every other table at its newest version committed no later than that one. The writer commits
in one order (a file's pending mark in the catalog, then its texts, then its chunks, then the
catalog entry that clears the mark; vectors later, each batch its own commit), from one clock, so
the cut holds every commit up to a catalog commit and none after it: the state a writer killed at
that moment would have left, which the next sync completes (catalog.py, "Crash safety"). A table
created after the cut (a new model's) is left out, as it would be after such a kill.

Layout of a backup, at DEST (a folder or `s3://bucket/prefix`): `<key>/<table>.lance` per index, the
registry `indexes.lance`, and `codecompass-backup.json` (which indexes, which versions, the index
format they were written in), written last: a backup without it is incomplete.

A restore copies a backup into an index root that holds none of its indexes (another root, or the
same after a loss), catalog last, and drops this machine's searcher copies of those indexes
(`<state_dir>/index-cache/<key>`, retrieval/mirror.py): a copy of the index as it was before
would otherwise be read, version numbers and all, instead of the restored one.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import lance
import lancedb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from codecompass.common.config import Settings
from codecompass.retrieval.catalog import CATALOG_TABLE
from codecompass.retrieval.location import (
    REGISTRY_TABLE,
    IndexRegistry,
    index_exists,
    index_root,
    index_uri,
    is_local_uri,
    list_tables,
)
from codecompass.retrieval.mirror import s3_filesystem
from codecompass.retrieval.schema import INDEX_FORMAT_VERSION

MANIFEST = "codecompass-backup.json"
# Bumped when the layout above changes; a restore refuses a backup of another layout.
BACKUP_LAYOUT = 1


class BackupError(RuntimeError):
    """A backup or restore that cannot be done; the message says why, in one line."""


@dataclass(frozen=True)
class CopiedIndex:
    key: str
    workspace_id: str
    # table name -> the version copied
    versions: dict[str, int]


def backup(settings: Settings, dest: str, keys: list[str] | None = None) -> list[CopiedIndex]:
    """Copy every index of the index root (or those of `keys`) to `dest`, which must hold no backup."""
    dest = dest.rstrip("/")
    options = dict(settings.retrieval.storage_options)
    if _exists(dest, MANIFEST, options):
        raise BackupError(f"{dest} already holds a backup; give an empty folder or prefix")
    root = index_root(settings)
    registered = {entry.key: entry.workspace_id for entry in IndexRegistry(root, options).entries()}
    wanted = keys if keys is not None else sorted(registered)
    copied = []
    for key in wanted:
        if not index_exists(settings, key):
            raise BackupError(f"no index with key {key} under {root}")
        versions = _copy_index(index_uri(settings, key), f"{dest}/{key}", options)
        copied.append(CopiedIndex(key, registered.get(key, ""), versions))
    registry = _open(f"{root}/{REGISTRY_TABLE}.lance", options)
    if registry is not None:
        registry.deep_clone(f"{dest}/{REGISTRY_TABLE}.lance", registry.version, storage_options=options or None)
    manifest = {"layout": BACKUP_LAYOUT, "index_format": INDEX_FORMAT_VERSION, "created_at": time.time(),
                "source": root, "indexes": [{"key": c.key, "workspace_id": c.workspace_id, "versions": c.versions}
                                            for c in copied]}
    _write(dest, MANIFEST, json.dumps(manifest, indent=2) + "\n", options)
    return copied


def restore(settings: Settings, src: str) -> list[CopiedIndex]:
    """Copy the backup at `src` into the index root, which must hold none of its indexes."""
    src = src.rstrip("/")
    options = dict(settings.retrieval.storage_options)
    text = _read(src, MANIFEST, options)
    if text is None:
        raise BackupError(f"{src} holds no backup ({MANIFEST} is missing: not a backup, or one that did not finish)")
    manifest = json.loads(text)
    if manifest.get("layout") != BACKUP_LAYOUT:
        raise BackupError(f"{src} is a backup of layout {manifest.get('layout')}; this release reads {BACKUP_LAYOUT}")
    indexes = [CopiedIndex(i["key"], i["workspace_id"], dict(i["versions"])) for i in manifest["indexes"]]
    root = index_root(settings)
    present = [i.key for i in indexes if index_exists(settings, i.key)]
    if present:
        raise BackupError(f"{root} already holds the index {present[0]}"
                          f"{f' and {len(present) - 1} more' if len(present) > 1 else ''} of this backup; restore "
                          "into an index root without them (or drop them first)")
    for index in indexes:
        target = index_uri(settings, index.key)
        # The catalog last: a reader that finds it finds the tables it names.
        for name in sorted(index.versions, key=lambda n: n == CATALOG_TABLE):
            source = _open(f"{src}/{index.key}/{name}.lance", options)
            if source is None:
                raise BackupError(f"{src}/{index.key}/{name}.lance is missing from the backup")
            source.deep_clone(f"{target}/{name}.lance", source.version, storage_options=options or None)
        shutil.rmtree(settings.state_dir / "index-cache" / index.key, ignore_errors=True)
    _restore_registry(root, f"{src}/{REGISTRY_TABLE}.lance", options, {i.key for i in indexes})
    return indexes


def backup_format(src: str, settings: Settings) -> str:
    """The index format the backup at `src` was written in ("" when it holds no backup)."""
    text = _read(src.rstrip("/"), MANIFEST, dict(settings.retrieval.storage_options))
    return str(json.loads(text).get("index_format", "")) if text else ""


def _copy_index(uri: str, dest: str, options: dict[str, str]) -> dict[str, int]:
    """Each table of the index at `uri` copied to `dest` at the cut (module docstring); table -> version."""
    db = lancedb.connect(uri, storage_options=options or None)
    names = list_tables(db)
    catalog = _open(f"{uri}/{CATALOG_TABLE}.lance", options)
    if catalog is None:
        raise BackupError(f"{uri} has no catalog: not an index")
    cut = next(_when(v) for v in catalog.versions() if v["version"] == catalog.version)
    versions = {CATALOG_TABLE: catalog.version}
    for name in names:
        if name == CATALOG_TABLE:
            continue
        table = _open(f"{uri}/{name}.lance", options)
        if table is None:
            continue
        before = [int(v["version"]) for v in table.versions() if _when(v) <= cut]
        if before:
            versions[name] = max(before)
    for name, version in versions.items():
        table = _open(f"{uri}/{name}.lance", options)
        assert table is not None
        copy = table.deep_clone(f"{dest}/{name}.lance", version, storage_options=options or None)
        if copy.count_rows() != table.checkout_version(version).count_rows():
            raise BackupError(f"the copy of {uri}/{name}.lance at version {version} does not hold its rows")
    return versions


def _when(version: Mapping[str, Any]) -> datetime:
    """When a version was committed, by the clock of the writer that committed it."""
    stamp = version["timestamp"]
    assert isinstance(stamp, datetime)
    return stamp


def _restore_registry(root: str, backup_registry: str, options: dict[str, str], keys: set[str]) -> None:
    """The backup's registry rows of the restored indexes: the whole table into a root without one,
    else merged into the root's (so `status`, `gc` and a restarted writer find them)."""
    source = _open(backup_registry, options)
    if source is None:
        return
    if _open(f"{root}/{REGISTRY_TABLE}.lance", options) is None:
        source.deep_clone(f"{root}/{REGISTRY_TABLE}.lance", source.version, storage_options=options or None)
        return
    rows = source.to_table()
    rows = rows.filter(pc.is_in(rows.column("key"), value_set=pa.array(sorted(keys), pa.string())))
    if rows.num_rows:
        table = lancedb.connect(root, storage_options=options or None).open_table(REGISTRY_TABLE)
        table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(rows)


def _open(uri: str, options: dict[str, str]) -> lance.LanceDataset | None:
    try:
        return lance.dataset(uri, storage_options=options or None)
    except (ValueError, FileNotFoundError):
        return None


def _filesystem(uri: str, options: dict[str, str]) -> tuple[pafs.FileSystem, str]:
    if is_local_uri(uri):
        return pafs.LocalFileSystem(), uri.removeprefix("file://")
    if uri.startswith("s3://"):
        return s3_filesystem(options), uri.removeprefix("s3://")
    raise BackupError(f"{uri}: backups go to a local folder or s3://bucket/prefix")


def _exists(base: str, name: str, options: dict[str, str]) -> bool:
    fs, path = _filesystem(base, options)
    return fs.get_file_info(f"{path}/{name}").type == pafs.FileType.File


def _read(base: str, name: str, options: dict[str, str]) -> str | None:
    fs, path = _filesystem(base, options)
    if fs.get_file_info(f"{path}/{name}").type != pafs.FileType.File:
        return None
    with fs.open_input_stream(f"{path}/{name}") as stream:
        return stream.read().decode("utf-8")


def _write(base: str, name: str, text: str, options: dict[str, str]) -> None:
    fs, path = _filesystem(base, options)
    if isinstance(fs, pafs.LocalFileSystem):
        Path(path).mkdir(parents=True, exist_ok=True)
    with fs.open_output_stream(f"{path}/{name}") as stream:
        stream.write(text.encode("utf-8"))
