"""TLS and mutual TLS from files (issue 31 §4), on real service processes (rerank, and the Node analysis
service) with a CA made at test time (tests/fixtures/certificates.py): a client that trusts the CA is
answered, one that dials plaintext or trusts another CA is not; with a client CA, a client without a
certificate is refused and one with a certificate the CA signed is answered. The clients and the
health check dial from the same settings as the services listen by."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from tests.fixtures.certificates import SERVER_NAME, Certificates, make_certificates

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.clients.rerank import RerankClient
from codecompass.common.config import load_settings
from codecompass.contracts.analysis.model import TraceQuery
from codecompass.contracts.rerank.model import Candidate, RerankQuery

QUERY = RerankQuery("q", (Candidate("a", "text"),))


@pytest.fixture
def certificates(tmp_path: Path) -> Certificates:
    return make_certificates(tmp_path / "pki")


def _tls(monkeypatch: pytest.MonkeyPatch, certificates: Certificates, *, mutual: bool = False) -> None:
    """Both ends' settings, as one deployment sets them: the services read them from the environment
    they inherit, this test's clients from the same one."""
    settings = {"CODECOMPASS_GRPC_TLS_CERT_FILE": certificates.server_cert,
                "CODECOMPASS_GRPC_TLS_KEY_FILE": certificates.server_key,
                "CODECOMPASS_GRPC_TLS_CA_FILE": certificates.ca,
                "CODECOMPASS_GRPC_TLS_SERVER_NAME": SERVER_NAME}
    if mutual:
        settings |= {"CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE": certificates.ca,
                     "CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE": certificates.client_cert,
                     "CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE": certificates.client_key}
    for name, value in settings.items():
        monkeypatch.setenv(name, str(value))


def _as_another_client(monkeypatch: pytest.MonkeyPatch, **env: str | None) -> None:
    """This process's client settings changed (a second process, in effect)."""
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    load_settings.cache_clear()


def _rerank_fails(address: str) -> ServiceError:
    client = RerankClient(address)
    try:
        with pytest.raises(ServiceError) as failed:
            client.rerank(QUERY, timeout_s=5)
    finally:
        client.close()
    return failed.value


def test_a_tls_service_answers_clients_that_trust_its_ca_only(start_python_service, tmp_path: Path,
                                                              certificates: Certificates,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _tls(monkeypatch, certificates)
    _, address = start_python_service("codecompass.rerank")
    client = RerankClient(address)
    try:
        assert client.rerank(QUERY, timeout_s=10).provider == "local"
    finally:
        client.close()
    # The container health check, a process of its own, dials TLS from the same settings.
    probe = subprocess.run([sys.executable, "-m", "codecompass.common.probe", address], capture_output=True,
                           text=True, timeout=30, check=False)
    assert (probe.returncode, probe.stderr) == (0, "")

    _as_another_client(monkeypatch, CODECOMPASS_GRPC_TLS_CA_FILE=None, CODECOMPASS_GRPC_TLS_SERVER_NAME=None)
    assert _rerank_fails(address).kind == UNAVAILABLE  # plaintext to a TLS port: no connection
    other = make_certificates(tmp_path / "other-pki", ca_name="Another CA")
    _as_another_client(monkeypatch, CODECOMPASS_GRPC_TLS_CA_FILE=str(other.ca),
                       CODECOMPASS_GRPC_TLS_SERVER_NAME=SERVER_NAME)
    assert _rerank_fails(address).kind == UNAVAILABLE  # a certificate this client cannot trust
    log = next(tmp_path.glob("rerank-*.log")).read_text()
    assert '"tls": "tls"' in log


def test_a_mutual_tls_service_refuses_a_client_without_a_certificate(start_python_service, tmp_path: Path,
                                                                     certificates: Certificates,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _tls(monkeypatch, certificates, mutual=True)
    _, address = start_python_service("codecompass.rerank")
    client = RerankClient(address)
    try:
        assert client.rerank(QUERY, timeout_s=10).provider == "local"
    finally:
        client.close()
    _as_another_client(monkeypatch, CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE=None,
                       CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE=None)
    assert _rerank_fails(address).kind == UNAVAILABLE
    assert '"tls": "mtls"' in next(tmp_path.glob("rerank-*.log")).read_text()


def test_the_node_service_serves_tls_and_mutual_tls_from_the_same_settings(start_analysis_service, tmp_path: Path,
                                                                           certificates: Certificates,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _tls(monkeypatch, certificates, mutual=True)
    _, address = start_analysis_service()
    (tmp_path / "a.ts").write_text("export function a(): number { return 1; }\n")
    query = TraceQuery(str(tmp_path), "a", "callers")
    client = AnalysisClient(address)
    try:
        assert client.trace(query, timeout_s=30) is not None
    finally:
        client.close()
    _as_another_client(monkeypatch, CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE=None,
                       CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE=None)
    client = AnalysisClient(address)
    try:
        with pytest.raises(ServiceError) as refused:
            client.trace(query, timeout_s=5)
    finally:
        client.close()
    assert refused.value.kind == UNAVAILABLE
    with grpc.insecure_channel(address) as plaintext, pytest.raises(grpc.RpcError) as failed:
        plaintext.unary_unary("/codecompass.v1.CodeAnalysisService/Trace")(b"", timeout=5)
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
