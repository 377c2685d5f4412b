"""Who calls whom: the CLI calls the gateway, the gateway calls the services, never back.

The three packages ship in two distributions (py_services: `codecompass`; gateway_mcp:
`codecompass_gateway` and `codecompass_cli`). An import against the arrow would be a cycle
between distributions that no pyproject declares, so it is checked here by reading the source
(every import statement and every `importlib.import_module("...")`), not by importing it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES = REPO_ROOT / "py_services" / "codecompass"
GATEWAY = REPO_ROOT / "gateway_mcp" / "codecompass_gateway"
CLI = REPO_ROOT / "gateway_mcp" / "codecompass_cli"
BENCH = REPO_ROOT / "bench"
CLIENTS = SERVICES / "clients"
# Speaks the analysis service's wire on purpose: it validates and times the messages themselves.
WIRE_BENCHMARK = BENCH / "chunk_bench.py"


def imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in {"import_module", "__import__"}):
            yield node.lineno, node.args[0].value


def imports_of(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    """'file:line imports module' for every import in `package` of a module under `forbidden`."""
    found = []
    for source in sorted(package.rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for line, module in imported_modules(tree):
            if module.split(".")[0] in forbidden:
                found.append(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}")
    return found


def test_the_services_never_import_the_gateway_or_the_cli() -> None:
    assert imports_of(SERVICES, ("codecompass_gateway", "codecompass_cli")) == []


def test_the_gateway_never_imports_the_cli() -> None:
    assert imports_of(GATEWAY, ("codecompass_cli",)) == []


def test_the_cli_reaches_the_services_through_the_gateway_package_it_depends_on() -> None:
    # The arrow is real (not a package that merely sits beside the gateway): the CLI answers
    # through the gateway's pipeline, and the gateway through the services' clients.
    assert any("codecompass_gateway.pipeline" in row for row in imports_of(CLI, ("codecompass_gateway",)))
    assert any("codecompass.clients" in row for row in imports_of(GATEWAY, ("codecompass",)))


def test_only_the_client_package_and_the_servicers_speak_through_generated_stubs() -> None:
    # STYLE habit 15: one typed client per service, used by the gateway, the CLI, the services and
    # the benchmarks. A servicer implements its stub's base class; nothing else opens a stub of ours.
    speakers = []
    for package in (SERVICES, GATEWAY, CLI, BENCH):
        for source in sorted(package.rglob("*.py")):
            if source.is_relative_to(SERVICES / "v1") or source.is_relative_to(CLIENTS) or source == WIRE_BENCHMARK:
                continue
            if source.name == "servicer.py" and source.parent.parent == SERVICES:
                continue
            tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
            speakers.extend(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}"
                            for line, module in imported_modules(tree)
                            if module.startswith("codecompass.v1") and module.endswith("_pb2_grpc"))
            speakers.extend(f"{source.relative_to(REPO_ROOT)}:{node.lineno} imports codecompass.v1.{alias.name}"
                            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                            and node.module == "codecompass.v1"
                            for alias in node.names if alias.name.endswith("_pb2_grpc"))
    assert speakers == []


def test_the_check_sees_every_kind_of_import() -> None:
    tree = ast.parse("import codecompass_cli.x\nfrom codecompass_cli import y\n"
                     "importlib.import_module('codecompass_cli.z')\nfrom . import w\n")
    assert [module for _, module in imported_modules(tree)] == ["codecompass_cli.x", "codecompass_cli",
                                                                "codecompass_cli.z"]
