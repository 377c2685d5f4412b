"""Edge conversion between `codecompass.v1` chunk messages and the domain model
(`codecompass.common.chunks`): the Chunk message every service's contract carries."""

from __future__ import annotations

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
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


def chunk_from_proto(msg: chunk_pb2.Chunk) -> Chunk:
    return Chunk(
        id=msg.id,
        snippet_hash=msg.snippet_hash,
        relative_path=msg.relative_path,
        language=language_from_proto(msg.language),
        node_kind=node_kind_from_proto(msg.node_kind),
        name=msg.name,
        qualified_name=msg.qualified_name,
        parent_id=msg.parent_id,
        child_ids=tuple(msg.child_ids),
        depth=msg.depth,
        signature=msg.signature,
        full_source=msg.full_source,
        collapsed_source=msg.collapsed_source,
        start_line=msg.start_line,
        end_line=msg.end_line,
        jsdoc=msg.jsdoc,
        jsdoc_start_line=msg.jsdoc_start_line,
        relevant_imports=tuple(msg.relevant_imports),
        is_test=msg.is_test,
        embedding_text=msg.embedding_text,
        references=tuple(
            SymbolReference(
                name=r.name, signature=r.signature, relative_path=r.relative_path, chunk_id=r.chunk_id
            )
            for r in msg.references
        ),
        embedding_token_count=msg.embedding_token_count,
    )


def chunk_to_proto(chunk: Chunk) -> chunk_pb2.Chunk:
    return chunk_pb2.Chunk(
        id=chunk.id,
        snippet_hash=chunk.snippet_hash,
        relative_path=chunk.relative_path,
        language=language_to_proto(chunk.language),
        node_kind=node_kind_to_proto(chunk.node_kind),
        name=chunk.name,
        qualified_name=chunk.qualified_name,
        parent_id=chunk.parent_id,
        child_ids=list(chunk.child_ids),
        depth=chunk.depth,
        signature=chunk.signature,
        full_source=chunk.full_source,
        collapsed_source=chunk.collapsed_source,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        jsdoc=chunk.jsdoc,
        jsdoc_start_line=chunk.jsdoc_start_line,
        relevant_imports=list(chunk.relevant_imports),
        is_test=chunk.is_test,
        embedding_text=chunk.embedding_text,
        references=[
            chunk_pb2.SymbolReference(
                name=r.name, signature=r.signature, relative_path=r.relative_path, chunk_id=r.chunk_id
            )
            for r in chunk.references
        ],
        embedding_token_count=chunk.embedding_token_count,
    )
