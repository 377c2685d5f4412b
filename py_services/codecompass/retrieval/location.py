"""Which workspace an index belongs to, and where that index lives.

An index is self-contained at `<index root>/<key>/` (a local folder or `s3://bucket/prefix/<key>`):
its chunk and source tables, its catalog table (which holds the manifest: workspace id, identity,
format, last sync) and nothing else. Two machines that compute the same key open the same index.

The key is a digest of the *workspace id*, never of where the files happen to be:
- the id a caller configures (a team may name its indexes);
- else the repository's remote and the path inside it: `github.com/acme/api#packages/core`, the
  same on every clone, whatever its folder or user name;
- else (no remote: a scratch folder, a local-only repository) `local:<absolute path>`, honest
  about being one machine's index. Its key is the digest of the path alone, which is what every
  index made before workspace ids was keyed by, so those indexes are found again, not rebuilt.

A repository's id is the same in each of its checkouts (clones and git worktrees), and two
checkouts on other branches must not share an index: each would rewrite the other's rows on every
sync. So an index is one checkout's (`checkout_id`): the first checkout of a repository indexed
under an index root owns the repository's id; any other checkout whose folder exists gets
`<id>@checkout-<digest of its host and folder>`. The choice is recorded in the registry and kept.
What checkouts of one repository share is a *base* (`layers.py`): an immutable copy of an index
at a clean commit, from which a new checkout's index starts, so it costs only its diff.

The index root also holds a registry table listing every index by key (LanceDB cannot list the
sub-folders of an object-store prefix): `ListIndexes`, `gc` and `status` read it.
"""

from __future__ import annotations

import configparser
import hashlib
import re
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import lancedb
import pyarrow as pa

from codecompass.common.config import Settings
from codecompass.common.inputs import path_problem, quoted
from codecompass.contracts.retrieval.errors import InvalidWorkspace, WorkspaceNotFound
from codecompass.contracts.retrieval.model import CHECKOUT_SEPARATOR
from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval.catalog import CATALOG_TABLE

LOCAL_PREFIX = "local:"
REGISTRY_TABLE = "indexes"
# What a registry row lists: a checkout's index (kept in sync with its folder), or a base (an
# immutable copy of one at a clean commit, that new checkouts' indexes start from).
CHECKOUT, BASE = "checkout", "base"
# Longest configured id accepted: ids end up in logs, spans and table rows.
MAX_ID_CHARS = 200
_ID_CHARS = re.compile(r"^[\x21-\x7e][\x20-\x7e]*$")
_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
# The checkout ids this process found recorded for a folder, by (index root, folder, repository
# id): a recorded id is kept for good (`checkout_id`), so a search need not read the registry
# again (about 27 ms a search on a local disk, more on object storage). Forgotten when the index
# is unregistered here; a searcher that kept one after another process dropped the index reads a
# missing index, as it would have anyway, and the next sync registers that id again.
_RECORDED: dict[tuple[str, str, str], str] = {}
_RECORDED_LOCK = threading.Lock()


class InvalidWorkspaceId(ValueError):
    """A configured workspace id that cannot name an index; the message says why."""


def validated_id(text: str) -> str:
    value = text.strip()
    if not value:
        raise InvalidWorkspaceId("workspace_id must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise InvalidWorkspaceId(f"workspace_id is {len(value)} characters; at most {MAX_ID_CHARS}")
    if not _ID_CHARS.match(value):
        raise InvalidWorkspaceId("workspace_id must be printable ASCII (no control characters)")
    return value


def workspace_id_of(root: Path, configured: str = "") -> str:
    """The id of the workspace at `root` (resolved): the configured one, else its repository's
    remote and the path inside it, else `local:<root>`."""
    if configured:
        return validated_id(configured)
    found = _repository_of(root)
    if found is not None:
        top, remote = found
        inside = root.relative_to(top).as_posix()
        return remote if inside in ("", ".") else f"{remote}#{inside}"
    return f"{LOCAL_PREFIX}{root}"


def workspace_id_for(settings: Settings, root: Path, configured: str = "") -> str:
    """The id of the index of the folder `root`: `configured` when given (a team names its index,
    shared on purpose), else its checkout's id (`checkout_id`); a folder outside any repository
    with a remote is one machine's folder already (`local:`)."""
    repository_id = workspace_id_of(root, configured)
    if configured or repository_id.startswith(LOCAL_PREFIX):
        return repository_id
    where = index_root(settings)
    recorded = (where, str(root), repository_id)
    with _RECORDED_LOCK:
        known = _RECORDED.get(recorded)
    if known is not None:
        return known
    entries = IndexRegistry(where, dict(settings.retrieval.storage_options)).entries()
    wid = checkout_id(repository_id, root, entries)
    if any(e.workspace_id == wid and e.root == str(root) and e.host == socket.gethostname() for e in entries):
        with _RECORDED_LOCK:
            _RECORDED[recorded] = wid
    return wid


def checkout_id(repository_id: str, root: Path, entries: list[RegisteredIndex]) -> str:
    """The id of the index of the checkout at `root` of the repository `repository_id` (the id
    `workspace_id_of` gives every checkout of it), given the registry's rows: the one recorded for
    this folder on this host; else the repository's own id, unless another checkout owns it (its
    folder is another one, and exists, or is on another host); else this checkout's own id."""
    host = socket.gethostname()
    mine = [e for e in entries if e.kind == CHECKOUT and e.host == host and e.root == str(root)
            and (e.workspace_id == repository_id or e.workspace_id.startswith(repository_id + CHECKOUT_SEPARATOR))]
    if mine:
        return max(mine, key=lambda e: e.registered_at).workspace_id
    owner = next((e for e in entries if e.key == index_key(repository_id)), None)
    if owner is None or owner.root == str(root) or (owner.host == host and not Path(owner.root).is_dir()):
        return repository_id
    digest = hashlib.sha256(f"{host}:{root}".encode()).hexdigest()[:12]
    return f"{repository_id}{CHECKOUT_SEPARATOR}{digest}"


def index_key(workspace_id: str) -> str:
    """The index's folder name: a digest of the id (of the bare path for a local id, the key
    indexes had before ids existed)."""
    return hashlib.sha256(workspace_id.removeprefix(LOCAL_PREFIX).encode("utf-8")).hexdigest()[:32]


def index_root(settings: Settings) -> str:
    """Where every index lives: `retrieval.db_uri`, or `<state_dir>/index`."""
    return (settings.retrieval.db_uri or str(settings.state_dir / "index")).rstrip("/")


def index_uri(settings: Settings, key: str) -> str:
    return f"{index_root(settings)}/{key}"


def is_local_uri(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def index_exists(settings: Settings, key: str) -> bool:
    """Whether an index with this key has a catalog table, checked without creating anything
    (connecting LanceDB to a missing local folder creates it)."""
    uri = index_uri(settings, key)
    if is_local_uri(uri):
        return (Path(uri.removeprefix("file://")) / f"{CATALOG_TABLE}.lance").is_dir()
    db = lancedb.connect(uri, storage_options=dict(settings.retrieval.storage_options) or None)
    return CATALOG_TABLE in list_tables(db)


def list_tables(db: lancedb.DBConnection) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.extend(page.tables)
        token = page.page_token
        if not token:
            return names


def validated_root(root_text: str) -> Path:
    """An existing folder named by an absolute path, resolved: one index per folder, however
    it is reached (symlinks, "..")."""
    if not root_text or not root_text.strip():
        raise InvalidWorkspace("workspace_root is required")
    if (problem := path_problem(root_text, "workspace_root")) is not None:
        raise InvalidWorkspace(problem)
    path = Path(root_text)
    if not path.is_absolute():
        raise InvalidWorkspace(f"workspace_root must be an absolute path, got {quoted(root_text)}")
    if not path.exists():
        raise WorkspaceNotFound(f"workspace root {root_text} does not exist")
    if not path.is_dir():
        raise WorkspaceNotFound(f"workspace root {root_text} is not a directory")
    return path.resolve()


def _repository_of(root: Path) -> tuple[Path, str] | None:
    """(top folder, normalised remote) of the git repository holding `root`, read from its
    config file (no git binary needed); None when there is none or it has no shareable remote."""
    for folder in (root, *root.parents):
        marker = folder / ".git"
        try:
            if marker.is_dir():
                git_dir = marker
            elif marker.is_file():
                # A worktree or submodule: `.git` names the real folder; a worktree's config
                # lives in the folder its `commondir` names.
                text = marker.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return None
                git_dir = (folder / text.removeprefix("gitdir:").strip()).resolve()
                common = git_dir / "commondir"
                if common.is_file():
                    git_dir = (git_dir / common.read_text(encoding="utf-8").strip()).resolve()
            else:
                continue
            remote = _remote_of(git_dir / "config")
        except OSError:
            return None
        return (folder, remote) if remote is not None else None
    return None


# Every sync (one per search) asks for its workspace's id: a config file is parsed again only when
# its size or modification time changed (a stat instead of a read and a parse: 44 µs a call instead of 270).
_REMOTES: dict[Path, tuple[tuple[int, int], str | None]] = {}
_REMOTES_LOCK = threading.Lock()
# File times tick coarsely (milliseconds): a file changed this recently may change again under the
# same time and size, so what was read from it is not kept (git's "racy" index entries, likewise).
_SETTLED_NS = 2_000_000_000


def _remote_of(config_file: Path) -> str | None:
    info = config_file.stat()
    stamp = (info.st_mtime_ns, info.st_size)
    with _REMOTES_LOCK:
        known = _REMOTES.get(config_file)
    if known is not None and known[0] == stamp:
        return known[1]
    remote = _parsed_remote(config_file.read_text(encoding="utf-8", errors="replace"))
    if time.time_ns() - info.st_mtime_ns > _SETTLED_NS:
        with _REMOTES_LOCK:
            _REMOTES[config_file] = (stamp, remote)
    return remote


def _parsed_remote(text: str) -> str | None:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    remotes = {}
    for section in parser.sections():
        match = re.fullmatch(r'remote\s+"(.+)"', section)
        if match and parser.has_option(section, "url"):
            remotes[match.group(1)] = parser.get(section, "url")
    if not remotes:
        return None
    url = remotes.get("origin") or remotes[min(remotes)]
    return normalised_remote(url)


def normalised_remote(url: str) -> str | None:
    """`host/owner/name` for a network remote (scp-like, ssh, http(s), git), without user,
    password, port or `.git`; None for a path on this machine (not the same on another one)."""
    url = url.strip()
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() == "file":
            return None
        authority, _, path = rest.partition("/")
        host = authority.rsplit("@", 1)[-1].split(":", 1)[0]
    else:
        match = _SCP_LIKE.match(url)
        if match is None:
            return None  # a local path
        host, path = match.group(1), match.group(2)
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or not path:
        return None
    return f"{host.lower()}/{path}"


# --- the registry of indexes under one root ---

_REGISTRY_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("workspace_id", pa.string(), nullable=False),
        # The folder the writer last indexed it from, and on which machine: `gc` drops an index
        # whose folder is gone only when that folder was on the machine running it.
        pa.field("root", pa.string(), nullable=False),
        pa.field("host", pa.string(), nullable=False),
        pa.field("registered_at", pa.float64(), nullable=False),
        # CHECKOUT or BASE (rows written before bases existed have none: CHECKOUT).
        pa.field("kind", pa.string()),
        # A checkout's: the key of the base its index started from ("" none). A base's: the key of
        # the checkout's index it was copied from.
        pa.field("base", pa.string()),
        # A base's: the commit its files are at.
        pa.field("commit", pa.string()),
    ]
)
_DEFAULTS = {"kind": CHECKOUT, "base": "", "commit": ""}
# Added to a registry table made before bases existed, with the values its rows mean.
_ADDED_COLUMNS = {"kind": f"'{CHECKOUT}'", "base": "''", "commit": "''"}


@dataclass(frozen=True)
class RegisteredIndex:
    key: str
    workspace_id: str
    root: str
    host: str
    registered_at: float
    kind: str = CHECKOUT
    base: str = ""
    commit: str = ""


class IndexRegistry:
    """The `indexes` table at the index root. Written by writers (one row per index, upserted
    on its first sync and on a new root), dropped rows on DropIndex; read by everyone."""

    def __init__(self, root_uri: str, storage_options: dict[str, str]) -> None:
        self._uri = root_uri
        self._options = dict(storage_options)

    def _connect(self) -> lancedb.DBConnection:
        return lancedb.connect(self._uri, storage_options=self._options or None)

    def _table(self, *, create: bool):
        db = self._connect()
        try:
            table = db.open_table(REGISTRY_TABLE)
        except (ValueError, FileNotFoundError):
            if not create:
                return None
            try:
                return db.create_table(REGISTRY_TABLE, schema=_REGISTRY_SCHEMA)
            except ValueError:  # another writer created it meanwhile
                table = db.open_table(REGISTRY_TABLE)
        missing = {name: value for name, value in _ADDED_COLUMNS.items() if name not in table.schema.names}
        if create and missing:  # a registry from before bases: writers add the columns once
            table.add_columns(missing)
        return table

    def register(self, key: str, workspace_id: str, root: str, *, kind: str = CHECKOUT, base: str = "",
                 commit: str = "") -> None:
        table = self._table(create=True)
        row = pa.table(
            {
                "key": [key],
                "workspace_id": [workspace_id],
                "root": [root],
                "host": [socket.gethostname()],
                "registered_at": [time.time()],
                "kind": [kind],
                "base": [base],
                "commit": [commit],
            },
            schema=_REGISTRY_SCHEMA,
        )
        table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(row)

    def entries(self) -> list[RegisteredIndex]:
        table = self._table(create=False)
        if table is None:
            return []
        rows = table.to_arrow().to_pylist()
        return sorted((RegisteredIndex(**{**row, **{k: row.get(k) or d for k, d in _DEFAULTS.items()}})
                       for row in rows), key=lambda r: r.workspace_id)

    def unregister(self, key: str) -> None:
        with _RECORDED_LOCK:
            for recorded in [r for r, wid in _RECORDED.items() if r[0] == self._uri and index_key(wid) == key]:
                del _RECORDED[recorded]
        table = self._table(create=False)
        if table is not None:
            table.delete(sqlf.sql_in("key", [key]))
