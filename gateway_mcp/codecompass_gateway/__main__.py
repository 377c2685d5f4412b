"""`python -m codecompass_gateway --workspace PATH`: the MCP server over services that already run.

The services' addresses come from the settings (RETRIEVAL_ADDR, RERANK_ADDR, SELECTION_ADDR,
ANALYSIS_ADDR, or the config file); `codecompass mcp` finds or starts the local services first.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from codecompass.clients.channel import Locate
from codecompass.common.config import ConfigError, Settings, load_settings
from codecompass.common.logging import configure_logging
from codecompass.common.telemetry import flush_telemetry, init_telemetry

SERVICE_NAME = "codecompass-gateway"
EXIT_USAGE = 2


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's options, shared with `codecompass mcp`."""
    parser.add_argument("--workspace", required=True, help="the workspace the tools answer about by default")
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                        help="stdio (default; for VS Code, Claude Code) or streamable-http (remote use)")
    parser.add_argument("--host", default="127.0.0.1", help="streamable-http: address to listen on")
    parser.add_argument("--port", type=_port, default=8765,
                        help="streamable-http: port to listen on (default 8765)")


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


def workspace_root(text: str) -> Path:
    """The --workspace folder, absolute; ValueError with the reason when it is not usable."""
    path = Path(text).expanduser().resolve()
    if not path.is_dir():
        raise ValueError(f"--workspace {text!r}: not an existing folder")
    return path


def run(args: argparse.Namespace, settings: Settings, locate: Locate | None = None) -> int:
    """Serve until the transport ends; `locate` finds the services at each call (else: the
    settings' addresses)."""
    from codecompass_gateway.server import ListenError, serve  # the SDK loads only when a server runs

    try:
        workspace = workspace_root(args.workspace)
    except ValueError as exc:
        print(f"codecompass-gateway: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        serve(settings, workspace, args.transport, args.host, args.port, locate)
    except ListenError as exc:
        print(f"codecompass-gateway: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codecompass_gateway", description=__doc__)
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"codecompass-gateway: configuration error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # stdout is the protocol in stdio mode: logs go to stderr, as JSON lines.
    configure_logging(SERVICE_NAME)
    init_telemetry(SERVICE_NAME)
    try:
        return run(args, settings)
    except KeyboardInterrupt:
        return 130
    finally:
        flush_telemetry()


if __name__ == "__main__":
    sys.exit(main())
