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
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.clients.analysis import AnalysisClient
from codecompass.common.chunks import Chunk
from codecompass.common.config import SelectionSettings
from codecompass.common.serving import RunningServer, ServiceSpec, start_server
from codecompass.common.tokens import count_tokens
from codecompass.contracts.chunk_convert import chunk_to_proto
from codecompass.contracts.selection import convert
from codecompass.contracts.selection.model import Candidate, Reason, SelectQuery
from codecompass.policy.relevance import DEFAULT_RELEVANCE, QueryFocus, relevance, resolve_focus
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS
from codecompass.policy.shape import analyze
from codecompass.selection.__main__ import warm_up
from codecompass.selection.engine import SelectionEngine
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


def request(root: Path, candidates: list[Candidate], *, confidence: float = 0.9, **options) -> pb.SelectRequest:
    """As the gateway sends it: each candidate's relevance from the relevance policy (unless set)."""
    focus = resolve_focus(QueryFocus.AUTO, analyze("validate a token"))
    values = relevance([c.score for c in candidates], [c.chunk for c in candidates], confidence, focus)
    sent = tuple(c if c.relevance is not None else replace(c, relevance=value)
                 for c, value in zip(candidates, values, strict=True))
    return convert.query_to_proto(SelectQuery(str(root), sent, **options))


def file_lines(root: Path, relative_path: str, start: int, end: int) -> str:
    return "\n".join((root / relative_path).read_text().split("\n")[start - 1:end])


def test_select_renders_and_fits_the_budget_in_the_ranking_order(selection, chunks, sample_workspace: Path) -> None:
    stub, channel = selection
    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5)
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    cls, method = chunks["TokenService"], chunks["TokenService.validateToken"]
    decode = chunks["decodeJwt"]
    response = stub.Select(request(sample_workspace, [
        Candidate(method, 0.9, provenance="lexical"), Candidate(cls, 0.7, provenance="semantic"),
        Candidate(decode, 0.6, provenance="hybrid"), Candidate(chunks["TokenService.revokeToken"], 0.0),
    ], max_tokens=4000), timeout=10)

    # validateToken is 22 of the class's 65 lines: too little of it to merge (MERGE_MIN_COVER), so
    # each stands at its own place in the ranking; revokeToken matched nothing (score 0): never kept.
    assert [r.qualified_name for r in response.results] == ["TokenService.validateToken", "TokenService", "decodeJwt"]
    own, cls_result = response.results[0], response.results[1]
    assert response.merged == 0 and not own.expanded_child_ids and not cls_result.expanded_child_ids
    assert (own.source.startswith("validateToken(token: string): ValidationResult {")
            and (own.start_line, own.end_line) == (46, 67))
    assert cls_result.header == f"// {TOKEN_SERVICE} > TokenService"
    assert (cls_result.start_line, cls_result.end_line) == (13, 77)
    assert cls_result.source.startswith("export class TokenService {")
    assert "validateToken(token: string): ValidationResult { /* 22 lines collapsed */ }" in cls_result.source
    assert "revokeToken(token: string): void { /* 3 lines collapsed */ }" in cls_result.source
    assert list(cls_result.reasons) == [pb.SELECTION_REASON_MATCH]
    assert own.why == "match (score 0.90)" and own.relevance == pytest.approx(0.9)
    assert cls_result.token_count == count_tokens(cls_result.header + "\n" + cls_result.source)

    standalone = response.results[2]
    assert standalone.header == f"// {JWT} > decodeJwt" and standalone.relevance == pytest.approx(
        (0.6 / 0.9) ** DEFAULT_RELEVANCE.relative_exponent * 0.9)
    assert standalone.source == file_lines(sample_workspace, JWT, decode.start_line, decode.end_line)
    assert list(standalone.reasons) == [pb.SELECTION_REASON_MATCH] and not standalone.expanded_child_ids

    assert response.below_relevance == 1 and response.over_budget == 0
    assert response.total_tokens == sum(r.token_count for r in response.results) <= response.max_tokens == 4000
    assert response.min_relevance == 0.5
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
    # no merge without a renderer: each result is its stored collapsed source, dedented as rendered
    assert [r.chunk_id for r in response.results] == [method.id, cls.id] and response.merged == 0
    assert [r.source for r in response.results] == [method.rendered_collapsed(), cls.rendered_collapsed()]
    assert method.indent and method.rendered_collapsed() != method.collapsed_source
    assert response.results[1].header == f"// {TOKEN_SERVICE} > TokenService"


def test_invalid_requests_are_invalid_argument(selection, chunks, sample_workspace: Path) -> None:
    stub, _ = selection
    cls = chunks["TokenService"]
    bad = [
        request(Path("relative/ws"), [Candidate(cls, 0.9)]),
        request(sample_workspace, [Candidate(cls, 0.9), Candidate(cls, 0.8)]),
        request(sample_workspace, [Candidate(cls, 0.9, relevance=1.5)]),
        request(sample_workspace, [Candidate(cls, 0.9, relevance=float("nan"))]),
        request(sample_workspace, [Candidate(cls, 0.9)], min_relevance=2.0),
    ]
    for message in bad:
        with pytest.raises(grpc.RpcError) as caught:
            stub.Select(message, timeout=10)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Traceback" not in (caught.value.details() or "")


def test_a_plain_client_without_relevance_is_gated_on_its_scores(selection, chunks, sample_workspace: Path) -> None:
    stub, _ = selection
    method, decode = chunks["TokenService.validateToken"], chunks["decodeJwt"]
    plain = pb.SelectRequest(workspace_root=str(sample_workspace), candidates=[
        pb.SelectCandidate(chunk=chunk_to_proto(c), score=score) for c, score in ((decode, 0.0), (method, 0.8))])
    response = stub.Select(plain, timeout=10)
    # A score of 0 (relevance 0) matched nothing: never kept.
    assert [(r.chunk_id, round(r.relevance, 6)) for r in response.results] == [(method.id, 0.8)]
    assert response.below_relevance == 1


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
        # below the gate: the closest within the budget asked for (the gateway asks for the small
        # one when the question likely has no answer here); nothing matched: an empty answer
        short = stub.Select(request(sample_workspace, [Candidate(method, 0.9)], confidence=0.2,
                                    max_tokens=LOW_CONFIDENCE_MAX_TOKENS), timeout=10)
        assert [r.chunk_id for r in short.results] == [method.id] and short.below_relevance == 0
        assert short.max_tokens == LOW_CONFIDENCE_MAX_TOKENS
        empty = stub.Select(request(sample_workspace, [Candidate(method, 0.0)], confidence=0.3), timeout=10)
        assert len(empty.results) == 0 and empty.below_relevance == 1
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
