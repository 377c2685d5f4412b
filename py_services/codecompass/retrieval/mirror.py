"""A searcher's local copy of an index that lives on S3, read instead of the bucket.

Searching straight from an object store fetches the columns a query scans on every query (the
full-text index, the vectors of an exhaustive scan): measured on ws-300k against a local S3
server, p95 569 ms instead of 96 ms from a local disk (`make bench-store-speed`), and on real S3
every request adds its network latency on top. A Lance dataset is immutable files plus one
manifest per version, so a copy is exact and cheap to keep current: copy the files not copied
yet, and nothing else ever changes.

Consistency: a refresh copies data, deletion and index files before the manifests that name
them; the source texts' manifests before the chunk tables' (the writer commits texts before the
chunks that name them, and a searcher moves its chunks before its texts, so it never reads a
chunk whose text it cannot find); and the chunk tables before the catalog whose manifest rows say
which table is current, so the local reader (which reads the newest local manifest) always sees one whole version that
the writer committed, never a manifest whose files are missing. Files the writer's maintenance
deleted upstream are deleted here one refresh later, so a query on the previous version finishes.

Only `s3://` (and S3-compatible servers through `aws_endpoint`) is mirrored; other stores are read
directly.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import pyarrow.fs as pafs

from codecompass.common.logging import get_logger
from codecompass.retrieval.catalog import CATALOG_TABLE
from codecompass.retrieval.schema import SOURCES_PREFIX

_log = get_logger(__name__)

_COPY_CHUNK = 8 * 1024 * 1024
# The only files Lance rewrites in place (hints to the newest manifest): copied at every refresh
# that copied anything, after the manifests they point at.
_MUTABLE = ("latest_version_hint.json", "_latest.manifest")


def mirrorable(uri: str) -> bool:
    return uri.startswith("s3://")


def s3_filesystem(storage_options: dict[str, str], timeout_s: float | None = None) -> pafs.S3FileSystem:
    """An S3 client configured from LanceDB's storage options (object_store's AWS keys); with
    none, the usual environment and instance credentials. `timeout_s`: each request's bound and
    no retry (a check that must answer soon); None: the SDK's own, with its retries."""
    bounded = {} if timeout_s is None else {
        "connect_timeout": timeout_s, "request_timeout": timeout_s,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=1)}
    endpoint = storage_options.get("aws_endpoint") or storage_options.get("endpoint")
    scheme = None
    if endpoint:
        parsed = urlparse(endpoint)
        scheme, endpoint = parsed.scheme or None, parsed.netloc or parsed.path
    return pafs.S3FileSystem(
        access_key=storage_options.get("aws_access_key_id"),
        secret_key=storage_options.get("aws_secret_access_key"),
        session_token=storage_options.get("aws_session_token"),
        region=storage_options.get("aws_region") or storage_options.get("region"),
        endpoint_override=endpoint,
        scheme=scheme,
        **bounded,
    )


class IndexMirror:
    """The local copy of one index (`remote_uri`, an `s3://bucket/prefix/<key>`) in `folder`."""

    def __init__(self, remote_uri: str, storage_options: dict[str, str], folder: Path) -> None:
        parsed = urlparse(remote_uri)
        self._remote = f"{parsed.netloc}{parsed.path}".rstrip("/")
        self._fs = s3_filesystem(storage_options)
        self.folder = folder
        self._lock = threading.Lock()
        # Local files missing upstream at the last refresh: deleted at the next one.
        self._doomed: set[str] = set()
        self.refreshed_at = 0.0

    def refresh(self) -> int:
        """Copy every file of the index not copied yet, in an order that keeps the local copy a
        committed version at every moment; the number of files copied."""
        with self._lock:
            listing = self._fs.get_file_info(pafs.FileSelector(self._remote, recursive=True, allow_not_found=True))
            remote = {info.path[len(self._remote) + 1:]: info.size for info in listing
                      if info.type == pafs.FileType.File}
            missing = [rel for rel, size in remote.items()
                       if not rel.endswith(_MUTABLE) and not _same_size(self.folder / rel, size)]
            if missing or not self.refreshed_at:
                missing += [rel for rel in remote if rel.endswith(_MUTABLE)]
            missing.sort(key=_copy_order)
            for rel in missing:
                self._copy(rel)
            local = {str(p.relative_to(self.folder)) for p in self.folder.rglob("*") if p.is_file()} \
                if self.folder.is_dir() else set()
            gone = local - set(remote)
            for rel in gone & self._doomed:
                (self.folder / rel).unlink(missing_ok=True)
            self._doomed = gone - self._doomed
            self.refreshed_at = time.monotonic()
            if missing:
                _log.info("index mirror refreshed", extra={"remote": self._remote, "files": len(missing)})
            return len(missing)

    def _copy(self, rel: str) -> None:
        target = self.folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.part")
        with self._fs.open_input_stream(f"{self._remote}/{rel}") as source, open(partial, "wb") as out:
            shutil.copyfileobj(source, out, _COPY_CHUNK)
        os.replace(partial, target)


def _same_size(path: Path, size: int) -> bool:
    try:
        return path.stat().st_size == size
    except OSError:
        return False


def _copy_order(rel: str) -> tuple[bool, int, bool, str]:
    """Chunk and source tables before the catalog; in each, a version's files, then its
    manifest, then the hint that points at it; at each of those steps the source texts before
    the chunks, in the order the writer commits them (by name, chunks_* would come first)."""
    table = rel.split("/", 1)[0]
    step = 2 if rel.endswith(_MUTABLE) else 1 if "/_versions/" in f"/{rel}" else 0
    return table == f"{CATALOG_TABLE}.lance", step, not table.startswith(SOURCES_PREFIX), rel
