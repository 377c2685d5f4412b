"""No single service takes search down (issue 10 section 1): with each service killed (-9) in
turn, `semantic_search` through the real gateway still answers from the index as it stands,
says what is missing and names the service that is actually down."""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from tests.fixtures.gateway import gateway_stdio_params

from codecompass.clients.retrieval import RetrievalClient

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
QUERY = "how are tokens validated"


class Stack:
    """Every service as its own process over a private copy of the sample workspace, indexed."""

    def __init__(self, start_python_service, start_analysis_service, tmp_path: Path) -> None:
        self.root = tmp_path / "ws"
        shutil.copytree(SAMPLE, self.root)
        self.processes: dict[str, subprocess.Popen] = {}
        self.addr: dict[str, str] = {}
        self.processes["analysis"], self.addr["analysis"] = start_analysis_service()
        self.processes["embedding"], self.addr["embedding"] = start_python_service(
            "codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
        self.processes["retrieval"], self.addr["retrieval"] = start_python_service("codecompass.retrieval", {
            "ANALYSIS_ADDR": self.addr["analysis"], "EMBEDDING_ADDR": self.addr["embedding"],
            "CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
        self.processes["rerank"], self.addr["rerank"] = start_python_service("codecompass.rerank")
        self.processes["selection"], self.addr["selection"] = start_python_service(
            "codecompass.selection", {"ANALYSIS_ADDR": self.addr["analysis"]})
        client = RetrievalClient(self.addr["retrieval"])
        try:
            for _ in client.index(str(self.root), wait_for_embeddings=True, timeout_s=300):
                pass
        finally:
            client.close()

    def kill(self, name: str) -> None:
        process = self.processes[name]
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=30) == -signal.SIGKILL

    def search(self, arguments: dict[str, Any], tool: str = "semantic_search") -> CallToolResult:
        stack = {"root": str(self.root), **{f"{k.upper()}_ADDR": v for k, v in self.addr.items()}}

        async def run() -> CallToolResult:
            async with Client(gateway_stdio_params(stack), read_timeout_seconds=60) as client:
                return await client.call_tool(tool, arguments)

        return anyio.run(run)


@pytest.fixture
def stack(start_python_service, start_analysis_service, tmp_path: Path) -> Stack:
    return Stack(start_python_service, start_analysis_service, tmp_path)


def _texts(result: CallToolResult) -> list[str]:
    return [b.text for b in result.content]


@pytest.mark.badinput(case="search with analysis down",
                      behaviour="answers from the index, flagged possibly out of date, naming the analysis service")
def test_analysis_down_answers_from_the_index_flagged_and_names_the_service(stack: Stack) -> None:
    stack.kill("analysis")
    result = stack.search({"query": QUERY})
    assert not result.is_error, _texts(result)
    payload = result.structured_content
    assert payload["results"][0]["qualified_name"].startswith("TokenService")
    code = [t for t in _texts(result) if t.startswith("// ")]
    assert "validateToken" in code[0]  # the stored source stands in for the rendering
    assert _texts(result)[0].startswith("Possibly out of date: the files could not be checked for changes "
                                        "(analysis service unreachable at ")
    meta = payload["metadata"]
    assert meta["indexing_status"] == "ready" and meta["freshness_status"] == "failed"
    assert "analysis service" in meta["freshness_reason"] and "retrieval" not in meta["freshness_reason"]


@pytest.mark.badinput(case="search with embedding down",
                      behaviour="semantic search goes on by the static vectors of every chunk; the answer says so")
def test_embedding_down_semantic_search_goes_on_by_static_vectors(stack: Stack) -> None:
    stack.kill("embedding")
    result = stack.search({"query": QUERY})
    assert not result.is_error, _texts(result)
    payload = result.structured_content
    meta = payload["metadata"]
    assert payload["results"][0]["qualified_name"].startswith("TokenService")
    assert meta["semantic_fallback"] is False and meta["primary_unavailable_reason"] == "embedding_unavailable"
    assert meta["vector_channels"] == ["static"] and meta["static_vector_chunks"] == meta["total_chunks"] > 0
    assert (f"The embedding model could not embed the query; semantic: code-static for {meta['total_chunks']} "
            "chunks (all-MiniLM-L6-v2 unavailable: embedding_unavailable).") in _texts(result)
    # The ranked list says so too: an agent choosing from it can tell the primary model was out.
    listed = stack.search({"query": QUERY}, tool="search_code").structured_content["metadata"]
    assert listed["semantic_fallback"] is False and listed["primary_unavailable_reason"] == "embedding_unavailable"


@pytest.mark.badinput(case="search with selection down",
                      behaviour="answers with the ranked list; the skipped stage names the selection service")
def test_selection_down_answers_with_the_ranked_list(stack: Stack) -> None:
    stack.kill("selection")
    result = stack.search({"query": QUERY})
    assert not result.is_error, _texts(result)
    meta = result.structured_content["metadata"]
    assert result.structured_content["results"][0]["qualified_name"].startswith("TokenService")
    assert "selection service" in meta["skipped_stages"]["select"]


@pytest.mark.badinput(case="search with retrieval down", behaviour="one-line tool error naming the retrieval service")
def test_retrieval_down_is_one_clear_tool_error_naming_it(stack: Stack) -> None:
    stack.kill("retrieval")
    result = stack.search({"query": QUERY})
    assert result.is_error
    (text,) = _texts(result)
    assert "retrieval service" in text and "Traceback" not in text and "\n" not in text.strip()
