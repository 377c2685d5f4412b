"""One trace end to end (issue 9 §5): one `semantic_search` through the SDK's stdio client, across
every service as a real process, received by a local OTLP/gRPC collector.

Every process exports over OTLP, as it would to a real collector; nothing reads a trace file.
An edge A -> B is a CLIENT span in service A whose child SERVER span (matched by parent span id)
is in service B.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.conftest import index_fully
from tests.deploy.test_trace_attributes import README, documented_keys
from tests.fixtures.otlp_receiver import OtlpReceiver, ReceivedSpan

from codecompass.common import names

pytestmark = pytest.mark.slow

# The test process is the agent: its MCP client's spans go to conftest's in-memory exporter.
TEST_CLIENT = "codecompass-tests"
# Each service's one name, as its processes report it (service.name), in the one constant module.
GATEWAY, ANALYSIS, EMBEDDING, RETRIEVAL, RERANK, SELECTION = (
    names.GATEWAY, names.ANALYSIS, names.EMBEDDING, names.RETRIEVAL, names.RERANK, names.SELECTION)

TOOL_SPAN = "tool semantic_search"
# (caller, callee, RPC or MCP request): the hops one semantic_search makes.
EXPECTED_EDGES = {
    (TEST_CLIENT, GATEWAY, "tools/call semantic_search"),  # over stdio, in the request's _meta
    (GATEWAY, RETRIEVAL, "codecompass.v1.RetrievalService/Sync"),  # the freshness stage
    (RETRIEVAL, ANALYSIS, "codecompass.v1.CodeAnalysisService/ScanWorkspace"),  # what the sync compares
    (GATEWAY, RETRIEVAL, "codecompass.v1.RetrievalService/Search"),
    (GATEWAY, RERANK, "codecompass.v1.RerankService/Rerank"),
    (GATEWAY, SELECTION, "codecompass.v1.SelectionService/Select"),
    (SELECTION, ANALYSIS, "codecompass.v1.CodeAnalysisService/RenderSymbols"),
    # The query's own vector: only a natural-language query runs the vector channel.
    (RETRIEVAL, EMBEDDING, "codecompass.v1.EmbeddingService/Embed"),
}
# RPCs only a search makes (indexing makes none of them): every one of their spans, wherever it
# was recorded, belongs to the call's trace, or context was lost on some hop.
SEARCH_ONLY_RPCS = {rpc for _, _, rpc in EXPECTED_EDGES} - {
    "codecompass.v1.EmbeddingService/Embed", "codecompass.v1.RetrievalService/Sync", "tools/call semantic_search",
    "codecompass.v1.CodeAnalysisService/ScanWorkspace"}
# The tools that read code live call the analysis service from the gateway itself.
READ_EDGE = (GATEWAY, ANALYSIS, "codecompass.v1.CodeAnalysisService/Trace")
QUERY = "how are tokens validated"
# Exporters batch; a short delay makes spans arrive within a fraction of a second of ending.
EXPORT_ENV = {"OTEL_BSP_SCHEDULE_DELAY": "200"}
# Two cores run six processes, a model and a type checker: generous, never the normal wait.
SPANS_TIMEOUT_S = 60.0
CALL_TIMEOUT_S = 120.0


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@pytest.fixture
def stack(receiver: OtlpReceiver, start_analysis_service, start_python_service, tmp_path: Path
          ) -> dict[str, str]:
    """Every service as its own process, exporting to the receiver, with the sample workspace indexed."""
    otlp = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **EXPORT_ENV}
    root = tmp_path / "ws"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace", root)
    _, analysis = start_analysis_service(otlp)
    _, embedding = start_python_service("codecompass.embedding",
                                        {**otlp, "CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    _, retrieval = start_python_service("codecompass.retrieval", {
        **otlp, "ANALYSIS_ADDR": analysis, "EMBEDDING_ADDR": embedding,
        "CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
    _, rerank = start_python_service("codecompass.rerank", otlp)
    _, selection = start_python_service("codecompass.selection", {**otlp, "ANALYSIS_ADDR": analysis})
    index_fully(retrieval, root)
    return {"root": str(root), "RETRIEVAL_ADDR": retrieval, "RERANK_ADDR": rerank,
            "SELECTION_ADDR": selection, "ANALYSIS_ADDR": analysis, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}


def edges(spans: list[ReceivedSpan]) -> set[tuple[str, str, str]]:
    clients = {s.span_id: s for s in spans if s.kind == "client"}
    return {(clients[s.parent_span_id].service, s.service, s.name)
            for s in spans if s.kind == "server" and s.parent_span_id in clients}


def in_trace(spans: list[ReceivedSpan], trace_id: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.trace_id == trace_id]


def orphans(trace: list[ReceivedSpan]) -> list[ReceivedSpan]:
    """Spans whose parent is not (yet) among the spans of their trace."""
    ids = {s.span_id for s in trace}
    return [s for s in trace if s.parent_span_id and s.parent_span_id not in ids]


def complete(trace: list[ReceivedSpan]) -> bool:
    """Every expected edge is there, with the tool span, and no span waits for its parent: the
    exporters send in batches, so a service's server span can arrive before its caller's."""
    return (edges(trace) >= EXPECTED_EDGES and any(s.name == TOOL_SPAN for s in trace)
            and not orphans(trace))


def from_sdk(span: ReadableSpan) -> ReceivedSpan:
    """A span the test process recorded (the MCP client's), in the receiver's shape."""
    return ReceivedSpan(
        service=str(span.resource.attributes.get("service.name", "")), name=span.name,
        kind=span.kind.name.lower(), trace_id=format(span.context.trace_id, "032x"),
        span_id=format(span.context.span_id, "016x"),
        parent_span_id=format(span.parent.span_id, "016x") if span.parent is not None else "",
        attributes=dict(span.attributes or {}),
    )


def call_and_collect(stack: dict[str, str], receiver: OtlpReceiver, client_spans: InMemorySpanExporter
                     ) -> tuple[CallToolResult, list[ReceivedSpan], CallToolResult, list[ReceivedSpan]]:
    """One semantic_search; the spans are awaited while the gateway still runs, so its exporter
    flushes on its own schedule rather than racing the client's shutdown of the process.
    Returns the services' spans and the test process's own (the MCP client's) together."""
    env = {**os.environ, **EXPORT_ENV, "PYTHONUNBUFFERED": "1",
           **{k: v for k, v in stack.items() if k != "root"},
           # An external provider behind closed privacy gates: the pipeline calls the rerank
           # service, which answers with the first-stage order ("local" would skip the call).
           "CODECOMPASS_RERANK_PROVIDER": "llm"}
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "codecompass_gateway", "--workspace", stack["root"]])

    def received(trace_id: str) -> list[ReceivedSpan]:
        ours = [from_sdk(s) for s in client_spans.get_finished_spans()]
        return receiver.wait_for(lambda spans: complete(in_trace(spans + ours, trace_id)), SPANS_TIMEOUT_S) + ours

    def read_received(trace_id: str) -> list[ReceivedSpan]:
        return receiver.wait_for(lambda spans: READ_EDGE in edges(in_trace(spans, trace_id)), SPANS_TIMEOUT_S)

    async def session() -> tuple[CallToolResult, list[ReceivedSpan], CallToolResult, list[ReceivedSpan]]:
        async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            result = await client.call_tool("semantic_search", {"query": QUERY})
            trace_id = (result.structured_content or {}).get("metadata", {}).get("trace_id", "")
            spans = await anyio.to_thread.run_sync(received, trace_id)
            read = await client.call_tool("read_symbol", {"symbol": "TokenService"})
            read_trace = (read.structured_content or {}).get("metadata", {}).get("trace_id", "")
            return result, spans, read, await anyio.to_thread.run_sync(read_received, read_trace)

    return anyio.run(session)


# Five services start, a model loads and the workspace is indexed with embeddings before the call.
@pytest.mark.timeout(300)
def test_one_semantic_search_is_one_trace_across_every_service(
        stack, receiver: OtlpReceiver, span_exporter: InMemorySpanExporter) -> None:
    span_exporter.clear()  # the indexing's client spans
    result, spans, read, read_spans = call_and_collect(stack, receiver, span_exporter)
    assert not result.is_error, [block.text for block in result.content]
    meta = result.structured_content["metadata"]
    # The rerank service was called, and answered with the first-stage order: the gates are closed.
    assert (meta["rerank_provider"], meta["rerank_fallback_reason"]) == ("local", "external_provider_blocked"), meta
    assert meta["semantic_ratio_used"] > 0, "the vector channel ran"

    # The trace starts in the agent: the SDK's client span of the call is its root, and the
    # trace id the answer reports is that trace's.
    (call,) = [s for s in spans if s.service == TEST_CLIENT and s.name == "MCP send tools/call semantic_search"]
    assert meta["trace_id"] == call.trace_id and call.parent_span_id == ""
    trace = in_trace(spans, call.trace_id)
    assert complete(trace), (f"missing edges {sorted(EXPECTED_EDGES - edges(trace))}, "
                             f"orphans {[(s.service, s.name) for s in orphans(trace)]}")
    assert [s for s in trace if not s.parent_span_id] == [call], "one tree, one root"
    assert {s.service for s in trace} == {TEST_CLIENT, GATEWAY, ANALYSIS, EMBEDDING, RETRIEVAL, RERANK, SELECTION}
    # Every service, Python or Node, in one namespace a shared trace backend can filter on.
    assert {(s.service, s.namespace) for s in trace if s.service != TEST_CLIENT} == {
        (service, names.NAMESPACE) for service in (GATEWAY, ANALYSIS, EMBEDDING, RETRIEVAL, RERANK, SELECTION)}

    # client -> gateway over stdio, then the gateway's tool span, its pipeline and the stages.
    by_id = {s.span_id: s for s in trace}
    (tool,) = [s for s in trace if s.service == GATEWAY and s.name == TOOL_SPAN]
    mcp_server = by_id[tool.parent_span_id]
    assert (mcp_server.service, mcp_server.kind, mcp_server.parent_span_id) == (GATEWAY, "server", call.span_id)
    (pipeline,) = [s for s in trace if s.service == GATEWAY and s.name == "pipeline"]
    assert pipeline.parent_span_id == tool.span_id
    stages = {s.name for s in trace if s.parent_span_id == pipeline.span_id}
    assert {"pipeline.sync", "pipeline.retrieve", "pipeline.rerank", "pipeline.select"} <= stages

    # Each stage's own span carries the numbers that explain it (README: Span attributes), and
    # they agree with each other and with the answer.
    own = {(s.service, s.name): s.attributes for s in trace if s.kind != "client"}
    answer_side = pipeline.attributes
    assert (answer_side["codecompass.freshness_status"], answer_side["codecompass.query_intent"],
            answer_side["codecompass.semantic_mode"], answer_side["codecompass.rerank_provider"],
            answer_side["codecompass.rerank_fallback_reason"]) == (
        "fresh", "natural_language", "hybrid", "local", "external_provider_blocked")
    assert answer_side["codecompass.results"] == len(result.structured_content["results"]) > 0
    synced = own[(RETRIEVAL, "retrieval.sync")]
    assert (synced["codecompass.retrieval.freshness_status"], synced["codecompass.retrieval.sync_finished"],
            synced["codecompass.retrieval.pending_files"]) == ("fresh", True, 0)
    searched = own[(RETRIEVAL, "retrieval.search")]
    assert searched["codecompass.retrieval.candidates"] >= searched["codecompass.retrieval.results"] > 0
    assert searched["codecompass.retrieval.chunks"] > 0 and searched["codecompass.retrieval.semantic_ratio"] > 0
    assert (searched["codecompass.retrieval.indexing_status"], searched["codecompass.retrieval.embedding_model"]) == (
        "ready", meta["embedding_model_id"])
    assert answer_side["codecompass.candidates"] == searched["codecompass.retrieval.results"]
    embedded = own[(EMBEDDING, "embedding.embed")]
    assert (embedded["codecompass.embedding.texts"], embedded["codecompass.embedding.input_type"]) == (1, "query")
    reranked = own[(RERANK, "rerank.rerank")]
    assert (reranked["codecompass.rerank.provider"], reranked["codecompass.rerank.fallback_reason"]) == (
        "local", "external_provider_blocked") and reranked["codecompass.rerank.documents"] > 0
    selected = own[(SELECTION, "selection.select")]
    assert selected["codecompass.selection.results"] == answer_side["codecompass.results"]
    assert selected["codecompass.selection.total_tokens"] == answer_side["codecompass.total_tokens"] > 0
    rendered = own[(ANALYSIS, "codecompass.v1.CodeAnalysisService/RenderSymbols")]
    assert rendered["codecompass.render.symbols"] == rendered["codecompass.render.requested"] > 0
    # The search's sync: the indexed, untouched workspace is answered by the folder watch without a
    # walk where folders can be watched (Linux, a local file system), else walked and listed.
    scanned = own[(ANALYSIS, "codecompass.v1.CodeAnalysisService/ScanWorkspace")]
    assert scanned["codecompass.scan.unchanged"] == (scanned["codecompass.files"] == 0)
    # What the sources say is documented is what the services really send (test_trace_attributes).
    sent = {key for s in trace for key in s.attributes if key.startswith("codecompass.")}
    assert sent <= set(documented_keys(README.read_text(encoding="utf-8"))), sent

    # No hop of the call started a trace of its own.
    strays = [(s.service, s.name, s.kind) for s in spans
              if s.name in SEARCH_ONLY_RPCS and s.trace_id != call.trace_id]
    assert not strays, f"spans of the search outside its trace: {strays}"

    # read_symbol: gateway -> analysis, in the trace its answer names.
    assert not read.is_error, [block.text for block in read.content]
    assert READ_EDGE in edges(in_trace(read_spans, read.structured_content["metadata"]["trace_id"]))
