"""The published retry and deadline policy (clients/service_config.json) covers every RPC of the protos
and is what every client's channel is opened with. Its effect on real calls:
tests/integration/test_service_config.py."""

from __future__ import annotations

import json
from typing import Any

import grpc

from codecompass.clients import channel as channel_module
from codecompass.clients.channel import SERVICE_CONFIG_FILE, SERVICE_CONFIG_OPTIONS, ServiceChannel
from codecompass.common.config import Settings
from codecompass.common.transport import ClientTransport
from codecompass.v1 import analysis_pb2, embedding_pb2, rerank_pb2, retrieval_pb2, selection_pb2

CONFIG = json.loads(SERVICE_CONFIG_FILE.read_text(encoding="utf-8"))
# The calls that may run long (indexing, chunking a folder, a sync): the clients give them
# long_rpc_timeout_s, the others rpc_timeout_s or a stage's deadline.
LONG = {"codecompass.v1.CodeAnalysisService/ScanWorkspace", "codecompass.v1.CodeAnalysisService/ChunkFiles",
        "codecompass.v1.RetrievalService/IndexWorkspace", "codecompass.v1.RetrievalService/Sync"}


def _every_rpc() -> set[str]:
    return {f"{service.full_name}/{method.name}"
            for module in (analysis_pb2, embedding_pb2, rerank_pb2, retrieval_pb2, selection_pb2)
            for service in module.DESCRIPTOR.services_by_name.values() for method in service.methods}


def _policy(rpc: str) -> dict[str, Any]:
    """The method config gRPC applies to `rpc`: the one naming the method, else its service's."""
    service, method = rpc.split("/")
    for wanted in ({"service": service, "method": method}, {"service": service}):
        for config in CONFIG["methodConfig"]:
            if wanted in config["name"]:
                return dict(config)
    raise AssertionError(f"{rpc} has no method config")


def _seconds(text: str) -> float:
    assert text.endswith("s")
    return float(text[:-1])


def test_every_rpc_is_retried_on_unavailable_only_within_a_ceiling_above_its_deadline() -> None:
    defaults = Settings(state_dir=SERVICE_CONFIG_FILE)
    for rpc in _every_rpc():
        policy = _policy(rpc)
        retry = policy["retryPolicy"]
        assert retry["retryableStatusCodes"] == ["UNAVAILABLE"], rpc
        assert 2 <= retry["maxAttempts"] <= 5, rpc  # 5: gRPC's own cap
        # The backoffs of every retry together stay well under the gateway's 300 ms freshness
        # budget: a service that is down reads as down (a failed sync), not as a sync still running,
        # and never as DEADLINE_EXCEEDED.
        worst = sum(min(_seconds(retry["initialBackoff"]) * retry["backoffMultiplier"] ** n,
                        _seconds(retry["maxBackoff"])) for n in range(retry["maxAttempts"] - 1))
        assert worst < 0.1, rpc
        # A ceiling for callers that set no deadline; the clients' own deadlines fit under it.
        deadline = defaults.long_rpc_timeout_s if rpc in LONG else defaults.rpc_timeout_s
        assert _seconds(policy["timeout"]) >= deadline, rpc
    assert "retryThrottling" not in CONFIG  # why: clients/channel.py's docstring


def test_every_client_channel_is_opened_with_the_service_config() -> None:
    assert dict(SERVICE_CONFIG_OPTIONS) == {"grpc.service_config": SERVICE_CONFIG_FILE.read_text(encoding="utf-8"),
                                            "grpc.enable_retries": 1,
                                            "grpc.service_config_disable_resolution": 1}
    opened: list[tuple[str, dict[str, Any]]] = []

    class Recording(ClientTransport):
        def channel(self, address: str, options: tuple[tuple[str, Any], ...] = ()) -> grpc.Channel:
            opened.append((address, dict(options)))
            return super().channel(address, options)

    service = ServiceChannel("rerank", "127.0.0.1:9", lambda channel: channel, transport=Recording())
    service.close()
    ((address, options),) = opened
    assert address == "127.0.0.1:9"
    assert options.items() >= dict(channel_module.SERVICE_CONFIG_OPTIONS).items()
    assert options["grpc.lb_policy_name"] == "round_robin"
