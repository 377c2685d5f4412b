"""A quality run's index opened in process: its chunk table read only, and the local model that
embeds queries for it as the embedding service would.

The ranking ablations (bench/quality/tune_ranking.py) and the ranker's training data
(models/ranker/dump.py, calibrate.py) read first-stage candidates this way, in seconds per
variant instead of a service round trip per query.
"""

from __future__ import annotations

from pathlib import Path

import lancedb

from codecompass.common.config import EmbeddingSettings, RetrievalSettings
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
    """The local model that wrote an index's primary vectors, to embed the queries as the service would.

    The folder is the one the embedding service is configured with (CODECOMPASS_EMBEDDING_MODEL:
    a retrained model under evaluation), and it must be the very model the index was written with.
    """
    folder = EmbeddingSettings().model
    if model.provider == "code-static":
        provider: Provider = StaticProvider(model_dir=Path(folder) if folder else None)
    elif model.provider == "code-small":
        provider = MiniLMProvider(spec=code_small(Path(folder) if folder else None))
    elif model.provider == "minilm":
        provider = MiniLMProvider()
    else:
        raise SystemExit(f"no local model for {model.identity()}: "
                         "tune on an index of minilm, code-small or code-static")
    return _checked(provider, model)


def static_embedder(model: EmbeddingModel | None) -> StaticProvider:
    """The static channel's model (CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR, as the retrieval service
    reads it), checked against the index's static vectors when it has them."""
    provider = StaticProvider(model_dir=RetrievalSettings().static_model_dir)
    if model is not None:
        return _checked(provider, model)
    provider.warmup()
    return provider


def _checked(provider: Provider, model: EmbeddingModel) -> Provider:
    provider.warmup()
    if provider.info().model_version != model.model_version:
        raise SystemExit(f"the index was written by {model.identity()}, the configured model is "
                         f"{provider.info().model_version}: set the folder it was written with")
    return provider
