"""File header comments -> that file, the header blanked.

A header is the first comment before a source file's first statement that is neither a licence
banner (licence, copyright, SPDX, "all rights reserved", "Author:", an editor modeline) nor a tool directive (eslint,
@ts-..., prettier, istanbul, `#region`, `/*!` ...) (models/corpus/extract_tests.js). A comment
that sits directly on the first declaration, with no blank line between, documents that
declaration (the JSDoc rule's business) and is no file header; one above imports,
`require`s or 'use strict' is. Query: its first sentence (JSDoc tags dropped except the text of
@file/@fileoverview/@overview/@description), 4..40 prose words, not a TODO/FIXME note, not
naming the file (its stem's words) or any of its top-level symbols; one header text copied into
several files is dropped. Targets: the file's `<module top level>` chunk (the analysis
service's name for it) and its top-level symbols: any of them answers.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import PurePosixPath

from codecompass.common.chunks import MODULE_QUALIFIED_NAME
from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.queries.symbol_queries import top_level
from codecompass_dev.queries.text import first_sentence
from models.corpus.pairs import Pair, finalize, leaks_any, well_sized

RULE = "header"
_MARKERS = re.compile(r"^\s*(?:/\*+!?|\*+/|//+|\*+(?!/))?", re.MULTILINE)
_TAG = re.compile(r"^@(\w+)\s*(.*)$")
_DESCRIPTIVE_TAGS = {"file", "fileoverview", "overview", "description", "desc"}
_NOTE = re.compile(r"^(?:todo|fixme|xxx|hack)\b", re.IGNORECASE)


def description(comment: str) -> str:
    """The prose of a comment: markers stripped, JSDoc tags dropped except descriptive ones."""
    lines = []
    for line in _MARKERS.sub("", comment.removesuffix("*/")).splitlines():
        text = line.strip()
        tag = _TAG.match(text)
        if tag:
            if tag.group(1).lower() not in _DESCRIPTIVE_TAGS:
                break
            text = tag.group(2)
        lines.append(text)
    return "\n".join(lines).strip()


def mine(scanned: list[dict], records: list[dict], cap: int, seed: str, stats: Counter) -> list[Pair]:
    by_path = {record["path"]: record for record in records}
    pairs = []
    for header in scanned:
        if header["type"] != "header":
            continue
        stats["header_files"] += 1
        record = by_path.get(header["path"])
        if header["attached"] or record is None:
            stats["header_documents_a_declaration"] += 1
            continue
        query = first_sentence(description(header["text"]))
        if not well_sized(query) or _NOTE.match(query) or "://" in query:
            stats["header_too_short_or_note"] += 1
            continue
        tops = [s for s in top_level(record["symbols"]) if s["has_body"]]
        names = [PurePosixPath(header["path"]).name.split(".")[0], *(s["name"] for s in tops)]
        if leaks_any(query, names):
            stats["header_leaks_name"] += 1
            continue
        targets = [Target(header["path"], MODULE_QUALIFIED_NAME, 1, record["line_count"])]
        targets += [Target(header["path"], s["qualified_name"], s["start_line"], s["end_line"]) for s in tops]
        blank = [{"path": header["path"], "spans": [header["span"]]}]
        pairs.append(Pair(RULE, query, targets, blank, {"path": header["path"]}))
    kept, dropped = finalize(pairs, cap, seed)
    stats.update({f"header_{key}": value for key, value in dropped.items()})
    return kept
