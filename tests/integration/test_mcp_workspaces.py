"""Several workspaces in one question (issue 30 §2): one MCP server opens two repositories with
different code; a search names one, both or "all", each result says which workspace it came from,
a bad folder in the list is refused in one line, and a workspace the services refuse is one line
of an answer the other still gives. Then the same over gRPC: one Search over two indexes. The real
gateway over stdio, the real services."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from tests.conftest import index_fully
from tests.fixtures.gateway import gateway_stdio_params

from codecompass.clients.errors import INVALID, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery, WorkspaceRef
from codecompass.retrieval.guards import protected_folder

pytestmark = pytest.mark.slow

# The second workspace: billing code, with a retry of its own beside the sample workspace's
# `retryWithBackoff` (src/utils/retry.ts), and a late fee nothing in the sample has.
PAYMENTS = """\
/** Charges a card again after a decline, waiting exponentially longer (backoff) between attempts. */
export async function retryChargeWithBackoff<T>(charge: () => Promise<T>, attempts: number,
                                                baseDelayMs: number): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    try {
      return await charge();
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, baseDelayMs * 2 ** attempt));
    }
  }
  throw lastError;
}
"""
INVOICE = """\
export interface Invoice {
  id: string;
  amountCents: number;
  dueDate: Date;
}

/** The late fee of an overdue invoice: 5% of its amount per week overdue, at most 25%. */
export function lateFeeCents(invoice: Invoice, today: Date): number {
  const weeks = Math.floor((today.getTime() - invoice.dueDate.getTime()) / (7 * 24 * 3600 * 1000));
  return Math.round(invoice.amountCents * Math.min(Math.max(weeks, 0) * 0.05, 0.25));
}
"""
RETRY_QUESTION = "retry an async operation with exponential backoff between attempts"


@pytest.fixture(scope="module")
def billing(indexed_stack: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = (tmp_path_factory.mktemp("billing") / "billing").resolve()
    (root / "src").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": "billing", "private": True}), encoding="utf-8")
    (root / "tsconfig.json").write_text(json.dumps({"compilerOptions": {"strict": True}, "include": ["src"]}),
                                        encoding="utf-8")
    (root / "src" / "payments.ts").write_text(PAYMENTS, encoding="utf-8")
    (root / "src" / "invoice.ts").write_text(INVOICE, encoding="utf-8")
    index_fully(indexed_stack["RETRIEVAL_ADDR"], root)
    return root


def _calls(stack: dict[str, str], workspaces: list[Path], calls: list[tuple[str, dict[str, Any]]],
           *more: str) -> list[CallToolResult]:
    first, *others = workspaces
    options = [arg for other in others for arg in ("--workspace", str(other))]

    async def run() -> list[CallToolResult]:
        async with Client(gateway_stdio_params(stack, str(first), *options, *more), read_timeout_seconds=120) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


def _text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content)


def test_a_question_over_two_workspaces_answers_from_both_each_result_labelled(indexed_stack: dict[str, str],
                                                                               billing: Path) -> None:
    shop = Path(indexed_stack["root"]).resolve()
    ranked, answer, everything, one, bad = _calls(indexed_stack, [shop, billing], [
        ("search_code", {"query": RETRY_QUESTION, "workspace": [str(shop), str(billing)]}),
        ("semantic_search", {"query": RETRY_QUESTION, "workspace": [str(shop), str(billing)]}),
        ("semantic_search", {"query": "late fee of an overdue invoice", "workspace": "all"}),
        ("search_code", {"query": "lateFeeCents", "workspace": str(billing)}),
        ("search_code", {"query": RETRY_QUESTION, "workspace": [str(shop), str(billing / "nope")]}),
    ])

    assert not ranked.is_error, _text(ranked)
    results = ranked.structured_content["results"]
    by_workspace = {r["workspace"] for r in results}
    assert by_workspace == {str(shop), str(billing)}
    names = {(r["workspace"], r["qualified_name"]) for r in results}
    assert (str(shop), "retryWithBackoff") in names and (str(billing), "retryChargeWithBackoff") in names
    text = ranked.content[0].text
    assert "retryChargeWithBackoff  score" in text and f"workspace {billing}" in text and f"workspace {shop}" in text
    assert [w["workspace"] for w in ranked.structured_content["workspaces"]] == [str(shop), str(billing)]
    assert ranked.structured_content["failed"] == []

    assert not answer.is_error, _text(answer)
    kept = answer.structured_content["results"]
    assert {r["workspace"] for r in kept} == {str(shop), str(billing)}
    assert any("retryChargeWithBackoff" in block.text and f"(workspace {billing})" in block.text
               for block in answer.content)
    assert answer.structured_content["metadata"]["workspaces"] == [str(shop), str(billing)]
    assert sum(r["tokens"] for r in kept) <= 8000  # the default budget, shared

    # "all": every folder the server opens; the late fee is only in billing.
    assert not everything.is_error, _text(everything)
    assert everything.structured_content["metadata"]["workspaces"] == [str(shop), str(billing)]
    top = everything.structured_content["results"][0]
    assert (top["workspace"], top["path"]) == (str(billing), "src/invoice.ts")
    # lateFeeCents whole: the symbol itself, or its file's top level expanding it when the children
    # the answer keeps cover the file (selection's merge).
    assert top["qualified_name"] == "lateFeeCents" or top["qualified_name"] == "<module top level>" and \
        len(top["expanded_child_ids"]) >= 1
    first_code = next(block.text for block in everything.content if block.text.startswith("// "))
    assert first_code.startswith("// src/invoice.ts") and "export function lateFeeCents(" in first_code
    # The shop has nothing sure to add: a line says so, and the first line is not a doubt of the whole answer.
    assert not any("No confident match" in block.text for block in everything.content)
    assert any(block.text.startswith(f"{shop}: no confident match here") for block in everything.content)

    # One workspace named: the answer as before (its metadata names it; results carry no label).
    assert not one.is_error and one.structured_content["metadata"]["workspace"] == str(billing)
    assert one.structured_content["results"][0]["qualified_name"] == "lateFeeCents"
    assert "workspace" not in one.structured_content["results"][0]

    # A bad folder in the list is refused as it would be alone: one line, nothing searched.
    assert bad.is_error and len(bad.content) == 1 and "\n" not in bad.content[0].text
    assert bad.content[0].text == f"search_code: workspace {str(billing / 'nope')!r} does not exist [invalid_workspace]"


def test_a_workspace_the_services_refuse_is_one_line_and_the_other_still_answers(indexed_stack: dict[str, str],
                                                                                 billing: Path) -> None:
    # /tmp is a folder the retrieval service refuses to index (a system folder); the gateway lets a
    # call name it because it is an allowed root. Searched beside billing, it fails alone.
    refused = Path("/tmp").resolve()
    assert protected_folder(refused, Path.home()) is not None
    [answer] = _calls(indexed_stack, [billing], [
        ("search_code", {"query": "lateFeeCents", "workspace": [str(billing), str(refused)]}),
    ], "--allow-root", str(refused))
    assert not answer.is_error, _text(answer)
    assert {r["workspace"] for r in answer.structured_content["results"]} == {str(billing)}
    [failed] = answer.structured_content["failed"]
    assert failed["workspace"] == str(refused) and "\n" not in failed["error"]
    lines = [line for line in answer.content[0].text.splitlines() if line.startswith(f"{refused}: not searched: ")]
    assert len(lines) == 1


def test_grpc_search_over_two_workspaces_labels_each_result_with_its_id(indexed_stack: dict[str, str],
                                                                        billing: Path) -> None:
    shop = Path(indexed_stack["root"]).resolve()
    client = RetrievalClient(indexed_stack["RETRIEVAL_ADDR"])
    try:
        shop_id, billing_id = (client.status(str(root), 30).workspace_id for root in (shop, billing))
        outcome = client.search(SearchQuery(workspace_root="", query=RETRY_QUESTION, limit=10,
                                            workspaces=(WorkspaceRef(workspace_root=str(shop)),
                                                        WorkspaceRef(workspace_id=billing_id))), 30)
        assert {r.workspace_id for r in outcome.results} == {shop_id, billing_id}
        named = {(r.workspace_id, r.chunk.qualified_name) for r in outcome.results}
        assert (shop_id, "retryWithBackoff") in named and (billing_id, "retryChargeWithBackoff") in named
        assert [w.workspace_id for w in outcome.workspaces] == [shop_id, billing_id]
        assert len(outcome.results) <= 10

        # One workspace: its results say their id too.
        alone = client.search(SearchQuery(workspace_root=str(billing), query="lateFeeCents", limit=3), 30)
        assert alone.results and {r.workspace_id for r in alone.results} == {billing_id} and not alone.workspaces

        with pytest.raises(ServiceError) as refused:
            client.search(SearchQuery(workspace_root=str(shop), query="x", workspaces=(WorkspaceRef(str(billing)),)),
                          30)
        assert refused.value.kind == INVALID and "not both" in str(refused.value)
    finally:
        client.close()


def test_a_package_only_one_workspace_declares_searches_it_and_says_so_of_the_other(
        indexed_stack: dict[str, str], billing: Path, tmp_path: Path) -> None:
    mono = (tmp_path / "mono").resolve()
    core = mono / "packages" / "core"
    (core / "src").mkdir(parents=True)
    (mono / "package.json").write_text(json.dumps({"name": "mono", "private": True, "workspaces": ["packages/*"]}),
                                       encoding="utf-8")
    (core / "package.json").write_text(json.dumps({"name": "@acme/core"}), encoding="utf-8")
    (core / "src" / "fees.ts").write_text(INVOICE, encoding="utf-8")
    index_fully(indexed_stack["RETRIEVAL_ADDR"], mono)
    [answer] = _calls(indexed_stack, [mono, billing], [
        ("search_code", {"query": "lateFeeCents", "workspace": "all", "package": "@acme/core"}),
    ])
    assert not answer.is_error, _text(answer)
    assert {r["workspace"] for r in answer.structured_content["results"]} == {str(mono)}
    [left_out] = answer.structured_content["failed"]
    assert left_out["workspace"] == str(billing)
    assert any(line.startswith(f"{billing}: not searched: ") for line in answer.content[0].text.splitlines())
