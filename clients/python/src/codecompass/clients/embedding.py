"""Client of the embedding service (EmbeddingService), for retrieval (documents while indexing, the
query while searching), the benchmarks and the tests. Failures are the retrieval service's own
errors: an embedding service that is down or slow is upstream of retrieval (UNAVAILABLE for its
callers), one that refuses the input is a failure retrying will not fix. Messages convert in the
embedding service's contract (`codecompass.contracts.embedding`), as its servicer's do."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from codecompass.clients.channel import Address, ServiceChannel
from codecompass.clients.errors import ServiceError
from codecompass.common import names
from codecompass.contracts.embedding import convert
from codecompass.contracts.embedding.model import EmbeddingModel, EmbedResult, InputType, ModelInfo
from codecompass.contracts.retrieval.errors import EmbeddingFailed, EmbeddingUnavailable
from codecompass.v1 import embedding_pb2, embedding_pb2_grpc

SERVICE = names.EMBEDDING

# A request stays well under gRPC's default 4 MiB receive limit on the server. Texts are
# capped too: every provider truncates to its token window (at most 32k tokens, ~128 KiB)
# keeping the start, where the preamble and signature are, so nothing the model sees is lost.
_MAX_REQUEST_BYTES = 3 * 1024 * 1024
_MAX_TEXT_CHARS = 128 * 1024

class EmbeddingClient:
    def __init__(self, address: Address, *, timeout_s: float, batch_size: int) -> None:
        self._service = ServiceChannel(SERVICE, address, embedding_pb2_grpc.EmbeddingServiceStub)
        self._timeout_s = timeout_s
        self._batch_size = batch_size

    @property
    def address(self) -> str:
        return self._service.address

    def close(self) -> None:
        self._service.close()

    def model_info(self, *, timeout_s: float | None = None) -> tuple[EmbeddingModel, bool]:
        """The model Embed would use now, and whether the privacy gates blocked an external one."""
        try:
            response = self._service.call("GetModelInfo", embedding_pb2.GetModelInfoRequest(),
                                          timeout_s or self._timeout_s)
        except ServiceError as exc:
            raise self._error("GetModelInfo", exc) from None
        info, blocked = convert.model_info_response_from_proto(response)
        return _identity(info), blocked

    def embed_query(self, text: str, *, timeout_s: float) -> EmbedResult[EmbeddingModel]:
        return self._embed([text], "query", timeout_s)

    def embed_documents(
        self, texts: list[str], *, batch_size: int | None = None, before_each: Callable[[], None] | None = None
    ) -> EmbedResult[EmbeddingModel]:
        """Embed in service-sized batches (at most `batch_size` texts each); all batches must
        come from one model. `before_each` runs before each request (background work uses it to
        step aside for interactive work)."""
        parts: list[EmbedResult[EmbeddingModel]] = []
        for batch in self._batches(texts, batch_size):
            if before_each is not None:
                before_each()
            parts.append(self._embed(batch, "document", self._timeout_s))
        if not parts:
            raise ValueError("embed_documents needs at least one text")
        models = {p.model for p in parts}
        if len(models) > 1:
            raise EmbeddingFailed("embedding model changed while a batch was being embedded")
        return EmbedResult(
            vectors=np.concatenate([p.vectors for p in parts]),
            model=parts[0].model,
            external_provider_blocked=any(p.external_provider_blocked for p in parts),
        )

    def _batches(self, texts: list[str], batch_size: int | None = None) -> Iterator[list[str]]:
        limit = min(batch_size or self._batch_size, self._batch_size)
        batch: list[str] = []
        size = 0
        for text in texts:
            capped = text[:_MAX_TEXT_CHARS]
            cost = len(capped.encode("utf-8"))
            if batch and (len(batch) >= limit or size + cost > _MAX_REQUEST_BYTES):
                yield batch
                batch, size = [], 0
            batch.append(capped)
            size += cost
        if batch:
            yield batch

    def _embed(self, texts: list[str], input_type: InputType, timeout_s: float) -> EmbedResult[EmbeddingModel]:
        try:
            response = self._service.call("Embed", convert.embed_request_to_proto(texts, input_type), timeout_s)
        except ServiceError as exc:
            raise self._error("Embed", exc) from None
        try:
            result = convert.embed_result_from_proto(response)
            model = _identity(result.model)
        except ValueError as exc:  # vectors that do not fit the model's dimensions, or none at all
            raise EmbeddingFailed(f"embedding service sent an answer this build cannot read: {exc}") from None
        if result.vectors.shape[0] != len(texts):
            raise EmbeddingFailed(
                f"embedding service returned {result.vectors.shape[0]} vectors for {len(texts)} texts")
        return EmbedResult(vectors=result.vectors, model=model,
                           external_provider_blocked=result.external_provider_blocked)

    def _error(self, method: str, exc: ServiceError) -> Exception:
        """A failed call in retrieval's terms."""
        if not exc.meaning.reached:
            return EmbeddingUnavailable(self.address, f"{method}: {exc.kind} ({exc})")
        return EmbeddingFailed(f"embedding service {method} failed: {exc.status}: {exc}")


def _identity(info: ModelInfo) -> EmbeddingModel:
    """The identity retrieval keys vectors by: the service's model less its input window, which
    changes how texts are cut, not which vectors are comparable."""
    return EmbeddingModel(provider=info.provider, model_id=info.model_id, model_version=info.model_version,
                          dimensions=info.dimensions)
