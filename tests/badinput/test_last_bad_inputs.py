"""Issue 29 §5, end to end through the CLI and an MCP session over this folder's services: an
index listed from its first second, one whose folder vanished during its first pass listed and
collected, shard workers far above the cores, arguments no path can be, `..` in paths, CommonJS
callers, names in other scripts, and the advice to give a name exactly only when it was not."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult
from tests.badinput.harness import TRACEBACK, CliRun, Stack
from tests.fixtures.chain_workspace import write_chain_workspace

from codecompass.common.cores import usable_cores
from codecompass.retrieval.index.writer import MAX_WORKERS_PER_CORE

# Enough files that the first pass takes seconds on two cores, so it can be watched and cut.
FIRST_PASS_FILES = 1_500


def _index_in_background(stack: Stack, root: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(stack.command("index", str(root)), env=stack.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _status_line(stack: Stack, root: Path) -> str | None:
    """The `status` line of `root`'s index, or None while it is not listed."""
    out = stack.cli("status").out
    return next((line.strip() for line in out.splitlines() if line.rstrip().endswith(str(root))
                 or f"{root};" in line), None)


def _finish(process: subprocess.Popen[str]) -> CliRun:
    out, err = process.communicate(timeout=180)
    return Stack.record(CliRun(tuple(process.args[3:]), process.returncode, out, err))  # type: ignore[index]


# One first pass serves both cases: indexing 1,500 files to the end (their embeddings included) would
# cost a minute of the suite and assert nothing more about the first pass.
@pytest.mark.badinput(case="`status` during a workspace's first index, whose folder is then deleted",
                      behaviour="the index is listed (indexing) before its first pass ends; `index` then fails in "
                                "one line; `status` lists the index as failed; `gc` removes it")
def test_an_index_is_listed_from_its_first_second_and_collected_when_its_folder_vanishes(stack: Stack,
                                                                                        tmp_path: Path) -> None:
    root = write_chain_workspace(tmp_path / "vanishing", FIRST_PASS_FILES)
    process = _index_in_background(stack, root)
    first = None
    while first is None and process.poll() is None:
        first = _status_line(stack, root)
    assert first is not None, "the index was listed only once its first pass had ended"
    assert first.startswith("indexing"), first
    shutil.rmtree(root)
    run = _finish(process)
    # Progress lines, then the failure in one line.
    failures = [line for line in run.err_lines if line.startswith("codecompass:")]
    assert run.code == 1 and failures == run.err_lines[-1:] and "not an existing directory" in failures[0], run.err
    listed = _status_line(stack, root)
    assert listed is not None and listed.startswith("failed"), listed
    gc = stack.cli("gc")
    assert gc.code == 0 and any(line.startswith("removed") and str(root) in line for line in gc.out.splitlines())
    assert _status_line(stack, root) is None


@pytest.mark.badinput(case="`index --workers` far above the cores",
                      behaviour="exit 2, one line naming the cores and the most it takes; nothing indexed")
def test_shard_workers_far_above_the_cores_are_refused_in_one_line(stack: Stack, tmp_path: Path) -> None:
    root = write_chain_workspace(tmp_path / "workers", 4)
    most = MAX_WORKERS_PER_CORE * usable_cores()
    if most >= 64:
        pytest.skip(f"{usable_cores()} cores: the CLI's own limit of 64 is lower")
    run = stack.cli("index", "--workers", str(most + 1), str(root))
    assert run.code == 2 and run.err_lines == [
        f"codecompass: retrieval: workers={most + 1} is far more than the {usable_cores()} cores this index writer "
        f"has (its shard workers are processes of its machine); give at most {most}, or run them as an Indexed Job "
        "(retrieval.shard_runner = job)"], run.err
    assert _status_line(stack, root) is None


@pytest.mark.badinput(case="a 100 KB path on the command line",
                      behaviour="exit 2, one line quoting its first 80 characters and its length")
def test_a_path_no_file_system_holds_is_one_line_quoting_a_prefix(stack: Stack) -> None:
    for command in ("index", "search"):
        run = stack.cli(command, "/" + "p" * 100_000, *(["query"] if command == "search" else []))
        assert run.code == 2 and len(run.err_lines) == 1 and len(run.err) < 300, run.err
        assert "(100,001 characters)" in run.err


CJS_MODULE = """// Money helpers.
exports.formatPrice = function (cents) {
  return '$' + (cents / 100).toFixed(2);
};

exports.parsePrice = (text) => Math.round(parseFloat(text.replace('$', '')) * 100);
"""
CJS_CALLER = """const m = require('./m');
const { parsePrice } = require('./m');

function cartTotal(items) {
  return require('./m').formatPrice(items.length);
}

function subtotal(items) {
  return items.length;
}

function cartLabel(item) {
  return m.formatPrice(item.cents) + ' ' + parsePrice('$1.00');
}

module.exports = { cartTotal, cartLabel, subtotal };
"""
I18N = """// Скидки.
export function рассчитатьСкидку(сумма: number, процент: number): number {
  return сумма * (процент / 100);
}

export class 購物車 {
  private 商品: string[] = [];
  加入商品(名稱: string): void {
    this.商品.push(名稱);
  }
}
"""


@pytest.fixture(scope="module")
def answers(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, CallToolResult]:
    """One stdio session over a small workspace of CommonJS and non-Latin names."""
    root = tmp_path_factory.mktemp("mixed")
    (root / "src").mkdir()
    (root / "package.json").write_text('{"name": "mixed"}\n')
    (root / "src" / "m.js").write_text(CJS_MODULE)
    (root / "src" / "cart.js").write_text(CJS_CALLER)
    (root / "src" / "i18n.ts").write_text(I18N)
    assert stack.cli("index", str(root)).code == 0
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "callers formatPrice": ("codebase_trace", {"symbol": "formatPrice", "direction": "callers"}),
        "callers parsePrice": ("codebase_trace", {"symbol": "parsePrice", "direction": "callers"}),
        "search_code cyrillic": ("search_code", {"query": "рассчитатьСкидку"}),
        "semantic cyrillic": ("semantic_search", {"query": "рассчитатьСкидку"}),
        "search_code cjk": ("search_code", {"query": "購物車"}),
        "semantic cjk member": ("semantic_search", {"query": "加入商品"}),
        # One lowercase word: a name or a topic, an unsure reading that comes with advice.
        "exact name": ("search_code", {"query": "subtotal"}),
        "misspelt name": ("search_code", {"query": "subtotl"}),
        "dot-dot path": ("read_symbol", {"symbol": "formatPrice", "path": "src/../src/./m.js"}),
        "dot-dot location": ("codebase_trace", {"symbol": "src/lib/../m.js:2", "direction": "callers"}),
        "leaving path": ("read_symbol", {"symbol": "formatPrice", "path": "../m.js"}),
        "nul symbol": ("read_symbol", {"symbol": "format\x00Price"}),
        "huge symbol": ("codebase_trace", {"symbol": "S" * 1_000_000, "direction": "callers"}),
    }
    env = {**stack.env, **{f"{name.upper()}_ADDR": svc["address"] for name, svc in stack.runtime().items()}}
    params = StdioServerParameters(command=sys.executable, args=["-m", "codecompass_gateway", "--workspace", str(root)],
                                   env=env)
    errlog = (stack.base / "mixed-gateway.err").open("w")

    async def run() -> dict[str, CallToolResult]:
        from mcp.client.stdio import stdio_client

        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            return {key: await client.call_tool(tool, arguments) for key, (tool, arguments) in calls.items()}

    try:
        return anyio.run(run)
    finally:
        errlog.close()
        assert TRACEBACK not in (stack.base / "mixed-gateway.err").read_text()


def _text(result: CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


@pytest.mark.badinput(case="callers of a CommonJS export (`exports.f = function`)",
                      behaviour="trace finds require('./m').f(), m.f() and a destructured f(), by the checker")
def test_trace_finds_the_callers_of_commonjs_exports(answers: dict[str, CallToolResult]) -> None:
    formatted = _text(answers["callers formatPrice"])
    assert "2 found" in formatted and "cartTotal" in formatted and "cartLabel" in formatted, formatted
    assert "by name" not in formatted
    assert "1 found" in _text(answers["callers parsePrice"]) and "cartLabel" in _text(answers["callers parsePrice"])


@pytest.mark.badinput(case="names in Cyrillic and CJK", behaviour="found by search_code and semantic_search")
def test_names_in_other_scripts_are_found_by_both_searches(answers: dict[str, CallToolResult]) -> None:
    ranked = _text(answers["search_code cyrillic"]).splitlines()
    assert any(line.startswith("1. src/i18n.ts") and "рассчитатьСкидку" in line for line in ranked), ranked
    assert _text(answers["semantic cyrillic"]).startswith("// src/i18n.ts > рассчитатьСкидку")
    assert any(line.startswith("1. src/i18n.ts") and "購物車" in line for line in _text(answers["search_code cjk"])
               .splitlines())
    assert _text(answers["semantic cjk member"]).startswith("// src/i18n.ts > 購物車.加入商品")


@pytest.mark.badinput(case="a name query given exactly as declared",
                      behaviour="no advice to give the name exactly; a misspelt one keeps it")
def test_the_advice_to_give_a_name_exactly_only_when_it_was_not(answers: dict[str, CallToolResult]) -> None:
    exact = _text(answers["exact name"])
    assert "give the name exactly" not in exact and "read as the symbol name subtotal" in exact, exact
    assert "give the name exactly" in _text(answers["misspelt name"])


@pytest.mark.badinput(case="`src/../src/x` and `..` in read_symbol and trace paths",
                      behaviour="read within the workspace; one leaving it is refused in one line")
def test_dot_segments_are_read_within_the_workspace(answers: dict[str, CallToolResult]) -> None:
    read = answers["dot-dot path"]
    assert not read.is_error and _text(read).startswith("// src/m.js > formatPrice")
    assert "callers of formatPrice (src/m.js:2-4)" in _text(answers["dot-dot location"])
    leaving = answers["leaving path"]
    assert leaving.is_error and _text(leaving).startswith('read_symbol: path "../m.js" is outside the workspace root')


@pytest.mark.badinput(case="a NUL or a 1 MB symbol in a tool argument",
                      behaviour="one line naming the argument, a prefix quoted, [invalid_argument]")
def test_a_nul_or_a_huge_argument_is_one_line(answers: dict[str, CallToolResult]) -> None:
    for key, said in (("nul symbol", "symbol contains a NUL character (at position 6)"),
                      ("huge symbol", "symbol is 1,000,000 characters long")):
        result = answers[key]
        assert result.is_error and said in _text(result) and len(_text(result)) < 400, _text(result)[:400]

