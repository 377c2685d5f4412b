"""How each MCP tool's answer reads: text for the model that called it and structured content for
the client program, within the response caps. semantic_search presents the typed answer
(`answer.SearchAnswer`): notes first, for what the agent must know besides the code, one text item
per result, and the answer as data (`SearchAnswer.to_dict`) without the code; the CLI's presenter
of the same answer is `codecompass_cli.render`. search_code presents its typed answer
(`answer.CodeSearchAnswer`): one text item, and seed 003's JSON (`CodeSearchAnswer.to_dict`) as
structured content. What the tools take, and their limits, is `tools`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.types import Annotations, CallToolResult, ContentBlock, TextContent

from codecompass.common.chunks import NodeKind
from codecompass.common.inputs import quoted
from codecompass.common.tokens import count_tokens
from codecompass.contracts.analysis.model import (
    ChunkedFile,
    FileStatus,
    TraceDirection,
    TraceOutcome,
    TracePartialReason,
    TraceResolution,
    TraceRoot,
)
from codecompass.contracts.retrieval.model import IndexStatusReport
from codecompass.policy.relevance import priority
from codecompass_gateway import errors, skips
from codecompass_gateway.advisor import Advice
from codecompass_gateway.answer import (
    AnswerMetadata,
    CodeResult,
    CodeSearchAnswer,
    RankedItem,
    SearchAnswer,
    SelectedItem,
    item_to_dict,
    no_confident_match,
    semantic_channels_line,
)
from codecompass_gateway.errors import ToolInputError, one_line
from codecompass_gateway.packages import Package, package_of
from codecompass_gateway.symbols import SymbolView
from codecompass_gateway.tools import RESPONSE_MAX_TOKENS, SELECTION_MAX_TOKENS, SearchBudget
from codecompass_gateway.workspaces import Merged

# --- semantic_search ---------------------------------------------------------------------------


def _result_text(result: SelectedItem | RankedItem, packages: tuple[Package, ...] = (),
                 workspace: Path | None = None) -> str:
    """`workspace`: the one it came from, when a search spanned several."""
    # A selected result comes with its header; a ranked one is headed here, and says where its
    # clipped lines are.
    given = result.header if isinstance(result, SelectedItem) else ""
    header = given or f"// {result.path} > {result.qualified_name}"
    if (package := package_of(result.path, packages)) is not None:
        header += f"  (package {package.name})"
    if workspace is not None:
        header += f"  (workspace {workspace})"
    if result.stale:
        header += "  (stale: the file changed since it was indexed; read_symbol shows it as it is now)"
    text = f"{header}\n{result.code}"
    omitted = result.lines_omitted if isinstance(result, SelectedItem) else result.code_lines_omitted
    if omitted and not given:
        text += f"\n// … {omitted} more lines: read_symbol \"{result.path}:{result.start_line}\""
    return text


def _being_written(meta: AnswerMetadata) -> str | None:
    """How far the index is when a sync was still writing it as the search ran: the answer
    covers only that part. None when the index was complete (or the sync had finished)."""
    progress = meta.indexing_progress
    if progress is None or meta.indexing_status == "ready":
        return None
    step = {"lexical": "first pass", "chunking": "full pass", "writing": "writing",
            "scanning": "listing files"}.get(progress.phase, progress.phase)
    files = f"{progress.files_done:,} of {progress.files_total:,} files, " if progress.files_total else ""
    return f"{step}: {files}{progress.chunks_written:,} chunks searchable so far"


def search_notes(answer: SearchAnswer, workspace: Path, query: str,
                 filters: dict[str, Any] | None = None, doubt_first: bool = True) -> list[str]:
    """What the agent must know besides the code: first, when it is so (and `doubt_first`), that
    nothing is a confident match and why; then how far the index is, names it lacks, a filter that
    matched nothing, and why an answer is empty. An empty answer never just says 'no match' when the
    reason is elsewhere."""
    meta = answer.metadata
    status = meta.indexing_status
    written = _being_written(meta)
    missing, nearest = meta.missing_names, meta.nearest_names
    # An answer with results shows the filters matched; an older server leaves filtered_chunks 0.
    filtered_out = not answer.results and bool(meta.total_chunks) and meta.filtered_chunks == 0
    low, reason = meta.low_confidence, meta.low_confidence_reason or ""
    # A filter that matched nothing is said first by its own note, which names the filter.
    doubt = low and not filtered_out
    notes = [no_confident_match(query, reason, bool(answer.results))] if doubt and doubt_first else []
    if meta.freshness_reason:
        notes.append(f"Possibly out of date: {meta.freshness_reason}.")
    if written is not None:
        notes.append(f"The index of {workspace} is still being written ({written}): these results come from that "
                     "part only; ask again shortly for the rest (index_status shows progress).")
    elif status == "failed":
        notes.append(f"Indexing {workspace} did not finish: these results come from what was indexed; "
                     "index_status says why.")
    elif status != "ready" and "static" in meta.vector_channels:
        notes.append(f"The index of {workspace} is {status.replace('_', ' ')}; {semantic_channels_line(meta)}: "
                     "semantic matches of chunks not embedded yet come from static vectors; ask again later "
                     "for the primary model's.")
    elif status != "ready":
        total, embedded = meta.total_chunks, meta.embedded_chunks
        share = f", {embedded}/{total} chunks embedded" if total else ""
        notes.append(f"The index of {workspace} is {status.replace('_', ' ')}{share}: these results are lexical "
                     "(exact words and identifiers) until embeddings catch up; ask again later for semantic matches.")
    elif meta.freshness_status == "syncing":
        notes.append("Recent edits are still being indexed: results marked stale show the code as it was "
                     "indexed; read_symbol shows it as it is now.")
    elif meta.semantic_fallback:
        notes.append(f"Semantic search was skipped ({meta.semantic_skipped_reason or 'unavailable'}); "
                     "results are lexical.")
    elif meta.primary_unavailable_reason:
        notes.append(f"The embedding model could not embed the query; {semantic_channels_line(meta)}.")
    if missing and not (low and all(name in reason for name in missing)):  # else the first line named them
        names = ", ".join(missing)
        closest = f"; the nearest names are {', '.join(nearest)}" if nearest else ""
        notes.append(f"Nothing in the index is named {names}{closest}. Results below (if any) are only near matches.")
    if filtered_out:
        given = ", ".join(f"{k}={quoted(v)}" for k, v in (filters or {}).items() if v not in (None, "", True))
        notes.append(f"The filter{' ' + given if given else 's'} matched no indexed code (the index holds "
                     f"{meta.total_chunks:,} chunks): paths are relative to {workspace}, e.g. `src/auth` or "
                     "`**/*.tsx`. Search again without it, or with another one.")
    if not answer.results and written is not None:
        notes.append(f"Nothing matched {quoted(query)} in the part of {workspace} indexed so far; the rest is still "
                     "being written.")
    elif not answer.results and not filtered_out and low:
        notes.append("Try the identifiers you expect (a function or class name), or other words.")
    elif not answer.results and not filtered_out:
        notes.append(f"No code in {workspace} matched {quoted(query)} within the budget. Try a larger max_tokens, the "
                     "identifiers you expect (a function or class name), or a shorter query.")
    return notes


def search_result(answer: SearchAnswer, workspace: Path, query: str, budget: SearchBudget,
                  extra_metadata: dict[str, Any], packages: tuple[Package, ...] = ()) -> CallToolResult:
    """One text item per result (header + code, priority = relevance), structured content without
    the code, and the whole within RESPONSE_MAX_TOKENS (and DEFAULT_MAX_CHARS at the default budget):
    the lowest-ranked results go first when it is not."""
    results = answer.results
    best = max((r.score for r in results), default=0.0)
    notes = search_notes(answer, workspace, query, extra_metadata.get("filters"))
    items = [(_result_text(r, packages), _priority(r, best)) for r in results]
    data = answer.to_dict()
    known = _counted_by_selection(results, [text for text, _ in items])
    structured_results = [{**{k: v for k, v in r.items() if k != "code"}, **_package_field(r["path"], packages)}
                          for r in data["results"]]
    metadata = {**data["metadata"], **extra_metadata, "workspace": str(workspace)}
    return _fitted(notes, items, structured_results, {"selection": data["selection"], "metadata": metadata},
                   budget.max_chars, known)


def _priority(result: SelectedItem | RankedItem, best: float) -> float:
    return priority(result.relevance if isinstance(result, SelectedItem) else None, result.score, best)


def workspaces_search_result(merged: Merged[SearchAnswer, SelectedItem | RankedItem], query: str,
                             budget: SearchBudget, extra_metadata: dict[str, Any]) -> CallToolResult:
    """semantic_search over several workspaces: each workspace's notes (each line naming it, the
    surest workspace's first), one line per workspace not searched, then the merged results, each
    headed with the workspace it came from; as data, each result's `workspace`, each workspace's own
    selection and metadata under `workspaces`, and the surest workspace's metadata as the answer's
    (its confidence is the answer's)."""
    searched, surest, filters = merged.searched, merged.most_confident, extra_metadata.get("filters")
    # The surest workspace's notes first: its doubt, when it has one, is the whole answer's, and many
    # agents read only the first line. Another workspace's doubt is only that it adds nothing sure.
    notes = [f"{surest.root}: {note}" for note in search_notes(surest.answer, surest.root, query, filters)]
    for other in (s for s in searched if s is not surest):
        meta = other.answer.metadata
        if meta.low_confidence:
            why = f" ({meta.low_confidence_reason})" if meta.low_confidence_reason else ""
            notes.append(f"{other.root}: no confident match here{why}.")
        notes += [f"{other.root}: {note}"
                  for note in search_notes(other.answer, other.root, query, filters, doubt_first=False)]
    notes += [f"{f.root}: not searched: {f.reason}" for f in merged.failed]
    best = max((r.score for _, r in merged.results), default=0.0)
    items = [(_result_text(r, searched[i].packages, searched[i].root), _priority(r, best)) for i, r in merged.results]
    known = _counted_by_selection([r for _, r in merged.results], [text for text, _ in items])
    structured_results = [{**{k: v for k, v in item_to_dict(r).items() if k != "code"},
                           "workspace": str(searched[i].root), **_package_field(r.path, searched[i].packages)}
                          for i, r in merged.results]
    per_workspace = [{"workspace": str(s.root), "results": sum(1 for i, _ in merged.results if searched[i] is s),
                      "selection": data["selection"], "metadata": data["metadata"]}
                     for s in searched for data in [s.answer.to_dict()]]
    metadata = {**merged.most_confident.answer.metadata.to_dict(), **extra_metadata,
                "workspaces": [str(s.root) for s in searched]}
    return _fitted(notes, items, structured_results,
                   {"workspaces": per_workspace, "failed": _failed_data(merged), "metadata": metadata},
                   budget.max_chars, known)


def _failed_data(merged: Merged[Any, Any]) -> list[dict[str, str]]:
    return [{"workspace": str(f.root), "error": f.reason} for f in merged.failed]


def _counted_by_selection(results: Sequence[SelectedItem | RankedItem], texts: Sequence[str]) -> dict[str, int]:
    """{text: tokens} of the results' texts that are exactly what selection counted (its header, a
    newline, its code; a count of 0 is none): selection counts cl100k_base as the gateway does, and
    counting an answer's texts again took 15% of the gateway's CPU for it (all 1,196 texts of 50
    ws-300k answers: the same count)."""
    return {text: r.tokens for r, text in zip(results, texts, strict=True)
            if isinstance(r, SelectedItem) and r.tokens > 0 and text == f"{r.header}\n{r.code}"}


def _fitted(notes: list[str], items: list[tuple[str, float]], structured_results: list[dict[str, Any]],
            rest: dict[str, Any], max_chars: int | None, known: dict[str, int] | None = None) -> CallToolResult:
    """The notes, then one text item per result (text, priority); as structured content the results
    followed by `rest` (whose "metadata" says what was dropped); within RESPONSE_MAX_TOKENS (and
    `max_chars`): the lowest-ranked results go first when it is not. `known`: texts already counted."""

    def build(keep: int) -> tuple[list[TextContent], dict[str, Any]]:
        content = [TextContent(type="text", text=note, annotations=Annotations(audience=["assistant"], priority=1.0))
                   for note in notes]
        content += [TextContent(type="text", text=text, annotations=Annotations(audience=["assistant"], priority=p))
                    for text, p in items[:keep]]
        structured: dict[str, Any] = {"results": structured_results[:keep], **rest,
                                      "metadata": dict(rest["metadata"])}
        if keep < len(items):
            structured["metadata"]["response_truncated"] = {
                "dropped_results": len(items) - keep,
                "reason": "response size cap (25,000 tokens; 50,000 characters at the default budget)"}
        if not content:
            content = [TextContent(type="text", text="No results.")]
        return content, structured

    # Each text is counted once, however many sizes are tried (counting was a fifth of the
    # gateway's time for an answer).
    counted: dict[str, int] = dict(known or {})

    def tokens(text: str) -> int:
        if text not in counted:
            counted[text] = count_tokens(text)
        return counted[text]

    keep = len(items)
    content, structured = build(keep)
    serialized = json.dumps(structured)
    while keep > 0 and not _fits(content, serialized, max_chars, tokens):
        keep -= 1
        content, structured = build(keep)
        serialized = json.dumps(structured)
    structured["metadata"]["response_tokens"] = sum(tokens(c.text) for c in content) + tokens(serialized)
    # As a list of any content block, the type the result's field has (a list's item type is invariant).
    return CallToolResult(content=list[ContentBlock](content), structured_content=structured)


def _fits(content: list[TextContent], serialized: str, max_chars: int | None, tokens: Callable[[str], int]) -> bool:
    if max_chars is not None and sum(len(c.text) for c in content) + len(serialized) > max_chars:
        return False
    return sum(tokens(c.text) for c in content) + tokens(serialized) <= RESPONSE_MAX_TOKENS


# --- search_code -------------------------------------------------------------------------------


def search_code_text(answer: CodeSearchAnswer, query: str, labels: Sequence[Mapping[str, str]] = (),
                     preamble: Sequence[str] = ()) -> str:
    """The answer as the model reads it: that nothing is a confident match, when so; one header line
    (how many, the query's intent, how sure); what to do when unsure; `preamble`; then one line per
    result, ending in its `labels` (the package it is in; the workspace, when a search spanned
    several), and its snippet. Programs read the same answer as structured content (seed 003's
    JSON); it is not repeated here."""
    meta, results = answer.metadata, answer.results
    intent = answer.query_intent.replace("_", " ")
    lines = [no_confident_match(query, meta.low_confidence_reason, bool(results))] if meta.low_confidence else []
    lines.append(f"{len(results)} results of {answer.total_candidates} candidates (query read as {intent}, "
                 f"confidence {meta.confidence:.2f})")
    if meta.low_confidence:
        lines.append(f"Next: {meta.suggested_action}")
    if meta.intent_escalation_hint:
        lines.append(meta.intent_escalation_hint)
    if meta.indexing_status != "ready":
        lines.append(f"The index is {meta.indexing_status.replace('_', ' ')}: results match exact words and names "
                     "until it is ready.")
    elif meta.freshness_status == "stale":
        lines.append("The index may be out of date: results marked stale show code as it was indexed.")
    if meta.result_completeness == "truncated":
        lines.append("Results were cut to fit the response limit: ask for fewer (limit).")
    lines += preamble
    for rank, result in enumerate(results, 1):
        stale = "  stale" if result.stale else ""
        own = labels[rank - 1] if rank <= len(labels) else {}
        where = "".join(f"  {name} {value}" for name, value in own.items())
        lines.append(f"{rank}. {result.path}:{result.line_start}-{result.line_end}  {result.kind} "
                     f"{result.qualified_name}  score {result.score:.2f} ({result.provenance}){stale}{where}")
        lines += [f"   {line}" for line in result.snippet.splitlines()]
    return "\n".join(lines)


def _package_field(path: str, packages: tuple[Package, ...]) -> dict[str, str]:
    """{"package": name} for a result in a package of the workspace; nothing when it declares none."""
    package = package_of(path, packages)
    return {"package": package.name} if package is not None else {}


def search_code_result(answer: CodeSearchAnswer, query: str, extra_metadata: dict[str, Any],
                       packages: tuple[Package, ...] = ()) -> CallToolResult:
    """Seed 003's answer as structured content (its metadata followed by `extra_metadata`), and as
    text for the model, within RESPONSE_MAX_TOKENS together: the lowest-ranked results go first
    when they are not (then `result_completeness: truncated`)."""
    return _ranked_list(answer, query, [_package_field(r.path, packages) for r in answer.results], extra_metadata)


def workspaces_code_result(merged: Merged[CodeSearchAnswer, CodeResult], query: str,
                           extra_metadata: dict[str, Any]) -> CallToolResult:
    """search_code over several workspaces: seed 003's answer of the interleaved list, with the
    surest workspace's metadata as the answer's (its confidence is the answer's), each result's
    `workspace`, and each workspace's own metadata under `workspaces`; its text says, per workspace,
    how many of its results are shown and how sure it is, and one line per workspace not searched."""
    searched = merged.searched
    shown = dataclasses.replace(merged.most_confident.answer, results=tuple(r for _, r in merged.results),
                                total_candidates=sum(s.answer.total_candidates for s in searched))
    labels = [{"workspace": str(searched[i].root), **_package_field(r.path, searched[i].packages)}
              for i, r in merged.results]
    preamble = [f"{s.root}: {sum(1 for i, _ in merged.results if searched[i] is s)} of these results, confidence "
                f"{s.answer.metadata.confidence:.2f}"
                + ("; no confident match" if s.answer.metadata.low_confidence else "") for s in searched]
    preamble += [f"{f.root}: not searched: {f.reason}" for f in merged.failed]
    per_workspace = [{"workspace": str(s.root), "query_intent": s.answer.query_intent,
                      "total_candidates": s.answer.total_candidates, "metadata": s.answer.to_dict()["metadata"]}
                     for s in searched]
    return _ranked_list(shown, query, labels, extra_metadata, preamble,
                        {"workspaces": per_workspace, "failed": _failed_data(merged)})


def _ranked_list(answer: CodeSearchAnswer, query: str, labels: Sequence[Mapping[str, str]],
                 extra_metadata: dict[str, Any], preamble: Sequence[str] = (),
                 more: dict[str, Any] | None = None) -> CallToolResult:
    """A ranked list with each result's `labels` (text and data) and `more` data beside it, within
    RESPONSE_MAX_TOKENS."""

    def structured(shown: CodeSearchAnswer) -> dict[str, Any]:
        data = shown.to_dict()
        data["metadata"].update(extra_metadata)
        for result, own in zip(data["results"], labels, strict=False):
            result.update(own)
        return {**data, **(more or {})}

    shown = answer
    text, data = search_code_text(shown, query, labels, preamble), structured(shown)
    while shown.results and count_tokens(text) + count_tokens(json.dumps(data)) > RESPONSE_MAX_TOKENS:
        shown = dataclasses.replace(shown, results=shown.results[:-1],
                                    metadata=dataclasses.replace(shown.metadata, result_completeness="truncated"))
        text, data = search_code_text(shown, query, labels, preamble), structured(shown)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


# --- codebase_trace ----------------------------------------------------------------------------

# A trace's or an outline's line quotes its code on one line, cut to this.
SNIPPET_CHARS = 160

_DIRECTION_PHRASE = {
    TraceDirection.CALLERS: "callers of",
    TraceDirection.CALLEES: "callees of",
    TraceDirection.REFERENCES: "references to",
    TraceDirection.IMPLEMENTATIONS: "implementations of",
    TraceDirection.SUPERTYPES: "supertypes of",
    TraceDirection.SUBTYPES: "subtypes of",
}


def _snippet(text: str) -> str:
    text = one_line(text)
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


def _root_line(root: TraceRoot) -> str:
    return f"{root.qualified_name} ({root.relative_path}:{root.start_line}-{root.end_line})"


def trace_text(outcome: TraceOutcome, direction: TraceDirection, depth: int) -> str:
    phrase = _DIRECTION_PHRASE[direction]
    lines = [f"{phrase} {_root_line(outcome.root)}"]
    shown = len(outcome.nodes)
    by_name = sum(1 for n in outcome.nodes if n.resolved_by is TraceResolution.NAME)
    if outcome.partial:
        reason = outcome.partial_reason.value if outcome.partial_reason else "partial"
        hint = {"limit": "raise limit to see more", "deadline": "the 5 s budget ran out; lower depth",
                "depth": "depth is at most 3",
                # An answer the checker could not see whole: say what it is made of, never "complete".
                "unresolved": ("the type checker could not resolve some sites (untyped JavaScript, `this` in a "
                               "function assigned to a property, dynamic calls): those marked [by name] only "
                               "match by name, and sites named differently are missed")}.get(reason, "")
        lines.append(f"{shown} shown of {outcome.total_found} found — partial ({reason}{'; ' + hint if hint else ''})")
    else:
        lines.append(f"{shown} found (depth {depth}), complete")
    if by_name and outcome.partial_reason is not TracePartialReason.UNRESOLVED:
        lines.append(f"{by_name} of them [by name]: the type checker could not resolve those sites")
    if not outcome.nodes:
        lines.append(f"none: the type checker found no {phrase.split()[0]} in the workspace"
                     + (", nor did a search by name"
                        if outcome.partial_reason is TracePartialReason.UNRESOLVED else ""))
    for node in outcome.nodes:
        indent = "  " * (node.depth - 1)
        name = node.qualified_name or "(top level)"
        mark = "  [by name]" if node.resolved_by is TraceResolution.NAME else ""
        lines.append(f"{indent}{node.relative_path}:{node.line}  {name}  — {_snippet(node.snippet)}{mark}")
    return "\n".join(lines)


def trace_result(outcome: TraceOutcome, direction: TraceDirection, depth: int, workspace: Path,
                 metadata: dict[str, Any]) -> CallToolResult:
    structured = {**trace_structured(outcome, direction), "metadata": {**metadata, "workspace": str(workspace)}}
    return CallToolResult(content=[TextContent(type="text", text=trace_text(outcome, direction, depth))],
                          structured_content=structured)


def trace_structured(outcome: TraceOutcome, direction: TraceDirection) -> dict[str, Any]:
    root = outcome.root
    return {
        "direction": direction.value,
        "root": {"path": root.relative_path, "qualified_name": root.qualified_name, "start_line": root.start_line,
                 "end_line": root.end_line, "id": root.chunk_id},
        # resolved_by: "checker" (the type checker resolved the site) or "name" (it could not; the site
        # only matches by name).
        "nodes": [{"path": n.relative_path, "line": n.line, "qualified_name": n.qualified_name, "id": n.chunk_id,
                   "depth": n.depth, "snippet": _snippet(n.snippet), "resolved_by": n.resolved_by.value}
                  for n in outcome.nodes],
        "partial": outcome.partial,
        "partial_reason": outcome.partial_reason.value if outcome.partial_reason else None,
        "total_found": outcome.total_found,
        "returned": len(outcome.nodes),
    }


# --- read_symbol -------------------------------------------------------------------------------


def clip_to_tokens(text: str, max_tokens: int) -> tuple[str, int]:
    """`text` cut at a line so that it fits `max_tokens`, and how many lines were cut."""
    if count_tokens(text) <= max_tokens:
        return text, 0
    lines = text.splitlines()
    low, high = 0, len(lines)
    while low < high:  # the most lines that fit
        mid = (low + high + 1) // 2
        if count_tokens("\n".join(lines[:mid])) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return "\n".join(lines[:low]), len(lines) - low


def symbol_result(view: SymbolView, workspace: Path, metadata: dict[str, Any]) -> CallToolResult:
    root = view.root
    header = f"// {root.relative_path} > {root.qualified_name}  (lines {root.start_line}-{root.end_line})"
    source, cut = clip_to_tokens(view.source, SELECTION_MAX_TOKENS)
    text = f"{header}\n{source}"
    if cut:
        text += f"\n// … {cut} more lines cut to stay within the response limit; expand fewer members"
    notes = []
    if view.not_found:
        notes.append(f"no member named {', '.join(view.not_found)} under {root.qualified_name}; "
                     "the collapsed lines above name the members there are")
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    content += [TextContent(type="text", text=n) for n in notes]
    shown = {} if view.window is None else {"window": dataclasses.asdict(view.window)}
    structured = {
        "path": root.relative_path, "qualified_name": root.qualified_name, "start_line": root.start_line,
        "end_line": root.end_line, "id": root.chunk_id, "tokens": view.token_count, "expanded": list(view.expanded),
        "expand_not_found": list(view.not_found), "lines_cut": cut,
        "metadata": {**metadata, **shown, "workspace": str(workspace)},
    }
    return CallToolResult(content=content, structured_content=structured)


def outline_result(chunks: ChunkedFile, workspace: Path, metadata: dict[str, Any]) -> CallToolResult:
    if chunks.status == FileStatus.SKIPPED:
        raise ToolInputError(f"{chunks.relative_path} is not indexed ({chunks.skip_detail or 'skipped'})",
                             errors.NOT_FOUND_CODE)
    symbols = [c for c in chunks.chunks if c.node_kind is not NodeKind.MODULE]
    depth0 = min((c.depth for c in symbols), default=0)
    lines = [(f"// {chunks.relative_path} — outline: {len(symbols)} symbols, {chunks.line_count} lines. "
              "read_symbol with a name below shows its code.")]
    entries = []
    for chunk in symbols:
        signature = _snippet(chunk.signature or f"{chunk.node_kind.value} {chunk.name}")
        indent = "  " * (chunk.depth - depth0)
        lines.append(f"L{chunk.start_line}-{chunk.end_line}  {indent}{signature}")
        entries.append({"qualified_name": chunk.qualified_name, "kind": chunk.node_kind.value,
                        "start_line": chunk.start_line, "end_line": chunk.end_line, "signature": signature,
                        "depth": chunk.depth - depth0, "id": chunk.id})
    if not symbols:
        lines.append("(no declarations: only top-level statements)")
    text, cut = clip_to_tokens("\n".join(lines), SELECTION_MAX_TOKENS)
    structured = {"path": chunks.relative_path, "outline": entries, "line_count": chunks.line_count,
                  "lines_cut": cut, "metadata": {**metadata, "workspace": str(workspace)}}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


# --- index_status ------------------------------------------------------------------------------


# Files not indexed, named in index_status's text and listed in its structured answer.
_STATUS_LEFT_OUT_SHOWN = 5
_STATUS_LEFT_OUT_LISTED = 50


# Packages named in index_status's text; its structured content lists them all.
_STATUS_PACKAGES_SHOWN = 30


def status_result(report: IndexStatusReport, workspace: Path, background: str | None,
                  metadata: dict[str, Any], advice: Advice | None = None,
                  packages: tuple[Package, ...] = ()) -> CallToolResult:
    share = report.embedded_chunks / report.chunks if report.chunks else 0.0
    model = report.embedding_model_id or "none yet"
    if report.embedding_model_version:
        model += f" ({report.embedding_model_version})"
    line = (f"{workspace}: {report.indexing_status.value.replace('_', ' ')} — {report.files} files, "
            f"{report.chunks} chunks, {report.embedded_chunks} embedded ({share:.0%}), model {model}, "
            f"index {report.index_bytes / 1e6:.1f} MB")
    lines = [line]
    if report.static_model_id:
        # Written with the chunks: what semantic search covers while the primary model catches up.
        lines.append(f"static vectors ({report.static_model_id}): {report.static_vector_chunks} of "
                     f"{report.chunks} chunks, searched for every chunk not embedded yet")
    synced = None
    if report.last_sync_at is not None:
        synced = dt.datetime.fromtimestamp(report.last_sync_at, dt.UTC).isoformat(timespec="seconds")
        synced = synced.replace("+00:00", "Z")
        age = max(time.time() - report.last_sync_at, 0.0)
        lines.append(f"last sync {synced} ({_age(age)} ago): edits since then are picked "
                     "up by the next search")
    else:
        lines.append("no sync has finished yet")
    if report.error:
        lines.append(f"last indexing error: {one_line(report.error)}")
    # Files whose code is not in the index: a search cannot find them, so say which.
    left_out = [s for s in report.skipped if s.reason in skips.CONTENT_LEFT_OUT]
    if report.skipped:
        lines.append(skips.summary(report.skipped))
    for entry in left_out[:_STATUS_LEFT_OUT_SHOWN]:
        lines.append(f"  not indexed: {entry.relative_path} "
                     f"({skips.label(entry.reason)}: {entry.detail or 'no detail'})")
    if len(left_out) > _STATUS_LEFT_OUT_SHOWN:
        lines.append(f"  … {len(left_out) - _STATUS_LEFT_OUT_SHOWN} more not indexed; "
                     "`codecompass index --show-skipped` lists them all")
    if packages:
        shown = ", ".join(f"{p.name} ({p.folder})" for p in packages[:_STATUS_PACKAGES_SHOWN])
        more = f", … {len(packages) - _STATUS_PACKAGES_SHOWN} more" if len(packages) > _STATUS_PACKAGES_SHOWN else ""
        lines.append(f"packages ({len(packages)}; a search's `package` scopes it to one): {shown}{more}")
    if background:
        lines.append(f"this gateway: {background}")
    if report.indexing_status.value == "not_indexed" and not background:
        lines.append("a search (semantic_search or search_code) on this workspace starts indexing it")
    elif report.indexing_status.value != "ready":
        lines.append("searches answer lexically (exact words and identifiers) until the index is ready")
    if advice is not None:
        change = ("keep it" if advice.profile == advice.current_profile
                  else f"set embedding.profile: {advice.profile} (this changes nothing by itself)")
        lines.append(f"profile advisor: {advice.tier} ({', '.join(advice.reasons)}); current profile "
                     f"{advice.current_profile}: {change}")
    structured = {
        "workspace": str(workspace), "indexing_status": report.indexing_status.value, "files": report.files,
        "chunks": report.chunks, "embedded_chunks": report.embedded_chunks, "embedded_share": round(share, 4),
        "static_vector_chunks": report.static_vector_chunks, "static_model_id": report.static_model_id,
        "static_model_version": report.static_model_version,
        "embedding_model_id": report.embedding_model_id, "embedding_model_version": report.embedding_model_version,
        "index_format_version": report.index_format_version, "index_bytes": report.index_bytes,
        "error": report.error, "background_indexing": background, "last_sync_time": synced,
        "packages": [{"name": p.name, "folder": p.folder} for p in packages],
        "skipped": {
            "count": len(report.skipped),
            "by_reason": dict(sorted(Counter(s.reason for s in report.skipped).items())),
            "not_indexed": [{"path": s.relative_path, "reason": s.reason, "detail": s.detail}
                            for s in left_out[:_STATUS_LEFT_OUT_LISTED]],
            "not_indexed_count": len(left_out),
        },
        "metadata": metadata,
        "profile_advice": None if advice is None else {
            "tier": advice.tier, "profile": advice.profile, "current_profile": advice.current_profile,
            "reasons": list(advice.reasons), "size_bucket": advice.size_bucket},
    }
    return CallToolResult(content=[TextContent(type="text", text="\n".join(lines))], structured_content=structured)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
