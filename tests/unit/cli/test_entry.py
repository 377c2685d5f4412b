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
