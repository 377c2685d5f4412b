"""Training pairs: a natural-language query, the code that answers it, and the text to blank.

Every miner (models/corpus/mine_*.py) turns one repository checkout into `Pair`s by its own
rule; the hygiene here is shared by all of them and by the benchmark's query builder where
the bench has the same rule (codecompass_dev/queries/symbol_queries.py, codecompass_dev/queries/commits.py,
codecompass_dev/queries/text.py are the one home of the JSDoc, commit-subject and leak rules):

- too short: fewer than MIN_WORDS prose words (words of two or more letters outside quotes
  and backticks, so `"a/*.js" should match "b"` is two words, not five); too long: more than
  MAX_WORDS words;
- leaking: the query names a target's own identifier verbatim or as its split words in
  sequence (codecompass_dev/queries/text.py leaks_name), the same test the bench applies;
- duplicates: one query text (case-folded) for several different answers in a repository has
  no single right answer and is dropped; the same text for the same answer is kept once;
- caps: at most PER_TARGET_CAP queries for one answer (micromatch has 1,500 tests of
  `isMatch`) and at most `cap` per rule per repository, so no repository and no function
  dominates. The per-rule cap grows with the repository (repo_cap: CAP_PER_SYMBOL per named
  non-test symbol, never below DEFAULT_CAP): a repository of 20,000 symbols has more to
  ask about than one of 200, but not a hundred times more voice. Which ones are kept is seeded per repository and
  rule, or newest first where the rule has an order (commits).

Targets are named the way the analysis service names chunks (codecompass_dev/queries/extract_symbols.js
shares the service's own naming); offsets in `blank` are code points of the pinned file, as
Python indexes it, and codecompass_dev/queries/text.py blank_spans applies them.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from codecompass.common.testcode import is_test_path
from codecompass_dev.corpus.assemble import is_source
from codecompass_dev.evaluation.metrics import FileTarget, Target
from codecompass_dev.queries.commits import MIN_WORDS
from codecompass_dev.queries.symbol_queries import MAX_QUERY_WORDS
from codecompass_dev.queries.text import leaks_name, words

HERE = Path(__file__).resolve().parent
SCANNER = HERE / "extract_tests.js"

MAX_WORDS = MAX_QUERY_WORDS
PER_TARGET_CAP = 5
DEFAULT_CAP = 400
CAP_PER_SYMBOL = 0.1
# Not the repository's own code: installed, built, vendored or minified. `.yarn/` holds Yarn's
# own 2-3 MB release bundles, which history commits at every upgrade (pure-rand: dozens of them,
# and parsing each old copy ran the commit rule past its timeout).
SKIPPED_DIRS = frozenset({"node_modules", "dist", "build", "coverage", "vendor", ".git", "out", ".next", ".yarn"})
MAX_SOURCE_BYTES = 512 * 1024

_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`")
_PROSE_WORD = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class Repo:
    """One repository as the miners read it: a checkout of `commit` and, for history, its git mirror."""

    github: str  # owner/name
    commit: str
    root: Path
    mirror: Path | None = None


@dataclass
class Pair:
    rule: str
    query: str
    targets: list[Target]  # symbols; a `concept` pair may have none
    blank: list[dict] = field(default_factory=list)  # {"path", "spans": [[start, end], ...]}
    source: dict = field(default_factory=dict)  # the rule's provenance
    # Whole files that answer (the benchmark's `files`, start_line and end_line 0): `concept` pairs only.
    files: list[FileTarget] = field(default_factory=list)

    def answer(self) -> tuple:
        symbols = tuple(sorted((t.path, t.qualified_name) for t in self.targets))
        return tuple(sorted(f.path for f in self.files)), symbols

    def anchor(self) -> tuple[str, int]:
        """Where the answer is, for a stable order: the first file, else the first symbol target."""
        first = self.files[0] if self.files else self.targets[0]
        return first.path, first.start_line

    def record(self, repo: Repo, n: int) -> dict:
        record = {
            "id": f"{self.rule}-{repo.github.replace('/', '+')}-{n:04d}",
            "rule": self.rule,
            "repo": repo.github,
            "commit": repo.commit,
            "query": self.query,
            "targets": [vars(t) for t in self.targets],
            "blank": self.blank,
            "source": self.source,
        }
        if self.files:  # the symbol rules' records stay as they always were
            record["files"] = [vars(f) for f in self.files]
        return record


def repo_cap(symbols: int, floor: int = DEFAULT_CAP, per_symbol: float = CAP_PER_SYMBOL) -> int:
    """Most pairs of one rule in a repository of `symbols` named non-test symbols."""
    return max(floor, round(per_symbol * symbols))


def is_train_file(rel: str) -> bool:
    parts = rel.split("/")
    return is_source(Path(parts[-1])) and not parts[-1].endswith(".min.js") and not set(parts[:-1]) & SKIPPED_DIRS


def repository_files(root: Path) -> tuple[list[str], list[str]]:
    """(non-test sources, test files) of a checkout, by the product's own test-path rule."""
    sources, tests = [], []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file() or not is_train_file(rel) or path.stat().st_size > MAX_SOURCE_BYTES:
            continue
        (tests if is_test_path(rel) else sources).append(rel)
    return sources, tests


def package_names(root: Path) -> list[str]:
    """The npm names the repository's own package.json files declare (a test may import itself by name)."""
    names = set()
    for manifest in root.rglob("package.json"):
        if set(manifest.relative_to(root).parts[:-1]) & SKIPPED_DIRS:
            continue
        try:
            name = json.loads(manifest.read_text(encoding="utf-8")).get("name")
        except (ValueError, UnicodeDecodeError, AttributeError):
            continue
        if isinstance(name, str) and name:
            names.add(name)
    return sorted(names)


def scan(root: Path, sources: list[str], tests: list[str]) -> list[dict]:
    """Test cases with the symbols they call, and file headers (models/corpus/extract_tests.js)."""
    payload = {"root": str(root), "tests": tests, "sources": sources, "packages": package_names(root)}
    out = subprocess.run(
        ["node", "--max-old-space-size=4096", str(SCANNER)],
        input=json.dumps(payload),
        check=True,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def prose_words(text: str) -> list[str]:
    return _PROSE_WORD.findall(_QUOTED.sub(" ", text))


def well_sized(text: str) -> bool:
    return len(prose_words(text)) >= MIN_WORDS and len(words(text)) <= MAX_WORDS


def target_name(target: Target) -> str:
    return target.qualified_name.split(".")[-1]


def leaks_any(query: str, names: list[str]) -> bool:
    return any(leaks_name(query, name) for name in names if name)


def finalize(pairs: list[Pair], cap: int, seed: str, *, ordered: bool = False) -> tuple[list[Pair], Counter]:
    """Duplicates, the per-answer cap and the per-repository cap (see the module docstring)."""
    stats: Counter = Counter()
    by_text: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_text[pair.query.lower()].append(pair)
    unique = []
    for group in by_text.values():
        answers = {p.answer() for p in group}
        if len(answers) > 1:
            stats["same_text_other_answer"] += len(group)
            continue
        stats["duplicate_text"] += len(group) - 1
        unique.append(group[0])
    # Input order is kept where it means something (newest commit first); otherwise a seeded shuffle.
    kept_ids = {id(p) for p in unique}
    order = [p for p in pairs if id(p) in kept_ids] if ordered else unique
    if not ordered:
        order = sorted(order, key=lambda p: (*p.anchor(), p.query))
        random.Random(seed).shuffle(order)
    per_answer: Counter = Counter()
    kept = []
    for pair in order:
        answer = pair.answer()
        per_answer[answer] += 1
        if per_answer[answer] > PER_TARGET_CAP:
            stats["over_answer_cap"] += 1
            continue
        if len(kept) == cap:
            stats["over_repo_cap"] += 1
            continue
        kept.append(pair)
    return kept, stats
