"""The static vector channel: the static model (code-static) run inside the retrieval service.

Why in process rather than through the embedding service:
- a static model is a table lookup (a text's vector is the mean of its words' rows, ~12,000
  chunks/s on two cores, 0.6 s to load): a gRPC hop per batch would cost more than the
  embedding itself, and serialising vectors back would double the write path's work;
- the vectors are then computed in the same pass that writes the chunks (`sync`), so a cold
  workspace is searchable semantically as soon as it is searchable lexically, while the
  primary model (code-small by default, ~40-80 chunks/s) fills its own column in the background;
- semantic search survives a dead or slow embedding service: the query is embedded here too,
  and the static channel answers for every chunk when the primary model cannot.

The provider itself is the embedding service's `StaticProvider`, reused as is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from codecompass.common.chunks import Chunk
from codecompass.common.logging import get_logger
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.embedding.base import EmbeddingError
from codecompass.embedding.static import StaticProvider

_log = get_logger(__name__)


def static_text(chunk: Chunk) -> str:
    """The text a chunk's static vector is computed from: its embedding text, which the
    embedding service gets too. The first pass of a cold index writes chunks without one
    (lexical only: no type checker yet), so a stand-in made of the same parts (path and name,
    JSDoc, signature, collapsed code) gives them a vector at once; the full pass that rewrites
    those chunks recomputes it from the real text."""
    if chunk.embedding_text:
        return chunk.embedding_text
    header = f"{chunk.relative_path} > {chunk.qualified_name or chunk.name}"
    parts = [header, chunk.jsdoc, f"Signature: {chunk.signature}" if chunk.signature else "", "---",
             chunk.collapsed_source]
    return "\n".join(p for p in parts if p)


_load_lock = threading.Lock()
# The provider memoises words in a dict it clears when full, which is not safe to share between
# a sync and concurrent searches: embedding is serialised, in batches small enough (~40 ms)
# that a query never waits long behind a cold index's flush.
_embed_lock = threading.Lock()
_BATCH = 512


@lru_cache(maxsize=4)
def _loaded(model_dir: Path | None, max_tokens: int) -> tuple[StaticProvider, EmbeddingModel] | None:
    """The provider and its identity, loaded once per process and folder (every workspace of a
    service shares them); None, with one log line, when the model cannot be loaded."""
    provider = StaticProvider(model_dir=model_dir, max_tokens=max_tokens)
    try:
        provider.warmup()
        info = provider.info()
    except (EmbeddingError, OSError) as exc:
        _log.warning("static vector channel off: %s; indexing goes on lexically and with the primary model", exc)
        return None
    model = EmbeddingModel(provider=info.provider, model_id=info.model_id, model_version=info.model_version,
                           dimensions=info.dimensions)
    return provider, model


class StaticChannel:
    """The static model on first use, and chunks and queries embedded with it.

    A model that cannot be loaded turns the channel off for the life of the process with one
    log line: indexing goes on lexically plus the primary model, as without the channel.
    """

    def __init__(self, *, enabled: bool, model_dir: Path | None, max_tokens: int) -> None:
        self._enabled = enabled
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._max_tokens = max_tokens

    def _provider(self) -> tuple[StaticProvider, EmbeddingModel] | None:
        if not self._enabled:
            return None
        with _load_lock:
            return _loaded(self._model_dir, self._max_tokens)

    def model(self) -> EmbeddingModel | None:
        """The static model's identity, or None when the channel is off or failed to load."""
        loaded = self._provider()
        return loaded[1] if loaded is not None else None

    def embed_chunks(self, chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
        """{chunk id: static vector} for every chunk; empty when the channel is off."""
        loaded = self._provider()
        if not chunks or loaded is None:
            return {}
        out: dict[str, np.ndarray] = {}
        for start in range(0, len(chunks), _BATCH):
            batch = chunks[start : start + _BATCH]
            with _embed_lock:
                vectors = loaded[0].embed([static_text(c) for c in batch], "document")
            out.update((c.id, v) for c, v in zip(batch, vectors, strict=True))
        return out

    def embed_query(self, text: str) -> np.ndarray | None:
        loaded = self._provider()
        if loaded is None:
            return None
        with _embed_lock:
            return loaded[0].embed([text], "query")[0]
