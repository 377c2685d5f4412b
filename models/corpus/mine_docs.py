"""Documentation sections -> the one symbol their heading names: a library's own API reference.

READMEs and docs/ pages document an API section by section (`### program.parse(argv)` followed
by "Parse the arguments and invoke the matching command."). The rule, over the repository's
Markdown files (not changelogs, licences, contribution guides, or files under test or skipped
folders):

- a section is an ATX heading (`#`..`######`, fenced code ignored) and the lines up to the next
  heading;
- the heading must name code: its code spans (`parse(argv)`), or, with none, the words written
  as a call (`parse(argv)`), of a call only the callee (`uuid.v4(options)` names v4); of the
  identifiers there, exactly one must be the name of a symbol
  of the repository's non-test code (functions, methods, classes, interfaces, types, enums, the
  exported constants the JSDoc rule knows), and that name must belong to exactly one symbol.
  "## Options" or "## Usage" names no code; `### new Foo(bar).run()` with both Foo and run
  defined names two;
- the query is the first sentence of the section's first prose paragraph (not a list, table,
  quote, image, HTML or code), Markdown stripped, 5..40 words, not naming the symbol.

Nothing is blanked: the index chunks TS/JS only, so the Markdown is never a document that could
answer by its own text.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from codecompass.common.testcode import is_test_path
from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.queries.markdown import code_spans, first_paragraph, sections
from codecompass_dev.queries.symbol_queries import MAX_QUERY_WORDS, MIN_QUERY_WORDS
from codecompass_dev.queries.text import first_sentence, leaks_name, words
from models.corpus.mine_jsdoc import documented
from models.corpus.pairs import MAX_SOURCE_BYTES, SKIPPED_DIRS, Pair, finalize

RULE = "doc"
_NOT_DOCS = re.compile(
    r"^(?:changelog|changes|history|license|licence|contributing|code_of_conduct|security)", re.IGNORECASE
)
_CALL = re.compile(r"[A-Za-z_$][\w$.]*\s*\(")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_NOT_NAMES = frozenset({"constructor", "default", "new", "function", "class", "async", "await", "return"})


def doc_files(root: Path) -> list[str]:
    out = []
    for path in sorted([*root.rglob("*.md"), *root.rglob("*.markdown")]):
        rel = path.relative_to(root).as_posix()
        parts = rel.split("/")
        if set(parts[:-1]) & SKIPPED_DIRS or is_test_path(rel) or _NOT_DOCS.match(parts[-1]):
            continue
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_SOURCE_BYTES:
            out.append(rel)
    return out


def heading_names(heading: str) -> set[str]:
    """The identifiers a heading writes as code: its code spans, or else its calls. Of a call,
    only the callee counts (`uuid.v4(options)` names v4, not uuid or options)."""
    spans = code_spans(heading)
    code = spans if spans else [m.group(0) for m in _CALL.finditer(heading)]
    names = set()
    for part in code:
        calls = _CALL.findall(part)
        found = [_IDENT.findall(call)[-1] for call in calls] if calls else _IDENT.findall(part)
        names.update(name for name in found if name not in _NOT_NAMES)
    return names


def mine(root: Path, records: list[dict], scanned: list[dict], cap: int, seed: str, stats: Counter) -> list[Pair]:
    # name -> (path, qualified name) -> its target (of overloads, the widest: the implementation)
    by_name: dict[str, dict[tuple[str, str], Target]] = defaultdict(dict)
    for record in documented(records, scanned):
        for s in record["symbols"]:
            key = (record["path"], s["qualified_name"])
            old = by_name[s["name"]].get(key)
            if s["has_body"] and (old is None or s["end_line"] - s["start_line"] > old.end_line - old.start_line):
                by_name[s["name"]][key] = Target(record["path"], s["qualified_name"], s["start_line"], s["end_line"])
    pairs = []
    for rel in doc_files(root):
        text = (root / rel).read_text(encoding="utf-8", errors="replace")
        for section in sections(text):
            heading, body = section.heading, section.body
            named = {name for name in heading_names(heading) if name in by_name}
            if not named:
                continue
            stats["doc_sections_naming_code"] += 1
            if len(named) > 1 or len(by_name[next(iter(named))]) > 1:
                stats["doc_ambiguous_heading"] += 1
                continue
            name = next(iter(named))
            query = first_sentence(first_paragraph(body))
            if not MIN_QUERY_WORDS <= len(words(query)) <= MAX_QUERY_WORDS or leaks_name(query, name):
                stats["doc_too_short_or_leaks"] += 1
                continue
            pairs.append(Pair(RULE, query, list(by_name[name].values()), [], {"path": rel, "heading": heading}))
    kept, dropped = finalize(pairs, cap, seed)
    stats.update({f"doc_{key}": value for key, value in dropped.items()})
    return kept
