"""Domain types of the retrieval service's messages: statuses, progress, sync statistics, the
indexes listed, queries and their outcomes. Its servicer and its client both use these; its errors
are in `errors`.

Nothing here imports generated proto types; `convert` maps these to and from the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from codecompass.contracts.analysis.model import SkippedFile
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy.shape import QueryShape

if TYPE_CHECKING:
    from codecompass.policy.ranking import RankedResult


class IndexingStatus(str, Enum):
    NOT_INDEXED = "not_indexed"
    INDEXING = "indexing"
    READY = "ready"
    FAILED = "failed"


class ResultCompleteness(str, Enum):
    COMPLETE = "complete"
    PARTIAL = "partial"
    TRUNCATED = "truncated"


class FreshnessStatus(str, Enum):
    """How the index relates to the workspace's files once a Sync's budget is spent."""

    FRESH = "fresh"  # the sync finished: every file is written as it was when the call came
    SYNCING = "syncing"  # searchable, but `pending_paths` are not written yet
    NOT_INDEXED = "not_indexed"  # nothing written yet (a cold index still on its first files)
    FAILED = "failed"  # the sync failed; the index is as the last successful sync left it


class IndexPhase(str, Enum):
    SCANNING = "scanning"
    CHUNKING = "chunking"
    WRITING = "writing"
    EMBEDDING = "embedding"
    DONE = "done"
    # A cold index's first pass: chunks written for words and names only, rewritten in full
    # by the chunking step that follows.
    LEXICAL = "lexical"
    # Waiting for shard workers the writer did not start (an Indexed Job's pods) to deliver.
    SHARDS = "shards"


@dataclass
class SyncStats:
    """What one sync changed. Mutable while the sync runs; callers get a finished copy."""

    files_added: int = 0
    files_changed: int = 0
    files_removed: int = 0
    files_skipped: int = 0
    chunks_upserted: int = 0
    chunks_deleted: int = 0
    chunks_embedded: int = 0
    embeddings_reused: int = 0
    cascade_reembedded: int = 0
    duration_ms: float = 0.0
    # Files edited under the sync: gone by the time they were chunked (dropped), or changed
    # since the scan (indexed as read; the next sync re-reads them).
    files_vanished: int = 0
    files_changed_during_sync: int = 0


@dataclass(frozen=True)
class IndexProgress:
    phase: IndexPhase
    files_done: int = 0
    files_total: int = 0
    chunks_done: int = 0
    embeddings_done: int = 0
    embeddings_total: int = 0
    embeddings_per_second: float = 0.0
    eta_seconds: float = -1.0
    stats: SyncStats | None = None
    # On the final report: what the sync left out of the index, sorted by path.
    skipped: tuple[SkippedFile, ...] = ()
    # In the shards step: workers that have delivered, of those the plan waits for.
    shards_done: int = 0
    shards_total: int = 0


@dataclass(frozen=True)
class IndexStatusReport:
    indexing_status: IndexingStatus
    files: int
    chunks: int
    embedded_chunks: int
    embedding_model_id: str
    embedding_model_version: str
    index_format_version: str
    error: str
    index_bytes: int
    # Epoch seconds when a sync last finished; None when none has.
    last_sync_at: float | None = None
    # What the last sync left out of the index, sorted by path.
    skipped: tuple[SkippedFile, ...] = ()
    # The static channel: chunks with a static vector, and its model (empty: no static channel).
    static_vector_chunks: int = 0
    static_model_id: str = ""
    static_model_version: str = ""
    # Which workspace the index belongs to, and the folder it was last synced from.
    workspace_id: str = ""
    root: str = ""
    # The commit of the base the index started from (a checkout's) or holds (a base's); "" neither.
    base_commit: str = ""


# A checkout's workspace id when its repository's id is another checkout's (`location.checkout_id`).
CHECKOUT_SEPARATOR = "@checkout-"


def repository_of(workspace_id: str) -> str:
    """The repository's id a checkout's id was made from (itself, for the owner's)."""
    return workspace_id.split(CHECKOUT_SEPARATOR, 1)[0]


def base_id(repository_id: str, commit: str) -> str:
    """A base's workspace id: its repository's, at its commit."""
    return f"{repository_id}@{commit[:12]}"


def base_repository(base_workspace_id: str) -> str:
    return base_workspace_id.rsplit("@", 1)[0]


@dataclass(frozen=True)
class IndexSummary:
    """One index under the index root, as ListIndexes reports it."""

    workspace_id: str
    key: str
    # The folder it was last synced from, and the machine that folder is on.
    root: str
    host: str
    status: IndexStatusReport
    kind: str = "checkout"  # location.CHECKOUT or location.BASE
    # A checkout's: the base it started from; a base's: the checkout it was copied from.
    base_workspace_id: str = ""
    # A base's: the checkouts whose indexes started from it.
    used_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchMetadata:
    indexing_status: IndexingStatus
    result_completeness: ResultCompleteness
    semantic_fallback: bool
    semantic_skipped_reason: str
    semantic_ratio_used: float
    external_provider_blocked: bool
    embedding_model_id: str
    embedding_model_version: str
    search_ms: float = 0.0
    total_chunks: int = 0
    embedded_chunks: int = 0
    total_candidates: int = 0
    confidence: float = 0.0  # calibrated P(the first result is a right answer)
    # Calibrated P(a right answer is among the first ten results); None: not judged.
    answerability: float | None = None
    # The commit of the base the index started from; "" when it has none.
    base_commit: str = ""
    # Identifiers the query typed that nothing in the index is named, and the closest names.
    missing_names: tuple[str, ...] = ()
    nearest_names: tuple[str, ...] = ()
    # Chunks the filters admit (total_chunks when no filter was given); 0: the filter matched no file.
    filtered_chunks: int = 0
    # Vector channels the semantic search ran on ("primary", "static"), and the chunks each searched.
    vector_channels: tuple[str, ...] = ()
    primary_vector_chunks: int = 0
    static_vector_chunks: int = 0
    static_model_id: str = ""
    static_model_version: str = ""
    # Why the primary model did not embed the query while the static channel answered for every chunk.
    primary_unavailable_reason: str = ""


class ResultView(str, Enum):
    """Which chunk fields results carry (see retrieval.proto)."""

    FULL = "full"
    CODE = "code"
    SUMMARY = "summary"


@dataclass(frozen=True)
class WorkspaceRef:
    """One workspace's index, named as a SearchQuery names it: by its root, its id, or both."""

    workspace_root: str = ""
    workspace_id: str = ""


@dataclass(frozen=True)
class SearchQuery:
    workspace_root: str
    query: str
    limit: int = 0  # 0: the configured default
    filters: Filters = field(default_factory=Filters)
    semantic_ratio: float | None = None  # None: the configured default
    candidate_pool: int = 0  # 0: the configured default
    view: ResultView = ResultView.FULL
    ranked: bool = True  # False: first-stage fusion only (benchmarks, ablations)
    # The query's shape as the caller judged it (the gateway judges a query once); None: the
    # search judges `query` itself.
    shape: QueryShape | None = None
    # Names the index instead of workspace_root (a searcher needs no copy of the files).
    workspace_id: str = ""
    # Several workspaces searched as one (then workspace_root and workspace_id stay empty): each
    # is searched alone and the results merged by the fair-share rule (policy.workspaces).
    workspaces: tuple[WorkspaceRef, ...] = ()


@dataclass(frozen=True)
class SyncOutcome:
    """What a Sync call found when its budget was spent (the sync itself may go on)."""

    finished: bool
    freshness_status: FreshnessStatus
    stats: SyncStats | None = None  # set only when finished
    # Workspace-relative paths of files changed or removed since indexed whose new state is not
    # written yet (a search shows their old content), sorted and capped; `pending_count` counts
    # them all.
    pending_paths: tuple[str, ...] = ()
    pending_count: int = 0
    # Files added since the last sync whose chunks are not all written yet (a search may miss
    # them; what it finds of them is current).
    pending_new_files: int = 0
    # The budget ran out before the scan listed the files: what changed is not known yet.
    scanning: bool = False
    error: str = ""
    duration_ms: float = 0.0
    # While the sync runs: its step, how far that step is, and the chunks searchable now.
    phase: IndexPhase | None = None
    phase_files_done: int = 0
    phase_files_total: int = 0
    chunks_written: int = 0


@dataclass(frozen=True)
class WorkspaceSearch:
    """How one workspace's search of several was answered."""

    workspace_id: str
    metadata: SearchMetadata


@dataclass(frozen=True)
class SearchOutcome:
    results: tuple[RankedResult, ...]
    # Several workspaces searched: the most confident one's (its confidence is the merged answer's).
    metadata: SearchMetadata
    # Several workspaces searched: each one's metadata, in the order named; else empty.
    workspaces: tuple[WorkspaceSearch, ...] = ()


@dataclass(frozen=True)
class HubQuery:
    workspace_root: str
    seeds: tuple[tuple[str, float], ...]  # (chunk id, score), best first
    max_hubs: int = 0  # 0: the policy's default
    view: ResultView = ResultView.FULL
    workspace_id: str = ""


@dataclass(frozen=True)
class HubResult:
    result: RankedResult  # score = hub score, provenance "structure", signals["hub"] = seeds connected
    connected_seed_ids: tuple[str, ...]
    outgoing: int
    incoming: int


@dataclass(frozen=True)
class HubOutcome:
    hubs: tuple[HubResult, ...]
    duration_ms: float
