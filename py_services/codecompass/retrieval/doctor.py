"""Why an index writer will not start, or what it will do to the indexes it finds, in one line a
cause (`codecompass doctor`, docs/runbooks.md).

What stops a writer, read from its start (`__main__`, `IndexWriter.warmup`, `serving.start_server`):
- the settings do not parse (a variable named in the message: `load_settings`, before this runs);
- its port is taken (`serving` exits with "cannot listen on ...");
- its index root cannot be written: a local folder it cannot create or write, or an object store
  it cannot reach, whose credentials it lacks or whose bucket is missing (warmup fails and the
  process exits 1, the cause deep in a log line's traceback).
And what it does to an index at start or at its next sync, by the index format its tables carry
(`ChunkWriter.open`): a table of an older format is dropped and rebuilt (search finds nothing in
that index until the rebuild has written it); one of a newer format, written by a later release, is
dropped too, which loses that release's index: a rollback is a restore of the backup taken before
the upgrade (docs/runbooks.md), not an older writer over the newer index.

There is no writer lock to find held: a second writer of one index is serialised by LanceDB's
conditional commits (workspace_writer.py), and one writer per index is the deployment's to ensure
(Kubernetes: a StatefulSet of one).
"""

from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass
from pathlib import Path

import lance
import lancedb

from codecompass.clients.health import SERVING
from codecompass.clients.health import check as check_health
from codecompass.common import names
from codecompass.common.config import Settings
from codecompass.common.hosts import host_port
from codecompass.retrieval.location import IndexRegistry, index_root, index_uri, is_local_uri, list_tables
from codecompass.retrieval.mirror import s3_filesystem
from codecompass.retrieval.schema import FORMAT_METADATA_KEY, INDEX_FORMAT_VERSION, TABLE_PREFIX

# An object store that does not answer within this is reported as unreachable (a writer would hang).
_STORE_TIMEOUT_S = 5.0
_HEALTH_TIMEOUT_S = 2.0

OK, NOTE, FAIL = "ok", "note", "FAIL"


@dataclass(frozen=True)
class Finding:
    verdict: str  # OK, NOTE (works, but read it) or FAIL (the writer will not start or will lose data)
    line: str


def diagnose(settings: Settings) -> list[Finding]:
    root_finding = index_root_finding(settings)
    findings = [root_finding, port_finding(settings)]
    if root_finding.verdict == OK:
        findings += format_findings(settings)
    return findings


def index_root_finding(settings: Settings) -> Finding:
    root = index_root(settings)
    if is_local_uri(root):
        folder = Path(root.removeprefix("file://"))
        probe = folder / f".doctor-probe-{os.getpid()}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        except OSError as exc:
            where = exc.filename or folder
            problem = ("a file stands where a folder is needed" if isinstance(exc, FileExistsError | NotADirectoryError)
                       else exc.strerror or str(exc))
            return Finding(FAIL, f"index root {folder} is not writable ({where}: {problem}): fix its permissions or "
                                 "set CODECOMPASS_STATE_DIR / CODECOMPASS_RETRIEVAL_DB_URI to a writable folder")
        return Finding(OK, f"index root {folder} is writable")
    if not root.startswith("s3://"):
        return Finding(NOTE, f"index root {root}: only local folders and s3:// are checked")
    options = dict(settings.retrieval.storage_options)
    path = root.removeprefix("s3://")
    fs = s3_filesystem(options, timeout_s=_STORE_TIMEOUT_S)
    key = f"{path}/.doctor-probe-{os.getpid()}"
    try:
        with fs.open_output_stream(key) as out:
            out.write(b"ok")
        fs.delete_file(key)
    except OSError as exc:
        return Finding(FAIL, f"index root {root} cannot be written: {_store_reason(str(exc))} (check the bucket, "
                             "the endpoint and the credentials in CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS)")
    return Finding(OK, f"index root {root} is reachable and writable")


def port_finding(settings: Settings) -> Finding:
    host, port = settings.bind_host, settings.retrieval_port
    if port == 0:
        return Finding(OK, "port: any free one (port 0)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        host, family = "0.0.0.0", socket.AF_INET  # no IPv6 here: the server falls back as well
        sock = socket.socket(family, socket.SOCK_STREAM)
    with sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                return Finding(FAIL, f"port {port} on {host} cannot be bound: {exc.strerror}")
            health = check_health(host_port("127.0.0.1", port), timeout_s=_HEALTH_TIMEOUT_S)
            if health.status == SERVING:
                return Finding(FAIL, f"port {port} is taken by a running CodeCompass server (health SERVING): a "
                                     f"writer is running already, or set {names.port_env(names.RETRIEVAL)}")
            return Finding(FAIL, f"port {port} on {host} is taken by another program: stop it or set "
                                 f"{names.port_env(names.RETRIEVAL)}")
    return Finding(OK, f"port {port} on {host} is free")


def format_findings(settings: Settings) -> list[Finding]:
    """One line per index whose tables are not in this release's index format."""
    options = dict(settings.retrieval.storage_options)
    findings = []
    entries = IndexRegistry(index_root(settings), options).entries()
    for entry in entries:
        formats = sorted(table_formats(index_uri(settings, entry.key), options), key=_as_number)
        if not formats or formats == [INDEX_FORMAT_VERSION]:
            continue
        newest = formats[-1]
        if _as_number(newest) > _as_number(INDEX_FORMAT_VERSION):
            findings.append(Finding(FAIL, f"index of {entry.workspace_id} ({entry.key}) is in index format {newest}, "
                                          f"newer than this release's {INDEX_FORMAT_VERSION}: this writer would drop "
                                          "it; run the release that wrote it, or restore a backup of this format"))
        else:
            findings.append(Finding(NOTE, f"index of {entry.workspace_id} ({entry.key}) is in index format {newest}; "
                                          f"this release writes {INDEX_FORMAT_VERSION}: the writer rebuilds it at its "
                                          "next start or sync, and search finds nothing in it until then"))
    findings.append(Finding(OK, f"{len(entries)} indexes checked for their index format ({INDEX_FORMAT_VERSION})"))
    return findings


def table_formats(uri: str, options: dict[str, str]) -> set[str]:
    """The index formats the chunk tables of the index at `uri` are stamped with."""
    formats = set()
    for name in list_tables(lancedb.connect(uri, storage_options=options or None)):
        if not name.startswith(TABLE_PREFIX):
            continue
        try:
            metadata = lance.dataset(f"{uri}/{name}.lance", storage_options=options or None).schema.metadata or {}
        except (ValueError, FileNotFoundError):
            continue
        formats.add(metadata.get(FORMAT_METADATA_KEY.encode(), b"").decode() or "unknown")
    return formats


def _as_number(fmt: str) -> int:
    return int(fmt) if fmt.isdigit() else -1


def _store_reason(text: str) -> str:
    """The first line of an S3 error, without the SDK's request ids."""
    line = text.strip().splitlines()[0] if text.strip() else "no answer"
    return line[:300]
