"""The retrieval process: the roles it serves (`retrieval.role`), each a separate object.

- `all` (the local default): an index writer and a searcher in one process, sharing the
  static model, the embedding client and the interactive-work tracker (background embedding
  steps aside for searches); the searcher reads the writer's live state.
- `writer`: IndexWorkspace, Sync and DropIndex. One per index: it alone writes the tables.
- `searcher`: Search, FindHubs, GetIndexStatus and ListIndexes, read-only; run any number.

A call the process's role does not serve fails with one line naming the role that does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import Settings
from codecompass.contracts.retrieval.errors import InvalidQuery, WrongRole
from codecompass.contracts.retrieval.model import (
    HubOutcome,
    HubQuery,
    IndexProgress,
    IndexStatusReport,
    IndexSummary,
    SearchOutcome,
    SearchQuery,
    SyncOutcome,
)
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.index.writer import IndexWriter
from codecompass.retrieval.interactive import InteractiveWork
from codecompass.retrieval.location import InvalidWorkspaceId, index_key, validated_id, validated_root, workspace_id_for
from codecompass.retrieval.search.searcher import QUERY_EMBED_TIMEOUT_S, IndexSearcher
from codecompass.retrieval.static_channel import StaticChannel


class RetrievalEngine:
    """What the servicer calls: requests in, domain results out, routed to the role."""

    def __init__(
        self,
        settings: Settings,
        analysis: AnalysisClient,
        embedding: EmbeddingClient,
        tuning: SyncTuning | None = None,
        query_embed_timeout_s: float = QUERY_EMBED_TIMEOUT_S,
    ) -> None:
        retrieval = settings.retrieval
        self._settings = settings
        self.role = retrieval.role
        # One static model per process, shared by both roles and every workspace.
        static = StaticChannel(enabled=retrieval.static_channel, model_dir=retrieval.static_model_dir,
                               max_tokens=settings.embedding.max_tokens)
        self._static = static
        # Shared by both roles: they share the embedding service and the CPU.
        interactive = InteractiveWork()
        self.writer = (IndexWriter(settings, analysis, embedding, static, interactive, tuning)
                       if self.role in ("all", "writer") else None)
        self.searcher = (IndexSearcher(settings, embedding, static, interactive, writer=self.writer,
                                       query_embed_timeout_s=query_embed_timeout_s)
                         if self.role in ("all", "searcher") else None)

    def warmup(self) -> None:
        """The writer's index root must be writable."""
        if self.writer is not None:
            self.writer.warmup()
            if self.searcher is None:
                # No searcher in this process to point it at the indexes in use: resume them all,
                # in the background (a start is judged on its health within seconds).
                threading.Thread(target=self.writer.resume_all, name="resume-indexes", daemon=True).start()

    def after_serving(self) -> None:
        """The static model (what the first index writes), then the learned ranker (what the first
        search ranks with), loaded once the service serves rather than by the first sync or search,
        which wait for them meanwhile. Loaded before SERVING they held the start back (lightgbm with
        scipy.sparse alone was a quarter of its CPU on two cores), while a cold start's first search
        comes only after the analysis service has chunked its first files. A model that cannot
        load only turns its channel off; a ranker that cannot, leaves the hand-set stack."""
        self._static.model()
        if self.searcher is not None:
            self.searcher.load_rankers()

    def close(self, timeout: float = 5.0) -> None:
        if self.writer is not None:
            self.writer.close(timeout)
        if self.searcher is not None:
            self.searcher.close()

    def _writer(self, call: str) -> IndexWriter:
        if self.writer is None:
            raise WrongRole(f"{call} goes to the index writer; this retrieval server is a {self.role} "
                            "(retrieval.role)")
        return self.writer

    def _searcher(self, call: str) -> IndexSearcher:
        if self.searcher is None:
            raise WrongRole(f"{call} goes to a searcher; this retrieval server is the index {self.role} "
                            "(retrieval.role)")
        return self.searcher

    # --- the writer's calls ---

    def index(self, root_text: str, *, wait_for_embeddings: bool, force: bool = False,
              workspace_id: str = "", workers: int = 0, wait_s: float | None = None,
              cancelled: threading.Event | None = None) -> Iterator[IndexProgress]:
        return self._writer("IndexWorkspace").index(root_text, wait_for_embeddings=wait_for_embeddings, force=force,
                                                    workspace_id=workspace_id, workers=workers, wait_s=wait_s,
                                                    cancelled=cancelled)

    def sync(self, root_text: str, budget_s: float | None, *, force: bool = False,
             workspace_id: str = "") -> SyncOutcome:
        return self._writer("Sync").sync(root_text, budget_s, force=force, workspace_id=workspace_id)

    def drop(self, root_text: str, workspace_id: str = "") -> tuple[str, int]:
        """(workspace id, bytes freed) of the index dropped."""
        writer = self._writer("DropIndex")
        try:
            wid = (validated_id(workspace_id) if workspace_id
                   else workspace_id_for(self._settings, validated_root(root_text)))
        except InvalidWorkspaceId as exc:
            raise InvalidQuery(str(exc)) from None
        key = index_key(wid)
        freed = writer.drop(key)
        if self.searcher is not None:
            self.searcher.forget(key)
        return wid, freed

    # --- the searchers' calls ---

    def search(self, request: SearchQuery) -> SearchOutcome:
        return self._searcher("Search").search(request)

    def find_hubs(self, request: HubQuery) -> HubOutcome:
        return self._searcher("FindHubs").find_hubs(request)

    def status(self, root_text: str, workspace_id: str = "") -> IndexStatusReport:
        return self._searcher("GetIndexStatus").status(root_text, workspace_id)

    def list_indexes(self) -> list[IndexSummary]:
        return self._searcher("ListIndexes").list_indexes()
