"""Who may reach the MCP server over HTTP, decided before it starts (`remote`), and the settings
and options that say so. The requests themselves are tested over real HTTP in
tests/badinput/test_mcp_remote.py."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest
from codecompass_gateway.__main__ import EXIT_USAGE, add_server_arguments, run, server_plan
from codecompass_gateway.remote import AcceptedTokens, RemoteRefused, exposure

from codecompass.common.bearer import read_token_file
from codecompass.common.config import ConfigError, GatewaySettings, read_config_file, redacted, settings_from
from codecompass.common.hosts import is_loopback

TOKEN = "s3cret-token-never-logged"


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.7", False), ("myhost.example", False),
])
def test_only_loopback_addresses_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_loopback_keeps_the_sdk_s_lists_and_adds_the_address_bound() -> None:
    local = exposure("127.0.0.2", 8765, GatewaySettings(allowed_origins=("https://ide.example",)))
    assert local.loopback and local.token is None
    assert local.allowed_hosts == ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.2:*")
    assert local.allowed_origins == ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                                     "http://127.0.0.2:*", "https://ide.example")


def test_beyond_loopback_the_server_needs_a_token_and_host_names() -> None:
    with pytest.raises(RemoteRefused) as refused:
        exposure("192.0.2.7", 8765, GatewaySettings())
    assert str(refused.value) == ("--host 192.0.2.7 listens beyond this machine: set CODECOMPASS_GATEWAY_AUTH_TOKEN "
                                  "(or gateway.auth_token_file) to the bearer token clients must send, or listen "
                                  "on 127.0.0.1")
    with pytest.raises(RemoteRefused, match=r"--host 0.0.0.0 listens on every address: set gateway.allowed_hosts"):
        exposure("0.0.0.0", 8765, GatewaySettings(auth_token=TOKEN))
    one = exposure("192.0.2.7", 8765, GatewaySettings(auth_token=TOKEN))
    assert (one.allowed_hosts, one.allowed_origins, one.token) == (("192.0.2.7:8765",), (), TOKEN)
    every = exposure("0.0.0.0", 8765, GatewaySettings(auth_token=TOKEN, allowed_hosts=("ci.example:8765",)))
    assert every.allowed_hosts == ("ci.example:8765",) and not every.loopback


def test_beyond_loopback_a_short_token_is_refused_in_one_line_and_a_short_new_one_is_not_taken(
        tmp_path: Path) -> None:
    # Issue 29 §5: a one-character token served 0.0.0.0.
    with pytest.raises(RemoteRefused) as refused:
        exposure("192.0.2.7", 8765, GatewaySettings(auth_token="x"))
    assert str(refused.value).startswith("the bearer token from CODECOMPASS_GATEWAY_AUTH_TOKEN is 1 character long: "
                                         "a token must have at least 16 characters")
    assert "x" * 2 not in str(refused.value).split(":", 1)[0]  # the token itself is never in the line
    path = tmp_path / "token"
    path.write_text(f"{TOKEN}\nshort\n")
    with pytest.raises(RemoteRefused, match=f"gateway.auth_token_file {path} is 5 characters long"):
        exposure("192.0.2.7", 8765, GatewaySettings(auth_token_file=path))
    assert exposure("127.0.0.1", 8765, GatewaySettings(auth_token="x")).loopback  # on loopback no token is needed
    # A rotation that writes a short token keeps the tokens the server had.
    path.write_text(f"{TOKEN}\n")
    accepted = AcceptedTokens(exposure("192.0.2.7", 8765, GatewaySettings(auth_token_file=path)))
    path.write_text("short\n")
    assert accepted.accepts(TOKEN.encode()) and not accepted.accepts(b"short")


def test_the_token_file_holds_the_accepted_tokens_and_is_never_shown(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}\n# a comment, not a token\n\nprevious-token-41d9\n")
    remote = exposure("192.0.2.7", 9000, GatewaySettings(auth_token_file=path))
    assert remote.token == TOKEN and TOKEN not in repr(remote) and remote.token_file == path
    assert read_token_file(path, "gateway.auth_token_file") == (TOKEN, "previous-token-41d9")
    accepted = AcceptedTokens(remote)
    assert accepted.accepts(TOKEN.encode()) and accepted.accepts(b"previous-token-41d9")
    assert not accepted.accepts(b"# a comment, not a token") and not accepted.accepts(b"")
    summary = remote.summary((tmp_path,), ())
    assert TOKEN not in str(summary) and summary["auth"] == f"bearer token from {path}"
    assert summary["url"] == "http://192.0.2.7:9000/mcp"
    # The variable wins over the file, and is never read again.
    fixed = exposure("192.0.2.7", 9000, GatewaySettings(auth_token="from-the-environment", auth_token_file=path))
    assert fixed.token_file is None and AcceptedTokens(fixed).accepts(b"from-the-environment")
    path.write_text("\n# only a comment\n")
    with pytest.raises(RemoteRefused, match="it holds no token"):
        exposure("192.0.2.7", 9000, GatewaySettings(auth_token_file=path))
    with pytest.raises(RemoteRefused, match=r"cannot read it \(No such file or directory\)"):
        exposure("192.0.2.7", 9000, GatewaySettings(auth_token_file=tmp_path / "missing"))


def test_the_settings_of_remote_use(tmp_path: Path) -> None:
    settings = settings_from({"CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN,
                              "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": "a.example:8765, b.example:*",
                              "CODECOMPASS_GATEWAY_ALLOWED_ROOTS": "/srv/code:/home/dev/src"},
                             {"gateway.allowed_origins": ["https://ide.example"]})
    gateway = settings.gateway
    assert gateway.allowed_hosts == ("a.example:8765", "b.example:*")
    assert gateway.allowed_roots == (Path("/srv/code"), Path("/home/dev/src"))
    assert gateway.allowed_origins == ("https://ide.example",) and gateway.auth_token == TOKEN
    assert redacted(settings)["gateway"]["auth_token"] == "***" and TOKEN not in repr(settings)
    config = tmp_path / "config.yaml"
    config.write_text(f"gateway:\n  auth_token: {TOKEN}\n")
    with pytest.raises(ConfigError, match="gateway.auth_token is not read from files; set "
                                          "CODECOMPASS_GATEWAY_AUTH_TOKEN"):
        read_config_file(config)
    with pytest.raises(ConfigError, match="CODECOMPASS_GATEWAY_ALLOWED_ROOTS: 'src' is not an absolute path"):
        settings_from({"CODECOMPASS_GATEWAY_ALLOWED_ROOTS": "src"})


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    return parser.parse_args(argv)


def test_the_plan_lists_every_workspace_and_root_once(tmp_path: Path) -> None:
    a, b, root = tmp_path / "a", tmp_path / "b", tmp_path / "root"
    for folder in (a, b, root):
        folder.mkdir()
    settings = settings_from({"CODECOMPASS_GATEWAY_ALLOWED_ROOTS": str(root)})
    plan = server_plan(_args("--workspace", str(a), "--workspace", str(b), "--workspace", str(a), "--allow-root",
                             str(root)), settings)
    assert plan.workspaces == (a, b) and plan.allowed_roots == (root,) and plan.exposure is None
    with pytest.raises(ValueError, match=r"--allow-root '/no/such': not an existing folder"):
        server_plan(_args("--workspace", str(a), "--allow-root", "/no/such"), settings)
    with pytest.raises(RemoteRefused, match="listens beyond this machine"):
        server_plan(_args("--workspace", str(a), "--transport", "streamable-http", "--host", "0.0.0.0"), settings)


def test_without_host_the_server_listens_on_the_bind_host_under_the_same_rules(tmp_path: Path) -> None:
    http = ("--workspace", str(tmp_path), "--transport", "streamable-http")
    assert server_plan(_args(*http), settings_from({})).exposure.host == "127.0.0.1"
    everywhere = settings_from({"CODECOMPASS_BIND_HOST": "0.0.0.0"})
    # The token and Host rules of any bind beyond loopback, the refusal naming the setting.
    with pytest.raises(RemoteRefused) as refused:
        server_plan(_args(*http), everywhere)
    assert str(refused.value).startswith("CODECOMPASS_BIND_HOST 0.0.0.0 listens beyond this machine: set "
                                         "CODECOMPASS_GATEWAY_AUTH_TOKEN")
    allowed = settings_from({"CODECOMPASS_BIND_HOST": "0.0.0.0", "CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN,
                             "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": "gateway:8765"})
    exposed = server_plan(_args(*http), allowed).exposure
    assert (exposed.host, exposed.allowed_hosts, exposed.loopback) == ("0.0.0.0", ("gateway:8765",), False)
    # --host still wins over the setting.
    assert server_plan(_args(*http, "--host", "127.0.0.1"), everywhere).exposure.loopback


def test_a_host_that_is_no_host_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        _args("--workspace", "w", "--host", "127.0.0.1:8765")
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith(
        "argument --host: expected an IP address or host name to listen on (e.g. 127.0.0.1, 0.0.0.0, ::), "
        "got '127.0.0.1:8765'")


def test_without_workspace_the_plan_serves_the_setting_s_folders_the_first_by_default(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for folder in (a, b):
        folder.mkdir()
    settings = settings_from({"CODECOMPASS_GATEWAY_WORKSPACES": f"{a}{os.pathsep}{b}{os.pathsep}{a}"})
    assert server_plan(_args(), settings).workspaces == (a, b)
    # --workspace replaces the setting rather than adding to it.
    assert server_plan(_args("--workspace", str(b)), settings).workspaces == (b,)
    with pytest.raises(ValueError, match=r"^CODECOMPASS_GATEWAY_WORKSPACES '.*/gone': not an existing folder$"):
        server_plan(_args(), settings_from({"CODECOMPASS_GATEWAY_WORKSPACES": str(tmp_path / "gone")}))


def test_without_workspace_or_setting_the_plan_says_what_to_give_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError) as refused:
        server_plan(_args(), settings_from({}))
    assert str(refused.value) == ("no workspace to serve: give --workspace FOLDER, or set "
                                  "CODECOMPASS_GATEWAY_WORKSPACES (gateway.workspaces) to the folders to serve")
    assert run(_args(), settings_from({})) == EXIT_USAGE
    assert capsys.readouterr().err == f"gateway: {refused.value}\n"
