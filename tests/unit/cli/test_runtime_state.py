"""runtime.json handling and where clients look for services."""

from __future__ import annotations

import json
from pathlib import Path

from codecompass_cli.runtime import (
    Locator,
    RuntimeState,
    ServiceState,
    read_state,
    remove_state,
    service_address,
    service_rows,
    state_path,
    write_state,
)

from codecompass.common.config import settings_from


def _settings(tmp_path: Path, **env: str):
    return settings_from({"CODECOMPASS_STATE_DIR": str(tmp_path / "state"), **env})


def test_state_round_trips_through_the_file(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    state = RuntimeState(started_at="2026-01-01T00:00:00+00:00", workspace="/ws", services={
        "analysis": ServiceState("analysis", 4242, "127.0.0.1:5000", "/logs/analysis.log", ["node", "main.js"],
                                 "2026-01-01T00:00:00+00:00")})
    write_state(settings, state)
    assert read_state(settings) == state
    remove_state(settings)
    assert read_state(settings) is None


def test_a_corrupt_state_file_reads_as_an_empty_runtime(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    state_path(settings).parent.mkdir(parents=True)
    state_path(settings).write_text("{not json")
    assert read_state(settings) == RuntimeState(started_at="", workspace=None, services={})


def test_a_configured_address_wins_over_the_local_runtime(tmp_path: Path) -> None:
    # Addresses come from configuration: a service run elsewhere is found whatever runtime the
    # state dir (one per checkout by default) records. An address left unset follows `up`.
    settings = _settings(tmp_path, ANALYSIS_ADDR="10.0.0.5:7000")
    assert settings.configured_addrs == {"analysis"}
    write_state(settings, RuntimeState(started_at="t", workspace=None, services={
        name: ServiceState(name, 1, f"127.0.0.1:4100{n}", "l", ["node", "x"], "t")
        for n, name in enumerate(("analysis", "retrieval"))}))
    assert service_address(settings, "analysis") == "10.0.0.5:7000"
    assert Locator(settings)("analysis") == "10.0.0.5:7000"
    assert service_address(settings, "retrieval") == "127.0.0.1:41001"
    assert service_address(settings, "selection") == "127.0.0.1:50055"
    from_file = settings_from({"CODECOMPASS_STATE_DIR": str(tmp_path / "state")}, {"retrieval_addr": "search:50053"})
    assert service_address(from_file, "retrieval") == "search:50053"


def test_a_recorded_pid_that_is_gone_shows_as_dead(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    # Pid 2**22 + 1 is above Linux's pid_max, so it can never be alive.
    write_state(settings, RuntimeState(started_at="t", workspace=None, services={
        "analysis": ServiceState("analysis", 2**22 + 1, "127.0.0.1:1", "l", ["node", "x"], "t")}))
    rows = {row["name"]: row for row in service_rows(settings)}
    assert rows["analysis"]["state"] == "dead" and rows["analysis"]["health"] is None
    assert rows["retrieval"]["state"] == "not started"
    # The local reranker runs inside retrieval: no rerank service to start, and `status` says why.
    assert rows["rerank"]["state"] == "not needed" and "runs inside retrieval" in rows["rerank"]["reason"]


def test_config_command_redacts_the_key_and_lists_variables(run_cli, monkeypatch) -> None:
    monkeypatch.setenv("CODECOMPASS_EMBEDDING_API_KEY", "vk-abcdefghijkl")
    shown = run_cli("config")
    assert shown.code == 0 and "vk-abcdefghijkl" not in shown.out
    assert json.loads(shown.out)["embedding"]["api_key"] == "***"
    listed = run_cli("config", "--variables")
    assert "CODECOMPASS_EMBEDDING_API_KEY" in listed.out and "(env only)" in listed.out


def test_the_writer_s_old_variable_still_works_with_one_json_warning(run_cli, monkeypatch) -> None:
    monkeypatch.setenv("INDEXER_ADDR", "indexer:50053")
    shown = run_cli("config")
    assert shown.code == 0 and json.loads(shown.out)["writer_addr"] == "indexer:50053"
    # Logging is set up before the settings load: the warning is the CLI's one JSON line on stderr.
    [line] = shown.err.splitlines()
    warning = json.loads(line)
    assert warning["level"] == "WARNING" and "INDEXER_ADDR" in warning["msg"] and "WRITER_ADDR" in warning["msg"]


def test_a_bad_setting_stops_the_cli_with_the_variable_name(run_cli, monkeypatch) -> None:
    monkeypatch.setenv("CODECOMPASS_RPC_TIMEOUT_S", "soon")
    result = run_cli("status")
    assert result.code == 2
    assert result.err == "codecompass: configuration error: CODECOMPASS_RPC_TIMEOUT_S: expected a number, got 'soon'\n"
