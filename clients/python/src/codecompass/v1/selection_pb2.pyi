from codecompass.v1 import chunk_pb2 as _chunk_pb2
from codecompass.v1 import retrieval_pb2 as _retrieval_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SelectionReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SELECTION_REASON_UNSPECIFIED: _ClassVar[SelectionReason]
    SELECTION_REASON_MATCH: _ClassVar[SelectionReason]
    SELECTION_REASON_HUB: _ClassVar[SelectionReason]
    SELECTION_REASON_MERGED_PARENT: _ClassVar[SelectionReason]

class QueryFocus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    QUERY_FOCUS_UNSPECIFIED: _ClassVar[QueryFocus]
    QUERY_FOCUS_AUTO: _ClassVar[QueryFocus]
    QUERY_FOCUS_IMPLEMENTATION: _ClassVar[QueryFocus]
    QUERY_FOCUS_TESTS: _ClassVar[QueryFocus]
    QUERY_FOCUS_NONE: _ClassVar[QueryFocus]
SELECTION_REASON_UNSPECIFIED: SelectionReason
SELECTION_REASON_MATCH: SelectionReason
SELECTION_REASON_HUB: SelectionReason
SELECTION_REASON_MERGED_PARENT: SelectionReason
QUERY_FOCUS_UNSPECIFIED: QueryFocus
QUERY_FOCUS_AUTO: QueryFocus
QUERY_FOCUS_IMPLEMENTATION: QueryFocus
QUERY_FOCUS_TESTS: QueryFocus
QUERY_FOCUS_NONE: QueryFocus

class SelectCandidate(_message.Message):
    __slots__ = ("chunk", "score", "reason", "provenance", "connected_ids", "relevance")
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_IDS_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    chunk: _chunk_pb2.Chunk
    score: float
    reason: SelectionReason
    provenance: _retrieval_pb2.Provenance
    connected_ids: _containers.RepeatedScalarFieldContainer[str]
    relevance: float
    def __init__(self, chunk: _Optional[_Union[_chunk_pb2.Chunk, _Mapping]] = ..., score: _Optional[float] = ..., reason: _Optional[_Union[SelectionReason, str]] = ..., provenance: _Optional[_Union[_retrieval_pb2.Provenance, str]] = ..., connected_ids: _Optional[_Iterable[str]] = ..., relevance: _Optional[float] = ...) -> None: ...

class SelectRequest(_message.Message):
    __slots__ = ("workspace_root", "query", "candidates", "max_tokens", "min_relevance", "confidence", "focus", "index_fresh")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MIN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    FOCUS_FIELD_NUMBER: _ClassVar[int]
    INDEX_FRESH_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    query: str
    candidates: _containers.RepeatedCompositeFieldContainer[SelectCandidate]
    max_tokens: int
    min_relevance: float
    confidence: float
    focus: QueryFocus
    index_fresh: bool
    def __init__(self, workspace_root: _Optional[str] = ..., query: _Optional[str] = ..., candidates: _Optional[_Iterable[_Union[SelectCandidate, _Mapping]]] = ..., max_tokens: _Optional[int] = ..., min_relevance: _Optional[float] = ..., confidence: _Optional[float] = ..., focus: _Optional[_Union[QueryFocus, str]] = ..., index_fresh: _Optional[bool] = ...) -> None: ...

class SelectedResult(_message.Message):
    __slots__ = ("chunk_id", "relative_path", "start_line", "end_line", "qualified_name", "node_kind", "language", "score", "relevance", "provenance", "reasons", "why", "header", "source", "token_count", "expanded_child_ids", "clipped", "lines_omitted", "connected_ids")
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_KIND_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    WHY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    EXPANDED_CHILD_IDS_FIELD_NUMBER: _ClassVar[int]
    CLIPPED_FIELD_NUMBER: _ClassVar[int]
    LINES_OMITTED_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_IDS_FIELD_NUMBER: _ClassVar[int]
    chunk_id: str
    relative_path: str
    start_line: int
    end_line: int
    qualified_name: str
    node_kind: _chunk_pb2.NodeKind
    language: _chunk_pb2.Language
    score: float
    relevance: float
    provenance: _retrieval_pb2.Provenance
    reasons: _containers.RepeatedScalarFieldContainer[SelectionReason]
    why: str
    header: str
    source: str
    token_count: int
    expanded_child_ids: _containers.RepeatedScalarFieldContainer[str]
    clipped: bool
    lines_omitted: int
    connected_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chunk_id: _Optional[str] = ..., relative_path: _Optional[str] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., qualified_name: _Optional[str] = ..., node_kind: _Optional[_Union[_chunk_pb2.NodeKind, str]] = ..., language: _Optional[_Union[_chunk_pb2.Language, str]] = ..., score: _Optional[float] = ..., relevance: _Optional[float] = ..., provenance: _Optional[_Union[_retrieval_pb2.Provenance, str]] = ..., reasons: _Optional[_Iterable[_Union[SelectionReason, str]]] = ..., why: _Optional[str] = ..., header: _Optional[str] = ..., source: _Optional[str] = ..., token_count: _Optional[int] = ..., expanded_child_ids: _Optional[_Iterable[str]] = ..., clipped: _Optional[bool] = ..., lines_omitted: _Optional[int] = ..., connected_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SelectResponse(_message.Message):
    __slots__ = ("results", "total_tokens", "max_tokens", "min_relevance", "focus", "below_relevance", "over_budget", "merged", "render_fallback", "render_fallback_reason", "duration_ms")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MIN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    FOCUS_FIELD_NUMBER: _ClassVar[int]
    BELOW_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    OVER_BUDGET_FIELD_NUMBER: _ClassVar[int]
    MERGED_FIELD_NUMBER: _ClassVar[int]
    RENDER_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    RENDER_FALLBACK_REASON_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[SelectedResult]
    total_tokens: int
    max_tokens: int
    min_relevance: float
    focus: QueryFocus
    below_relevance: int
    over_budget: int
    merged: int
    render_fallback: bool
    render_fallback_reason: str
    duration_ms: float
    def __init__(self, results: _Optional[_Iterable[_Union[SelectedResult, _Mapping]]] = ..., total_tokens: _Optional[int] = ..., max_tokens: _Optional[int] = ..., min_relevance: _Optional[float] = ..., focus: _Optional[_Union[QueryFocus, str]] = ..., below_relevance: _Optional[int] = ..., over_budget: _Optional[int] = ..., merged: _Optional[int] = ..., render_fallback: _Optional[bool] = ..., render_fallback_reason: _Optional[str] = ..., duration_ms: _Optional[float] = ...) -> None: ...
