"""Every span attribute the code sets is in the README's table, and the table names none that is
no longer set (issue 19: a trace dashboard is only as readable as its attributes are explained).

The keys are read from the sources, not from a trace: a trace shows only the paths one request
took (no error, no hub, no Trace call), the sources show every key. Python is read with `ast`,
TypeScript with the TypeScript compiler (tests/deploy/ts_span_attributes.js). A key that is not a
literal fails the test: no table can be checked against a key built at run time, so build keys
from literals. Keys outside `codecompass.` must be OpenTelemetry semantic conventions (below):
our own attributes live in our namespace, where a backend cannot confuse them with another
library's.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "docs" / "observability.md"
NODE_SERVICE = REPO / "node_ts_service"
PYTHON_ROOTS = (REPO / "clients" / "python" / "src" / "codecompass", REPO / "py_services" / "codecompass",
                REPO / "gateway_mcp")
GENERATED = {REPO / "clients" / "python" / "src" / "codecompass" / "v1"}
NAMESPACE = "codecompass."
# The OpenTelemetry RPC semantic conventions the gRPC spans carry (common/telemetry.py, tracing.ts).
SEMANTIC_CONVENTIONS = {"rpc.system", "rpc.service", "rpc.method", "rpc.grpc.status_code"}
TABLE_HEADING = "### Span attributes"
# The methods and keyword arguments that put attributes on a span.
SETTERS = {"set_attribute", "set_attributes"}
ATTRIBUTES_KEYWORD = "attributes"


@dataclass(frozen=True)
class Found:
    key: str
    where: str  # path:line


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{node.lineno}"


def _returned_dicts(tree: ast.Module, function: str) -> list[ast.Dict] | None:
    """The dict literals a module-level function of this module returns; None when it returns
    anything else, or is not defined here."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            returns = [r.value for r in ast.walk(node) if isinstance(r, ast.Return)]
            return returns if returns and all(isinstance(r, ast.Dict) for r in returns) else None
    return None


def _helper(tree: ast.Module, path: Path, function: str) -> tuple[Path, list[ast.Dict]] | None:
    """Where `function` is defined (this module, or the module of ours it is imported from by
    name) and the dict literals it returns; None when it returns anything else or is not ours."""
    dicts = _returned_dicts(tree, function)
    if dicts is not None:
        return path, dicts
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == function for a in node.names):
            relative = Path(*node.module.split(".")).with_suffix(".py")
            for root in PYTHON_ROOTS:
                source = root.parent / relative
                if source.is_file():
                    dicts = _returned_dicts(ast.parse(source.read_text(encoding="utf-8")), function)
                    return (source, dicts) if dicts is not None else None
    return None


def python_attribute_keys(path: Path) -> tuple[list[Found], list[str]]:
    """(keys, dynamic): each literal key set on a span in `path`, and where a key is not a literal."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    keys: list[Found] = []
    dynamic: list[str] = []

    def dict_keys(node: ast.expr, where: Path = path) -> None:
        # `attributes=helper(...)`: the dict literals the helper returns, when it is defined here
        # or imported by name from one of our modules (common.channels' rpc_attributes).
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            found_in = _helper(tree, path, node.func.id)
            if found_in is not None:
                helper_path, dicts = found_in
                for found in dicts:
                    dict_keys(found, helper_path)
                return
        if not isinstance(node, ast.Dict):
            dynamic.append(f"{_where(where, node)}: {ast.unparse(node)}")
            return
        for key in node.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(Found(key.value, _where(where, key)))
            else:  # a computed key, or `**other`
                dynamic.append(f"{_where(where, node)}: {ast.unparse(node)}")

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        if method == "set_attribute" and node.args:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(Found(key.value, _where(path, key)))
            else:
                dynamic.append(f"{_where(path, key)}: {ast.unparse(key)}")
        elif method == "set_attributes" and node.args:
            dict_keys(node.args[0])
        for keyword in node.keywords:
            if keyword.arg == ATTRIBUTES_KEYWORD:
                dict_keys(keyword.value)
    return keys, dynamic


def python_sources() -> list[Path]:
    return sorted(path for root in PYTHON_ROOTS for path in root.rglob("*.py")
                  if not any(folder in path.parents for folder in GENERATED))


def source_keys() -> tuple[list[Found], list[str]]:
    keys: list[Found] = []
    dynamic: list[str] = []
    for path in python_sources():
        found, unresolved = python_attribute_keys(path)
        keys += found
        dynamic += unresolved
    node = shutil.which("node")
    assert node is not None, "node is needed to read the analysis service's sources (make setup)"
    assert (NODE_SERVICE / "node_modules" / "typescript").is_dir(), "run `make setup` (node_modules)"
    script = Path(__file__).with_name("ts_span_attributes.js")
    read = subprocess.run([node, str(script), str(NODE_SERVICE)], capture_output=True, text=True, timeout=120,
                          check=True)
    typescript = json.loads(read.stdout)
    keys += [Found(k["key"], k["where"]) for k in typescript["keys"]]
    dynamic += [f"{d['where']}: {d['text']}" for d in typescript["dynamic"]]
    return keys, dynamic


def documented_keys(text: str) -> dict[str, str]:
    """Attribute -> its row, from the table under TABLE_HEADING (up to the next heading)."""
    start = text.index(TABLE_HEADING)
    section = text[start + len(TABLE_HEADING):]
    section = section[: m.start()] if (m := re.search(r"^#{1,3} ", section, re.MULTILINE)) else section
    rows = {}
    for line in section.splitlines():
        cell = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
        if cell:
            assert cell.group(1) not in rows, f"{cell.group(1)} has two rows in the README table"
            rows[cell.group(1)] = line
    return rows


@pytest.fixture(scope="module")
def found() -> list[Found]:
    keys, dynamic = source_keys()
    assert not dynamic, ("span attribute keys that are not literals, which no table can be checked against "
                         "(build them from literals): " + "; ".join(dynamic))
    return keys


def test_the_finder_sees_keys_from_every_kind_of_setter(tmp_path: Path) -> None:
    """The finder itself: a literal key, a dict literal, a helper returning one, and what it must refuse."""
    sample = tmp_path / "sample.py"
    code = '''
def _attrs(name):
    return {"rpc.method": name}

def run(span, tracer, key):
    span.set_attribute("codecompass.a", 1)
    span.set_attributes({"codecompass.b": 2})
    tracer.start_span("x", attributes={"codecompass.c": 3})
    tracer.start_span("y", attributes=_attrs("m"))
    span.set_attribute(f"codecompass.{key}", 4)
    span.set_attributes(other)
'''
    sample.write_text(code, encoding="utf-8")
    keys, dynamic = python_attribute_keys(sample)
    assert [k.key for k in keys] == ["codecompass.a", "codecompass.b", "codecompass.c", "rpc.method"]
    assert [d.split(": ", 1)[1] for d in dynamic] == ["f'codecompass.{key}'", "other"]


def test_every_span_attribute_is_namespaced_or_a_semantic_convention(found: list[Found]) -> None:
    stray = sorted({f"{k.key} ({k.where})" for k in found
                    if not k.key.startswith(NAMESPACE) and k.key not in SEMANTIC_CONVENTIONS})
    assert not stray, f"span attributes outside {NAMESPACE}* that are no semantic convention: {stray}"


def test_every_codecompass_attribute_is_documented_and_every_documented_one_is_set(found: list[Found]) -> None:
    ours = {k.key: k.where for k in found if k.key.startswith(NAMESPACE)}
    assert len(ours) >= 40, f"only {len(ours)} keys found: is the finder still reading the sources?"
    documented = documented_keys(README.read_text(encoding="utf-8"))
    undocumented = sorted(f"{key} ({where})" for key, where in ours.items() if key not in documented)
    assert not undocumented, f"set on spans but not in docs/observability.md's '{TABLE_HEADING}' table: {undocumented}"
    stale = sorted(set(documented) - set(ours))
    assert not stale, f"in docs/observability.md's '{TABLE_HEADING}' table but set nowhere any more: {stale}"
    # Each row has its four cells filled: attribute, span (service), meaning, example.
    thin = [row for row in documented.values() if len([c for c in row.strip("|").split("|") if c.strip()]) < 4]
    assert not thin, f"rows without a span, meaning or example: {thin}"
