"""The symbol query rules: (text, answer) pairs drawn from a repository's extracted symbols.

  jsdoc       first sentence of a function's/method's JSDoc -> that symbol. Dropped when
              shorter than MIN_QUERY_WORDS words, when it names the target (its name, or its split
              words in sequence) or when the same sentence documents two symbols. That JSDoc
              comment, and any other in the repository containing the sentence, is to be blanked
              (add_copies_to_blank), so the query does not find itself.
  identifier  a symbol name split into words, sometimes only part of it and sometimes
              with its kind ("merge map operator") -> the only symbol whose name has those
              words in sequence.
  error       the message of `throw new XError("...")` -> the function that throws it
              (messages thrown in more than one place are dropped).
  path        the last two segments of a source file's path ("operators/mergeMap.ts"),
              unique as a path suffix in the repository -> every top-level symbol of that
              file and the file's card, the analysis service's `<module top level>` chunk
              (any of them answers it).

The quality benchmark samples its query set from them (bench/quality/build_queries.py); the
training corpus mines pairs by the same rules (models/corpus/mine_*.py), so the ranker learns
from the questions it is measured on, over other repositories.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

from codecompass.common.chunks import MODULE_QUALIFIED_NAME
from codecompass_dev.evaluation.metrics import FileTarget, Target
from codecompass_dev.queries.text import contains_sequence, first_sentence, leaks_name, split_identifier, words

MIN_QUERY_WORDS = 5
MAX_QUERY_WORDS = 40
FUNCTION_KINDS = {"function", "method", "constructor", "accessor"}


@dataclass
class Candidate:
    text: str
    targets: list[Target]
    source: dict = field(default_factory=dict)
    leaks: bool | None = None
    files: list[FileTarget] = field(default_factory=list)


def target_of(path: str, symbol: dict) -> Target:
    return Target(path, symbol["qualified_name"], symbol["start_line"], symbol["end_line"])


def jsdoc_queries(
    records: list[dict], texts: dict[str, str], kinds: Collection[str] = FUNCTION_KINDS
) -> list[Candidate]:
    """`kinds`: the symbol kinds a JSDoc query may target (the bench: functions; the training corpus: more)."""
    found: list[tuple[str, Target, dict]] = []
    for record in records:
        for symbol in record["symbols"]:
            if symbol["kind"] not in kinds or not symbol["has_body"] or not symbol["jsdoc"]:
                continue
            sentence = first_sentence(symbol["jsdoc"])
            if not MIN_QUERY_WORDS <= len(words(sentence)) <= MAX_QUERY_WORDS or leaks_name(sentence, symbol["name"]):
                continue
            found.append((sentence, target_of(record["path"], symbol), symbol))
    # The same sentence documenting several symbols cannot have one right answer.
    counts = Counter(text.lower() for text, _, _ in found)
    candidates = []
    for text, target, symbol in found:
        if counts[text.lower()] == 1:
            blanked = {target.path: {tuple(span) for span in symbol["jsdoc_spans"]}}
            candidates.append(Candidate(text, [target], {"blanked_jsdoc": blanked, "_sentence": words(text)}))
    return candidates


def add_copies_to_blank(candidate: Candidate, records: list[dict], texts: dict[str, str]) -> None:
    """Every JSDoc comment of the repository that holds the query sentence is blanked too (copies on overloads)."""
    sentence = candidate.source.pop("_sentence")
    blanked = candidate.source["blanked_jsdoc"]
    for record in records:
        text = texts[record["path"]]
        for start, end in record["jsdoc_spans"]:
            if contains_sequence(words(text[start:end]), sentence):
                blanked.setdefault(record["path"], set()).add((start, end))
    candidate.source["blanked_jsdoc"] = [
        {"path": path, "spans": [list(span) for span in sorted(spans)]} for path, spans in sorted(blanked.items())
    ]


def identifier_queries(records: list[dict], rng: random.Random) -> list[Candidate]:
    by_name: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for record in records:
        for symbol in record["symbols"]:
            if symbol["has_body"] and not symbol["name"].startswith(("_", "#")) and symbol["name"] != "constructor":
                by_name[symbol["name"]].append((record["path"], symbol))
    all_name_words = {name: split_identifier(name) for name in by_name}
    candidates: list[Candidate] = []
    for name, owners in sorted(by_name.items()):
        # Overloads of one function share a name in one file; across files a name is ambiguous.
        if len({(path, symbol["qualified_name"]) for path, symbol in owners}) != 1:
            continue
        name_words = all_name_words[name]
        if len(name_words) < 2:
            continue
        path, symbol = owners[-1]
        phrase = name_words
        if len(name_words) >= 3 and rng.random() < 0.4:
            size = rng.randint(2, len(name_words) - 1)
            start = rng.randint(0, len(name_words) - size)
            phrase = name_words[start : start + size]
        holders = [other for other, other_words in all_name_words.items() if contains_sequence(other_words, phrase)]
        if holders != [name]:
            continue
        text = " ".join(phrase)
        if rng.random() < 0.3:
            text += f" {symbol['kind']}"
        candidates.append(Candidate(text, [target_of(path, symbol)]))
    return candidates


def error_queries(records: list[dict]) -> list[Candidate]:
    thrown: dict[str, list[Target]] = defaultdict(list)
    for record in records:
        for symbol in record["symbols"]:
            for throw in symbol["throws"]:
                message = " ".join(throw["message"].rstrip("…").split())
                if len(words(message)) >= 3:
                    thrown[message].append(target_of(record["path"], symbol))
    return [Candidate(message, [targets[0]]) for message, targets in sorted(thrown.items()) if len(set(targets)) == 1]


def top_level(symbols: list[dict]) -> list[dict]:
    """Symbols inside no other symbol's range (of overloads, each signature: any of them answers)."""
    return [
        s
        for s in symbols
        if not any(
            o is not s
            and o["start_line"] <= s["start_line"]
            and s["end_line"] <= o["end_line"]
            and (o["start_line"], o["end_line"]) != (s["start_line"], s["end_line"])
            for o in symbols
        )
    ]


def path_queries(records: list[dict]) -> list[Candidate]:
    paths = [record["path"] for record in records]
    candidates = []
    for record in records:
        parts = record["path"].split("/")
        if len(parts) < 2:
            continue
        suffix = "/".join(parts[-2:])
        if sum(p == suffix or p.endswith("/" + suffix) for p in paths) != 1:
            continue
        tops = [s for s in top_level(record["symbols"]) if s["has_body"]]
        if tops:
            targets = [target_of(record["path"], s) for s in tops]
            card = record["card"]  # None: a file without statements (never one with symbols)
            if card:
                # Last, so a sample's order (by the first target) is what it was before the card was one.
                targets.append(Target(record["path"], MODULE_QUALIFIED_NAME, card["start_line"], card["end_line"]))
            candidates.append(Candidate(suffix, targets, leaks=False))
    return candidates
