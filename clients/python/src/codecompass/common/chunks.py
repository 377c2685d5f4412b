"""Domain model of a chunk as the Python services see it.

The analysis service produces chunks; retrieval stores and ranks them; the
CLI prints them. All of them speak these dataclasses, never generated proto
types (those stop at `chunk_convert`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum


class Language(str, Enum):
    TYPESCRIPT = "typescript"
    TSX = "tsx"
    JAVASCRIPT = "javascript"
    JSX = "jsx"


class NodeKind(str, Enum):
    FUNCTION = "function"
    METHOD = "method"
    CLASS = "class"
    INTERFACE = "interface"
    TYPE = "type"
    ENUM = "enum"
    COMPONENT = "component"
    VARIABLE = "variable"
    NAMESPACE = "namespace"
    CONSTRUCTOR = "constructor"
    ACCESSOR = "accessor"
    MODULE = "module"


# The analysis service's name for a file's card (the `module` chunk: the whole file, its top-level
# symbols collapsed).
MODULE_QUALIFIED_NAME = "<module top level>"


@dataclass(frozen=True)
class SymbolReference:
    name: str
    signature: str
    relative_path: str = ""
    chunk_id: str = ""


@dataclass(frozen=True)
class Chunk:
    id: str
    snippet_hash: str
    relative_path: str
    language: Language
    node_kind: NodeKind
    name: str
    qualified_name: str
    parent_id: str
    child_ids: tuple[str, ...]
    depth: int
    signature: str
    full_source: str
    collapsed_source: str
    start_line: int
    end_line: int
    jsdoc: str
    jsdoc_start_line: int
    relevant_imports: tuple[str, ...]
    is_test: bool
    embedding_text: str
    references: tuple[SymbolReference, ...] = field(default_factory=tuple)
    embedding_token_count: int = 0
    # The whitespace indenting start_line in the file; `rendered_collapsed` removes it.
    indent: str = ""

    def to_json(self) -> dict:
        """Plain JSON-ready dict; enums as their string values."""
        data = asdict(self)
        data["language"] = self.language.value
        data["node_kind"] = self.node_kind.value
        data["child_ids"] = list(self.child_ids)
        data["relevant_imports"] = list(self.relevant_imports)
        data["references"] = [asdict(r) for r in self.references]
        return data

    def rendered_collapsed(self) -> str:
        """The symbol as the analysis service renders it with no child expanded: its collapsed
        source with `indent` removed from the start of every line after the first (the rule of
        `dedent` in node_ts_service/src/render.ts, which node_ts_service/test/render.test.ts and
        tests/integration/test_stored_render.py pin to this one)."""
        source, indent = self.collapsed_source, self.indent
        if not indent:
            return source
        first, *rest = source.split("\n")
        return "\n".join([first, *(line[len(indent):] if line.startswith(indent) else line for line in rest)])
