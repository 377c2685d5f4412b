"""Domain types of the analysis service's Trace, RenderSymbols and ChunkFiles as the gateway sees
them (no generated types: those stop at `analysis_convert`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from codecompass.common.chunks import Chunk


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
class FileChunks:
    """One file's chunks (parents before children), as ChunkFiles streams them to a reader (the
    gateway's outline, `codecompass chunks`): the file as indexing sees it (`ChunkedFile`) less its
    catalog fields, plus the line count and parser diagnostics that only a reader shows."""

    relative_path: str
    status: str  # ok | syntax_errors | skipped
    chunks: tuple[Chunk, ...]
    line_count: int = 0
    skip_reason: str = ""  # a skipped file's reason, e.g. "minified"; empty otherwise
    skip_detail: str = ""
    diagnostics: tuple[str, ...] = ()
