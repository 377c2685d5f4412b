"""RerankService over real gRPC against local stub servers in Cohere's, Voyage's and OpenAI-chat's shapes.

Every provider failure (401, 429, 500, a reply slower than the timeout, junk) must come back as the
first-stage scores with `rerank_fallback = true` and a reason, never as an RPC error.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.common.config import RerankSettings
from codecompass.common.serving import ServiceSpec, start_server
from codecompass.rerank.engine import RerankEngine
from codecompass.rerank.servicer import MAX_DOCUMENTS, MAX_TEXT_CHARS, SERVICE_NAME, RerankServicer, register
from codecompass.v1 import rerank_pb2 as pb
from codecompass.v1 import rerank_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "stubs"))
from rerank_api import Reply, StubRerankAPI

SECRET = "rk-live-0123456789abcdef"
OPEN = {"external_provider_enabled": True, "allow_code_payload_to_external": True}
QUERY = "validate session token"
# In first-stage order; the first-stage scores go with them as a client built from the older contract
# sends them: the service no longer reads them (the blend is the gateway's, codecompass.policy.blend).
DOCS = [
    ("css", "body { color: red }", 0.9),
    ("auth", "def validate_session(token): check the session token", 0.6),
    ("readme", "how to install", 0.3),
]
UNSCORED = [("css", None), ("auth", None), ("readme", None)]


@pytest.fixture
def api() -> Iterator[StubRerankAPI]:
    with StubRerankAPI(api_key=SECRET) as stub:
        yield stub


def serve(settings: RerankSettings):
    running = start_server(ServiceSpec(name="rerank", register=register(RerankServicer(RerankEngine(settings)))),
                           warmup_in_background=False)
    return running


def call(settings: RerankSettings, top_n: int = 0, provider: str | None = None) -> pb.RerankResponse:
    running = serve(settings)
    try:
        with grpc.insecure_channel(running.address) as channel:
            request = pb.RerankRequest(query=QUERY, top_n=top_n, documents=[
                pb.RerankDocument(id=i, text=t, first_stage_score=s) for i, t, s in DOCS])
            if provider is not None:
                request.provider = provider
            return rerank_pb2_grpc.RerankServiceStub(channel).Rerank(request, timeout=10)
    finally:
        running.stop(0)


def ids_scores(response: pb.RerankResponse) -> list[tuple[str, float | None]]:
    """The raw model scores in response order; the deprecated final_score is never set."""
    assert all(s.final_score == 0.0 for s in response.scores)
    return [(s.id, round(s.rerank_score, 6) if s.HasField("rerank_score") else None) for s in response.scores]


def settings_for(provider: str, api: StubRerankAPI, **overrides) -> RerankSettings:
    base_url = {"cohere": api.root_url, "voyage": api.v1_url, "llm": api.v1_url}[provider]
    model = "stub-chat" if provider == "llm" else None
    options = {"provider": provider, "api_key": SECRET, "base_url": base_url, "model": model,
               "timeout_s": 0.5, **OPEN} | overrides
    return RerankSettings(**options)


def assert_fell_back(response: pb.RerankResponse, reason: str) -> None:
    assert response.rerank_provider == "local" and response.rerank_fallback is True
    assert response.fallback_reason == reason
    assert ids_scores(response) == UNSCORED  # no model scores, request order
    assert SECRET not in str(response)


@pytest.mark.parametrize("provider", ["cohere", "voyage"])
def test_model_reranker_returns_raw_scores_best_first(api: StubRerankAPI, provider: str) -> None:
    response = call(settings_for(provider, api))
    assert response.rerank_provider == provider and not response.rerank_fallback
    # "validate session token": auth contains "session" and "token" -> 2/3, raw (no blend with its 0.6)
    assert ids_scores(response)[0] == ("auth", round(2 / 3, 6))
    sent = api.received[-1]
    assert sent.headers["Authorization"] == f"Bearer {SECRET}"
    expected_path, expected_model = {"cohere": ("/v2/rerank", "rerank-v3.5"),
                                     "voyage": ("/v1/rerank", "rerank-2.5")}[provider]
    assert sent.path == expected_path and sent.body["model"] == expected_model
    assert sent.body["documents"] == [t for _, t, _ in DOCS] and sent.body["query"] == QUERY


def test_cohere_top_n_leaves_the_rest_unscored_in_request_order(api: StubRerankAPI) -> None:
    response = call(settings_for("cohere", api), top_n=1)
    assert api.received[-1].body["top_n"] == 1
    assert ids_scores(response) == [("auth", round(2 / 3, 6)), ("css", None), ("readme", None)]


def test_llm_ranks_by_returned_indices(api: StubRerankAPI) -> None:
    api.script(Reply(content="```json\n[1, 7, 1, 2]\n```"))
    response = call(settings_for("llm", api))
    assert response.rerank_provider == "llm" and not response.rerank_fallback
    # Picked documents by rank, unpicked ones unscored; the gateway's blend keeps their first-stage score.
    assert ids_scores(response) == [("auth", 1.0), ("readme", 0.5), ("css", None)]
    body = api.received[-1].body
    assert body["model"] == "stub-chat" and body["temperature"] == 0.1 and body["max_tokens"] == 200
    assert "[1]\ndef validate_session" in body["messages"][0]["content"]


@pytest.mark.parametrize("provider", ["cohere", "voyage", "llm"])
@pytest.mark.parametrize(("reply", "reason"), [
    (Reply(status=429), "http_429"),
    (Reply(status=500), "http_500"),
    (Reply(delay_s=1.5), "timeout"),
])
def test_provider_errors_fall_back_to_first_stage(api: StubRerankAPI, provider: str, reply: Reply,
                                                  reason: str) -> None:
    api.script(reply)
    assert_fell_back(call(settings_for(provider, api)), reason)


@pytest.mark.parametrize("provider", ["cohere", "voyage", "llm"])
def test_wrong_key_falls_back_and_never_echoes_the_key(api: StubRerankAPI, provider: str) -> None:
    response = call(settings_for(provider, api, api_key="rk-wrong-key-0000"))
    assert_fell_back(response, "http_401")
    assert "rk-wrong-key-0000" not in str(response)


@pytest.mark.parametrize(("content", "reason"), [('"2, 0, 4"', "invalid_response"), ("[]", "empty_ranking"),
                                                  ("[99, 100]", "empty_ranking")])
def test_llm_unusable_answers_keep_previous_order(api: StubRerankAPI, content: str, reason: str) -> None:
    api.script(Reply(content=content))
    assert_fell_back(call(settings_for("llm", api)), reason)


@pytest.mark.parametrize("provider", ["cohere", "llm"])
def test_non_json_body_falls_back(api: StubRerankAPI, provider: str) -> None:
    api.script(Reply(raw_body="<html>bad gateway</html>"))
    assert_fell_back(call(settings_for(provider, api)), "invalid_response")


def test_unreachable_provider_falls_back(api: StubRerankAPI) -> None:
    settings = settings_for("cohere", api, base_url="http://127.0.0.1:9")
    assert_fell_back(call(settings), "network_error")


def test_closed_gates_never_contact_the_provider(api: StubRerankAPI) -> None:
    settings = settings_for("cohere", api, external_provider_enabled=False)
    response = call(settings)
    assert api.received == []
    assert response.rerank_provider == "local" and response.rerank_fallback is False
    assert response.fallback_reason == "external_provider_blocked"
    assert ids_scores(response) == UNSCORED


def test_request_override_and_unknown_provider(api: StubRerankAPI) -> None:
    response = call(dataclasses.replace(settings_for("llm", api), provider="local"), provider="llm")
    assert response.rerank_provider == "llm"
    with pytest.raises(grpc.RpcError) as caught:
        call(RerankSettings(), provider="bing")
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_oversized_requests_are_invalid_argument() -> None:
    running = serve(RerankSettings())
    try:
        with grpc.insecure_channel(running.address) as channel:
            stub = rerank_pb2_grpc.RerankServiceStub(channel)
            for documents in ([pb.RerankDocument(id=str(i)) for i in range(MAX_DOCUMENTS + 1)],
                              [pb.RerankDocument(id="big", text="x" * (MAX_TEXT_CHARS + 1))]):
                with pytest.raises(grpc.RpcError) as caught:
                    stub.Rerank(pb.RerankRequest(query="q", documents=documents), timeout=10)
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        running.stop(0)


def test_process_refuses_external_provider_without_key(tmp_path: Path) -> None:
    env = dict(os.environ) | {
        "CODECOMPASS_RERANK_PROVIDER": "cohere", "CODECOMPASS_RERANK_EXTERNAL_PROVIDER_ENABLED": "1",
        "CODECOMPASS_RERANK_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "1", "CODECOMPASS_RERANK_API_KEY": "",
        "RERANK_PORT": "0", "CODECOMPASS_CONFIG": "", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "codecompass.rerank"], env=env, capture_output=True, text=True,
                          check=False,
                          timeout=30)
    assert done.returncode == 2
    assert "CODECOMPASS_RERANK_API_KEY" in done.stderr and "LISTENING" not in done.stdout


def test_process_serves_health_and_drains_on_sigterm(start_python_service) -> None:
    process, address = start_python_service("codecompass.rerank", {"CODECOMPASS_RERANK_PROVIDER": "local"})
    with grpc.insecure_channel(address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", SERVICE_NAME):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            assert status == health_pb2.HealthCheckResponse.SERVING
        response = rerank_pb2_grpc.RerankServiceStub(channel).Rerank(
            pb.RerankRequest(query="q", documents=[pb.RerankDocument(id="a", text="x", first_stage_score=0.5)]),
            timeout=5)
        assert response.rerank_provider == "local" and ids_scores(response) == [("a", None)]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0
