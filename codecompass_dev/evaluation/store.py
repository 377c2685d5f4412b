"""A quality run's index opened in process: its chunk table read only, and the local model that
embeds queries for it as the embedding service would.

The ranking ablations (bench/quality/tune_ranking.py) and the ranker's training data
(models/ranker/dump.py, calibrate.py) read first-stage candidates this way, in seconds per
variant instead of a service round trip per query.
"""

from __future__ import annotations

from pathlib import Path

import lancedb

from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.embedding.base import Provider
from codecompass.embedding.minilm import MiniLMProvider, code_small
from codecompass.embedding.static import StaticProvider
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.location import index_key, workspace_id_of
from codecompass.retrieval.schema import (
    CHUNKER_METADATA_KEY,
    MODEL_METADATA_KEY,
    STATIC_MODEL_METADATA_KEY,
    TABLE_PREFIX,
)


def _model(identity: str) -> EmbeddingModel:
    """The model of an identity string, as `EmbeddingModel.identity()` wrote it ("provider/model_id@version/dims")."""
    provider, rest = identity.split("/", 1)
    rest, dims = rest.rsplit("/", 1)
    model_id, version = rest.rsplit("@", 1)
    return EmbeddingModel(provider, model_id, version, int(dims))


def open_store(state_dir: Path, workspace: Path) -> ChunkWriter:
    """The one chunk table of a quality run's index, opened read only with the identity it was written with."""
    uri = str(state_dir / "index" / index_key(workspace_id_of(workspace.resolve())))
    db = lancedb.connect(uri)
    names = [n for n in db.list_tables().tables if n.startswith(TABLE_PREFIX)]
    if len(names) != 1:
        raise SystemExit(f"expected one chunk table in {uri}, found {names}")
    metadata = db.open_table(names[0]).schema.metadata or {}
    static = metadata.get(STATIC_MODEL_METADATA_KEY.encode())
    return ChunkWriter.open(uri, model=_model(metadata[MODEL_METADATA_KEY.encode()].decode()),
                           chunker_version=metadata[CHUNKER_METADATA_KEY.encode()].decode(),
                           static=_model(static.decode()) if static else None)


def query_embedder(model: EmbeddingModel) -> Provider:
    """The local model that wrote an index's primary vectors, to embed the queries as the service would."""
    if model.provider == "code-static":
        return StaticProvider()
    if model.provider == "code-small":
        return MiniLMProvider(spec=code_small())
    if model.provider == "minilm":
        return MiniLMProvider()
    raise SystemExit(f"no local model for {model.identity()}: tune on an index of minilm, code-small or code-static")
