"""Who calls whom: the CLI calls the gateway, the gateway calls the services, never back.

The three packages ship in three distributions (clients/python: `codecompass-client`, the stubs,
contracts and clients; py_services: `codecompass`, the services; gateway_mcp: `codecompass_gateway`
and `codecompass_cli`). `codecompass` is a namespace package over the first two source roots: the
client distribution imports nothing of the services', and no module lives in both. An import
against the arrow would be a cycle between distributions that no pyproject declares, so it is
checked here by reading the source (every import statement and every
`importlib.import_module("...")`), not by importing it.

Inside `codecompass` the arrows are those of zoekt's `api` + `grpc` split (STYLE habits 15 and 17):
a service's contract (`contracts/<service>/`: the domain types its messages carry and their
converters) is imported by its servicer and by its client; a contract imports no service and no
client; a client imports contracts, never a service; the gateway and the CLI import clients,
contracts, `common` and `policy`, never a service's internals, and run without torch or LanceDB.
`policy` is shared, service-free logic whose types (the query's shape, a ranked result) travel in
retrieval's messages, so contracts may import it; it imports only `common`, so no arrow loops.

Development tooling has its own arrows: the benchmarks (`bench`) and the training pipelines
(`models`) share `codecompass_dev`, a library that imports neither of them; the training code never
imports the benchmarks, and the product never imports the development library.

Inside the retrieval service the same holds for its two sides: `retrieval/search/` (reads)
never imports `retrieval/index/` (writes), and the searcher's store type has no write method."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import get_type_hints

from codecompass.retrieval.catalog import CatalogSummary
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.search.chunk_reader import ChunkReader
from codecompass.retrieval.search.searcher import IndexReader

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVICES = REPO_ROOT / "py_services" / "codecompass"
# The client distribution's part of the `codecompass` namespace (clients/python/pyproject.toml).
CLIENT_ROOT = REPO_ROOT / "clients" / "python" / "src" / "codecompass"
GENERATED = CLIENT_ROOT / "v1"
GATEWAY = REPO_ROOT / "gateway_mcp" / "codecompass_gateway"
CLI = REPO_ROOT / "gateway_mcp" / "codecompass_cli"
BENCH = REPO_ROOT / "bench"
CLIENTS = CLIENT_ROOT / "clients"
CONTRACTS = CLIENT_ROOT / "contracts"
# `codecompass.policy` is split too: shape and ranking, whose types retrieval's messages carry, are the client's.
POLICY = (SERVICES / "policy", CLIENT_ROOT / "policy")
MODELS = REPO_ROOT / "models"
DEV_LIBRARY = REPO_ROOT / "codecompass_dev"
# The services' own packages: a contract, a client, the gateway and the CLI import none of them.
SERVICE_PACKAGES = ("retrieval", "embedding", "rerank", "selection")
# Each service's contract, and the client that speaks to it (analysis runs in Node: no servicer here).
CONTRACT_USERS = {"analysis": (CLIENTS / "analysis.py",),
                  **{name: (CLIENTS / f"{name}.py", SERVICES / name / "servicer.py") for name in SERVICE_PACKAGES}}
# What the gateway's process must never need: a model runtime or the index's storage engine.
HEAVY = ("torch", "lancedb", "lance", "pyarrow", "onnxruntime", "transformers", "sentence_transformers")
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


def sources(package: Path, pattern: str) -> list[Path]:
    """The package's own files matching `pattern`: not what a run left in a hidden folder
    (`models/.work` holds mirrored repositories, with folders named like `handlebars.js`)."""
    return sorted(path for path in package.rglob(pattern)
                  if path.is_file() and not any(part.startswith(".") for part in path.relative_to(package).parts))


def imports_of(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    """'file:line imports module' for every import in `package` of a module under `forbidden`."""
    found = []
    for source in sources(package, "*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for line, module in imported_modules(tree):
            if module.split(".")[0] in forbidden:
                found.append(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}")
    return found


def test_the_services_never_import_the_gateway_or_the_cli() -> None:
    for package in (SERVICES, CLIENT_ROOT):
        assert imports_of(package, ("codecompass_gateway", "codecompass_cli")) == []


def _modules(root: Path) -> set[str]:
    return {".".join(("codecompass", *source.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
            for source in sources(root, "*.py")}


def test_the_client_distribution_stands_alone() -> None:
    # What `pip install codecompass-client` gets must import: every `codecompass` module its code
    # imports is one of its own, never one that only the services' distribution ships, and it
    # imports nothing heavy. A module in both roots would be two copies, one shadowing the other.
    own, services = _modules(CLIENT_ROOT), _modules(SERVICES)
    assert own & services == set()
    assert not (CLIENT_ROOT / "__init__.py").exists() and not (SERVICES / "__init__.py").exists()
    namespaces = {"codecompass", "codecompass.common", "codecompass.policy"}
    outside = sorted(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}"
                     for source in sources(CLIENT_ROOT, "*.py")
                     for line, module in absolute_imports(ast.parse(source.read_text(encoding="utf-8")),
                                                          package_of(source))
                     if module.split(".")[0] == "codecompass" and module not in own | namespaces
                     and module.rsplit(".", 1)[0] not in own)
    assert outside == []
    assert imports_of(CLIENT_ROOT, HEAVY + ("lightgbm", "yaml", "codecompass_dev")) == []


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
    for package in (SERVICES, CLIENT_ROOT, GATEWAY, CLI, BENCH):
        for source in sources(package, "*.py"):
            if source.is_relative_to(GENERATED) or source.is_relative_to(CLIENTS) or source == WIRE_BENCHMARK:
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


def package_of(source: Path) -> str:
    """The dotted package a source file is in (`codecompass.clients`, `codecompass_gateway`, `bench.lib`)."""
    for root in (SERVICES.parent, CLIENT_ROOT.parent, GATEWAY.parent, REPO_ROOT):
        if source.is_relative_to(root):
            return ".".join(source.relative_to(root).parent.parts)
    raise ValueError(source)


def codecompass_imports(package: Path, allowed: tuple[str, ...]) -> list[str]:
    """'file:line imports module' for every import in `package` of a `codecompass.<sub>` module whose
    `<sub>` is not in `allowed` (`from codecompass import x` counts as `codecompass.x`)."""
    found = []
    for source in sources(package, "*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for line, module in absolute_imports(tree, package_of(source)):
            parts = module.split(".")
            if parts[0] == "codecompass" and len(parts) > 1 and parts[1] not in allowed:
                found.append(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}")
    return sorted(set(found))


def test_a_contract_imports_no_service_and_no_client() -> None:
    # A contract is what both ends of a wire agree on: generated types, the shared vocabulary
    # (`common`, `policy`) and other contracts (retrieval's messages carry analysis's SkippedFile).
    assert codecompass_imports(CONTRACTS, ("v1", "common", "contracts", "policy")) == []
    assert imports_of(CONTRACTS, HEAVY + ("codecompass_gateway", "codecompass_cli")) == []


def test_policy_imports_only_common_so_contracts_may_import_it() -> None:
    for package in POLICY:
        assert codecompass_imports(package, ("common", "policy")) == []


def test_a_client_depends_on_contracts_never_on_a_server() -> None:
    assert codecompass_imports(CLIENTS, ("clients", "contracts", "common", "v1")) == []


def test_the_gateway_and_the_cli_import_no_service_internals() -> None:
    for package in (GATEWAY, CLI):
        assert codecompass_imports(package, ("clients", "contracts", "common", "policy")) == []


def test_the_benchmarks_and_the_models_import_no_module_that_moved_to_the_contracts() -> None:
    # Tooling may reach into a service (it measures one), but a contract's types have one home.
    moved = ("codecompass.retrieval.state", "codecompass.retrieval.convert", "codecompass.retrieval.filters",
             "codecompass.rerank.model", "codecompass.rerank.convert", "codecompass.selection.model",
             "codecompass.selection.convert", "codecompass.embedding.convert", "codecompass.common.chunk_convert")
    found = [row for package in (BENCH, MODELS, GATEWAY, CLI, SERVICES, CLIENT_ROOT)
             for row in imports_of(package, ("codecompass",))
             if row.rsplit(" ", 1)[1] in moved]
    assert found == []


def test_the_training_pipelines_never_import_the_benchmarks() -> None:
    # What both need (the corpus, the query rules, the metrics) lives in codecompass_dev; a model
    # trained through a benchmark's script would change when the script does.
    assert imports_of(MODELS, ("bench",)) == []
    # The corpus miners' node helpers load the shared symbol extractor from the library too.
    requires = [f"{source.relative_to(REPO_ROOT)}:{number}"
                for source in sources(MODELS, "*.js")
                for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), start=1)
                if re.search(r"require\([^)]*\bbench/", line)]
    assert requires == []


def test_the_development_library_imports_no_benchmark_no_model_and_no_front_end() -> None:
    assert imports_of(DEV_LIBRARY, ("bench", "models", "codecompass_gateway", "codecompass_cli")) == []


def test_the_product_never_imports_the_development_library() -> None:
    # codecompass_dev ships in no distribution and no image (.dockerignore is an allow-list).
    for package in (SERVICES, CLIENT_ROOT, GATEWAY, CLI):
        assert imports_of(package, ("codecompass_dev",)) == []


def test_each_servicer_and_its_client_import_their_services_contract() -> None:
    for service, users in CONTRACT_USERS.items():
        for user in users:
            tree = ast.parse(user.read_text(encoding="utf-8"))
            assert any(module.startswith(f"codecompass.contracts.{service}")
                       for _, module in imported_modules(tree)), f"{user.name} does not import contracts.{service}"


def test_only_contracts_clients_and_servicers_import_generated_messages() -> None:
    # One decoder per message: a generated type stops at a contract's converter, at the client that
    # builds the request and at the servicer that implements the stub; nothing else reads the wire.
    found = []
    for package in (SERVICES, CLIENT_ROOT, GATEWAY, CLI, BENCH, MODELS):
        for source in sources(package, "*.py"):
            if (source.is_relative_to(GENERATED) or source.is_relative_to(CONTRACTS)
                    or source.is_relative_to(CLIENTS) or source == WIRE_BENCHMARK):
                continue
            if source.name == "servicer.py" and source.parent.parent == SERVICES:
                continue
            tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
            found.extend(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}"
                         for line, module in absolute_imports(tree, package_of(source))
                         if module.startswith("codecompass.v1"))
    assert found == []


# Blocks the heavy packages, then imports every module of the gateway and the CLI.
_NO_HEAVY_RUNTIME = """
import importlib, pkgutil, sys
heavy = set(sys.argv[1].split(","))

class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in heavy:
            raise ImportError(f"the gateway's runtime must not import {name}")
        return None

sys.meta_path.insert(0, Blocker())
for package_name in ("codecompass_gateway", "codecompass_cli"):
    package = importlib.import_module(package_name)
    for module in pkgutil.walk_packages(package.__path__, package_name + "."):
        importlib.import_module(module.name)
loaded = sorted({name.split(".")[0] for name in sys.modules} & heavy)
assert not loaded, loaded
print("ok")
"""


def test_the_gateways_runtime_needs_no_torch_or_lancedb() -> None:
    # The gateway and the CLI talk to the services over gRPC: a model runtime (torch, ONNX) or
    # the index's storage (LanceDB, Arrow) in their process would be weight and start-up time
    # for nothing, and a sign that a service's internals leaked into them.
    result = subprocess.run([sys.executable, "-c", _NO_HEAVY_RUNTIME, ",".join(HEAVY)], capture_output=True,
                            text=True, timeout=120, cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


def test_the_check_sees_every_kind_of_import() -> None:
    tree = ast.parse("import codecompass_cli.x\nfrom codecompass_cli import y\n"
                     "importlib.import_module('codecompass_cli.z')\nfrom . import w\n")
    assert [module for _, module in imported_modules(tree)] == ["codecompass_cli.x", "codecompass_cli",
                                                                "codecompass_cli.z"]


RETRIEVAL = SERVICES / "retrieval"
# LanceDB and Lance calls that change a table or its files: none belongs on the read path.
TABLE_WRITES = frozenset({"merge_insert", "create_index", "create_scalar_index", "optimize", "compact_files",
                          "cleanup_old_versions", "create_table", "drop_table", "write_fragments", "commit"})


def absolute_imports(tree: ast.AST, package: str) -> Iterator[tuple[int, str]]:
    """`imported_modules`, plus relative imports resolved against `package` and every
    `from module import name` also as `module.name` (the name may be a module)."""
    yield from imported_modules(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0]
                base = f"{parent}.{base}" if base else parent
                yield node.lineno, base
            yield from ((node.lineno, f"{base}.{alias.name}") for alias in node.names)


def test_the_search_side_of_retrieval_never_imports_the_index_side() -> None:
    # STYLE habits 13 and 18: reads never write. retrieval/search/ answers from the index as it
    # stands; all that changes the index lives in retrieval/index/, which reads through the
    # search side's `ChunkReader` (its `ChunkWriter` extends it) but is never reached from it.
    index = "codecompass.retrieval.index"
    found = []
    for source in sorted((RETRIEVAL / "search").rglob("*.py")):
        package = ".".join(source.relative_to(SERVICES.parent).parent.parts)
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        found.extend(f"{source.relative_to(REPO_ROOT)}:{line} imports {module}"
                     for line, module in absolute_imports(tree, package)
                     if module == index or module.startswith(index + "."))
    assert found == []


def test_the_check_resolves_relative_and_from_package_imports() -> None:
    tree = ast.parse("from ..index import chunk_writer\nfrom . import hybrid\n"
                     "from codecompass.retrieval import index\n")
    modules = {module for _, module in absolute_imports(tree, "codecompass.retrieval.search")}
    assert {"codecompass.retrieval.index.chunk_writer", "codecompass.retrieval.search.hybrid",
            "codecompass.retrieval.index"} <= modules


def test_the_searchers_store_type_has_no_write_method() -> None:
    # Zoekt's searcher never holds a builder: the searcher's store is a `ChunkReader`, which has
    # none of the methods `ChunkWriter` adds, and nothing on the search side calls a LanceDB write.
    assert get_type_hints(IndexReader.current)["return"] == tuple[CatalogSummary, ChunkReader | None]
    writes = {name for name in vars(ChunkWriter) if not name.startswith("_")}
    assert {"open", "apply_changes", "set_vectors", "stage", "commit_staged", "maintain",
            "drop_retired_tables"} <= writes
    assert writes & set(dir(ChunkReader)) == set()
    calls = [f"{source.relative_to(REPO_ROOT)}:{node.lineno} calls {node.func.attr}"
             for source in sorted((RETRIEVAL / "search").rglob("*.py"))
             for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TABLE_WRITES]
    assert calls == []
