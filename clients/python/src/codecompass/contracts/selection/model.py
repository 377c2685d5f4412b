"""Domain types of the selection service's messages, for its servicer and its client (no generated
proto types here)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from codecompass.common.chunks import Chunk, Language, NodeKind


class Reason(str, Enum):
    MATCH = "match"
    HUB = "hub"
    MERGED_PARENT = "merged_parent"


# Retrieval's provenance values ("lexical", "semantic", "hybrid", "structure"); "" when unset.
Provenance = str

# Why rendering fell back to the stored collapsed source; short codes, as rerank's.
FALLBACK_UNAVAILABLE = "analysis_unavailable"
FALLBACK_TIMEOUT = "render_timeout"
FALLBACK_ERROR = "render_error"
FALLBACK_MISSING = "symbol_missing"


@dataclass(frozen=True)
class Candidate:
    chunk: Chunk
    score: float
    reason: Reason = Reason.MATCH
    provenance: Provenance = ""
    connected_ids: tuple[str, ...] = ()
    # What the gate compares with min_relevance, from the caller's relevance policy
    # (codecompass.policy.relevance); None: the score stands for it.
    relevance: float | None = None


@dataclass(frozen=True)
class SelectQuery:
    workspace_root: str
    candidates: tuple[Candidate, ...]
    max_tokens: int = 0  # 0: the server default
    min_relevance: float | None = None  # None: the server default
    # Every candidate's chunk is as its file is now (the caller's sync found the index fresh): a
    # symbol shown with no child expanded is rendered from its chunk, without RenderSymbols.
    index_fresh: bool = False


@dataclass(frozen=True)
class SelectedResult:
    chunk_id: str
    relative_path: str
    start_line: int
    end_line: int
    qualified_name: str
    node_kind: NodeKind
    language: Language
    score: float
    relevance: float
    provenance: Provenance
    reasons: tuple[Reason, ...]
    why: str
    header: str
    source: str
    token_count: int
    expanded_child_ids: tuple[str, ...] = ()
    clipped: bool = False
    lines_omitted: int = 0
    connected_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelectOutcome:
    results: tuple[SelectedResult, ...]
    total_tokens: int
    max_tokens: int
    min_relevance: float
    below_relevance: int = 0
    over_budget: int = 0
    merged: int = 0
    render_fallback: bool = False
    render_fallback_reason: str = ""
    duration_ms: float = 0.0
