from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InputType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INPUT_TYPE_UNSPECIFIED: _ClassVar[InputType]
    INPUT_TYPE_DOCUMENT: _ClassVar[InputType]
    INPUT_TYPE_QUERY: _ClassVar[InputType]
INPUT_TYPE_UNSPECIFIED: InputType
INPUT_TYPE_DOCUMENT: InputType
INPUT_TYPE_QUERY: InputType

class ModelInfo(_message.Message):
    __slots__ = ("provider", "model_id", "model_version", "dimensions", "max_input_tokens")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model_id: str
    model_version: str
    dimensions: int
    max_input_tokens: int
    def __init__(self, provider: _Optional[str] = ..., model_id: _Optional[str] = ..., model_version: _Optional[str] = ..., dimensions: _Optional[int] = ..., max_input_tokens: _Optional[int] = ...) -> None: ...

class EmbedRequest(_message.Message):
    __slots__ = ("texts", "input_type")
    TEXTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_TYPE_FIELD_NUMBER: _ClassVar[int]
    texts: _containers.RepeatedScalarFieldContainer[str]
    input_type: InputType
    def __init__(self, texts: _Optional[_Iterable[str]] = ..., input_type: _Optional[_Union[InputType, str]] = ...) -> None: ...

class Vector(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class EmbedResponse(_message.Message):
    __slots__ = ("vectors", "model", "external_provider_blocked")
    VECTORS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_PROVIDER_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    vectors: _containers.RepeatedCompositeFieldContainer[Vector]
    model: ModelInfo
    external_provider_blocked: bool
    def __init__(self, vectors: _Optional[_Iterable[_Union[Vector, _Mapping]]] = ..., model: _Optional[_Union[ModelInfo, _Mapping]] = ..., external_provider_blocked: _Optional[bool] = ...) -> None: ...

class GetModelInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetModelInfoResponse(_message.Message):
    __slots__ = ("model", "external_provider_blocked")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_PROVIDER_BLOCKED_FIELD_NUMBER: _ClassVar[int]
    model: ModelInfo
    external_provider_blocked: bool
    def __init__(self, model: _Optional[_Union[ModelInfo, _Mapping]] = ..., external_provider_blocked: _Optional[bool] = ...) -> None: ...
