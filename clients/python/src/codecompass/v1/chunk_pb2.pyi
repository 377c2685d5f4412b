from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Language(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LANGUAGE_UNSPECIFIED: _ClassVar[Language]
    LANGUAGE_TYPESCRIPT: _ClassVar[Language]
    LANGUAGE_TSX: _ClassVar[Language]
    LANGUAGE_JAVASCRIPT: _ClassVar[Language]
    LANGUAGE_JSX: _ClassVar[Language]

class NodeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NODE_KIND_UNSPECIFIED: _ClassVar[NodeKind]
    NODE_KIND_FUNCTION: _ClassVar[NodeKind]
    NODE_KIND_METHOD: _ClassVar[NodeKind]
    NODE_KIND_CLASS: _ClassVar[NodeKind]
    NODE_KIND_INTERFACE: _ClassVar[NodeKind]
    NODE_KIND_TYPE: _ClassVar[NodeKind]
    NODE_KIND_ENUM: _ClassVar[NodeKind]
    NODE_KIND_COMPONENT: _ClassVar[NodeKind]
    NODE_KIND_VARIABLE: _ClassVar[NodeKind]
    NODE_KIND_NAMESPACE: _ClassVar[NodeKind]
    NODE_KIND_CONSTRUCTOR: _ClassVar[NodeKind]
    NODE_KIND_ACCESSOR: _ClassVar[NodeKind]
    NODE_KIND_MODULE: _ClassVar[NodeKind]
LANGUAGE_UNSPECIFIED: Language
LANGUAGE_TYPESCRIPT: Language
LANGUAGE_TSX: Language
LANGUAGE_JAVASCRIPT: Language
LANGUAGE_JSX: Language
NODE_KIND_UNSPECIFIED: NodeKind
NODE_KIND_FUNCTION: NodeKind
NODE_KIND_METHOD: NodeKind
NODE_KIND_CLASS: NodeKind
NODE_KIND_INTERFACE: NodeKind
NODE_KIND_TYPE: NodeKind
NODE_KIND_ENUM: NodeKind
NODE_KIND_COMPONENT: NodeKind
NODE_KIND_VARIABLE: NodeKind
NODE_KIND_NAMESPACE: NodeKind
NODE_KIND_CONSTRUCTOR: NodeKind
NODE_KIND_ACCESSOR: NodeKind
NODE_KIND_MODULE: NodeKind

class Chunk(_message.Message):
    __slots__ = ("id", "snippet_hash", "relative_path", "language", "node_kind", "name", "qualified_name", "parent_id", "child_ids", "depth", "signature", "full_source", "collapsed_source", "start_line", "end_line", "jsdoc", "jsdoc_start_line", "relevant_imports", "is_test", "embedding_text", "references", "embedding_token_count", "indent")
    ID_FIELD_NUMBER: _ClassVar[int]
    SNIPPET_HASH_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    NODE_KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUALIFIED_NAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    CHILD_IDS_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    FULL_SOURCE_FIELD_NUMBER: _ClassVar[int]
    COLLAPSED_SOURCE_FIELD_NUMBER: _ClassVar[int]
    START_LINE_FIELD_NUMBER: _ClassVar[int]
    END_LINE_FIELD_NUMBER: _ClassVar[int]
    JSDOC_FIELD_NUMBER: _ClassVar[int]
    JSDOC_START_LINE_FIELD_NUMBER: _ClassVar[int]
    RELEVANT_IMPORTS_FIELD_NUMBER: _ClassVar[int]
    IS_TEST_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_TEXT_FIELD_NUMBER: _ClassVar[int]
    REFERENCES_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    INDENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    snippet_hash: str
    relative_path: str
    language: Language
    node_kind: NodeKind
    name: str
    qualified_name: str
    parent_id: str
    child_ids: _containers.RepeatedScalarFieldContainer[str]
    depth: int
    signature: str
    full_source: str
    collapsed_source: str
    start_line: int
    end_line: int
    jsdoc: str
    jsdoc_start_line: int
    relevant_imports: _containers.RepeatedScalarFieldContainer[str]
    is_test: bool
    embedding_text: str
    references: _containers.RepeatedCompositeFieldContainer[SymbolReference]
    embedding_token_count: int
    indent: str
    def __init__(self, id: _Optional[str] = ..., snippet_hash: _Optional[str] = ..., relative_path: _Optional[str] = ..., language: _Optional[_Union[Language, str]] = ..., node_kind: _Optional[_Union[NodeKind, str]] = ..., name: _Optional[str] = ..., qualified_name: _Optional[str] = ..., parent_id: _Optional[str] = ..., child_ids: _Optional[_Iterable[str]] = ..., depth: _Optional[int] = ..., signature: _Optional[str] = ..., full_source: _Optional[str] = ..., collapsed_source: _Optional[str] = ..., start_line: _Optional[int] = ..., end_line: _Optional[int] = ..., jsdoc: _Optional[str] = ..., jsdoc_start_line: _Optional[int] = ..., relevant_imports: _Optional[_Iterable[str]] = ..., is_test: _Optional[bool] = ..., embedding_text: _Optional[str] = ..., references: _Optional[_Iterable[_Union[SymbolReference, _Mapping]]] = ..., embedding_token_count: _Optional[int] = ..., indent: _Optional[str] = ...) -> None: ...

class SymbolReference(_message.Message):
    __slots__ = ("name", "signature", "relative_path", "chunk_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_PATH_FIELD_NUMBER: _ClassVar[int]
    CHUNK_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    signature: str
    relative_path: str
    chunk_id: str
    def __init__(self, name: _Optional[str] = ..., signature: _Optional[str] = ..., relative_path: _Optional[str] = ..., chunk_id: _Optional[str] = ...) -> None: ...
