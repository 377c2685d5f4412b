"""Build the quality benchmark: a JSDoc-stripped workspace and its query set.

Sources: the pinned corpus (bench/.work/chunk-corpus, see bench/corpus/). The
workspace bench/.work/quality-ws is a copy of a few packages' sources with every
JSDoc comment blanked out (its lines kept, so line numbers do not move); what the
docs said is therefore not in the index, and a query written from a doc sentence
has to be answered from the code itself.

Query types (a fixed seed picks the sample; the set is committed as queries.jsonl):
  jsdoc       first sentence of a function's/method's JSDoc -> that symbol. Dropped
              when shorter than 5 words or when it names the target (its name, or
              its split identifier words in sequence).
  identifier  a symbol name split into words, sometimes only part of it and
              sometimes with its kind ("merge map operator") -> the only symbol
              whose name has those words in sequence.
  error       the message of `throw new XError("...")` -> the function that throws
              it (messages thrown in more than one place are dropped).

Run: .venv/bin/python -m bench.quality.build_queries [--seed 20261122]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.lib.text import (
    blank_spans,
    contains_sequence,
    first_sentence,
    leaks_name,
    split_identifier,
    words,
)

BENCH_DIR = Path(__file__).resolve().parent.parent
SOURCE_ROOT = BENCH_DIR / ".work" / "chunk-corpus"
QUALITY_WS = BENCH_DIR / ".work" / "quality-ws"
QUERIES_PATH = Path(__file__).resolve().parent / "queries.jsonl"
EXTRACTOR = Path(__file__).resolve().parent / "extract_symbols.js"

# Package folders (inside chunk-corpus) that make up the quality workspace; tests and
# locale tables are left out, as they carry no JSDoc and would only add noise.
QUALITY_PARTS = ("rxjs/src", "@tanstack__query-core/src", "@tanstack__react-query/src", "zod/src/v4")
EXCLUDED_DIR_NAMES = {"tests", "__tests__", "locales", "node_modules"}
EXCLUDED_SUFFIXES = (".test.ts", ".test.tsx", ".spec.ts", ".spec.tsx", ".d.ts")

DEFAULT_SEED = 20261122
MIN_QUERY_WORDS = 5
MAX_QUERY_WORDS = 40
QUOTAS = {"jsdoc": 180, "identifier": 100, "error": 80}
FUNCTION_KINDS = {"function", "method", "constructor", "accessor"}


@dataclass(frozen=True)
class Target:
    path: str
    qualified_name: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Query:
    id: str
    type: str
    query: str
    targets: tuple[Target, ...]


def quality_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for part in QUALITY_PARTS:
        base = root / part
        if not base.is_dir():
            raise SystemExit(
                f"{base} is missing: run bench/corpus/install.sh and bench/corpus/assemble.py chunk-corpus"
            )
        for path in sorted(base.rglob("*")):
            rel_parts = set(path.relative_to(base).parts[:-1])
            if (
                path.is_file()
                and path.suffix in {".ts", ".tsx"}
                and not path.name.endswith(EXCLUDED_SUFFIXES)
                and not rel_parts & EXCLUDED_DIR_NAMES
            ):
                files.append(path)
    return files


def extract(root: Path, files: list[Path]) -> list[dict]:
    rels = [str(f.relative_to(root)) for f in files]
    out = subprocess.run(
        ["node", str(EXTRACTOR), str(root), *rels], check=True, capture_output=True, text=True, timeout=600
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def write_stripped_workspace(root: Path, records: list[dict], dest: Path) -> int:
    if dest.exists():
        shutil.rmtree(dest)
    blanked = 0
    for record in records:
        source = (root / record["path"]).read_text(encoding="utf-8").removeprefix("\ufeff")
        stripped = blank_spans(source, record["jsdoc_spans"])
        if stripped.count("\n") != source.count("\n"):
            raise AssertionError(f"line count changed while stripping {record['path']}")
        target = dest / record["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(stripped, encoding="utf-8")
        blanked += len(record["jsdoc_spans"])
    return blanked


def target_of(path: str, symbol: dict) -> Target:
    return Target(path, symbol["qualified_name"], symbol["start_line"], symbol["end_line"])


def jsdoc_queries(records: list[dict]) -> list[tuple[str, Target]]:
    candidates: list[tuple[str, Target]] = []
    for record in records:
        for symbol in record["symbols"]:
            if symbol["kind"] not in FUNCTION_KINDS or not symbol["has_body"] or not symbol["jsdoc"]:
                continue
            sentence = first_sentence(symbol["jsdoc"])
            n_words = len(words(sentence))
            if not MIN_QUERY_WORDS <= n_words <= MAX_QUERY_WORDS or leaks_name(sentence, symbol["name"]):
                continue
            candidates.append((sentence, target_of(record["path"], symbol)))
    # The same sentence documenting several symbols cannot have one right answer.
    counts = Counter(text.lower() for text, _ in candidates)
    return [(text, target) for text, target in candidates if counts[text.lower()] == 1]


def identifier_queries(records: list[dict], rng: random.Random) -> list[tuple[str, Target]]:
    by_name: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for record in records:
        for symbol in record["symbols"]:
            if symbol["has_body"] and not symbol["name"].startswith(("_", "#")) and symbol["name"] != "constructor":
                by_name[symbol["name"]].append((record["path"], symbol))
    all_name_words = {name: split_identifier(name) for name in by_name}
    candidates: list[tuple[str, Target]] = []
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
        candidates.append((text, target_of(path, symbol)))
    return candidates


def error_queries(records: list[dict]) -> list[tuple[str, Target]]:
    thrown: dict[str, list[Target]] = defaultdict(list)
    for record in records:
        for symbol in record["symbols"]:
            for throw in symbol["throws"]:
                message = " ".join(throw["message"].rstrip("…").split())
                if len(words(message)) >= 3:
                    thrown[message].append(target_of(record["path"], symbol))
    return [(message, targets[0]) for message, targets in sorted(thrown.items()) if len(set(targets)) == 1]


def sample(candidates: list[tuple[str, Target]], quota: int, rng: random.Random) -> list[tuple[str, Target]]:
    pool = sorted(candidates, key=lambda c: (c[1].path, c[1].start_line, c[0]))
    rng.shuffle(pool)
    return pool[:quota]


def build(seed: int) -> tuple[list[Query], dict]:
    rng = random.Random(seed)
    files = quality_files(SOURCE_ROOT)
    records = extract(SOURCE_ROOT, files)
    blanked = write_stripped_workspace(SOURCE_ROOT, records, QUALITY_WS)
    pools = {
        "jsdoc": jsdoc_queries(records),
        "identifier": identifier_queries(records, rng),
        "error": error_queries(records),
    }
    queries: list[Query] = []
    for kind, pool in pools.items():
        for n, (text, target) in enumerate(sample(pool, QUOTAS[kind], rng)):
            queries.append(Query(f"{kind}-{n:03d}", kind, text, (target,)))
    lines = sum(r["line_count"] for r in records)
    stats = {
        "files": len(records),
        "lines": lines,
        "jsdoc_comments_blanked": blanked,
        **{f"{kind}_candidates": len(pool) for kind, pool in pools.items()},
        **{f"{kind}_queries": sum(q.type == kind for q in queries) for kind in pools},
    }
    return queries, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=QUERIES_PATH)
    args = parser.parse_args(argv)
    queries, stats = build(args.seed)
    with open(args.out, "w", encoding="utf-8") as fh:
        for query in queries:
            record = asdict(query)
            record["targets"] = [asdict(t) for t in query.targets]
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(json.dumps({"workspace": str(QUALITY_WS), "queries": str(args.out), **stats}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
