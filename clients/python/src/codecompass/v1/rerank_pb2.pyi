from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RerankDocument(_message.Message):
    __slots__ = ("id", "text", "first_stage_score")
    ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    FIRST_STAGE_SCORE_FIELD_NUMBER: _ClassVar[int]
    id: str
    text: str
    first_stage_score: float
    def __init__(self, id: _Optional[str] = ..., text: _Optional[str] = ..., first_stage_score: _Optional[float] = ...) -> None: ...

class RerankRequest(_message.Message):
    __slots__ = ("query", "documents", "top_n", "provider")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    TOP_N_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    query: str
    documents: _containers.RepeatedCompositeFieldContainer[RerankDocument]
    top_n: int
    provider: str
    def __init__(self, query: _Optional[str] = ..., documents: _Optional[_Iterable[_Union[RerankDocument, _Mapping]]] = ..., top_n: _Optional[int] = ..., provider: _Optional[str] = ...) -> None: ...

class RerankScore(_message.Message):
    __slots__ = ("id", "rerank_score", "final_score")
    ID_FIELD_NUMBER: _ClassVar[int]
    RERANK_SCORE_FIELD_NUMBER: _ClassVar[int]
    FINAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    id: str
    rerank_score: float
    final_score: float
    def __init__(self, id: _Optional[str] = ..., rerank_score: _Optional[float] = ..., final_score: _Optional[float] = ...) -> None: ...

class RerankResponse(_message.Message):
    __slots__ = ("scores", "rerank_provider", "rerank_fallback", "fallback_reason")
    SCORES_FIELD_NUMBER: _ClassVar[int]
    RERANK_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    RERANK_FALLBACK_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_REASON_FIELD_NUMBER: _ClassVar[int]
    scores: _containers.RepeatedCompositeFieldContainer[RerankScore]
    rerank_provider: str
    rerank_fallback: bool
    fallback_reason: str
    def __init__(self, scores: _Optional[_Iterable[_Union[RerankScore, _Mapping]]] = ..., rerank_provider: _Optional[str] = ..., rerank_fallback: _Optional[bool] = ..., fallback_reason: _Optional[str] = ...) -> None: ...
