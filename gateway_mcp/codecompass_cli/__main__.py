"""`codecompass` (and `python -m codecompass_cli`): the entry point.

`codecompass mcp` over stdio takes the wire before anything else loads, so that the client's
handshake is answered within milliseconds (`codecompass_gateway.handshake`); every other command
goes straight to the CLI (`cli`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if serves_mcp_over_stdio(args):
        from codecompass_gateway.handshake import Front

        Front.take_stdio()
    from codecompass_cli.cli import main as cli_main

    return cli_main(args)


def serves_mcp_over_stdio(args: Sequence[str]) -> bool:
    """Whether `args` run the MCP server over stdio, judged before the parser (which loads the whole
    CLI) has run: `mcp` first, stdio transport (the default), no help wanted. A command line that
    reads otherwise runs as before, the front taken later by the command itself, if at all."""
    if not args or args[0] != "mcp" or any(arg in ("-h", "--help") for arg in args):
        return False
    transport = "stdio"
    for i, arg in enumerate(args):
        if arg == "--transport" and i + 1 < len(args):
            transport = args[i + 1]
        elif arg.startswith("--transport="):
            transport = arg.split("=", 1)[1]
    return transport == "stdio"


if __name__ == "__main__":
    sys.exit(main())
