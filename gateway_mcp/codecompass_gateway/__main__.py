"""`python -m codecompass_gateway [--workspace PATH]`: the MCP server over services that already run.

The services' addresses come from the settings (RETRIEVAL_ADDR, RERANK_ADDR, SELECTION_ADDR,
ANALYSIS_ADDR, or the config file); `codecompass mcp` finds or starts the local services first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from codecompass.common import hosts, names
from codecompass.common.config import BIND_HOST_ENV, ConfigError, Settings, load_settings
from codecompass.common.logging import configure_logging
from codecompass.common.telemetry import flush_telemetry, init_telemetry
from codecompass_gateway.handshake import Front
from codecompass_gateway.readiness import Readiness
from codecompass_gateway.remote import ServerPlan, exposure

if TYPE_CHECKING:
    from codecompass.clients.channel import Locate

EXIT_USAGE = 2


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's options, shared with `codecompass mcp`."""
    parser.add_argument("--workspace", action="append",
                        help="a workspace the tools answer about; repeat it to serve several (the first is the "
                             "default, each is indexed at start); without it, the gateway.workspaces setting "
                             "(CODECOMPASS_GATEWAY_WORKSPACES)")
    parser.add_argument("--allow-root", action="append", default=[], metavar="FOLDER",
                        help="a folder under which a tool call may name any workspace (also gateway.allowed_roots); "
                             "calls may name no folder outside these and the --workspace folders")
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                        help="stdio (default; for VS Code, Claude Code) or streamable-http (remote use)")
    parser.add_argument("--host", type=_host,
                        help="streamable-http: address to listen on (default: CODECOMPASS_BIND_HOST, else "
                             "127.0.0.1; beyond loopback it needs a bearer token: CODECOMPASS_GATEWAY_AUTH_TOKEN)")
    parser.add_argument("--port", type=_port, default=8765,
                        help="streamable-http: port to listen on (default 8765)")


def _host(text: str) -> str:
    try:
        return hosts.bind_host(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    # Not 0 ("any free port"): an MCP client is configured with the server's URL, so a port
    # nobody knows in advance serves no one.
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 1 to 65535, got {text!r}")
    return value


def _folder(option: str, text: str) -> Path:
    """A folder option, absolute and resolved; ValueError with the reason when it is not one."""
    path = Path(text).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(f"{option} {text!r}: not an existing folder")
    return path


def server_plan(args: argparse.Namespace, settings: Settings) -> ServerPlan:
    """What to serve; ValueError (RemoteRefused among them) with the one line that says why not.
    Checked before anything starts (`codecompass mcp` checks it before starting the services)."""
    if args.workspace:
        workspaces = tuple(dict.fromkeys(_folder("--workspace", text) for text in args.workspace))
    elif settings.gateway.workspaces:
        # Parsed absolute by the settings; a folder missing is told as the setting that names it.
        workspaces = tuple(dict.fromkeys(_folder("CODECOMPASS_GATEWAY_WORKSPACES", str(folder))
                                         for folder in settings.gateway.workspaces))
    else:
        raise ValueError("no workspace to serve: give --workspace FOLDER, or set CODECOMPASS_GATEWAY_WORKSPACES "
                         "(gateway.workspaces) to the folders to serve")
    roots = tuple(dict.fromkeys((*(_folder("--allow-root", text) for text in args.allow_root),
                                 *settings.gateway.allowed_roots)))
    exposed = None
    if args.transport == "streamable-http":
        if args.host is not None:
            exposed = exposure(args.host, args.port, settings.gateway)
        else:
            exposed = exposure(settings.bind_host, args.port, settings.gateway, host_from=BIND_HOST_ENV)
    return ServerPlan(workspaces=workspaces, allowed_roots=roots, transport=args.transport, exposure=exposed)


def run(args: argparse.Namespace, settings: Settings, locate: Locate | None = None,
        ready: Readiness | None = None, front: Front | None = None) -> int:
    """Serve until the transport ends; `locate` finds the services at each call (else: the
    settings' addresses); `ready`, when the services start behind the server; `front`, the stdio
    handshake's, taken before the server loaded."""
    from codecompass_gateway.server import ListenError, serve  # the SDK loads only when a server runs

    try:
        plan = server_plan(args, settings)
    except ValueError as exc:
        print(f"{names.GATEWAY}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        serve(settings, plan, locate, ready, front)
    except ListenError as exc:
        print(f"{names.GATEWAY}: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codecompass_gateway", description=__doc__)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    # Over stdio the client's handshake is answered from the first moment (`handshake`).
    front = Front.take_stdio() if args.transport == "stdio" else None
    try:
        # stdout is the protocol in stdio mode: logs go to stderr, as JSON lines, set up before the
        # settings load so that what loading logs (a renamed variable's warning) is one of them.
        configure_logging(names.GATEWAY)
        settings = load_settings()
    except ConfigError as exc:
        print(f"{names.GATEWAY}: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    init_telemetry(names.GATEWAY, metrics_port=settings.metrics_port(names.GATEWAY), metrics_host=settings.bind_host)
    try:
        return run(args, settings, front=front)
    except KeyboardInterrupt:
        return 130
    finally:
        flush_telemetry()


if __name__ == "__main__":
    sys.exit(main())
