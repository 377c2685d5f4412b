"""Round trip of the shared chunk model through its proto edge."""

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.contracts.chunk_convert import UnknownEnumValue, chunk_from_proto, chunk_to_proto, node_kind_from_proto
from codecompass.v1 import chunk_pb2


def _chunk(kind: NodeKind, language: Language) -> Chunk:
    return Chunk(
        id="id-1",
        snippet_hash="abc",
        relative_path="src/a.ts",
        language=language,
        node_kind=kind,
        name="validateToken",
        qualified_name="TokenService.validateToken",
        parent_id="id-0",
        child_ids=("id-2", "id-3"),
        depth=1,
        signature="validateToken(token: string): boolean",
        full_source="validateToken(token: string): boolean {\n  return true;\n}",
        collapsed_source="validateToken(token: string): boolean {\n  return true;\n}",
        start_line=10,
        end_line=12,
        jsdoc="/** Validates. */",
        jsdoc_start_line=9,
        relevant_imports=("import jwt from 'jsonwebtoken';",),
        is_test=False,
        embedding_text="[TypeScript] src/a.ts > TokenService > validateToken\n---\n...",
        references=(SymbolReference("JwtPayload", "interface JwtPayload", "src/b.ts", "id-9"),),
        embedding_token_count=42,
        indent="    ",
    )


@pytest.mark.parametrize("kind", list(NodeKind))
@pytest.mark.parametrize("language", list(Language))
def test_every_kind_and_language_survive_a_round_trip(kind: NodeKind, language: Language) -> None:
    chunk = _chunk(kind, language)
    wire = chunk_pb2.Chunk.FromString(chunk_to_proto(chunk).SerializeToString())
    assert chunk_from_proto(wire) == chunk


def test_unknown_enum_values_are_rejected_with_a_clear_error() -> None:
    with pytest.raises(UnknownEnumValue, match="NodeKind value 999"):
        node_kind_from_proto(999)


def test_json_form_uses_plain_strings() -> None:
    data = _chunk(NodeKind.METHOD, Language.TSX).to_json()
    assert data["node_kind"] == "method"
    assert data["language"] == "tsx"
    assert data["references"][0]["chunk_id"] == "id-9"
    assert data["child_ids"] == ["id-2", "id-3"]
