"""Arrow schema and identity of the chunk table.

One table per (embedding model identity, chunker version, index format): vectors from
different models or model versions never share a table, so similarity is never computed
across them, and a change of any part simply means a different (initially empty) table.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pyarrow as pa

from codecompass.contracts.embedding.model import EmbeddingModel

# Bump whenever the columns or the meaning of a column change; a table stamped with another
# value is dropped and rebuilt rather than read with wrong assumptions.
# 3: full_source moved to the sources table (each text once, chunks slice it), embedding_text
# stored as its preamble only, vectors as float16.
# 4: a second vector column, `static_vector` (+ `has_static_vector`), written in the same pass
# as the chunk by the static model; its identity is part of the table's.
# 5: vectors as int8 (`stored_vectors`), text columns in Lance's mini-block layout; no ANN index.
# 6: static vectors as packed int4 (`stored_int4`), text and list columns at zstd level 9,
# `references` without chunk ids (`reference_ids` holds them, one per reference).
INDEX_FORMAT_VERSION = "6"

FORMAT_METADATA_KEY = "codecompass.index_format"
CHUNKER_METADATA_KEY = "codecompass.chunker_version"
MODEL_METADATA_KEY = "codecompass.embedding_model"
STATIC_MODEL_METADATA_KEY = "codecompass.static_model"

TABLE_PREFIX = "chunks_"
# The sources table of chunk table `chunks_X` is `sources_X`: it lives and dies with it.
SOURCES_PREFIX = "sources_"

FTS_COLUMN = "search_text"
VECTOR_COLUMN = "vector"
# The static channel: vectors of the static model (code-static), present from the moment a
# chunk is written; searched for the rows that have no primary vector yet.
STATIC_VECTOR_COLUMN = "static_vector"
STATIC_FLAG_COLUMN = "has_static_vector"
# Vectors are stored as int8, each row scaled so its largest component is +-127 (see
# `stored_vectors`). They were more than half of an index at float16 (ws-300k: 27 of 50 MiB), and
# zstd does not shrink them. Every reader compares by cosine, which ignores a row's scale. The cosine
# of an int8 row to its float16 original is >= 0.9999 (code-small) and >= 0.9998 (code-static) on
# ws-300k; the top ten of 500 queries keep 99.6% and 99.5% of their members, a member changing only
# between near-ties (score change <= 0.004). The bench's MRR@10 moved by <= 0.002 (code-static).
# Lance builds no ANN index on int8 columns, so every vector search is exact, in memory (see
# `readcache.VectorSnapshot`).
VECTOR_TYPE = pa.int8()
# Static vectors are stored at 4 bits a component, two to a byte (`stored_int4`): they were the
# largest column after the primary vectors (ws-300k: 5.4 MiB at int8, 256 dimensions, 2.7 at int4).
# Once a row has its primary vector, its static one only gives the ranker a feature of under 1% of
# its gain and serves the outage fallback; before that it is the row's only vector. At int4 a row
# keeps cosine 0.992 to its float original (mean; 0.94 at worst), the float top ten of a question
# keeps 89% of its members, and the static vectors alone rank the quality benchmark's questions
# as well as at float: MRR@10 0.336 / 0.359 (dev / test) against 0.334 / 0.359
# (`bench/vector_fidelity.py`). Through the product (code-small, the learned ranker), the test
# split's MRR@10 went 0.5045 -> 0.5032 and file nDCG@10 0.586 -> 0.583, within what two builds
# of one index differ by. Clipping each row at 2-4x its RMS instead of its peak gained nothing.
PACKED_INT4_TYPE = pa.uint8()
# Per-value zstd, for the sources table's texts (a whole file each). Level 9 rather than zstd's
# default 3, here and in `_PACKED`: text compresses 7-10% smaller for a write that costs about
# 0.5 s more over all of ws-300k; levels 15 and 19 gain little more for much slower writes.
_ZSTD = {"lance-encoding:compression": "zstd", "lance-encoding:compression-level": "9"}
# zstd over mini-blocks of many values, for text columns of short-to-medium values: per-value zstd
# cannot use what neighbouring rows share (one file's path, imports and names). On ws-300k,
# signatures take 0.68 MiB instead of 1.95, embedding prefixes 0.89 instead of 3.48, and the FTS
# text 3.78 instead of 5.25; a whole column reads in about half the time; fetching 60 rows takes
# about 0.5 ms more.
_PACKED = {**_ZSTD, "lance-encoding:structural-encoding": "miniblock"}


def stored_vectors(matrix: np.ndarray) -> np.ndarray:
    """Rows of `matrix` as stored: int8, each row scaled so its largest magnitude is 127 (a zero
    row stays zero). Storing a stored row again changes nothing."""
    matrix = np.asarray(matrix, dtype=np.float32)
    peak = np.abs(matrix).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.rint(matrix * (127.0 / peak)).astype(np.int8)


def stored_int4(matrix: np.ndarray) -> np.ndarray:
    """Rows of `matrix` as 4-bit components, each row scaled so its largest magnitude is 7, two
    components to a byte (the first in the high half; an odd last one pairs with zero): a
    (rows, ceil(dims / 2)) uint8 matrix that `int4_values` reads back."""
    matrix = np.asarray(matrix, dtype=np.float32)
    peak = np.abs(matrix).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    values = np.rint(matrix * (7.0 / peak)).astype(np.int8)
    if values.shape[1] % 2:
        values = np.concatenate([values, np.zeros((len(values), 1), dtype=np.int8)], axis=1)
    nibbles = values.view(np.uint8) & 0x0F
    return (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]


def int4_values(packed: np.ndarray, dims: int) -> np.ndarray:
    """The (rows, dims) float32 components of `stored_int4` rows, each in -7..7."""
    packed = np.asarray(packed, dtype=np.uint8)
    values = np.empty((len(packed), packed.shape[1] * 2), dtype=np.int8)
    # A nibble's sign is its fourth bit: xor-ing it and subtracting 8 sign-extends.
    values[:, 0::2] = ((packed >> 4) ^ 8).astype(np.int8) - 8
    values[:, 1::2] = ((packed & 0x0F) ^ 8).astype(np.int8) - 8
    return values[:, :dims].astype(np.float32)


def int4_width(dims: int) -> int:
    """Bytes a `stored_int4` row of `dims` components takes."""
    return (dims + 1) // 2


_UNSAFE = re.compile(r"[^A-Za-z0-9]+")


def table_name(model: EmbeddingModel, chunker_version: str, static: EmbeddingModel | None = None) -> str:
    """Readable, LanceDB-safe table name for one index identity: the primary model, the
    static model (None: no static channel), the chunker and the format.

    Sanitising can map distinct identities to the same slug ("a/b" and "a_b"), so a digest of
    the exact identity is appended to keep names collision-free.
    """
    static_identity = static.identity() if static is not None else "none"
    identity = f"{model.identity()}|static={static_identity}|chunker={chunker_version}|format={INDEX_FORMAT_VERSION}"
    digest = hashlib.sha256(identity.encode("utf-8")).hexdigest()[:10]
    slug = _UNSAFE.sub("_", f"{model.model_id}_{model.model_version}").strip("_")[:60]
    chunker = _UNSAFE.sub("_", chunker_version).strip("_")[:20]
    return f"{TABLE_PREFIX}{slug}_d{model.dimensions}_c{chunker}_f{INDEX_FORMAT_VERSION}_{digest}"


def sources_table_name(chunk_table: str) -> str:
    return SOURCES_PREFIX + chunk_table.removeprefix(TABLE_PREFIX)


def chunk_table_of_sources(sources_table: str) -> str:
    return TABLE_PREFIX + sources_table.removeprefix(SOURCES_PREFIX)


# A referenced symbol as stored: its chunk id is the same position of `reference_ids`.
REFERENCE_TYPE = pa.struct(
    [
        pa.field("name", pa.string(), metadata=_ZSTD),
        pa.field("signature", pa.string(), metadata=_ZSTD),
        pa.field("relative_path", pa.string(), metadata=_ZSTD),
    ]
)


def _zstd_list(item: pa.DataType) -> pa.DataType:
    """A list column whose values are zstd-compressed (field metadata applies to the leaves): on
    ws-300k, collapsed spans take 0.12 MiB instead of 0.22 and references 0.83 instead of 1.29
    (0.39 of the gain from leaving out their chunk ids); lists of hex ids gain nothing."""
    return pa.list_(pa.field("item", item, metadata=_ZSTD))


def chunk_schema(model: EmbeddingModel, chunker_version: str, static: EmbeddingModel | None = None) -> pa.Schema:
    """Every Chunk field, plus the columns only the store needs.

    `vector` is nullable: a chunk is searchable lexically as soon as it is written, and its
    vector arrives later from background embedding (`has_vector` flips then).
    `static_vector` (only when the index has a static channel) is written with the chunk, in
    the same commit, so the chunk is searchable semantically from that moment too.
    `reference_ids` holds each reference's chunk id, at the reference's position ("" for a
    symbol outside the index): a flat list, so the signature cascade can use `array_has_any`
    instead of unnesting structs, and each id is stored once (it was also in `references`).

    What is not stored, because it can be rebuilt exactly (see `packing`; the index was
    8-24x the source):
    - `full_source`: every nested chunk's text is part of its parent's, down to the file (the
      module chunk), so a depth-5 function was stored 6 times. It is the slice
      `[source_offset, source_offset + source_length)` of the text `source_key` names in the
      sources table (`sources_schema`), which holds each distinct text once.
    - `collapsed_source` when `collapsed_spans` is set: the column holds only the markers
      that replaced children's bodies, the rest are spans of the full source.
    - `jsdoc` when `jsdoc_offset` >= 0: the slice of `jsdoc_length` characters of that same
      text there (the column is then empty).
    - `embedding_text`: a preamble, then `collapsed_source`; `embedding_prefix` is the
      preamble with its signature and referenced-symbol lines left out, `embedding_layout`
      says how to put it back together.
    Text columns are zstd-compressed (field metadata); primary vectors are int8
    (`stored_vectors`), static ones packed int4 (`stored_int4`).
    """
    fields = [
        pa.field("id", pa.string(), nullable=False),
        pa.field("snippet_hash", pa.string(), nullable=False),
        pa.field("relative_path", pa.string(), nullable=False),
        pa.field("language", pa.string()),
        pa.field("node_kind", pa.string()),
        pa.field("name", pa.string(), metadata=_PACKED),
        pa.field("qualified_name", pa.string(), metadata=_PACKED),
        pa.field("parent_id", pa.string(), metadata=_ZSTD),
        pa.field("child_ids", pa.list_(pa.string())),
        pa.field("depth", pa.int32()),
        pa.field("signature", pa.string(), metadata=_PACKED),
        pa.field("source_key", pa.string()),
        pa.field("source_offset", pa.int32()),
        pa.field("source_length", pa.int32()),
        pa.field("collapsed_source", pa.string(), metadata=_PACKED),
        pa.field("collapsed_spans", _zstd_list(pa.int32()), metadata=_ZSTD),
        pa.field("start_line", pa.int32()),
        pa.field("end_line", pa.int32()),
        pa.field("jsdoc", pa.string(), metadata=_PACKED),
        pa.field("jsdoc_offset", pa.int32()),
        pa.field("jsdoc_length", pa.int32()),
        pa.field("jsdoc_start_line", pa.int32()),
        pa.field("relevant_imports", _zstd_list(pa.string()), metadata=_ZSTD),
        pa.field("is_test", pa.bool_()),
        pa.field("embedding_prefix", pa.string(), metadata=_PACKED),
        pa.field("embedding_layout", pa.int8()),
        pa.field("references", _zstd_list(REFERENCE_TYPE)),
        pa.field("reference_ids", _zstd_list(pa.string()), metadata=_ZSTD),
        pa.field("embedding_token_count", pa.int32()),
        pa.field("indent", pa.string(), metadata=_ZSTD),
        pa.field(FTS_COLUMN, pa.string(), metadata=_PACKED),
        pa.field("has_vector", pa.bool_(), nullable=False),
        pa.field(VECTOR_COLUMN, pa.list_(VECTOR_TYPE, model.dimensions)),
        pa.field("embedding_model_id", pa.string()),
        pa.field("embedding_model_version", pa.string()),
        pa.field("embedding_dimensions", pa.int32()),
    ]
    metadata = {
        FORMAT_METADATA_KEY: INDEX_FORMAT_VERSION,
        CHUNKER_METADATA_KEY: chunker_version,
        MODEL_METADATA_KEY: model.identity(),
    }
    if static is not None:
        fields += [
            pa.field(STATIC_FLAG_COLUMN, pa.bool_(), nullable=False),
            pa.field(STATIC_VECTOR_COLUMN, pa.list_(PACKED_INT4_TYPE, int4_width(static.dimensions))),
        ]
        metadata[STATIC_MODEL_METADATA_KEY] = static.identity()
    return pa.schema(fields, metadata=metadata)


def sources_schema(model: EmbeddingModel, chunker_version: str) -> pa.Schema:
    """Texts that chunks' `full_source` are slices of, keyed by a digest of the text: content
    addressing makes a text immutable, so a chunk never sees its slice change under it, and a
    text shared by two chunks (or two versions of a file) is stored once."""
    fields = [
        pa.field("key", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False, metadata=_ZSTD),
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
    "source_key",
    "source_offset",
    "source_length",
    "collapsed_source",
    "collapsed_spans",
    "start_line",
    "end_line",
    "jsdoc",
    "jsdoc_offset",
    "jsdoc_length",
    "jsdoc_start_line",
    "relevant_imports",
    "is_test",
    "embedding_prefix",
    "embedding_layout",
    "references",
    "reference_ids",
    "embedding_token_count",
    "indent",
    "has_vector",
)
