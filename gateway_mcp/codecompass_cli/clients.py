"""The CLI's calls, through the shared clients (`codecompass.clients`): each has a deadline, and
their failures become CliErrors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import closing

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.analysis.model import ChunkedFile
from codecompass.contracts.retrieval.model import IndexProgress
from codecompass_cli.errors import service_errors


def chunk_files(address: str, workspace_root: str, paths: Sequence[str], include_references: bool,
                timeout_s: float) -> Iterator[ChunkedFile]:
    with closing(AnalysisClient(address)) as client, service_errors():
        yield from client.chunks(workspace_root, paths, timeout_s, include_references=include_references)


def index_workspace(address: str, workspace_root: str, wait_for_embeddings: bool,
                    timeout_s: float, force: bool = False, workers: int = 0) -> Iterator[IndexProgress]:
    """IndexWorkspace through the retrieval client: its progress type, decoded in one place."""
    with closing(RetrievalClient(address)) as client, service_errors():
        yield from client.index(workspace_root, wait_for_embeddings, timeout_s, force=force, workers=workers)
