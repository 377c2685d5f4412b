"""The code-aware vocabulary of `code-static`: identifier parts counted over TS/JS training text.

Words come from `codecompass.embedding.text.to_words`, the preparation every local provider
applies to documents and queries, so each word the model is given a vector for is a word it
will be handed at serving time ("parseHttpHeader" -> parse, http, header). A word is kept when
the base model's tokenizer does not already hold it whole, it occurs in at least `min_repos`
repositories (a name used by one project is that project's, not the language's) and it is
among the `size` most frequent such words.

Measured on the held-out repositories, these words made the distilled model worse, so
train.py adds none by default (--vocab-size, MODEL_CARD.md); the counts are still logged.

Only training repositories may feed it: `check_source` refuses the benchmark's quality
repositories (dev/test data) and the off-limits list by name.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from codecompass.embedding.text import to_words
from codecompass_dev.corpus.assemble import QUALITY_REPOS, is_source
from codecompass_dev.corpus.policy import off_limits

# Folders of generated, vendored or installed code: counted, they would teach the vocabulary
# bundler output and other projects' names rather than the repository's own code.
SKIPPED_DIRS = frozenset({".git", "node_modules", "dist", "build", "coverage", "vendor", ".next", "out"})
# Larger files are bundles or generated tables in practice.
MAX_FILE_BYTES = 512 * 1024
# A file whose average line is this long is minified.
MAX_MEAN_LINE_CHARS = 200
# Lowercase letters only, 2-24 of them: identifier parts as `to_words` yields them; digit runs
# and longer strings are numbers, hashes and base64, not vocabulary.
_WORD = re.compile(r"[a-z]{2,24}")


# One train repository in HELD_OUT_MODULUS gives no word to the vocabulary: its mined queries
# validate the model on code it never saw (evaluate.py).
HELD_OUT_MODULUS = 10


def held_out(github: str) -> bool:
    """The repository is validation data: a fixed hash of its name, so no one chooses which."""
    return int(hashlib.sha256(github.lower().encode()).hexdigest(), 16) % HELD_OUT_MODULUS == 0


class ExcludedSource(ValueError):
    """A vocabulary source that is evaluation data or off-limits."""


def _quality_names() -> frozenset[str]:
    names = set()
    for repo in QUALITY_REPOS:
        names.update({repo.name.lower(), repo.github.lower(), repo.github.lower().split("/")[-1]})
    return frozenset(names)


def source_name(path: Path) -> str:
    """`owner/name` for a corpus checkout (models/.work/corpus/<owner>+<name>), else the folder name."""
    return path.name.replace("+", "/", 1) if "+" in path.name else path.name


def check_source(path: Path) -> None:
    """Raise ExcludedSource for a quality (dev/test) repository or an off-limits one."""
    name = source_name(path).lower()
    if name in _quality_names() or name.split("/")[-1] in _quality_names():
        raise ExcludedSource(f"{path}: {name} is a benchmark quality repository (dev/test data), never training data")
    if off_limits(name):
        raise ExcludedSource(f"{path}: {name} is off-limits (codecompass_dev/corpus/policy.py)")


def source_files(root: Path) -> Iterator[Path]:
    """TS/JS source files under `root` (the extensions the index chunks), in a stable order."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            if is_source(path):
                yield path


def file_words(path: Path) -> list[str]:
    """The words of one file, or none for a file too large or minified to be anyone's code."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return []
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    lines = text.count("\n") + 1
    if len(text) / lines > MAX_MEAN_LINE_CHARS:
        return []
    return to_words(text)


@dataclass
class Counts:
    """Word counts over a set of repositories, and in how many repositories each word occurs."""

    words: Counter = field(default_factory=Counter)
    repos: Counter = field(default_factory=Counter)
    files: int = 0
    repositories: int = 0

    def add_repository(self, root: Path) -> None:
        check_source(root)
        seen: set[str] = set()
        for path in source_files(root):
            words = file_words(path)
            self.files += 1
            self.words.update(words)
            seen.update(words)
        self.repos.update(seen)
        self.repositories += 1


def count(roots: Iterable[Path]) -> Counts:
    counts = Counts()
    for root in roots:
        counts.add_repository(root)
    return counts


def select(counts: Counts, base_vocabulary: set[str], *, size: int, min_repos: int) -> list[str]:
    """The `size` most frequent new words seen in >= `min_repos` repositories, most frequent first.

    Ties break alphabetically so the same counts always give the same vocabulary.
    """
    candidates = [
        (word, n) for word, n in counts.words.items()
        if _WORD.fullmatch(word) and word not in base_vocabulary and counts.repos[word] >= min_repos
    ]
    candidates.sort(key=lambda item: (-item[1], item[0]))
    return [word for word, _ in candidates[:size]]
