"""Settings: env + YAML parsing, validation messages, secret handling."""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
from pathlib import Path

import pytest

from codecompass.common import names
from codecompass.common.config import (
    CHECKOUT_ROOT,
    ConfigError,
    Settings,
    documented_settings,
    load_settings,
    load_settings_from_environ,
    read_config_file,
    redacted,
    settings_from,
)
from codecompass.common.logging import configure_logging

SECRET = "sk-test-9f8e7d6c5b4a"


def test_defaults_follow_the_documented_layout(tmp_path: Path) -> None:
    settings = settings_from({"HOME": str(tmp_path)})
    # One state folder per user and per checkout: <checkout name>-<hash of its path>.
    assert settings.state_dir.parent == tmp_path / ".local" / "state" / "codecompass"
    assert settings.state_dir.name.startswith(f"{CHECKOUT_ROOT.name}-")
    assert (settings.analysis_addr, settings.embedding_addr, settings.retrieval_addr) == (
        "127.0.0.1:50051", "127.0.0.1:50052", "127.0.0.1:50053")
    assert (settings.analysis_port, settings.embedding_port, settings.retrieval_port) == (50051, 50052, 50053)
    assert settings.shutdown_grace_s == 10 and settings.rpc_timeout_s == 30
    assert settings.embedding.profile == "code-small"
    assert not settings.embedding.external_provider_enabled
    assert not settings.embedding.allow_code_payload_to_external
    assert settings.embedding.api_key is None
    assert settings.retrieval.db_uri is None and settings.retrieval.semantic_ratio == 0.2


def test_environment_values_are_parsed_into_typed_fields(tmp_path: Path) -> None:
    settings = settings_from({
        "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
        "RETRIEVAL_ADDR": "localhost:6000",
        "EMBEDDING_PORT": "0",
        "CODECOMPASS_SHUTDOWN_GRACE_S": "2.5",
        "CODECOMPASS_EMBEDDING_PROFILE": "E5-Small",
        "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "yes",
        "CODECOMPASS_EMBEDDING_DIMENSIONS": "512",
        "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": '{"region": "eu-west-1", "timeout": 30}',
        "CODECOMPASS_RETRIEVAL_CANDIDATE_POOL": "120",
    })
    assert settings.state_dir == tmp_path / "state"
    assert settings.retrieval_addr == "localhost:6000"
    assert settings.embedding_port == 0
    assert settings.shutdown_grace_s == 2.5
    assert settings.embedding.profile == "e5-small"
    assert settings.embedding.external_provider_enabled is True
    assert settings.embedding.dimensions == 512
    assert settings.retrieval.storage_options == {"region": "eu-west-1", "timeout": "30"}
    assert settings.retrieval.candidate_pool == 120


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ANALYSIS_PORT", "http"),
        ("EMBEDDING_PORT", "70000"),
        ("RETRIEVAL_ADDR", "no-port"),
        ("ANALYSIS_ADDR", "host:0"),
        ("CODECOMPASS_RPC_TIMEOUT_S", "0"),
        ("CODECOMPASS_SHUTDOWN_GRACE_S", "-1"),
        ("CODECOMPASS_EMBEDDING_PROFILE", "gpt"),
        ("CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED", "maybe"),
        ("CODECOMPASS_EMBEDDING_BATCH_SIZE", "0"),
        ("CODECOMPASS_RETRIEVAL_SEMANTIC_RATIO", "1.5"),
        ("CODECOMPASS_RETRIEVAL_SEMANTIC_RATIO", "nan"),
        ("CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS", "{not json"),
        ("CODECOMPASS_RETRIEVAL_CANDIDATE_POOL", "0"),
    ],
)
def test_a_bad_value_fails_naming_the_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        settings_from({variable: value})
    assert str(excinfo.value).startswith(f"{variable}:")


def test_yaml_file_sets_values_and_env_wins(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "embedding:\n  profile: voyage\n  batch_size: 16\n"
        "retrieval:\n  semantic_ratio: 0.3\n  storage_options:\n    region: us-east-1\n"
        "rpc_timeout_s: 5\n"
    )
    settings = settings_from({"CODECOMPASS_EMBEDDING_BATCH_SIZE": "8"}, read_config_file(config))
    assert settings.embedding.profile == "voyage"
    assert settings.embedding.batch_size == 8
    assert settings.retrieval.semantic_ratio == 0.3
    assert settings.retrieval.storage_options == {"region": "us-east-1"}
    assert settings.rpc_timeout_s == 5


def test_a_bad_yaml_value_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("retrieval:\n  default_limit: lots\n")
    with pytest.raises(ConfigError, match=r"^config key retrieval\.default_limit:"):
        settings_from({}, read_config_file(config))


def test_unknown_yaml_keys_are_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("embedding:\n  profle: minilm\n")
    with pytest.raises(ConfigError, match="unknown key 'embedding.profle'"):
        read_config_file(config)


def test_an_api_key_in_the_config_file_is_refused_and_pointed_to_the_env_var(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"embedding:\n  api_key: {SECRET}\n")
    with pytest.raises(ConfigError) as excinfo:
        read_config_file(config)
    assert "CODECOMPASS_EMBEDDING_API_KEY" in str(excinfo.value)
    assert SECRET not in str(excinfo.value)


def test_invalid_yaml_is_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("embedding: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        read_config_file(config)


def test_explicit_config_path_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="^CODECOMPASS_CONFIG: no such file"):
        load_settings_from_environ({"CODECOMPASS_CONFIG": str(tmp_path / "missing.yaml")})


def test_default_config_file_is_read_when_present(tmp_path: Path) -> None:
    default = tmp_path / ".config" / "codecompass" / "config.yaml"
    default.parent.mkdir(parents=True)
    default.write_text("retrieval:\n  default_limit: 25\n")
    assert load_settings_from_environ({"HOME": str(tmp_path)}).retrieval.default_limit == 25


def test_openai_compatible_with_open_gates_needs_a_base_url() -> None:
    env = {
        "CODECOMPASS_EMBEDDING_PROFILE": "openai-compatible",
        "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "true",
        "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "true",
    }
    with pytest.raises(ConfigError, match="^CODECOMPASS_EMBEDDING_BASE_URL:"):
        settings_from(env)
    assert settings_from({**env, "CODECOMPASS_EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1"}).embedding.external_allowed


def _renamed_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "codecompass.config" and r.levelno == logging.WARNING]


def test_the_writer_s_old_variable_is_read_with_one_warning_naming_both(caplog: pytest.LogCaptureFixture) -> None:
    # INDEXER_ADDR was renamed WRITER_ADDR (issue 28): deployments written before still work.
    caplog.set_level(logging.WARNING)
    settings = settings_from({"INDEXER_ADDR": "indexer:50053"})
    assert settings.writer_addr == "indexer:50053"
    [warning] = _renamed_warnings(caplog)
    assert "INDEXER_ADDR" in warning and "WRITER_ADDR" in warning and "ignored" not in warning


def test_the_writer_s_new_variable_wins_and_the_old_one_is_said_to_be_ignored(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    settings = settings_from({"WRITER_ADDR": "writer:50053", "INDEXER_ADDR": "indexer:50053"})
    assert settings.writer_addr == "writer:50053"
    [warning] = _renamed_warnings(caplog)
    assert warning == "INDEXER_ADDR was renamed WRITER_ADDR and is ignored: WRITER_ADDR is set; remove INDEXER_ADDR"


def test_the_writer_s_new_variable_alone_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert settings_from({"WRITER_ADDR": "writer:50053"}).writer_addr == "writer:50053"
    assert settings_from({}).writer_addr is None
    assert _renamed_warnings(caplog) == []


def test_a_bad_value_under_the_old_name_fails_naming_it() -> None:
    with pytest.raises(ConfigError, match="^INDEXER_ADDR:"):
        settings_from({"INDEXER_ADDR": "no port"})


def test_the_writer_s_old_config_key_is_read_with_a_warning_and_the_new_one_wins(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    config = tmp_path / "config.yaml"
    config.write_text("indexer_addr: indexer:50053\n")
    assert settings_from({}, read_config_file(config)).writer_addr == "indexer:50053"
    [warning] = _renamed_warnings(caplog)
    assert "config key indexer_addr" in warning and "writer_addr" in warning and "ignored" not in warning
    caplog.clear()
    config.write_text("writer_addr: writer:50053\nindexer_addr: indexer:50053\n")
    assert settings_from({}, read_config_file(config)).writer_addr == "writer:50053"
    [warning] = _renamed_warnings(caplog)
    assert "config key indexer_addr" in warning and "ignored" in warning
    caplog.clear()
    # The environment beats the file, whichever name either uses; the old key still gets its line.
    assert settings_from({"INDEXER_ADDR": "env:1"}, read_config_file(config)).writer_addr == "env:1"
    assert len(_renamed_warnings(caplog)) == 2


def test_the_renamed_variable_s_warning_is_logged_once_per_process(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setenv("INDEXER_ADDR", "indexer:50053")
    assert load_settings().writer_addr == "indexer:50053"
    assert load_settings().writer_addr == "indexer:50053"
    assert len(_renamed_warnings(caplog)) == 1


def test_settings_are_frozen() -> None:
    settings = settings_from({})
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.rpc_timeout_s = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.embedding.profile = "voyage"  # type: ignore[misc]


def test_load_settings_parses_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECOMPASS_RETRIEVAL_DEFAULT_LIMIT", "7")
    first = load_settings()
    monkeypatch.setenv("CODECOMPASS_RETRIEVAL_DEFAULT_LIMIT", "9")
    assert load_settings() is first
    assert first.retrieval.default_limit == 7


def test_the_api_key_never_shows_in_repr_dumps_or_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODECOMPASS_EMBEDDING_API_KEY", SECRET)
    monkeypatch.setenv("CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS", '{"aws_secret_access_key": "AKIAsecretvalue"}')
    settings = load_settings()
    assert settings.embedding.api_key == SECRET

    dump = json.dumps(redacted(settings))
    assert SECRET not in dump and "AKIAsecretvalue" not in dump
    assert json.loads(dump)["embedding"]["api_key"] == "***"
    for text in (repr(settings), str(settings), repr(settings.embedding), repr(settings.retrieval)):
        assert SECRET not in text and "AKIAsecretvalue" not in text

    stream = io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("config-test", stream=stream)
        log = logging.getLogger("config-test")
        log.info("settings %s", settings)
        log.info("loaded", extra={"settings": redacted(settings), "api_key": SECRET})
        try:
            raise RuntimeError(f"provider rejected key {SECRET}")
        except RuntimeError:
            log.exception("embedding failed")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    output = stream.getvalue()
    assert output.count("\n") == 3
    assert SECRET not in output
    assert "provider rejected key ***" in output


def test_every_setting_is_documented_with_its_env_var() -> None:
    rows = documented_settings()
    names = [env for env, _, _ in rows]
    assert len(names) == len(set(names))
    assert all(doc for _, _, doc in rows)
    # Every Settings field (and nested field) has exactly one row.
    nested = {f.name for f in dataclasses.fields(Settings)} - {"embedding", "retrieval", "rerank", "selection",
                                                               "gateway", "grpc"}
    # LOG_LEVEL is env only: a service sets up logging before it reads the settings file.
    nested -= {"log_level"}
    # Not a setting: which of the <svc>_addr settings were given.
    nested -= {"configured_addrs"}
    yaml_keys = {key for _, key, _ in rows if key is not None}
    assert nested <= yaml_keys


def test_the_static_channel_is_on_by_default_and_turned_off_by_its_variable(tmp_path: Path) -> None:
    default = settings_from({}).retrieval
    assert default.static_channel is True and default.static_model_dir is None
    off = settings_from({"CODECOMPASS_RETRIEVAL_STATIC_CHANNEL": "false",
                         "CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR": str(tmp_path)}).retrieval
    assert off.static_channel is False and off.static_model_dir == tmp_path
    with pytest.raises(ConfigError, match="^CODECOMPASS_RETRIEVAL_STATIC_CHANNEL:"):
        settings_from({"CODECOMPASS_RETRIEVAL_STATIC_CHANNEL": "sometimes"})


def test_the_gateway_s_workspaces_are_absolute_folders_from_env_or_file(tmp_path: Path) -> None:
    assert settings_from({}).gateway.workspaces == ()
    env = settings_from({"CODECOMPASS_GATEWAY_WORKSPACES": f"/workspaces/app{os.pathsep} {os.pathsep}/srv/lib"})
    assert env.gateway.workspaces == (Path("/workspaces/app"), Path("/srv/lib"))
    assert redacted(env)["gateway"]["workspaces"] == ["/workspaces/app", "/srv/lib"]
    json.dumps(redacted(env))
    config = tmp_path / "config.yaml"
    config.write_text("gateway:\n  workspaces: [/workspaces/app]\n")
    assert settings_from({}, read_config_file(config)).gateway.workspaces == (Path("/workspaces/app"),)
    with pytest.raises(ConfigError, match="^CODECOMPASS_GATEWAY_WORKSPACES: 'app' is not an absolute path$"):
        settings_from({"CODECOMPASS_GATEWAY_WORKSPACES": "app"})


def test_a_metrics_port_is_per_service_and_none_by_default() -> None:
    default = settings_from({})
    assert [default.metrics_port(service) for service in (*names.BACKENDS, names.GATEWAY)] == [None] * 6
    configured = settings_from({"RETRIEVAL_METRICS_PORT": "9464", "GATEWAY_METRICS_PORT": "0"})
    assert (configured.metrics_port(names.RETRIEVAL), configured.metrics_port(names.GATEWAY)) == (9464, 0)
    assert configured.metrics_port(names.EMBEDDING) is None
    with pytest.raises(ConfigError, match="RETRIEVAL_METRICS_PORT"):
        settings_from({"RETRIEVAL_METRICS_PORT": "70000"})
