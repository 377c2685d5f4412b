from codecompass.v1 import chunk_pb2 as _chunk_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SkipReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SKIP_REASON_UNSPECIFIED: _ClassVar[SkipReason]
    SKIP_REASON_MINIFIED: _ClassVar[SkipReason]
    SKIP_REASON_BINARY: _ClassVar[SkipReason]
    SKIP_REASON_NOT_UTF8: _ClassVar[SkipReason]
    SKIP_REASON_TOO_LARGE: _ClassVar[SkipReason]
    SKIP_REASON_UNREADABLE: _ClassVar[SkipReason]
    SKIP_REASON_VANISHED: _ClassVar[SkipReason]
    SKIP_REASON_OUTSIDE_WORKSPACE: _ClassVar[SkipReason]
    SKIP_REASON_SYMLINK_LOOP: _ClassVar[SkipReason]
    SKIP_REASON_IGNORED: _ClassVar[SkipReason]
    SKIP_REASON_NESTED_REPOSITORY: _ClassVar[SkipReason]
    SKIP_REASON_DECLARATION_FILE: _ClassVar[SkipReason]
    SKIP_REASON_EXCLUDED: _ClassVar[SkipReason]
    SKIP_REASON_CHUNK_FAILED: _ClassVar[SkipReason]
    SKIP_REASON_DUPLICATE: _ClassVar[SkipReason]
    SKIP_REASON_GENERATED: _ClassVar[SkipReason]

class FileStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_STATUS_UNSPECIFIED: _ClassVar[FileStatus]
    FILE_STATUS_OK: _ClassVar[FileStatus]
    FILE_STATUS_SYNTAX_ERRORS: _ClassVar[FileStatus]
    FILE_STATUS_SKIPPED: _ClassVar[FileStatus]

class TraceDirection(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACE_DIRECTION_UNSPECIFIED: _ClassVar[TraceDirection]
    TRACE_DIRECTION_CALLERS: _ClassVar[TraceDirection]
    TRACE_DIRECTION_CALLEES: _ClassVar[TraceDirection]
    TRACE_DIRECTION_REFERENCES: _ClassVar[TraceDirection]
    TRACE_DIRECTION_IMPLEMENTATIONS: _ClassVar[TraceDirection]
    TRACE_DIRECTION_SUPERTYPES: _ClassVar[TraceDirection]
    TRACE_DIRECTION_SUBTYPES: _ClassVar[TraceDirection]

class TracePartialReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACE_PARTIAL_REASON_UNSPECIFIED: _ClassVar[TracePartialReason]
    TRACE_PARTIAL_REASON_LIMIT: _ClassVar[TracePartialReason]
    TRACE_PARTIAL_REASON_DEADLINE: _ClassVar[TracePartialReason]
    TRACE_PARTIAL_REASON_DEPTH: _ClassVar[TracePartialReason]
    TRACE_PARTIAL_REASON_UNRESOLVED: _ClassVar[TracePartialReason]

class TraceResolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACE_RESOLUTION_UNSPECIFIED: _ClassVar[TraceResolution]
    TRACE_RESOLUTION_CHECKER: _ClassVar[TraceResolution]
    TRACE_RESOLUTION_NAME: _ClassVar[TraceResolution]
SKIP_REASON_UNSPECIFIED: SkipReason
SKIP_REASON_MINIFIED: SkipReason
SKIP_REASON_BINARY: SkipReason
SKIP_REASON_NOT_UTF8: SkipReason
SKIP_REASON_TOO_LARGE: SkipReason
SKIP_REASON_UNREADABLE: SkipReason
SKIP_REASON_VANISHED: SkipReason
SKIP_REASON_OUTSIDE_WORKSPACE: SkipReason
SKIP_REASON_SYMLINK_LOOP: SkipReason
SKIP_REASON_IGNORED: SkipReason
SKIP_REASON_NESTED_REPOSITORY: SkipReason
SKIP_REASON_DECLARATION_FILE: SkipReason
SKIP_REASON_EXCLUDED: SkipReason
SKIP_REASON_CHUNK_FAILED: SkipReason
SKIP_REASON_DUPLICATE: SkipReason
SKIP_REASON_GENERATED: SkipReason
FILE_STATUS_UNSPECIFIED: FileStatus
FILE_STATUS_OK: FileStatus
FILE_STATUS_SYNTAX_ERRORS: FileStatus
FILE_STATUS_SKIPPED: FileStatus
TRACE_DIRECTION_UNSPECIFIED: TraceDirection
TRACE_DIRECTION_CALLERS: TraceDirection
TRACE_DIRECTION_CALLEES: TraceDirection
TRACE_DIRECTION_REFERENCES: TraceDirection
TRACE_DIRECTION_IMPLEMENTATIONS: TraceDirection
TRACE_DIRECTION_SUPERTYPES: TraceDirection
TRACE_DIRECTION_SUBTYPES: TraceDirection
TRACE_PARTIAL_REASON_UNSPECIFIED: TracePartialReason
TRACE_PARTIAL_REASON_LIMIT: TracePartialReason
TRACE_PARTIAL_REASON_DEADLINE: TracePartialReason
TRACE_PARTIAL_REASON_DEPTH: TracePartialReason
TRACE_PARTIAL_REASON_UNRESOLVED: TracePartialReason
TRACE_RESOLUTION_UNSPECIFIED: TraceResolution
TRACE_RESOLUTION_CHECKER: TraceResolution
TRACE_RESOLUTION_NAME: TraceResolution

class FileEntry(_message.Message):
    __slots__ = ("relative_path", "size_bytes", "mtime_ns", "content_hash", "language")
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    relative_path: str
    size_bytes: int
    mtime_ns: int
    content_hash: str
    language: _chunk_pb2.Language
    def __init__(self, relative_path: _Optional[str] = ..., size_bytes: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., content_hash: _Optional[str] = ..., language: _Optional[_Union[_chunk_pb2.Language, str]] = ...) -> None: ...

class SkippedFile(_message.Message):
    __slots__ = ("relative_path", "reason", "detail", "folder")
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    FOLDER_FIELD_NUMBER: _ClassVar[int]
    relative_path: str
    reason: SkipReason
    detail: str
    folder: bool
    def __init__(self, relative_path: _Optional[str] = ..., reason: _Optional[_Union[SkipReason, str]] = ..., detail: _Optional[str] = ..., folder: _Optional[bool] = ...) -> None: ...

class ScanWorkspaceRequest(_message.Message):
    __slots__ = ("workspace_root", "previous", "exclude_patterns", "unchanged_since", "previous_omitted")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_SINCE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_OMITTED_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    previous: _containers.RepeatedCompositeFieldContainer[FileEntry]
    exclude_patterns: _containers.RepeatedScalarFieldContainer[str]
    unchanged_since: str
    previous_omitted: bool
    def __init__(self, workspace_root: _Optional[str] = ..., previous: _Optional[_Iterable[_Union[FileEntry, _Mapping]]] = ..., exclude_patterns: _Optional[_Iterable[str]] = ..., unchanged_since: _Optional[str] = ..., previous_omitted: _Optional[bool] = ...) -> None: ...

class ScanWorkspaceResponse(_message.Message):
    __slots__ = ("files", "added", "changed", "removed", "skipped", "duration_ms", "chunker_version", "watch_token", "unchanged", "previous_needed", "since_token")
    FILES_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CHUNKER_VERSION_FIELD_NUMBER: _ClassVar[int]
    WATCH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_NEEDED_FIELD_NUMBER: _ClassVar[int]
    SINCE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    files: _containers.RepeatedCompositeFieldContainer[FileEntry]
    added: _containers.RepeatedScalarFieldContainer[str]
    changed: _containers.RepeatedScalarFieldContainer[str]
    removed: _containers.RepeatedScalarFieldContainer[str]
    skipped: _containers.RepeatedCompositeFieldContainer[SkippedFile]
    duration_ms: float
    chunker_version: str
    watch_token: str
    unchanged: bool
    previous_needed: bool
    since_token: bool
    def __init__(self, files: _Optional[_Iterable[_Union[FileEntry, _Mapping]]] = ..., added: _Optional[_Iterable[str]] = ..., changed: _Optional[_Iterable[str]] = ..., removed: _Optional[_Iterable[str]] = ..., skipped: _Optional[_Iterable[_Union[SkippedFile, _Mapping]]] = ..., duration_ms: _Optional[float] = ..., chunker_version: _Optional[str] = ..., watch_token: _Optional[str] = ..., unchanged: _Optional[bool] = ..., previous_needed: _Optional[bool] = ..., since_token: _Optional[bool] = ...) -> None: ...

class ChunkFilesRequest(_message.Message):
    __slots__ = ("workspace_root", "paths", "include_references", "lexical_only")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REFERENCES_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_ONLY_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    include_references: bool
    lexical_only: bool
    def __init__(self, workspace_root: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., include_references: _Optional[bool] = ..., lexical_only: _Optional[bool] = ...) -> None: ...

class ChunkFilesResponse(_message.Message):
    __slots__ = ("relative_path", "status", "skip_reason", "diagnostics", "chunks", "content_hash", "line_count", "mtime_ns", "size_bytes", "skip_detail", "chunker_version")
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SKIP_REASON_FIELD_NUMBER: _ClassVar[int]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    LINE_COUNT_FIELD_NUMBER: _ClassVar[int]
    MTIME_NS_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    SKIP_DETAIL_FIELD_NUMBER: _ClassVar[int]
    CHUNKER_VERSION_FIELD_NUMBER: _ClassVar[int]
    relative_path: str
    status: FileStatus
    skip_reason: SkipReason
    diagnostics: _containers.RepeatedScalarFieldContainer[str]
    chunks: _containers.RepeatedCompositeFieldContainer[_chunk_pb2.Chunk]
    content_hash: str
    line_count: int
    mtime_ns: int
    size_bytes: int
    skip_detail: str
    chunker_version: str
    def __init__(self, relative_path: _Optional[str] = ..., status: _Optional[_Union[FileStatus, str]] = ..., skip_reason: _Optional[_Union[SkipReason, str]] = ..., diagnostics: _Optional[_Iterable[str]] = ..., chunks: _Optional[_Iterable[_Union[_chunk_pb2.Chunk, _Mapping]]] = ..., content_hash: _Optional[str] = ..., line_count: _Optional[int] = ..., mtime_ns: _Optional[int] = ..., size_bytes: _Optional[int] = ..., skip_detail: _Optional[str] = ..., chunker_version: _Optional[str] = ...) -> None: ...

class RenderSpec(_message.Message):
    __slots__ = ("symbol_id", "expand_child_ids", "relative_path", "focus_line")
    SYMBOL_ID_FIELD_NUMBER: _ClassVar[int]
    EXPAND_CHILD_IDS_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    FOCUS_LINE_FIELD_NUMBER: _ClassVar[int]
    symbol_id: str
    expand_child_ids: _containers.RepeatedScalarFieldContainer[str]
    relative_path: str
    focus_line: int
    def __init__(self, symbol_id: _Optional[str] = ..., expand_child_ids: _Optional[_Iterable[str]] = ..., relative_path: _Optional[str] = ..., focus_line: _Optional[int] = ...) -> None: ...

class RenderSymbolsRequest(_message.Message):
    __slots__ = ("workspace_root", "specs")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    SPECS_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    specs: _containers.RepeatedCompositeFieldContainer[RenderSpec]
    def __init__(self, workspace_root: _Optional[str] = ..., specs: _Optional[_Iterable[_Union[RenderSpec, _Mapping]]] = ...) -> None: ...

class RenderedSymbol(_message.Message):
    __slots__ = ("symbol_id", "relative_path", "qualified_name", "source", "token_count", "start_line", "end_line", "unknown_child_ids", "window_start_line", "window_end_line")
    SYMBOL_ID_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_CHILD_IDS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_START_LINE_FIELD_NUMBER: _ClassVar[int]
    WINDOW_END_LINE_FIELD_NUMBER: _ClassVar[int]
    symbol_id: str
    relative_path: str
    qualified_name: str
    source: str
    token_count: int
    start_line: int
    end_line: int
    unknown_child_ids: _containers.RepeatedScalarFieldContainer[str]
    window_start_line: int
    window_end_line: int
    def __init__(self, symbol_id: _Optional[str] = ..., relative_path: _Optional[str] = ..., qualified_name: _Optional[str] = ..., source: _Optional[str] = ..., token_count: _Optional[int] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., unknown_child_ids: _Optional[_Iterable[str]] = ..., window_start_line: _Optional[int] = ..., window_end_line: _Optional[int] = ...) -> None: ...

class RenderSymbolsResponse(_message.Message):
    __slots__ = ("symbols", "missing_symbol_ids")
    SYMBOLS_FIELD_NUMBER: _ClassVar[int]
    MISSING_SYMBOL_IDS_FIELD_NUMBER: _ClassVar[int]
    symbols: _containers.RepeatedCompositeFieldContainer[RenderedSymbol]
    missing_symbol_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, symbols: _Optional[_Iterable[_Union[RenderedSymbol, _Mapping]]] = ..., missing_symbol_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TraceRequest(_message.Message):
    __slots__ = ("workspace_root", "symbol", "relative_path", "direction", "depth", "limit")
    WORKSPACE_ROOT_FIELD_NUMBER: _ClassVar[int]
    SYMBOL_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    workspace_root: str
    symbol: str
    relative_path: str
    direction: TraceDirection
    depth: int
    limit: int
    def __init__(self, workspace_root: _Optional[str] = ..., symbol: _Optional[str] = ..., relative_path: _Optional[str] = ..., direction: _Optional[_Union[TraceDirection, str]] = ..., depth: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class TraceSymbol(_message.Message):
    __slots__ = ("relative_path", "qualified_name", "start_line", "end_line", "chunk_id")
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    relative_path: str
    qualified_name: str
    start_line: int
    end_line: int
    chunk_id: str
    def __init__(self, relative_path: _Optional[str] = ..., qualified_name: _Optional[str] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., chunk_id: _Optional[str] = ...) -> None: ...

class TraceNode(_message.Message):
    __slots__ = ("relative_path", "qualified_name", "chunk_id", "line", "snippet", "depth", "resolved_by")
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    LINE_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_BY_FIELD_NUMBER: _ClassVar[int]
    relative_path: str
    qualified_name: str
    chunk_id: str
    line: int
    snippet: str
    depth: int
    resolved_by: TraceResolution
    def __init__(self, relative_path: _Optional[str] = ..., qualified_name: _Optional[str] = ..., chunk_id: _Optional[str] = ..., line: _Optional[int] = ..., snippet: _Optional[str] = ..., depth: _Optional[int] = ..., resolved_by: _Optional[_Union[TraceResolution, str]] = ...) -> None: ...

class TraceResponse(_message.Message):
    __slots__ = ("root", "nodes", "partial", "partial_reason", "total_found", "returned")
    ROOT_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_REASON_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FOUND_FIELD_NUMBER: _ClassVar[int]
    RETURNED_FIELD_NUMBER: _ClassVar[int]
    root: TraceSymbol
    nodes: _containers.RepeatedCompositeFieldContainer[TraceNode]
    partial: bool
    partial_reason: TracePartialReason
    total_found: int
    returned: int
    def __init__(self, root: _Optional[_Union[TraceSymbol, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[TraceNode, _Mapping]]] = ..., partial: _Optional[bool] = ..., partial_reason: _Optional[_Union[TracePartialReason, str]] = ..., total_found: _Optional[int] = ..., returned: _Optional[int] = ...) -> None: ...
