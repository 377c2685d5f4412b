"""The grpc settings (service token, TLS) and what a server and a client make of them
(common/transport.py). Real servers and clients: tests/integration/test_service_auth.py, _tls.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from codecompass_cli.runtime import _child_env
from codecompass_cli.services import SERVICES_BY_NAME

from codecompass.common import names
from codecompass.common.config import (
    ConfigError,
    GrpcSettings,
    load_settings_from_environ,
    read_config_file,
    redacted,
    settings_from,
)
from codecompass.common.transport import TransportRefused, client_transport, server_transport

TOKEN = "unit-test-service-token-4a1b"


def test_beyond_loopback_a_server_needs_a_token_on_loopback_it_may_have_one(tmp_path: Path) -> None:
    with pytest.raises(TransportRefused) as refused:
        server_transport(GrpcSettings(), "192.0.2.7")
    assert str(refused.value) == ("CODECOMPASS_BIND_HOST 192.0.2.7 listens beyond this machine: set "
                                  "CODECOMPASS_GRPC_AUTH_TOKEN or CODECOMPASS_GRPC_AUTH_TOKEN_FILE to the service "
                                  "token clients must send, or listen on 127.0.0.1")
    open_loopback = server_transport(GrpcSettings(), "127.0.0.1")
    assert (open_loopback.tokens, open_loopback.interceptors(), open_loopback.summary()) == (
        None, [], {"tls": "off", "auth": "none"})
    # Set, a token is enforced on loopback too.
    guarded = server_transport(GrpcSettings(auth_token=TOKEN), "127.0.0.1")
    assert len(guarded.interceptors()) == 1 and guarded.tokens.accepts(TOKEN.encode())
    assert guarded.summary() == {"tls": "off", "auth": "service token from CODECOMPASS_GRPC_AUTH_TOKEN"}
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    from_file = server_transport(GrpcSettings(auth_token_file=token_file), "::")
    assert from_file.summary()["auth"] == f"service token from grpc.auth_token_file {token_file}"
    assert TOKEN not in str(from_file.summary())


def test_a_client_sends_the_current_token_read_again_when_its_file_changes(tmp_path: Path) -> None:
    assert client_transport(GrpcSettings()).metadata() == ()
    token_file = tmp_path / "token"
    token_file.write_text(f"{TOKEN}\n")
    client = client_transport(GrpcSettings(auth_token_file=token_file))
    assert client.metadata() == (("authorization", f"Bearer {TOKEN}"),) and client.credentials is None
    token_file.write_text(f"{TOKEN[::-1]}\n{TOKEN}\n")
    assert client.metadata() == (("authorization", f"Bearer {TOKEN[::-1]}"),)


def test_the_settings_come_in_pairs_keep_the_token_out_of_files_and_dumps(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^CODECOMPASS_GRPC_TLS_CERT_FILE \(grpc.tls_cert_file\): needs "
                                          r"CODECOMPASS_GRPC_TLS_KEY_FILE \(grpc.tls_key_file\) too$"):
        settings_from({"CODECOMPASS_GRPC_TLS_CERT_FILE": "/c.pem"})
    with pytest.raises(ConfigError, match=r"^CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE .*needs CODECOMPASS_GRPC_TLS_CA"):
        settings_from({"CODECOMPASS_GRPC_TLS_CLIENT_CERT_FILE": "/c.pem", "CODECOMPASS_GRPC_TLS_CLIENT_KEY_FILE": "/k"})
    with pytest.raises(ConfigError, match="is 5 characters long: a token must have at least 16 characters"):
        settings_from({"CODECOMPASS_GRPC_AUTH_TOKEN": "short"})
    config = tmp_path / "config.yaml"
    config.write_text(f"grpc:\n  auth_token: {TOKEN}\n")
    with pytest.raises(ConfigError, match="grpc.auth_token is not read from files; set CODECOMPASS_GRPC_AUTH_TOKEN"):
        read_config_file(config)
    settings = settings_from({"CODECOMPASS_GRPC_AUTH_TOKEN": TOKEN, "CODECOMPASS_GRPC_TLS_CA_FILE": "/ca.pem"})
    assert TOKEN not in repr(settings) and TOKEN not in str(redacted(settings))
    assert redacted(settings)["grpc"]["tls_ca_file"] == "/ca.pem"


def test_the_files_are_checked_when_the_process_loads_its_settings(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("")
    env = {"CODECOMPASS_CONFIG": str(config), "CODECOMPASS_GRPC_AUTH_TOKEN_FILE": str(tmp_path / "missing")}
    with pytest.raises(ConfigError, match=r"^CODECOMPASS_GRPC_AUTH_TOKEN_FILE \(grpc.auth_token_file\) .*missing: "
                                          r"cannot read it \(No such file or directory\)$"):
        load_settings_from_environ(env)
    not_pem = tmp_path / "ca.txt"
    not_pem.write_text("a CA, honestly")
    with pytest.raises(ConfigError, match=r"^CODECOMPASS_GRPC_TLS_CA_FILE \(grpc.tls_ca_file\) .*: not PEM"):
        load_settings_from_environ({"CODECOMPASS_CONFIG": str(config), "CODECOMPASS_GRPC_TLS_CA_FILE": str(not_pem)})


def test_up_hands_the_grpc_files_of_the_config_file_to_every_service(tmp_path: Path) -> None:
    # The Node service reads the environment only.
    config = tmp_path / "config.yaml"
    config.write_text(f"grpc:\n  auth_token_file: {tmp_path / 'token'}\n  tls_cert_file: /c.pem\n"
                      "  tls_key_file: /k.pem\n")
    settings = settings_from({"CODECOMPASS_STATE_DIR": str(tmp_path / "state")}, read_config_file(config))
    env = _child_env(settings, SERVICES_BY_NAME[names.ANALYSIS], {}, 0)
    assert env["CODECOMPASS_GRPC_AUTH_TOKEN_FILE"] == str(tmp_path / "token")
    assert (env["CODECOMPASS_GRPC_TLS_CERT_FILE"], env["CODECOMPASS_GRPC_TLS_KEY_FILE"]) == ("/c.pem", "/k.pem")
    assert "CODECOMPASS_GRPC_TLS_CA_FILE" not in env
