"""The CLI's gRPC calls: each has a deadline and turns failures into CliErrors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.telemetry import traced_channel
from codecompass.retrieval.state import IndexProgress
from codecompass.v1 import analysis_pb2_grpc
from codecompass_cli.convert import FileChunks, chunk_files_request, file_chunks_from_proto
from codecompass_cli.errors import rpc_errors, service_errors


def chunk_files(address: str, workspace_root: str, paths: Sequence[str], include_references: bool,
                timeout_s: float) -> Iterator[FileChunks]:
    with traced_channel(address) as channel, rpc_errors("analysis", address):
        stub = analysis_pb2_grpc.CodeAnalysisServiceStub(channel)
        request = chunk_files_request(workspace_root, paths, include_references)
        for response in stub.ChunkFiles(request, timeout=timeout_s):
            yield file_chunks_from_proto(response)


def index_workspace(address: str, workspace_root: str, wait_for_embeddings: bool,
                    timeout_s: float, force: bool = False) -> Iterator[IndexProgress]:
    """IndexWorkspace through the retrieval client: its progress type, decoded in one place."""
    client = RetrievalClient(address)
    try:
        with service_errors():
            yield from client.index(workspace_root, wait_for_embeddings, timeout_s, force=force)
    finally:
        client.close()
