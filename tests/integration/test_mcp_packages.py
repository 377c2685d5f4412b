"""A monorepo's packages as scopes over MCP (issue 30 §2): index_status lists them, a search names
one instead of a path filter, and each result says which package it came from. The real gateway
over stdio, the real services."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from tests.fixtures.gateway import gateway_stdio_params

pytestmark = pytest.mark.slow

CORE = "export function formatPrice(cents: number): string {\n  return `$${(cents / 100).toFixed(2)}`;\n}\n"
WEB = ("export function formatPriceLabel(cents: number, currency: string): string {\n"
       "  return `${currency} ${(cents / 100).toFixed(2)}`;\n}\n")


@pytest.fixture(scope="module")
def monorepo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mono") / "shop"
    for folder, name, source in (("packages/core", "@acme/core", CORE), ("packages/web", "@acme/web", WEB)):
        (root / folder / "src").mkdir(parents=True)
        (root / folder / "package.json").write_text(json.dumps({"name": name}), encoding="utf-8")
        (root / folder / "src" / "price.ts").write_text(source, encoding="utf-8")
    (root / "package.json").write_text(json.dumps({"private": True, "workspaces": ["packages/*"]}), encoding="utf-8")
    return root


def _calls(stack: dict[str, str], root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    async def run() -> list[CallToolResult]:
        async with Client(gateway_stdio_params(stack, str(root)), read_timeout_seconds=120) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


def test_packages_are_listed_named_as_scopes_and_named_beside_results(indexed_stack: dict[str, str],
                                                                      monorepo: Path) -> None:
    web, core, wrong, status = _calls(indexed_stack, monorepo, [
        ("search_code", {"query": "format price", "package": "@acme/web"}),
        ("semantic_search", {"query": "format a price in cents", "package": "packages/core"}),
        ("search_code", {"query": "format price", "package": "@acme/nope"}),
        ("index_status", {}),
    ])
    assert not web.is_error and web.structured_content["results"]
    assert {r["path"] for r in web.structured_content["results"]} == {"packages/web/src/price.ts"}
    assert {r["package"] for r in web.structured_content["results"]} == {"@acme/web"}
    assert "package @acme/web" in web.content[0].text

    assert not core.is_error
    paths = {r["path"] for r in core.structured_content["results"]}
    assert paths == {"packages/core/src/price.ts"}
    assert any("(package @acme/core)" in block.text for block in core.content)

    assert wrong.is_error and len(wrong.content) == 1
    assert wrong.content[0].text == (f"search_code: no package named '@acme/nope' in {monorepo}; its packages: "
                                     "@acme/core, @acme/web [invalid_argument]")

    assert "packages (2; a search's `package` scopes it to one): @acme/core (packages/core), @acme/web " \
           "(packages/web)" in status.content[0].text
    assert status.structured_content["packages"] == [{"name": "@acme/core", "folder": "packages/core"},
                                                     {"name": "@acme/web", "folder": "packages/web"}]
