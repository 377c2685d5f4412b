"""SelectionService over real gRPC against the real Node analysis service and the sample workspace.

Candidates are the analysis service's own chunks (ChunkFiles), so ids, lines and stored sources are
what retrieval would hand on. Rendering failures must come back as stored sources with
`render_fallback = true`, never as an RPC error.
"""

from __future__ import annotations

import re
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.common.chunks import Chunk
from codecompass.common.config import SelectionSettings
from codecompass.common.serving import RunningServer, ServiceSpec, start_server
from codecompass.common.tokens import count_tokens
from codecompass.retrieval.analysis_client import AnalysisClient
from codecompass.selection import convert
from codecompass.selection.__main__ import warm_up
from codecompass.selection.engine import SelectionEngine
from codecompass.selection.model import Candidate, QueryFocus, Reason, SelectQuery
from codecompass.selection.render_client import RenderClient
from codecompass.selection.servicer import SERVICE_NAME, SelectionServicer, register
from codecompass.v1 import selection_pb2 as pb
from codecompass.v1 import selection_pb2_grpc

TOKEN_SERVICE = "src/auth/tokenService.ts"
JWT = "src/auth/jwt.ts"
MARKER = re.compile(r"^// … (\d+) more lines \(L(\d+)–L(\d+)\); read the symbol to see them$")


@pytest.fixture(scope="module")
def chunks(analysis_server: str, sample_workspace: Path) -> dict[str, Chunk]:
    """The sample workspace's chunks by qualified name, as the analysis service makes them."""
    client = AnalysisClient(analysis_server, timeout_s=30)
    try:
        files = list(client.chunk_files(str(sample_workspace), [TOKEN_SERVICE, JWT], include_references=False))
    finally:
        client.close()
    return {c.qualified_name: c for f in files for c in f.chunks if c.relative_path != JWT or c.name == "decodeJwt"}


def serve(analysis_addr: str) -> tuple[RunningServer, RenderClient]:
    renderer = RenderClient(analysis_addr, timeout_s=5.0)
    engine = SelectionEngine(SelectionSettings(), renderer)
    running = start_server(ServiceSpec(name="selection", register=register(SelectionServicer(engine)), warmup=warm_up),
                           warmup_in_background=False)
    return running, renderer


@pytest.fixture
def selection(analysis_server: str) -> Iterator[tuple[selection_pb2_grpc.SelectionServiceStub, grpc.Channel]]:
    running, renderer = serve(analysis_server)
    channel = grpc.insecure_channel(running.address)
    yield selection_pb2_grpc.SelectionServiceStub(channel), channel
    channel.close()
    running.stop(0)
    renderer.close()


def request(root: Path, candidates: list[Candidate], **options) -> pb.SelectRequest:
    options = {"confidence": 0.9, "focus": QueryFocus.AUTO} | options
    return convert.query_to_proto(SelectQuery(str(root), "validate a token", tuple(candidates), **options))


def file_lines(root: Path, relative_path: str, start: int, end: int) -> str:
    return "\n".join((root / relative_path).read_text().split("\n")[start - 1:end])


def test_select_renders_merges_and_fits_the_budget(selection, chunks, sample_workspace: Path) -> None:
    stub, channel = selection
    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    cls, method = chunks["TokenService"], chunks["TokenService.validateToken"]
    decode = chunks["decodeJwt"]
    response = stub.Select(request(sample_workspace, [
        Candidate(method, 0.9, provenance="lexical"), Candidate(cls, 0.7, provenance="semantic"),
        Candidate(decode, 0.6, provenance="hybrid"), Candidate(chunks["TokenService.revokeToken"], 0.2),
    ], max_tokens=4000), timeout=10)

    assert [r.qualified_name for r in response.results] == ["TokenService", "decodeJwt"]
    merged = response.results[0]
    # the class, with validateToken expanded in place and every other method collapsed
    assert list(merged.expanded_child_ids) == [method.id] and response.merged == 1
    assert merged.header == f"// {TOKEN_SERVICE} > TokenService"
    assert (merged.start_line, merged.end_line) == (13, 77)
    assert merged.source.startswith("export class TokenService {")
    assert file_lines(sample_workspace, TOKEN_SERVICE, 46, 67) in merged.source
    assert "issueToken(userId: string, roles: string[] = []): string { /* 15 lines collapsed */ }" in merged.source
    assert "revokeToken(token: string): void { /* 3 lines collapsed */ }" in merged.source
    assert list(merged.reasons) == [pb.SELECTION_REASON_MATCH, pb.SELECTION_REASON_MERGED_PARENT]
    assert merged.score == pytest.approx(0.9) and merged.relevance == pytest.approx(0.9)
    assert merged.why == "match (score 0.70); expands 1 matching child (best 0.90)"
    assert merged.token_count == count_tokens(merged.header + "\n" + merged.source)

    standalone = response.results[1]
    assert standalone.header == f"// {JWT} > decodeJwt" and standalone.relevance == pytest.approx((0.6 / 0.9) ** 0.5 * 0.9)
    assert standalone.source == file_lines(sample_workspace, JWT, decode.start_line, decode.end_line)
    assert list(standalone.reasons) == [pb.SELECTION_REASON_MATCH] and not standalone.expanded_child_ids

    assert response.below_relevance == 1 and response.over_budget == 0
    assert response.total_tokens == merged.token_count + standalone.token_count <= response.max_tokens == 4000
    assert response.min_relevance == 0.5 and response.focus == pb.QUERY_FOCUS_IMPLEMENTATION
    assert not response.render_fallback and response.render_fallback_reason == "" and response.duration_ms > 0


def test_a_tight_budget_clips_with_a_marker_line(selection, chunks, sample_workspace: Path) -> None:
    stub, _ = selection
    cls = chunks["TokenService"]
    response = stub.Select(request(sample_workspace, [Candidate(cls, 0.9)], max_tokens=200), timeout=10)
    (result,) = response.results
    assert result.clipped and result.token_count <= 200 == response.max_tokens
    assert result.source.startswith("export class TokenService {")
    omitted, first, last = map(int, MARKER.match(result.source.rsplit("\n", 1)[-1]).groups())
    assert last == 77 and omitted == result.lines_omitted == last - first + 1 > 0
    # the marker names the file lines after the last one shown (a collapsed child ends on its `}`)
    shown = result.source.split("\n")[-2]
    before = file_lines(sample_workspace, TOKEN_SERVICE, first - 1, first - 1)
    assert shown == before or ("lines collapsed */ }" in shown and before == "  }")


def test_unreachable_analysis_falls_back_to_stored_sources(chunks, sample_workspace: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{probe.getsockname()[1]}"
    running, renderer = serve(closed)
    try:
        with grpc.insecure_channel(running.address) as channel:
            cls, method = chunks["TokenService"], chunks["TokenService.validateToken"]
            response = selection_pb2_grpc.SelectionServiceStub(channel).Select(
                request(sample_workspace, [Candidate(method, 0.9), Candidate(cls, 0.7)]), timeout=10)
    finally:
        running.stop(0)
        renderer.close()
    assert response.render_fallback and response.render_fallback_reason == "analysis_unavailable"
    # no merge without a renderer: each result is its stored collapsed source
    assert [r.chunk_id for r in response.results] == [method.id, cls.id] and response.merged == 0
    assert [r.source for r in response.results] == [method.collapsed_source, cls.collapsed_source]
    assert response.results[1].header == f"// {TOKEN_SERVICE} > TokenService"


def test_invalid_requests_are_invalid_argument(selection, chunks, sample_workspace: Path) -> None:
    stub, _ = selection
    cls = chunks["TokenService"]
    bad = [
        request(Path("relative/ws"), [Candidate(cls, 0.9)]),
        request(sample_workspace, [Candidate(cls, 0.9), Candidate(cls, 0.8)]),
        request(sample_workspace, [Candidate(cls, 0.9)], confidence=1.5),
        request(sample_workspace, [Candidate(cls, 0.9)], min_relevance=2.0),
    ]
    for message in bad:
        with pytest.raises(grpc.RpcError) as caught:
            stub.Select(message, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Traceback" not in (caught.value.details() or "")


def test_process_serves_health_and_drains_on_sigterm(start_python_service, analysis_server: str, chunks,
                                                     sample_workspace: Path) -> None:
    process, address = start_python_service("codecompass.selection", {"ANALYSIS_ADDR": analysis_server})
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.SERVING
        stub = selection_pb2_grpc.SelectionServiceStub(channel)
        method = chunks["TokenService.validateToken"]
        response = stub.Select(request(sample_workspace, [Candidate(method, 0.9, Reason.MATCH)]), timeout=10)
        assert response.results[0].source.startswith("validateToken(token: string): ValidationResult {")
        assert response.max_tokens == 8000 and not response.render_fallback
        # low confidence: an empty answer, never a padded one
        empty = stub.Select(request(sample_workspace, [Candidate(method, 0.9)], confidence=0.3), timeout=10)
        assert len(empty.results) == 0 and empty.below_relevance == 1
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
