"""Plain comments on a declaration -> that symbol, the comment blanked: JSDoc's rule for code that uses `//`.

Much JavaScript documents its functions with `//` lines or a `/* */` block instead of a JSDoc
(`// Resolve the config file, walking up from cwd.`). Such a comment is the same signal as a
JSDoc, so the rule is the JSDoc rule's (models/corpus/mine_jsdoc.py): the comment must sit
directly on the declaration (its last line on the line above, whole-line comments only), of a
function, method, constructor, accessor or class with a body and no JSDoc of its own (that one is
the JSDoc rule's); its first sentence, 5..40 words, is the query; dropped when it names the
symbol, when the same sentence documents two symbols, and when it is not prose: a tool directive
or note (eslint, istanbul, @ts-..., prettier, TODO/FIXME/XXX/HACK, a licence line) or commented-out
code (`;`, `{`, `}`, `=>` or ` = ` in the sentence), or a sentence that continues a thought
(starting We, It, This, That, Also, But, Otherwise, ...: it needs the code around it).
Blanked: the comment's lines.
"""

from __future__ import annotations

import re
from collections import Counter

from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.queries.symbol_queries import MAX_QUERY_WORDS, MIN_QUERY_WORDS
from codecompass_dev.queries.text import first_sentence, leaks_name, words
from models.corpus.mine_jsdoc import ANY_SCOPE_KINDS
from models.corpus.pairs import Pair, finalize

RULE = "comment"
_LINE_COMMENT = re.compile(r"^\s*//(?!/)")
_BLOCK_END = re.compile(r"\*/\s*$")
_BLOCK_START = re.compile(r"^\s*/\*(?!\*)")
_MARKERS = re.compile(r"^\s*(?://+|/\*+|\*+(?!/))|\*+/\s*$", re.MULTILINE)
_NOT_PROSE = re.compile(
    r"eslint|istanbul|@ts-|prettier|jshint|tslint|c8 ignore|#(?:end)?region|^\s*(?:todo|fixme|xxx|hack|note)\b"
    r"|licen[cs]e|copyright|spdx",
    re.IGNORECASE | re.MULTILINE,
)
_CODE = re.compile(r"[;{}]|=>| = ")
# A sentence that continues a thought ("We do the same in the other direction.") needs the code
# around it to mean anything; a description of the symbol starts on its own.
_CONTINUES = re.compile(
    r"^(?:we|i|it|its|this|that|these|those|they|here|also|and|but|so|then|otherwise|however|else|see)\b",
    re.IGNORECASE,
)


def comment_above(lines: list[str], start_line: int) -> tuple[int, int] | None:
    """The 0-based first and last line of the whole-line comment ending on the line above `start_line`."""
    last = start_line - 2
    if last < 0:
        return None
    if _LINE_COMMENT.match(lines[last]):
        first = last
        while first > 0 and _LINE_COMMENT.match(lines[first - 1]):
            first -= 1
        return first, last
    if _BLOCK_END.search(lines[last]):
        for first in range(last, max(-1, last - 40), -1):
            if "/*" in lines[first]:
                return (first, last) if _BLOCK_START.match(lines[first]) else None
    return None


def mine(records: list[dict], texts: dict[str, str], cap: int, seed: str, stats: Counter) -> list[Pair]:
    pairs = []
    for record in records:
        text = texts[record["path"]]
        lines = text.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        for symbol in record["symbols"]:
            if symbol["kind"] not in ANY_SCOPE_KINDS or not symbol["has_body"] or symbol["jsdoc_spans"]:
                continue
            found = comment_above(lines, symbol["start_line"])
            if found is None:
                continue
            stats["comment_found"] += 1
            first, last = found
            comment = "\n".join(lines[first : last + 1])
            sentence = first_sentence(_MARKERS.sub("", comment))
            if _NOT_PROSE.search(comment) or _CODE.search(sentence) or _CONTINUES.match(sentence):
                stats["comment_not_prose"] += 1
                continue
            if not MIN_QUERY_WORDS <= len(words(sentence)) <= MAX_QUERY_WORDS or leaks_name(sentence, symbol["name"]):
                stats["comment_too_short_or_leaks"] += 1
                continue
            target = Target(record["path"], symbol["qualified_name"], symbol["start_line"], symbol["end_line"])
            span = [
                starts[first] + len(lines[first]) - len(lines[first].lstrip()),
                starts[last] + len(lines[last].rstrip()),
            ]
            blank = [{"path": record["path"], "spans": [span]}]
            pairs.append(Pair(RULE, sentence, [target], blank, {"path": record["path"], "kind": symbol["kind"]}))
    kept, dropped = finalize(pairs, cap, seed)
    stats.update({f"comment_{key}": value for key, value in dropped.items()})
    return kept
