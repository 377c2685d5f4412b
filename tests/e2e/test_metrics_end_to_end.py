"""Metrics end to end (issue 29 §3): every service as a real process, serving its metrics for
Prometheus on its <SVC>_METRICS_PORT and pushing them over OTLP to a local receiver, while the
sample workspace is indexed and an agent calls the MCP tools through the SDK's stdio client.

What is asserted is what an SRE's Prometheus would scrape: the RPC and tool latencies with their
status labels, the writer's index gauges (size, embedding backlog, sync lag), the cache counters,
the embedding queue; and that the dashboard and the alert rules ask only for series that are there.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import anyio
import grpc
import pytest
from mcp import Client, StdioServerParameters
from prometheus_client.parser import text_string_to_metric_families
from tests.conftest import index_fully
from tests.deploy.test_metrics_files import alert_rule_metrics, dashboard_metrics
from tests.fixtures.otlp_receiver import OtlpReceiver

from codecompass.clients.retrieval import RetrievalClient
from codecompass.common import names
from codecompass.v1 import selection_pb2, selection_pb2_grpc

pytestmark = pytest.mark.slow

# OTLP every half second instead of every minute, so the receiver holds every service's points soon.
EXPORT_ENV = {"OTEL_METRIC_EXPORT_INTERVAL": "500", "OTEL_BSP_SCHEDULE_DELAY": "200"}
CALL_TIMEOUT_S = 120.0
OTLP_TIMEOUT_S = 30.0
QUERY = "how are tokens validated"

Samples = dict[str, list[tuple[dict[str, str], float]]]


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def scrape(port: int) -> Samples:
    """Every sample of a Prometheus endpoint: {sample name: [(labels, value)]}."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode("utf-8")
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    return sum(value for found, value in samples.get(name, []) if all(found.get(k) == v for k, v in labels.items()))


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@pytest.fixture
def stack(receiver: OtlpReceiver, start_analysis_service, start_python_service, tmp_path: Path) -> dict:
    """Every service, each with a metrics port and the OTLP endpoint, the sample workspace indexed."""
    ports = dict(zip((*names.BACKENDS, names.GATEWAY), free_ports(len(names.BACKENDS) + 1), strict=True))

    def env(service: str, **more: str) -> dict[str, str]:
        return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, **EXPORT_ENV,
                f"{service.upper()}_METRICS_PORT": str(ports[service]), **more}

    root = tmp_path / "ws"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace", root)
    analysis_process, analysis = start_analysis_service(env(names.ANALYSIS))
    _, embedding = start_python_service("codecompass.embedding",
                                        env(names.EMBEDDING, CODECOMPASS_EMBEDDING_PROFILE="minilm"))
    _, retrieval = start_python_service("codecompass.retrieval", env(
        names.RETRIEVAL, ANALYSIS_ADDR=analysis, EMBEDDING_ADDR=embedding,
        CODECOMPASS_STATE_DIR=str(tmp_path / "state")))
    _, rerank = start_python_service("codecompass.rerank", env(names.RERANK))
    _, selection = start_python_service("codecompass.selection", env(names.SELECTION, ANALYSIS_ADDR=analysis))
    index_fully(retrieval, root)
    return {"root": str(root), "ports": ports, "analysis_process": analysis_process,
            "gateway_env": {**env(names.GATEWAY), "RETRIEVAL_ADDR": retrieval, "RERANK_ADDR": rerank,
                            "SELECTION_ADDR": selection, "ANALYSIS_ADDR": analysis,
                            # A model reranker behind closed gates: the gateway calls the rerank service.
                            "CODECOMPASS_RERANK_PROVIDER": "llm"},
            "RETRIEVAL_ADDR": retrieval, "SELECTION_ADDR": selection}


def agent_session(stack: dict) -> Samples:
    """Three tool calls through the gateway over stdio (one refused), then the gateway's own
    metrics, scraped while it still runs."""
    params = StdioServerParameters(command=sys.executable, env={**os.environ, "PYTHONUNBUFFERED": "1",
                                                                **stack["gateway_env"]},
                                   args=["-m", "codecompass_gateway", "--workspace", stack["root"]])

    async def session() -> Samples:
        async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            searched = await client.call_tool("semantic_search", {"query": QUERY})
            assert not searched.is_error, searched.content
            read = await client.call_tool("read_symbol", {"symbol": "TokenService"})
            assert not read.is_error, read.content
            refused = await client.call_tool("semantic_search", {"query": QUERY, "top_k": 3})
            assert refused.is_error
            return await anyio.to_thread.run_sync(scrape, stack["ports"][names.GATEWAY])

    return anyio.run(session)


# Five services start, a model loads and the workspace is indexed with embeddings first.
@pytest.mark.timeout(300)
def test_every_service_serves_its_metrics_for_prometheus_and_over_otlp(stack: dict, receiver: OtlpReceiver) -> None:
    # One call that fails: its status code is a label of its latency series.
    with grpc.insecure_channel(stack["SELECTION_ADDR"]) as channel, pytest.raises(grpc.RpcError) as refused:
        selection_pb2_grpc.SelectionServiceStub(channel).Select(selection_pb2.SelectRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    gateway = agent_session(stack)
    ports = stack["ports"]
    scraped = {service: scrape(ports[service]) for service in names.BACKENDS}
    scraped[names.GATEWAY] = gateway

    # Every series says which service it is of, in the one namespace, whichever runtime wrote it.
    for service, samples in scraped.items():
        (info,) = samples["target_info"]
        assert (info[0]["service_name"], info[0]["service_namespace"]) == (service, names.NAMESPACE)

    # Requests, errors and latency per RPC: each hop of a search, answered by the service it names.
    calls = "rpc_server_call_duration_seconds_count"
    for service, rpc_service, method in [
        (names.ANALYSIS, "codecompass.v1.CodeAnalysisService", "ScanWorkspace"),
        (names.ANALYSIS, "codecompass.v1.CodeAnalysisService", "ChunkFiles"),
        (names.ANALYSIS, "codecompass.v1.CodeAnalysisService", "RenderSymbols"),
        (names.EMBEDDING, "codecompass.v1.EmbeddingService", "Embed"),
        (names.RETRIEVAL, "codecompass.v1.RetrievalService", "IndexWorkspace"),
        (names.RETRIEVAL, "codecompass.v1.RetrievalService", "Sync"),
        (names.RETRIEVAL, "codecompass.v1.RetrievalService", "Search"),
        (names.RERANK, "codecompass.v1.RerankService", "Rerank"),
        (names.SELECTION, "codecompass.v1.SelectionService", "Select"),
    ]:
        ok = total(scraped[service], calls, rpc_service=rpc_service, rpc_method=method, rpc_grpc_status_code="0",
                   service_name=service)
        assert ok >= 1, (service, method, scraped[service].get(calls))
    assert total(scraped[names.SELECTION], calls, rpc_method="Select", rpc_grpc_status_code="3") == 1
    # The latency histogram has its buckets (p95 is computed from them) in seconds.
    buckets = {labels["le"] for labels, _ in scraped[names.ANALYSIS]["rpc_server_call_duration_seconds_bucket"]}
    assert {"0.005", "10.0", "+Inf"} <= {str(float(b)) if b != "+Inf" else b for b in buckets}
    # Health checks (every few hundred ms from launchers and probes) are not requests.
    assert not any(labels["rpc_service"] == "grpc.health.v1.Health"
                   for samples in scraped.values() for labels, _ in samples.get(calls, []))

    # Requests, errors and latency per MCP tool: the refusal counts, under its error code.
    tool_calls = "mcp_server_operation_duration_seconds_count"
    assert {(labels["gen_ai_tool_name"], labels.get("error_type", ""), value)
            for labels, value in gateway[tool_calls]} == {
        ("semantic_search", "", 1.0), ("read_symbol", "", 1.0), ("semantic_search", "invalid_argument", 1.0)}

    # The writer's index: one index, its chunks and bytes, every chunk embedded (the index waited
    # for its embeddings), nothing pending, no sync behind.
    retrieval = scraped[names.RETRIEVAL]
    assert [value for _, value in retrieval["codecompass_index_count"]] == [1.0]
    ((index_labels, chunks),) = retrieval["codecompass_index_chunks"]
    key = index_labels["codecompass_index"]
    assert len(key) == 32 and chunks > 10
    assert total(retrieval, "codecompass_index_size_bytes", codecompass_index=key) > 10_000
    assert total(retrieval, "codecompass_embedding_backlog", codecompass_index=key) == 0
    assert total(retrieval, "codecompass_sync_pending_files", codecompass_index=key) == 0
    assert total(retrieval, "codecompass_sync_lag_seconds", codecompass_index=key) < 5

    # Cache hits: the searcher's chunk and text caches, selection's token counts, analysis's parses.
    lookups = "codecompass_cache_requests_total"
    for service, cache in [(names.RETRIEVAL, "searcher.chunks"), (names.RETRIEVAL, "searcher.texts"),
                           (names.SELECTION, "selection.tokens"), (names.ANALYSIS, "analysis.render")]:
        assert total(scraped[service], lookups, codecompass_cache=cache) >= 1, (service, cache)
    # The embedding queue: back to empty once every request is answered, for both input types.
    queue = scraped[names.EMBEDDING]["codecompass_embedding_queue_depth"]
    assert {labels["codecompass_embedding_input_type"] for labels, _ in queue} == {"query", "document"}
    assert all(value == 0 for _, value in queue)

    # The dashboard and the alert rules ask only for series this run served.
    served = {name for samples in scraped.values() for name in samples}
    assert dashboard_metrics() <= served, dashboard_metrics() - served
    assert alert_rule_metrics() <= served | {"up"}, alert_rule_metrics() - served

    # Over OTLP too, from every service, under the same instrument names.
    def pushed() -> set[tuple[str, str]]:
        return {(p.service, p.metric) for p in receiver.points() if p.namespace == names.NAMESPACE}

    expected = {(service, "rpc.server.call.duration") for service in names.BACKENDS} | {
        (names.GATEWAY, "mcp.server.operation.duration"), (names.RETRIEVAL, "codecompass.sync.lag"),
        (names.RETRIEVAL, "codecompass.index.size"), (names.EMBEDDING, "codecompass.embedding.queue.depth"),
        (names.ANALYSIS, "codecompass.cache.requests")}
    deadline = time.monotonic() + OTLP_TIMEOUT_S
    while not expected <= pushed() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert expected <= pushed(), expected - pushed()

    # The sync lag grows while syncs fail: with the analysis service gone, a sync cannot scan, and
    # the index may fall behind the folder unseen.
    stack["analysis_process"].send_signal(signal.SIGKILL)
    stack["analysis_process"].wait(10)
    client = RetrievalClient(stack["RETRIEVAL_ADDR"])
    try:
        client.sync(stack["root"], budget_ms=5000, timeout_s=30)
        time.sleep(1.5)
        client.sync(stack["root"], budget_ms=5000, timeout_s=30)
    finally:
        client.close()
    lag = total(scrape(ports[names.RETRIEVAL]), "codecompass_sync_lag_seconds", codecompass_index=key)
    assert lag >= 1.5, lag
