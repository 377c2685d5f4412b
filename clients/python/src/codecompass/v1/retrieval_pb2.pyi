import datetime

from codecompass.v1 import analysis_pb2 as _analysis_pb2
from codecompass.v1 import chunk_pb2 as _chunk_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class IndexingStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEXING_STATUS_UNSPECIFIED: _ClassVar[IndexingStatus]
    INDEXING_STATUS_NOT_INDEXED: _ClassVar[IndexingStatus]
    INDEXING_STATUS_INDEXING: _ClassVar[IndexingStatus]
    INDEXING_STATUS_READY: _ClassVar[IndexingStatus]
    INDEXING_STATUS_FAILED: _ClassVar[IndexingStatus]

class ResultCompleteness(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESULT_COMPLETENESS_UNSPECIFIED: _ClassVar[ResultCompleteness]
    RESULT_COMPLETENESS_COMPLETE: _ClassVar[ResultCompleteness]
    RESULT_COMPLETENESS_PARTIAL: _ClassVar[ResultCompleteness]
    RESULT_COMPLETENESS_TRUNCATED: _ClassVar[ResultCompleteness]

class Provenance(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROVENANCE_UNSPECIFIED: _ClassVar[Provenance]
    PROVENANCE_LEXICAL: _ClassVar[Provenance]
    PROVENANCE_SEMANTIC: _ClassVar[Provenance]
    PROVENANCE_HYBRID: _ClassVar[Provenance]
    PROVENANCE_STRUCTURE: _ClassVar[Provenance]

class VectorChannel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VECTOR_CHANNEL_UNSPECIFIED: _ClassVar[VectorChannel]
    VECTOR_CHANNEL_PRIMARY: _ClassVar[VectorChannel]
    VECTOR_CHANNEL_STATIC: _ClassVar[VectorChannel]

class IndexPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEX_PHASE_UNSPECIFIED: _ClassVar[IndexPhase]
    INDEX_PHASE_SCANNING: _ClassVar[IndexPhase]
    INDEX_PHASE_CHUNKING: _ClassVar[IndexPhase]
    INDEX_PHASE_WRITING: _ClassVar[IndexPhase]
    INDEX_PHASE_EMBEDDING: _ClassVar[IndexPhase]
    INDEX_PHASE_DONE: _ClassVar[IndexPhase]
    INDEX_PHASE_LEXICAL: _ClassVar[IndexPhase]
    INDEX_PHASE_SHARDS: _ClassVar[IndexPhase]

class FreshnessStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FRESHNESS_STATUS_UNSPECIFIED: _ClassVar[FreshnessStatus]
    FRESHNESS_STATUS_FRESH: _ClassVar[FreshnessStatus]
    FRESHNESS_STATUS_SYNCING: _ClassVar[FreshnessStatus]
    FRESHNESS_STATUS_NOT_INDEXED: _ClassVar[FreshnessStatus]
    FRESHNESS_STATUS_FAILED: _ClassVar[FreshnessStatus]

class QueryIntent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUERY_INTENT_UNSPECIFIED: _ClassVar[QueryIntent]
    QUERY_INTENT_SYMBOL: _ClassVar[QueryIntent]
    QUERY_INTENT_PATH: _ClassVar[QueryIntent]
    QUERY_INTENT_ERROR: _ClassVar[QueryIntent]
    QUERY_INTENT_NATURAL_LANGUAGE: _ClassVar[QueryIntent]

class ResultView(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESULT_VIEW_UNSPECIFIED: _ClassVar[ResultView]
    RESULT_VIEW_FULL: _ClassVar[ResultView]
    RESULT_VIEW_CODE: _ClassVar[ResultView]
    RESULT_VIEW_SUMMARY: _ClassVar[ResultView]

class RankingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RANKING_MODE_UNSPECIFIED: _ClassVar[RankingMode]
    RANKING_MODE_FUSION: _ClassVar[RankingMode]
    RANKING_MODE_FULL: _ClassVar[RankingMode]

class FileOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_ORIGIN_UNSPECIFIED: _ClassVar[FileOrigin]
    FILE_ORIGIN_BASE: _ClassVar[FileOrigin]
    FILE_ORIGIN_CHECKOUT: _ClassVar[FileOrigin]

class IndexKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INDEX_KIND_UNSPECIFIED: _ClassVar[IndexKind]
    INDEX_KIND_CHECKOUT: _ClassVar[IndexKind]
    INDEX_KIND_BASE: _ClassVar[IndexKind]
INDEXING_STATUS_UNSPECIFIED: IndexingStatus
INDEXING_STATUS_NOT_INDEXED: IndexingStatus
INDEXING_STATUS_INDEXING: IndexingStatus
INDEXING_STATUS_READY: IndexingStatus
INDEXING_STATUS_FAILED: IndexingStatus
RESULT_COMPLETENESS_UNSPECIFIED: ResultCompleteness
RESULT_COMPLETENESS_COMPLETE: ResultCompleteness
RESULT_COMPLETENESS_PARTIAL: ResultCompleteness
RESULT_COMPLETENESS_TRUNCATED: ResultCompleteness
PROVENANCE_UNSPECIFIED: Provenance
PROVENANCE_LEXICAL: Provenance
PROVENANCE_SEMANTIC: Provenance
PROVENANCE_HYBRID: Provenance
PROVENANCE_STRUCTURE: Provenance
VECTOR_CHANNEL_UNSPECIFIED: VectorChannel
VECTOR_CHANNEL_PRIMARY: VectorChannel
VECTOR_CHANNEL_STATIC: VectorChannel
INDEX_PHASE_UNSPECIFIED: IndexPhase
INDEX_PHASE_SCANNING: IndexPhase
INDEX_PHASE_CHUNKING: IndexPhase
INDEX_PHASE_WRITING: IndexPhase
INDEX_PHASE_EMBEDDING: IndexPhase
INDEX_PHASE_DONE: IndexPhase
INDEX_PHASE_LEXICAL: IndexPhase
INDEX_PHASE_SHARDS: IndexPhase
FRESHNESS_STATUS_UNSPECIFIED: FreshnessStatus
FRESHNESS_STATUS_FRESH: FreshnessStatus
FRESHNESS_STATUS_SYNCING: FreshnessStatus
FRESHNESS_STATUS_NOT_INDEXED: FreshnessStatus
FRESHNESS_STATUS_FAILED: FreshnessStatus
QUERY_INTENT_UNSPECIFIED: QueryIntent
QUERY_INTENT_SYMBOL: QueryIntent
QUERY_INTENT_PATH: QueryIntent
QUERY_INTENT_ERROR: QueryIntent
QUERY_INTENT_NATURAL_LANGUAGE: QueryIntent
RESULT_VIEW_UNSPECIFIED: ResultView
RESULT_VIEW_FULL: ResultView
RESULT_VIEW_CODE: ResultView
RESULT_VIEW_SUMMARY: ResultView
RANKING_MODE_UNSPECIFIED: RankingMode
RANKING_MODE_FUSION: RankingMode
RANKING_MODE_FULL: RankingMode
FILE_ORIGIN_UNSPECIFIED: FileOrigin
FILE_ORIGIN_BASE: FileOrigin
FILE_ORIGIN_CHECKOUT: FileOrigin
INDEX_KIND_UNSPECIFIED: IndexKind
INDEX_KIND_CHECKOUT: IndexKind
INDEX_KIND_BASE: IndexKind

class IndexWorkspaceRequest(_message.Message):
    __slots__ = ("workspace_root", "wait_for_embeddings", "force", "workspace_id", "workers")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    wait_for_embeddings: bool
    force: bool
    workspace_id: str
    workers: int
    def __init__(self, workspace_root: _Optional[str] = ..., wait_for_embeddings: _Optional[bool] = ..., force: _Optional[bool] = ..., workspace_id: _Optional[str] = ..., workers: _Optional[int] = ...) -> None: ...

class IndexWorkspaceResponse(_message.Message):
    __slots__ = ("phase", "files_done", "files_total", "chunks_done", "embeddings_done", "embeddings_total", "embeddings_per_second", "eta_seconds", "stats", "skipped", "shards_done", "shards_total")
    PHASE_FIELD_NUMBER: _ClassVar[int]
    FILES_DONE_FIELD_NUMBER: _ClassVar[int]
    FILES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DONE_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_DONE_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    ETA_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    SHARDS_DONE_FIELD_NUMBER: _ClassVar[int]
    SHARDS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    phase: IndexPhase
    files_done: int
    files_total: int
    chunks_done: int
    embeddings_done: int
    embeddings_total: int
    embeddings_per_second: float
    eta_seconds: float
    stats: SyncStats
    skipped: _containers.RepeatedCompositeFieldContainer[_analysis_pb2.SkippedFile]
    shards_done: int
    shards_total: int
    def __init__(self, phase: _Optional[_Union[IndexPhase, str]] = ..., files_done: _Optional[int] = ..., files_total: _Optional[int] = ..., chunks_done: _Optional[int] = ..., embeddings_done: _Optional[int] = ..., embeddings_total: _Optional[int] = ..., embeddings_per_second: _Optional[float] = ..., eta_seconds: _Optional[float] = ..., stats: _Optional[_Union[SyncStats, _Mapping]] = ..., skipped: _Optional[_Iterable[_Union[_analysis_pb2.SkippedFile, _Mapping]]] = ..., shards_done: _Optional[int] = ..., shards_total: _Optional[int] = ...) -> None: ...

class SyncStats(_message.Message):
    __slots__ = ("files_added", "files_changed", "files_removed", "files_skipped", "chunks_upserted", "chunks_deleted", "chunks_embedded", "embeddings_reused", "cascade_reembedded", "duration_ms", "files_vanished", "files_changed_during_sync")
    FILES_ADDED_FIELD_NUMBER: _ClassVar[int]
    FILES_CHANGED_FIELD_NUMBER: _ClassVar[int]
    FILES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    FILES_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_UPSERTED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_DELETED_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_EMBEDDED_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_REUSED_FIELD_NUMBER: _ClassVar[int]
    CASCADE_REEMBEDDED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    FILES_VANISHED_FIELD_NUMBER: _ClassVar[int]
    FILES_CHANGED_DURING_SYNC_FIELD_NUMBER: _ClassVar[int]
    files_added: int
    files_changed: int
    files_removed: int
    files_skipped: int
    chunks_upserted: int
    chunks_deleted: int
    chunks_embedded: int
    embeddings_reused: int
    cascade_reembedded: int
    duration_ms: float
    files_vanished: int
    files_changed_during_sync: int
    def __init__(self, files_added: _Optional[int] = ..., files_changed: _Optional[int] = ..., files_removed: _Optional[int] = ..., files_skipped: _Optional[int] = ..., chunks_upserted: _Optional[int] = ..., chunks_deleted: _Optional[int] = ..., chunks_embedded: _Optional[int] = ..., embeddings_reused: _Optional[int] = ..., cascade_reembedded: _Optional[int] = ..., duration_ms: _Optional[float] = ..., files_vanished: _Optional[int] = ..., files_changed_during_sync: _Optional[int] = ...) -> None: ...

class SyncRequest(_message.Message):
    __slots__ = ("workspace_root", "budget_ms", "force", "workspace_id")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    BUDGET_MS_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    budget_ms: int
    force: bool
    workspace_id: str
    def __init__(self, workspace_root: _Optional[str] = ..., budget_ms: _Optional[int] = ..., force: _Optional[bool] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class SyncResponse(_message.Message):
    __slots__ = ("finished", "freshness_status", "stats", "pending_paths", "pending_count", "scanning", "error", "duration_ms", "pending_new_files", "phase", "phase_files_done", "phase_files_total", "chunks_written")
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    FRESHNESS_STATUS_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    PENDING_PATHS_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    SCANNING_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    PENDING_NEW_FILES_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    PHASE_FILES_DONE_FIELD_NUMBER: _ClassVar[int]
    PHASE_FILES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    finished: bool
    freshness_status: FreshnessStatus
    stats: SyncStats
    pending_paths: _containers.RepeatedScalarFieldContainer[str]
    pending_count: int
    scanning: bool
    error: str
    duration_ms: float
    pending_new_files: int
    phase: IndexPhase
    phase_files_done: int
    phase_files_total: int
    chunks_written: int
    def __init__(self, finished: _Optional[bool] = ..., freshness_status: _Optional[_Union[FreshnessStatus, str]] = ..., stats: _Optional[_Union[SyncStats, _Mapping]] = ..., pending_paths: _Optional[_Iterable[str]] = ..., pending_count: _Optional[int] = ..., scanning: _Optional[bool] = ..., error: _Optional[str] = ..., duration_ms: _Optional[float] = ..., pending_new_files: _Optional[int] = ..., phase: _Optional[_Union[IndexPhase, str]] = ..., phase_files_done: _Optional[int] = ..., phase_files_total: _Optional[int] = ..., chunks_written: _Optional[int] = ...) -> None: ...

class SearchFilters(_message.Message):
    __slots__ = ("path_patterns", "languages", "node_kinds", "exclude_tests", "only_tests")
    PATH_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    LANGUAGES_FIELD_NUMBER: _ClassVar[int]
    NODE_KINDS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_TESTS_FIELD_NUMBER: _ClassVar[int]
    ONLY_TESTS_FIELD_NUMBER: _ClassVar[int]
    path_patterns: _containers.RepeatedScalarFieldContainer[str]
    languages: _containers.RepeatedScalarFieldContainer[_chunk_pb2.Language]
    node_kinds: _containers.RepeatedScalarFieldContainer[_chunk_pb2.NodeKind]
    exclude_tests: bool
    only_tests: bool
    def __init__(self, path_patterns: _Optional[_Iterable[str]] = ..., languages: _Optional[_Iterable[_Union[_chunk_pb2.Language, str]]] = ..., node_kinds: _Optional[_Iterable[_Union[_chunk_pb2.NodeKind, str]]] = ..., exclude_tests: _Optional[bool] = ..., only_tests: _Optional[bool] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("workspace_root", "query", "limit", "filters", "semantic_ratio", "candidate_pool", "view", "ranking", "shape", "workspace_id", "workspaces")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_RATIO_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_POOL_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    RANKING_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACES_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    query: str
    limit: int
    filters: SearchFilters
    semantic_ratio: float
    candidate_pool: int
    view: ResultView
    ranking: RankingMode
    shape: QueryShape
    workspace_id: str
    workspaces: _containers.RepeatedCompositeFieldContainer[WorkspaceRef]
    def __init__(self, workspace_root: _Optional[str] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., filters: _Optional[_Union[SearchFilters, _Mapping]] = ..., semantic_ratio: _Optional[float] = ..., candidate_pool: _Optional[int] = ..., view: _Optional[_Union[ResultView, str]] = ..., ranking: _Optional[_Union[RankingMode, str]] = ..., shape: _Optional[_Union[QueryShape, _Mapping]] = ..., workspace_id: _Optional[str] = ..., workspaces: _Optional[_Iterable[_Union[WorkspaceRef, _Mapping]]] = ...) -> None: ...

class WorkspaceRef(_message.Message):
    __slots__ = ("workspace_root", "workspace_id")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    workspace_id: str
    def __init__(self, workspace_root: _Optional[str] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class QueryShape(_message.Message):
    __slots__ = ("intent", "intent_confidence", "identifiers", "words", "name_parts", "path", "phrase", "mentions_tests", "lexical_text", "question")
    INTENT_FIELD_NUMBER: _ClassVar[int]
    INTENT_CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    IDENTIFIERS_FIELD_NUMBER: _ClassVar[int]
    WORDS_FIELD_NUMBER: _ClassVar[int]
    NAME_PARTS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PHRASE_FIELD_NUMBER: _ClassVar[int]
    MENTIONS_TESTS_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    intent: QueryIntent
    intent_confidence: float
    identifiers: _containers.RepeatedScalarFieldContainer[str]
    words: _containers.RepeatedScalarFieldContainer[str]
    name_parts: _containers.RepeatedScalarFieldContainer[str]
    path: str
    phrase: str
    mentions_tests: bool
    lexical_text: str
    question: bool
    def __init__(self, intent: _Optional[_Union[QueryIntent, str]] = ..., intent_confidence: _Optional[float] = ..., identifiers: _Optional[_Iterable[str]] = ..., words: _Optional[_Iterable[str]] = ..., name_parts: _Optional[_Iterable[str]] = ..., path: _Optional[str] = ..., phrase: _Optional[str] = ..., mentions_tests: _Optional[bool] = ..., lexical_text: _Optional[str] = ..., question: _Optional[bool] = ...) -> None: ...

class SearchResult(_message.Message):
    __slots__ = ("chunk", "score", "lexical_score", "vector_similarity", "provenance", "lexical_rank", "semantic_rank", "fusion_score", "signals", "vector_channel", "origin", "workspace_id")
    class SignalsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_RANK_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_RANK_FIELD_NUMBER: _ClassVar[int]
    FUSION_SCORE_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_CHANNEL_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    chunk: _chunk_pb2.Chunk
    score: float
    lexical_score: float
    vector_similarity: float
    provenance: Provenance
    lexical_rank: int
    semantic_rank: int
    fusion_score: float
    signals: _containers.ScalarMap[str, float]
    vector_channel: VectorChannel
    origin: FileOrigin
    workspace_id: str
    def __init__(self, chunk: _Optional[_Union[_chunk_pb2.Chunk, _Mapping]] = ..., score: _Optional[float] = ..., lexical_score: _Optional[float] = ..., vector_similarity: _Optional[float] = ..., provenance: _Optional[_Union[Provenance, str]] = ..., lexical_rank: _Optional[int] = ..., semantic_rank: _Optional[int] = ..., fusion_score: _Optional[float] = ..., signals: _Optional[_Mapping[str, float]] = ..., vector_channel: _Optional[_Union[VectorChannel, str]] = ..., origin: _Optional[_Union[FileOrigin, str]] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class SearchMetadata(_message.Message):
    __slots__ = ("indexing_status", "result_completeness", "semantic_fallback", "semantic_skipped_reason", "semantic_ratio_used", "external_provider_blocked", "embedding_model_id", "embedding_model_version", "search_ms", "total_chunks", "embedded_chunks", "total_candidates", "confidence", "missing_names", "nearest_names", "filtered_chunks", "vector_channels", "primary_vector_chunks", "static_vector_chunks", "static_model_id", "static_model_version", "primary_unavailable_reason", "answerability", "base_commit")
    INDEXING_STATUS_FIELD_NUMBER: _ClassVar[int]
    RESULT_COMPLETENESS_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_SKIPPED_REASON_FIELD_NUMBER: _ClassVar[int]
    SEMANTIC_RATIO_USED_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_PROVIDER_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SEARCH_MS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    MISSING_NAMES_FIELD_NUMBER: _ClassVar[int]
    NEAREST_NAMES_FIELD_NUMBER: _ClassVar[int]
    FILTERED_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    VECTOR_CHANNELS_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_VECTOR_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    STATIC_VECTOR_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    STATIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    STATIC_MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    ANSWERABILITY_FIELD_NUMBER: _ClassVar[int]
    BASE_COMMIT_FIELD_NUMBER: _ClassVar[int]
    indexing_status: IndexingStatus
    result_completeness: ResultCompleteness
    semantic_fallback: bool
    semantic_skipped_reason: str
    semantic_ratio_used: float
    external_provider_blocked: bool
    embedding_model_id: str
    embedding_model_version: str
    search_ms: float
    total_chunks: int
    embedded_chunks: int
    total_candidates: int
    confidence: float
    missing_names: _containers.RepeatedScalarFieldContainer[str]
    nearest_names: _containers.RepeatedScalarFieldContainer[str]
    filtered_chunks: int
    vector_channels: _containers.RepeatedScalarFieldContainer[VectorChannel]
    primary_vector_chunks: int
    static_vector_chunks: int
    static_model_id: str
    static_model_version: str
    primary_unavailable_reason: str
    answerability: float
    base_commit: str
    def __init__(self, indexing_status: _Optional[_Union[IndexingStatus, str]] = ..., result_completeness: _Optional[_Union[ResultCompleteness, str]] = ..., semantic_fallback: _Optional[bool] = ..., semantic_skipped_reason: _Optional[str] = ..., semantic_ratio_used: _Optional[float] = ..., external_provider_blocked: _Optional[bool] = ..., embedding_model_id: _Optional[str] = ..., embedding_model_version: _Optional[str] = ..., search_ms: _Optional[float] = ..., total_chunks: _Optional[int] = ..., embedded_chunks: _Optional[int] = ..., total_candidates: _Optional[int] = ..., confidence: _Optional[float] = ..., missing_names: _Optional[_Iterable[str]] = ..., nearest_names: _Optional[_Iterable[str]] = ..., filtered_chunks: _Optional[int] = ..., vector_channels: _Optional[_Iterable[_Union[VectorChannel, str]]] = ..., primary_vector_chunks: _Optional[int] = ..., static_vector_chunks: _Optional[int] = ..., static_model_id: _Optional[str] = ..., static_model_version: _Optional[str] = ..., primary_unavailable_reason: _Optional[str] = ..., answerability: _Optional[float] = ..., base_commit: _Optional[str] = ...) -> None: ...

class SearchResponse(_message.Message):
    __slots__ = ("results", "metadata", "workspaces")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    WORKSPACES_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SearchResult]
    metadata: SearchMetadata
    workspaces: _containers.RepeatedCompositeFieldContainer[WorkspaceSearchMetadata]
    def __init__(self, results: _Optional[_Iterable[_Union[SearchResult, _Mapping]]] = ..., metadata: _Optional[_Union[SearchMetadata, _Mapping]] = ..., workspaces: _Optional[_Iterable[_Union[WorkspaceSearchMetadata, _Mapping]]] = ...) -> None: ...

class WorkspaceSearchMetadata(_message.Message):
    __slots__ = ("workspace_id", "metadata")
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    workspace_id: str
    metadata: SearchMetadata
    def __init__(self, workspace_id: _Optional[str] = ..., metadata: _Optional[_Union[SearchMetadata, _Mapping]] = ...) -> None: ...

class GetIndexStatusRequest(_message.Message):
    __slots__ = ("workspace_root", "workspace_id")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    workspace_id: str
    def __init__(self, workspace_root: _Optional[str] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class GetIndexStatusResponse(_message.Message):
    __slots__ = ("indexing_status", "files", "chunks", "embedded_chunks", "embedding_model_id", "embedding_model_version", "index_format_version", "error", "index_bytes", "last_sync_time", "skipped", "static_vector_chunks", "static_model_id", "static_model_version", "workspace_id", "root", "base_commit")
    INDEXING_STATUS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDED_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEX_FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INDEX_BYTES_FIELD_NUMBER: _ClassVar[int]
    LAST_SYNC_TIME_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    STATIC_VECTOR_CHUNKS_FIELD_NUMBER: _ClassVar[int]
    STATIC_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    STATIC_MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    BASE_COMMIT_FIELD_NUMBER: _ClassVar[int]
    indexing_status: IndexingStatus
    files: int
    chunks: int
    embedded_chunks: int
    embedding_model_id: str
    embedding_model_version: str
    index_format_version: str
    error: str
    index_bytes: int
    last_sync_time: _timestamp_pb2.Timestamp
    skipped: _containers.RepeatedCompositeFieldContainer[_analysis_pb2.SkippedFile]
    static_vector_chunks: int
    static_model_id: str
    static_model_version: str
    workspace_id: str
    root: str
    base_commit: str
    def __init__(self, indexing_status: _Optional[_Union[IndexingStatus, str]] = ..., files: _Optional[int] = ..., chunks: _Optional[int] = ..., embedded_chunks: _Optional[int] = ..., embedding_model_id: _Optional[str] = ..., embedding_model_version: _Optional[str] = ..., index_format_version: _Optional[str] = ..., error: _Optional[str] = ..., index_bytes: _Optional[int] = ..., last_sync_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., skipped: _Optional[_Iterable[_Union[_analysis_pb2.SkippedFile, _Mapping]]] = ..., static_vector_chunks: _Optional[int] = ..., static_model_id: _Optional[str] = ..., static_model_version: _Optional[str] = ..., workspace_id: _Optional[str] = ..., root: _Optional[str] = ..., base_commit: _Optional[str] = ...) -> None: ...

class ListIndexesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IndexSummary(_message.Message):
    __slots__ = ("workspace_id", "key", "root", "host", "status", "kind", "base_workspace_id", "used_by")
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ROOT_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    BASE_WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    USED_BY_FIELD_NUMBER: _ClassVar[int]
    workspace_id: str
    key: str
    root: str
    host: str
    status: GetIndexStatusResponse
    kind: IndexKind
    base_workspace_id: str
    used_by: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, workspace_id: _Optional[str] = ..., key: _Optional[str] = ..., root: _Optional[str] = ..., host: _Optional[str] = ..., status: _Optional[_Union[GetIndexStatusResponse, _Mapping]] = ..., kind: _Optional[_Union[IndexKind, str]] = ..., base_workspace_id: _Optional[str] = ..., used_by: _Optional[_Iterable[str]] = ...) -> None: ...

class ListIndexesResponse(_message.Message):
    __slots__ = ("indexes",)
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    indexes: _containers.RepeatedCompositeFieldContainer[IndexSummary]
    def __init__(self, indexes: _Optional[_Iterable[_Union[IndexSummary, _Mapping]]] = ...) -> None: ...

class DropIndexRequest(_message.Message):
    __slots__ = ("workspace_root", "workspace_id")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    workspace_id: str
    def __init__(self, workspace_root: _Optional[str] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class DropIndexResponse(_message.Message):
    __slots__ = ("workspace_id", "bytes_freed")
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    BYTES_FREED_FIELD_NUMBER: _ClassVar[int]
    workspace_id: str
    bytes_freed: int
    def __init__(self, workspace_id: _Optional[str] = ..., bytes_freed: _Optional[int] = ...) -> None: ...

class HubSeed(_message.Message):
    __slots__ = ("chunk_id", "score")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    score: float
    def __init__(self, chunk_id: _Optional[str] = ..., score: _Optional[float] = ...) -> None: ...

class FindHubsRequest(_message.Message):
    __slots__ = ("workspace_root", "seeds", "max_hubs", "view", "workspace_id")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    MAX_HUBS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_ID_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    seeds: _containers.RepeatedCompositeFieldContainer[HubSeed]
    max_hubs: int
    view: ResultView
    workspace_id: str
    def __init__(self, workspace_root: _Optional[str] = ..., seeds: _Optional[_Iterable[_Union[HubSeed, _Mapping]]] = ..., max_hubs: _Optional[int] = ..., view: _Optional[_Union[ResultView, str]] = ..., workspace_id: _Optional[str] = ...) -> None: ...

class Hub(_message.Message):
    __slots__ = ("result", "connected_seed_ids", "outgoing", "incoming")
    RESULT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_SEED_IDS_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_FIELD_NUMBER: _ClassVar[int]
    INCOMING_FIELD_NUMBER: _ClassVar[int]
    result: SearchResult
    connected_seed_ids: _containers.RepeatedScalarFieldContainer[str]
    outgoing: int
    incoming: int
    def __init__(self, result: _Optional[_Union[SearchResult, _Mapping]] = ..., connected_seed_ids: _Optional[_Iterable[str]] = ..., outgoing: _Optional[int] = ..., incoming: _Optional[int] = ...) -> None: ...

class FindHubsResponse(_message.Message):
    __slots__ = ("hubs", "duration_ms")
    HUBS_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    hubs: _containers.RepeatedCompositeFieldContainer[Hub]
    duration_ms: float
    def __init__(self, hubs: _Optional[_Iterable[_Union[Hub, _Mapping]]] = ..., duration_ms: _Optional[float] = ...) -> None: ...
