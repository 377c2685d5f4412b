"""The entry point takes the stdio wire early only for a command line that plainly runs the MCP
server over stdio; every other one reaches the CLI's parser untouched."""

from __future__ import annotations

import pytest
from codecompass_cli.__main__ import serves_mcp_over_stdio


@pytest.mark.parametrize(("args", "expected"), [
    (["mcp"], True),
    (["mcp", "--workspace", "/repo"], True),
    (["mcp", "--workspace", "/repo", "--transport", "stdio"], True),
    (["mcp", "--transport=stdio"], True),
    (["mcp", "--transport", "streamable-http", "--port", "8765"], False),
    (["mcp", "--transport=streamable-http"], False),
    (["mcp", "--help"], False),  # help is printed on stdout: the wire must stay where it is
    (["mcp", "-h"], False),
    (["search", "mcp"], False),
    ([], False),
])
def test_only_an_mcp_server_over_stdio_takes_the_wire_early(args: list[str], expected: bool) -> None:
    assert serves_mcp_over_stdio(args) is expected


@pytest.mark.parametrize(("argv", "served"), [(["mcp"], 9464), (["status"], None)])
def test_a_gateway_started_by_the_cli_serves_its_metrics_port(monkeypatch: pytest.MonkeyPatch, tmp_path,
                                                               argv: list[str], served: int | None) -> None:
    # `codecompass mcp` is how agents start the gateway: its GATEWAY_METRICS_PORT was read only by
    # `python -m codecompass_gateway`, so the usual gateway served no metrics endpoint.
    from codecompass_cli import cli

    started: dict[str, object] = {}
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(tmp_path))
    (tmp_path / "config.yaml").write_text("")
    monkeypatch.setenv("CODECOMPASS_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("GATEWAY_METRICS_PORT", "9464")
    monkeypatch.setattr(cli, "init_telemetry", lambda service, **options: started.update(service=service, **options))
    monkeypatch.setattr(cli.commands, "dispatch", lambda args, settings: 0)
    assert cli.main(argv) == 0
    assert started["metrics_port"] == served
