"""The bind host setting, the host helpers, and the one name of each service."""

from __future__ import annotations

from pathlib import Path

import pytest
from codecompass_cli.runtime import _child_env
from codecompass_cli.services import SERVICES, SERVICES_BY_NAME

from codecompass.common import names
from codecompass.common.config import ConfigError, documented_settings, read_config_file, settings_from
from codecompass.common.hosts import dialable, host_port


def test_servers_listen_on_loopback_unless_told_otherwise() -> None:
    assert settings_from({}).bind_host == "127.0.0.1"


@pytest.mark.parametrize(("value", "host"), [
    ("0.0.0.0", "0.0.0.0"), (" 10.1.2.3 ", "10.1.2.3"), ("::", "::"), ("[::1]", "::1"), ("::0", "::"),
    ("localhost", "localhost"), ("retrieval.codecompass.svc.cluster.local", "retrieval.codecompass.svc.cluster.local"),
])
def test_the_bind_host_takes_addresses_and_host_names(value: str, host: str) -> None:
    assert settings_from({"CODECOMPASS_BIND_HOST": value}).bind_host == host


@pytest.mark.parametrize("value", ["127.0.0.1:50051", "http://0.0.0.0", "", " ", "999.1.1.1", "two words", "-host"])
def test_a_bind_host_that_is_no_host_names_the_variable_in_one_line(value: str) -> None:
    with pytest.raises(ConfigError) as error:
        settings_from({"CODECOMPASS_BIND_HOST": value})
    assert str(error.value) == ("CODECOMPASS_BIND_HOST: expected an IP address or host name to listen on "
                                f"(e.g. 127.0.0.1, 0.0.0.0, ::), got {value!r}")


def test_the_config_file_sets_the_bind_host_and_the_variable_wins(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("bind_host: 0.0.0.0\n")
    assert settings_from({}, read_config_file(config)).bind_host == "0.0.0.0"
    assert settings_from({"CODECOMPASS_BIND_HOST": "::"}, read_config_file(config)).bind_host == "::"
    config.write_text("bind_host: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"^config key bind_host: expected a string, got list$"):
        settings_from({}, read_config_file(config))


def test_up_hands_the_bind_host_to_every_service_it_starts(tmp_path: Path) -> None:
    # The Node service reads the environment only: a bind_host from the file must reach it too.
    config = tmp_path / "config.yaml"
    config.write_text("bind_host: 0.0.0.0\n")
    settings = settings_from({"CODECOMPASS_STATE_DIR": str(tmp_path / "state")}, read_config_file(config))
    addresses = {names.ANALYSIS: "127.0.0.1:6001", names.EMBEDDING: "127.0.0.1:6002"}
    env = _child_env(settings, SERVICES_BY_NAME[names.RETRIEVAL], addresses, 0)
    assert env["CODECOMPASS_BIND_HOST"] == "0.0.0.0"
    assert (env["RETRIEVAL_PORT"], env["ANALYSIS_ADDR"], env["EMBEDDING_ADDR"]) == ("0", *addresses.values())


def test_host_port_and_where_a_client_dials() -> None:
    assert host_port("::1", 5) == "[::1]:5" and host_port("[::1]", 5) == "[::1]:5"
    assert host_port("0.0.0.0", 5) == "0.0.0.0:5"
    assert dialable("0.0.0.0:5") == "127.0.0.1:5" and dialable("[::]:5") == "[::1]:5"
    assert dialable("10.0.0.7:5") == "10.0.0.7:5" and dialable("[::1]:5") == "[::1]:5"


def test_every_place_that_names_a_service_uses_its_one_name() -> None:
    # Process names of `up` and `status` (and runtime.json's keys), their order included.
    assert tuple(svc.name for svc in SERVICES) == names.BACKENDS
    assert [svc.port_env for svc in SERVICES] == [f"{name.upper()}_PORT" for name in names.BACKENDS]
    # The variables of each service's address and port are named after it, and documented.
    documented = {env for env, _, _ in documented_settings()}
    assert {names.addr_env(name) for name in names.BACKENDS} | {names.port_env(name) for name in names.BACKENDS} \
        <= documented
    settings = settings_from({})
    assert all(getattr(settings, f"{name}_addr") and getattr(settings, f"{name}_port") for name in names.BACKENDS)
