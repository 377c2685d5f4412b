"""Policy has one home (STYLE habit 14): scores are judged, weighed and cut in `codecompass.policy`,
and nowhere else. Read from the source (ast), not by importing it.

The rule. Outside py_services/codecompass/policy/ (and the generated v1/ stubs), no Python source
under py_services/ or gateway_mcp/ may, with a *score-like* value:
1. compare it with a *threshold*: `x.score >= 0.5`, `relevance < FLOOR`;
2. add, subtract, multiply, divide or raise it with a threshold: `0.5 * best.score`,
   `min_relevance * SHARE`, `(score / best) ** 0.25`;
3. clamp it with min/max against a float literal, 0.0 and 1.0 included: `min(max(c.score, 0.0), 1.0)`;
4. rescore with it: pass arithmetic on it as a score-like keyword (`replace(c, score=c.score * f)`),
   or key min/max/sorted/sort on arithmetic on it (`sorted(xs, key=lambda c: c.score * w)`).

A *score-like* value is a name, an attribute, a string subscript (`r["score"]`), a `.get("score")` or
a call whose name contains score, relevance, confidence, similarity, cosine, bm25 or weight; or
min/max/sum/abs/float/round of one, or arithmetic with one. A name that ends like a duration or a
size (`_s`, `_ms`, `_seconds`, `timeout`, `deadline`, `_tokens`, `_bytes`, `_chars`, `_lines`,
`_count`) is never score-like, so `rerank_timeout_s * 2.0` is not a score.

A *threshold* is a float literal other than 0.0 and 1.0 (rules 1 and 2: comparing with 0, or
scaling by 1, decides nothing), or a module-level name bound to one: in the same module, or
imported from another module of ours (`from m import X`, `m.X`). A name that ends like a duration
or a size is not a threshold (`_SYNC_HOP_S = 2.0`). Integers are counts, not thresholds.

What it cannot see: a value whose name does not say what it is (`value`, `stop`) — the rule keys
on names, so it is a backstop for review, not a proof. What it deliberately allows: ordering by a
score as given (`key=lambda c: -c.score`), taking the best (`max(s.relevance for s in kept)`),
rounding for display, and comparing with 0.

KNOWN lists what still breaks the rule in code this change may not touch, each with why; an entry
that no longer matches fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]
# `codecompass` is a namespace over two source roots: the client distribution's and the services'.
CLIENT_ROOT = REPO_ROOT / "clients" / "python" / "src" / "codecompass"
SERVICES_ROOT = REPO_ROOT / "py_services" / "codecompass"
POLICY = (SERVICES_ROOT / "policy", CLIENT_ROOT / "policy")
GENERATED = CLIENT_ROOT / "v1"
SCANNED = (CLIENT_ROOT, REPO_ROOT / "py_services", REPO_ROOT / "gateway_mcp")
# Where each top-level package of ours lives, to resolve an imported constant to its module.
PACKAGES = {"codecompass": (SERVICES_ROOT, CLIENT_ROOT),
            "codecompass_gateway": (REPO_ROOT / "gateway_mcp" / "codecompass_gateway",),
            "codecompass_cli": (REPO_ROOT / "gateway_mcp" / "codecompass_cli",)}

SCORE_WORDS = re.compile(r"score|relevance|confidence|similarity|cosine|bm25|weight", re.IGNORECASE)
UNIT_SUFFIX = re.compile(r"(_s|_ms|_seconds|timeout|deadline|_tokens|_bytes|_chars|_lines|_count)$", re.IGNORECASE)
TRIVIAL = (0.0, 1.0)
WRAPPERS = frozenset({"min", "max", "sum", "abs", "float", "round"})
ORDERINGS = frozenset({"min", "max", "sorted", "sort", "nlargest", "nsmallest"})

# (file, the offending expression as ast.unparse writes it) -> why it is still there.
KNOWN: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    source: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.rule}: {self.source}"


def is_score_name(name: str) -> bool:
    return bool(SCORE_WORDS.search(name)) and not UNIT_SUFFIX.search(name)


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def is_score_like(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        return is_score_like(node.operand)
    if isinstance(node, ast.Name):
        return is_score_name(node.id)
    if isinstance(node, ast.Attribute):
        return is_score_name(node.attr)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and is_score_name(key.value)
    if isinstance(node, ast.BinOp):
        return is_score_like(node.left) or is_score_like(node.right)
    if isinstance(node, ast.Call):
        name = _call_name(node)
        first = node.args[0] if node.args else None
        if name == "get" and isinstance(first, ast.Constant) and isinstance(first.value, str):
            return is_score_name(first.value)
        if name in WRAPPERS:
            return any(is_score_like(a.elt if isinstance(a, ast.GeneratorExp) else a) for a in node.args)
        return is_score_name(name)
    return False


def _float_literal(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return _float_literal(node.operand)
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return node.value
    return None


def module_file(module: str) -> Path | None:
    top, _, rest = module.partition(".")
    for base in PACKAGES.get(top, ()):
        path = base.joinpath(*rest.split(".")) if rest else base
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


@cache
def constants_of(path: Path) -> dict[str, float]:
    """A module's top-level names bound to a threshold literal."""
    out: dict[str, float] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            targets, value = [t for t in node.targets if isinstance(t, ast.Name)], node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        number = _float_literal(value)
        if number is not None and number not in TRIVIAL:
            out.update({t.id: number for t in targets if not UNIT_SUFFIX.search(t.id)})
    return out


class Thresholds:
    """Which expressions of one module are thresholds: literals, its constants, imported constants."""

    def __init__(self, tree: ast.Module, own: dict[str, float]) -> None:
        self.names = dict(own)
        self.modules: dict[str, Path] = {}  # a name bound to a module of ours -> its file
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    path = module_file(alias.name)
                    if path is not None and alias.asname:
                        self.modules[alias.asname] = path
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    local = alias.asname or alias.name
                    submodule = module_file(f"{node.module}.{alias.name}")
                    if submodule is not None:
                        self.modules[local] = submodule
                    elif (source := module_file(node.module)) is not None and alias.name in constants_of(source):
                        self.names[local] = constants_of(source)[alias.name]

    def is_threshold(self, node: ast.AST) -> bool:
        number = _float_literal(node)
        if number is not None:
            return number not in TRIVIAL
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.modules:
            return node.attr in constants_of(self.modules[node.value.id])
        return False

    def holds_threshold(self, node: ast.AST) -> bool:
        if isinstance(node, ast.BinOp):
            return self.holds_threshold(node.left) or self.holds_threshold(node.right)
        return self.is_threshold(node)


def _arithmetic(node: ast.AST) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div | ast.Pow)


def findings_in(tree: ast.Module, path: str, own: dict[str, float]) -> Iterator[Finding]:
    thresholds = Thresholds(tree, own)
    for node in ast.walk(tree):
        here = (path, getattr(node, "lineno", 0))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for a, b in pairwise(sides):
                if (thresholds.holds_threshold(a) and is_score_like(b)) or \
                        (thresholds.holds_threshold(b) and is_score_like(a)):
                    yield Finding(*here, "threshold compared with a score", ast.unparse(node))
        elif _arithmetic(node):
            assert isinstance(node, ast.BinOp)
            if (thresholds.is_threshold(node.left) and is_score_like(node.right)) or \
                    (thresholds.is_threshold(node.right) and is_score_like(node.left)):
                yield Finding(*here, "score arithmetic with a threshold", ast.unparse(node))
        elif isinstance(node, ast.AugAssign) and is_score_like(node.target) and thresholds.is_threshold(node.value):
            yield Finding(*here, "score arithmetic with a threshold", ast.unparse(node))
        elif isinstance(node, ast.Call):
            name = _call_name(node)
            if name in ("min", "max") and any(_float_literal(a) is not None for a in node.args) \
                    and any(is_score_like(a) for a in node.args if _float_literal(a) is None):
                yield Finding(*here, "score clamped", ast.unparse(node))
            for keyword in node.keywords:
                if keyword.arg and is_score_name(keyword.arg) and _arithmetic(keyword.value) \
                        and is_score_like(keyword.value):
                    yield Finding(*here, "rescored", ast.unparse(keyword))
                if keyword.arg == "key" and name in ORDERINGS and isinstance(keyword.value, ast.Lambda) and any(
                        _arithmetic(sub) and is_score_like(sub) for sub in ast.walk(keyword.value.body)):
                    yield Finding(*here, "ordered by score arithmetic", ast.unparse(keyword.value))


def scanned_sources() -> Iterator[Path]:
    for base in SCANNED:
        for path in sorted(base.rglob("*.py")):
            if not (any(path.is_relative_to(policy) for policy in POLICY) or path.is_relative_to(GENERATED)):
                yield path


def policy_findings() -> list[Finding]:
    found = []
    for path in scanned_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.extend(findings_in(tree, path.relative_to(REPO_ROOT).as_posix(), constants_of(path)))
    return found


def check(source: str) -> list[str]:
    """The rules a snippet breaks (one module, nothing imported from ours)."""
    tree = ast.parse(source)
    own: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            number = _float_literal(node.value)
            if number is not None and number not in TRIVIAL and not UNIT_SUFFIX.search(node.targets[0].id):
                own[node.targets[0].id] = number
    return [f.rule for f in findings_in(tree, "snippet.py", own)]


# --- the rule, on the code ---------------------------------------------------------------------


def test_no_score_arithmetic_or_threshold_outside_policy() -> None:
    found = policy_findings()
    unexpected = [str(f) for f in found if (f.path, f.source) not in KNOWN]
    assert unexpected == [], "score arithmetic or thresholds outside codecompass.policy:\n" + "\n".join(unexpected)
    gone = [key for key in KNOWN if key not in {(f.path, f.source) for f in found}]
    assert gone == [], f"no longer found, drop them from KNOWN: {gone}"


def test_policy_imports_only_common_and_itself() -> None:
    outside = []
    for path in sorted(path for policy in POLICY for path in policy.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for module in modules:
                ours = module.split(".")[0] in PACKAGES
                if ours and not module.startswith(("codecompass.common", "codecompass.policy")):
                    outside.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno} imports {module}")
    assert outside == []


# --- the rule, on snippets: what it catches and what it leaves alone ----------------------------


def test_thresholds_compared_with_scores_are_caught() -> None:
    assert check("keep = r.score >= 0.5") == ["threshold compared with a score"]
    assert check("FLOOR = 0.2\nkeep = [s for s in kept if s.relevance >= FLOOR]") == ["threshold compared with a score"]
    assert check("low = 0.35 > meta['confidence']") == ["threshold compared with a score"]
    assert check("low = answer_confidence(results) < 0.5") == ["threshold compared with a score"]


def test_score_arithmetic_with_a_threshold_is_caught() -> None:
    assert check("SHARE = 0.4\nfloor = min_relevance * SHARE") == ["score arithmetic with a threshold"]
    assert check("x = (score / best) ** 0.25") == ["score arithmetic with a threshold"]
    assert check("weight *= 0.7") == ["score arithmetic with a threshold"]
    assert check("blended = 0.65 * rerank_score + first") == ["score arithmetic with a threshold"]


def test_clamps_and_rescoring_are_caught() -> None:
    assert check("x = min(max(c.score, 0.0), 1.0)") == ["score clamped", "score clamped"]
    assert check("c = replace(c, score=c.score * focus_factor(f))") == ["rescored"]
    assert check("xs = sorted(xs, key=lambda c: c.score * boost(c))") == ["ordered by score arithmetic"]


def test_timeouts_sizes_counts_and_plain_ordering_are_left_alone() -> None:
    allowed = """
_SYNC_HOP_S = 2.0
RERANK_TIMEOUT_S = 3.0
timeout_s = budget_ms / 1000 + _SYNC_HOP_S
deadline = time.monotonic() + rerank_timeout_s * 0.5
cap = max_tokens // 2
per_chunk = total_tokens / 1.5
kept = [s for s in scored if s.relevance > 0.0]
scaled = score * 1.0
ranked = sorted(ranked, key=lambda c: -c.score)
best = max(s.relevance for s in kept)
shown = f"{result['score']:.2f}"
rounded = round(result.score, 6)
limited = results[:LIMIT]
"""
    assert check(allowed) == []


def test_a_constant_imported_from_another_module_is_a_threshold() -> None:
    tree = ast.parse("from codecompass.policy.selection import MERGE_MIN_COVER\n"
                     "from codecompass.policy import selection\n"
                     "a = s.relevance >= MERGE_MIN_COVER\n"
                     "b = s.relevance >= selection.MERGE_MIN_COVER\n")
    assert [f.rule for f in findings_in(tree, "snippet.py", {})] == ["threshold compared with a score"] * 2
