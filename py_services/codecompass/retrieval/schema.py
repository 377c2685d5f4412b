"""Arrow schema and identity of the chunk table.

One table per (embedding model identity, chunker version, index format): vectors from
different models or model versions never share a table, so similarity is never computed
across them, and a change of any part simply means a different (initially empty) table.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import pyarrow as pa

# Bump whenever the columns or the meaning of a column change; a table stamped with another
# value is dropped and rebuilt rather than read with wrong assumptions.
INDEX_FORMAT_VERSION = "2"

FORMAT_METADATA_KEY = "codecompass.index_format"
CHUNKER_METADATA_KEY = "codecompass.chunker_version"
MODEL_METADATA_KEY = "codecompass.embedding_model"

TABLE_PREFIX = "chunks_"

FTS_COLUMN = "search_text"
VECTOR_COLUMN = "vector"


@dataclass(frozen=True)
class EmbeddingModel:
    provider: str
    model_id: str
    model_version: str
    dimensions: int

    def __post_init__(self) -> None:
        if self.dimensions <= 0:
            raise ValueError(f"embedding dimensions must be positive, got {self.dimensions}")

    def identity(self) -> str:
        return f"{self.provider}/{self.model_id}@{self.model_version}/{self.dimensions}"


_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


def table_name(model: EmbeddingModel, chunker_version: str) -> str:
    """Readable, LanceDB-safe table name for one index identity.

    Sanitising can map distinct identities to the same slug ("a/b" and "a_b"), so a digest of
    the exact identity is appended to keep names collision-free.
    """
    identity = f"{model.identity()}|chunker={chunker_version}|format={INDEX_FORMAT_VERSION}"
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:10]
    slug = _UNSAFE.sub("_", f"{model.model_id}_{model.model_version}").strip("_")[:60]
    chunker = _UNSAFE.sub("_", chunker_version).strip("_")[:20]
    return f"{TABLE_PREFIX}{slug}_d{model.dimensions}_c{chunker}_f{INDEX_FORMAT_VERSION}_{digest}"


REFERENCE_TYPE = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("signature", pa.string()),
        pa.field("relative_path", pa.string()),
        pa.field("chunk_id", pa.string()),
    ]
)


def chunk_schema(model: EmbeddingModel, chunker_version: str) -> pa.Schema:
    """Every Chunk field, plus the columns only the store needs.

    `vector` is nullable: a chunk is searchable lexically as soon as it is written, and its
    vector arrives later from background embedding (`has_vector` flips then).
    `reference_ids` duplicates `references[].chunk_id` as a flat list so the signature cascade
    can use `array_has_any` instead of unnesting structs.
    """
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("snippet_hash", pa.string(), nullable=False),
        pa.field("relative_path", pa.string(), nullable=False),
        pa.field("language", pa.string()),
        pa.field("node_kind", pa.string()),
        pa.field("name", pa.string()),
        pa.field("qualified_name", pa.string()),
        pa.field("parent_id", pa.string()),
        pa.field("child_ids", pa.list_(pa.string())),
        pa.field("depth", pa.int32()),
        pa.field("signature", pa.string()),
        pa.field("full_source", pa.string()),
        pa.field("collapsed_source", pa.string()),
        pa.field("start_line", pa.int32()),
        pa.field("end_line", pa.int32()),
        pa.field("jsdoc", pa.string()),
        pa.field("jsdoc_start_line", pa.int32()),
        pa.field("relevant_imports", pa.list_(pa.string())),
        pa.field("is_test", pa.bool_()),
        pa.field("embedding_text", pa.string()),
        pa.field("references", pa.list_(REFERENCE_TYPE)),
        pa.field("reference_ids", pa.list_(pa.string())),
        pa.field("embedding_token_count", pa.int32()),
        pa.field(FTS_COLUMN, pa.string()),
        pa.field("has_vector", pa.bool_(), nullable=False),
        pa.field(VECTOR_COLUMN, pa.list_(pa.float32(), model.dimensions)),
        pa.field("embedding_model_id", pa.string()),
        pa.field("embedding_model_version", pa.string()),
        pa.field("embedding_dimensions", pa.int32()),
    ]
    metadata = {
        FORMAT_METADATA_KEY: INDEX_FORMAT_VERSION,
        CHUNKER_METADATA_KEY: chunker_version,
        MODEL_METADATA_KEY: model.identity(),
    }
    return pa.schema(fields, metadata=metadata)


# Columns a search returns: everything needed to rebuild a Chunk, without the vector or the
# derived FTS text (both large, neither needed by callers).
CHUNK_COLUMNS = (
    "id",
    "snippet_hash",
    "relative_path",
    "language",
    "node_kind",
    "name",
    "qualified_name",
    "parent_id",
    "child_ids",
    "depth",
    "signature",
    "full_source",
    "collapsed_source",
    "start_line",
    "end_line",
    "jsdoc",
    "jsdoc_start_line",
    "relevant_imports",
    "is_test",
    "embedding_text",
    "references",
    "embedding_token_count",
    "has_vector",
)
