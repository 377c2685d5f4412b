"""Domain types of the analysis service's messages (ScanWorkspace, ChunkFiles, Trace, RenderSymbols),
for every caller: retrieval's indexing, the gateway's tools, selection's rendering and the CLI. No
generated types: those stop at `convert`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from codecompass.common.chunks import Chunk, Language


class TraceDirection(str, Enum):
    CALLERS = "callers"
    CALLEES = "callees"
    REFERENCES = "references"
    IMPLEMENTATIONS = "implementations"
    SUPERTYPES = "supertypes"
    SUBTYPES = "subtypes"


class TracePartialReason(str, Enum):
    LIMIT = "limit"
    DEADLINE = "deadline"
    DEPTH = "depth"
    # The type checker could not resolve every site; name-matched nodes were added.
    UNRESOLVED = "unresolved"


class TraceResolution(str, Enum):
    """How a trace node was found: resolved by the type checker, or matched by name only
    where the checker could not resolve (untyped JavaScript, `this` of a prototype assignment,
    dynamic calls): likely, not certain."""

    CHECKER = "checker"
    NAME = "name"


@dataclass(frozen=True)
class TraceQuery:
    workspace_root: str
    symbol: str  # a qualified name (`TokenService.validateToken`) or `path:line`
    direction: TraceDirection
    relative_path: str = ""  # narrows a qualified name several files declare
    depth: int = 0  # 0: the service's default (1); at most 3
    limit: int = 0  # 0: the service's default (50)


@dataclass(frozen=True)
class TraceRoot:
    relative_path: str
    qualified_name: str
    start_line: int
    end_line: int
    chunk_id: str  # empty when the symbol is not a chunk


@dataclass(frozen=True)
class TraceNode:
    relative_path: str
    qualified_name: str  # innermost chunk around the location; empty at a file's top level
    chunk_id: str
    line: int
    snippet: str
    depth: int
    resolved_by: TraceResolution = TraceResolution.CHECKER


@dataclass(frozen=True)
class TraceOutcome:
    root: TraceRoot
    nodes: tuple[TraceNode, ...]
    partial: bool
    partial_reason: TracePartialReason | None
    total_found: int


@dataclass(frozen=True)
class RenderRequest:
    symbol_id: str
    expand_child_ids: tuple[str, ...] = ()
    relative_path: str = ""
    # A 1-based file line: a symbol longer than the service's window renders only the lines
    # around it, with a marker line for each run left out. 0: the whole symbol.
    focus_line: int = 0


@dataclass(frozen=True)
class RenderedSymbol:
    symbol_id: str
    relative_path: str
    qualified_name: str
    source: str
    token_count: int
    start_line: int
    end_line: int
    unknown_child_ids: tuple[str, ...] = ()
    # The file lines source shows when focus_line cut the symbol to a window; 0 when whole.
    window_start_line: int = 0
    window_end_line: int = 0


@dataclass(frozen=True)
class FileEntry:
    """One source file as the analysis service's scanner saw it."""

    relative_path: str
    size_bytes: int
    mtime_ns: int
    content_hash: str
    language: Language


@dataclass(frozen=True)
class SkippedFile:
    relative_path: str
    reason: str  # lower-case SkipReason name, e.g. "minified"
    detail: str = ""
    # A folder skipped as a whole: one entry stands for everything below it.
    folder: bool = False


@dataclass(frozen=True)
class ScanResult:
    files: tuple[FileEntry, ...]
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    skipped: tuple[SkippedFile, ...]
    duration_ms: float
    chunker_version: str
    # Stands for this scan while the folders it walked do not change (the next scan's
    # `unchanged_since`); "" when the analysis service does not watch this workspace.
    watch_token: str = ""
    # The request's `unchanged_since` held: nothing changed, and nothing is listed.
    unchanged: bool = False


class FileStatus(str, Enum):
    OK = "ok"
    SYNTAX_ERRORS = "syntax_errors"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class ChunkedFile:
    """One file's chunks (parents before children), as one ChunkFiles stream message carries them:
    what indexing writes (with the catalog fields: hash, mtime, size) and what a reader shows (the
    gateway's outline, `codecompass chunks`: with the line count and the parser's diagnostics)."""

    relative_path: str
    status: FileStatus
    chunks: tuple[Chunk, ...]
    content_hash: str = ""
    mtime_ns: int = 0
    size_bytes: int = 0
    skip_reason: str = ""  # a skipped file's reason, e.g. "minified"; empty otherwise
    skip_detail: str = ""
    line_count: int = 0
    diagnostics: tuple[str, ...] = ()
