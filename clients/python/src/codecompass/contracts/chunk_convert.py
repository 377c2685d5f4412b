"""Edge conversion between `codecompass.v1` chunk messages and the domain model
(`codecompass.common.chunks`): the Chunk message every service's contract carries."""

from __future__ import annotations

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.contracts.fields import same_named
from codecompass.v1 import chunk_pb2, retrieval_pb2

_LANGUAGE_TO_PROTO = {
    Language.TYPESCRIPT: chunk_pb2.LANGUAGE_TYPESCRIPT,
    Language.TSX: chunk_pb2.LANGUAGE_TSX,
    Language.JAVASCRIPT: chunk_pb2.LANGUAGE_JAVASCRIPT,
    Language.JSX: chunk_pb2.LANGUAGE_JSX,
}
_LANGUAGE_FROM_PROTO = {v: k for k, v in _LANGUAGE_TO_PROTO.items()}

_KIND_TO_PROTO: dict[NodeKind, chunk_pb2.NodeKind] = {
    kind: chunk_pb2.NodeKind.Value(f"NODE_KIND_{kind.name}") for kind in NodeKind
}
_KIND_FROM_PROTO = {v: k for k, v in _KIND_TO_PROTO.items()}


class UnknownEnumValue(ValueError):
    """A message carried an enum value this build does not know."""


def language_to_proto(language: Language) -> chunk_pb2.Language:
    return _LANGUAGE_TO_PROTO[language]


def language_from_proto(value: chunk_pb2.Language) -> Language:
    try:
        return _LANGUAGE_FROM_PROTO[value]
    except KeyError:
        raise UnknownEnumValue(f"unknown Language value {value}") from None


def node_kind_to_proto(kind: NodeKind) -> chunk_pb2.NodeKind:
    return _KIND_TO_PROTO[kind]


def node_kind_from_proto(value: chunk_pb2.NodeKind) -> NodeKind:
    try:
        return _KIND_FROM_PROTO[value]
    except KeyError:
        raise UnknownEnumValue(f"unknown NodeKind value {value}") from None


# Provenance travels with chunks in retrieval's results and in selection's candidates and
# results; the domain keeps retrieval's strings ("" when unset).
_PROVENANCE_TO_PROTO = {
    "": retrieval_pb2.PROVENANCE_UNSPECIFIED,
    "lexical": retrieval_pb2.PROVENANCE_LEXICAL,
    "semantic": retrieval_pb2.PROVENANCE_SEMANTIC,
    "hybrid": retrieval_pb2.PROVENANCE_HYBRID,
    "structure": retrieval_pb2.PROVENANCE_STRUCTURE,
}
_PROVENANCE_FROM_PROTO = {v: k for k, v in _PROVENANCE_TO_PROTO.items()}


def provenance_to_proto(provenance: str) -> retrieval_pb2.Provenance:
    return _PROVENANCE_TO_PROTO[provenance]


def provenance_from_proto(value: retrieval_pb2.Provenance) -> str:
    try:
        return _PROVENANCE_FROM_PROTO[value]
    except KeyError:
        raise UnknownEnumValue(f"unknown Provenance value {value}") from None


# The Chunk fields its message and domain type share by name and hold as the same scalar value
# (`same_named`); the enums, repeated fields and references are converted below.
_CHUNK_FIELDS = (
    "id", "snippet_hash", "relative_path", "name", "qualified_name", "parent_id", "depth", "signature",
    "full_source", "collapsed_source", "start_line", "end_line", "jsdoc", "jsdoc_start_line", "is_test",
    "embedding_text", "embedding_token_count", "indent",
)


def chunk_from_proto(msg: chunk_pb2.Chunk) -> Chunk:
    return Chunk(
        **same_named(msg, _CHUNK_FIELDS),
        language=language_from_proto(msg.language),
        node_kind=node_kind_from_proto(msg.node_kind),
        child_ids=tuple(msg.child_ids),
        relevant_imports=tuple(msg.relevant_imports),
        references=tuple(
            SymbolReference(
                name=r.name, signature=r.signature, relative_path=r.relative_path, chunk_id=r.chunk_id
            )
            for r in msg.references
        ),
    )


# What the code view leaves out (retrieval.proto's RESULT_VIEW_CODE, selection.proto's
# SelectCandidate.chunk): the complete source, the embedded text and the references, which a
# reader of collapsed code never reads and which were most of a 60-result answer's conversions.
_CODE_VIEW_FIELDS = tuple(name for name in _CHUNK_FIELDS if name not in ("full_source", "embedding_text"))


def chunk_to_proto(chunk: Chunk, *, code_view: bool = False) -> chunk_pb2.Chunk:
    """The chunk's message; `code_view`: without full_source, embedding_text and references."""
    return chunk_pb2.Chunk(
        **same_named(chunk, _CODE_VIEW_FIELDS if code_view else _CHUNK_FIELDS),
        language=language_to_proto(chunk.language),
        node_kind=node_kind_to_proto(chunk.node_kind),
        child_ids=list(chunk.child_ids),
        relevant_imports=list(chunk.relevant_imports),
        references=() if code_view else [
            chunk_pb2.SymbolReference(
                name=r.name, signature=r.signature, relative_path=r.relative_path, chunk_id=r.chunk_id
            )
            for r in chunk.references
        ],
    )
