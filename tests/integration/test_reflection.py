"""gRPC server reflection (issue 31 §1): every service lists itself and health, and a client with
no compiled stubs (as grpcurl, grpcui and Postman are) builds a request from the descriptors the
server sends and calls the RPC. The `grpc_reflection` setting turns it off."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from tests.conftest import NODE_ENTRY

HEALTH = "grpc.health.v1.Health"
REFLECTION = "grpc.reflection.v1alpha.ServerReflection"


class Reflected:
    """What a stub-less client knows of a server: its descriptors, as reflection sends them, in a
    pool of their own (not the process's default pool, where compiled stubs would register)."""

    def __init__(self, address: str) -> None:
        self.channel = grpc.insecure_channel(address)
        self.database = ProtoReflectionDescriptorDatabase(self.channel)
        self.pool = descriptor_pool.DescriptorPool(self.database)

    def services(self) -> set[str]:
        return set(self.database.get_services())

    def call(self, method: str, fields: dict[str, object], timeout_s: float = 30.0) -> object:
        service_name, method_name = method.rsplit(".", 1)
        descriptor = self.pool.FindServiceByName(service_name).FindMethodByName(method_name)
        request_class = message_factory.GetMessageClass(descriptor.input_type)
        response_class = message_factory.GetMessageClass(descriptor.output_type)
        stub = self.channel.unary_unary(f"/{service_name}/{method_name}",
                                        request_serializer=request_class.SerializeToString,
                                        response_deserializer=response_class.FromString)
        return stub(request_class(**fields), timeout=timeout_s)

    def close(self) -> None:
        self.channel.close()


def _retrieval(start_python_service, tmp_path: Path, **env: str) -> str:
    _, address = start_python_service("codecompass.retrieval", {
        "CODECOMPASS_STATE_DIR": str(tmp_path / "state"), "CODECOMPASS_EMBEDDING_PROFILE": "code-static", **env})
    return address


def test_search_is_listed_and_called_through_reflection_alone(start_python_service, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    reflected = Reflected(_retrieval(start_python_service, tmp_path))
    try:
        assert reflected.services() >= {"codecompass.v1.RetrievalService", HEALTH, REFLECTION}
        search = reflected.pool.FindServiceByName("codecompass.v1.RetrievalService").FindMethodByName("Search")
        # The doc comments travel too: a reader of grpcui sees what a field means.
        assert {f.name for f in search.input_type.fields} >= {"workspace_root", "query", "filters", "limit"}
        answer = reflected.call("codecompass.v1.RetrievalService.Search",
                                {"workspace_root": str(workspace), "query": "validate token"})
        # A folder never indexed: an answer, not an error, that says so.
        assert answer.metadata.indexing_status == search.output_type.fields_by_name["metadata"].message_type \
            .fields_by_name["indexing_status"].enum_type.values_by_name["INDEXING_STATUS_NOT_INDEXED"].number
        health = reflected.call(f"{HEALTH}.Check", {"service": "codecompass.v1.RetrievalService"})
        assert health.status == 1  # SERVING
    finally:
        reflected.close()


def _assert_no_reflection(address: str) -> None:
    reflected = Reflected(address)
    try:
        with pytest.raises(grpc.RpcError) as refused:
            reflected.services()
        assert refused.value.code() is grpc.StatusCode.UNIMPLEMENTED
    finally:
        reflected.close()


def test_the_setting_turns_reflection_off(start_python_service, tmp_path: Path) -> None:
    _assert_no_reflection(_retrieval(start_python_service, tmp_path, CODECOMPASS_GRPC_REFLECTION="false"))


@pytest.mark.parametrize(("module", "service"), [("codecompass.embedding", "codecompass.v1.EmbeddingService"),
                                                 ("codecompass.rerank", "codecompass.v1.RerankService"),
                                                 ("codecompass.selection", "codecompass.v1.SelectionService")])
def test_every_python_service_lists_itself_and_health(start_python_service, tmp_path: Path, module: str,
                                                      service: str) -> None:
    _, address = start_python_service(module, {"CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
                                               "CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    reflected = Reflected(address)
    try:
        assert reflected.services() >= {service, HEALTH, REFLECTION}
    finally:
        reflected.close()


def test_the_analysis_service_lists_itself_and_health_and_answers_through_reflection(
        start_analysis_service, tmp_path: Path) -> None:
    assert NODE_ENTRY.is_file()
    (tmp_path / "a.ts").write_text("export function validateToken(t: string): boolean {\n  return t.length > 0;\n}\n")
    _, address = start_analysis_service()
    reflected = Reflected(address)
    try:
        assert reflected.services() >= {"codecompass.v1.CodeAnalysisService", HEALTH, REFLECTION}
        scan = reflected.call("codecompass.v1.CodeAnalysisService.ScanWorkspace", {"workspace_root": str(tmp_path)})
        assert [f.relative_path for f in scan.files] == ["a.ts"]
    finally:
        reflected.close()


def test_the_analysis_service_s_reflection_is_off_by_the_same_setting(start_analysis_service) -> None:
    _assert_no_reflection(start_analysis_service({"CODECOMPASS_GRPC_REFLECTION": "false"})[1])
