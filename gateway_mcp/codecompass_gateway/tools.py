"""What each MCP tool does and how its answer reads, apart from the protocol plumbing (`server`).

Every tool returns a `CallToolResult`: text for the model that called it, structured content for
the client program, and `isError` with one line that says what to change when it could not answer.
Nothing here raises to the SDK: a failure the caller can fix is a `ToolInputError`, a service that
is down is a `ServiceError`, and `tool_errors` turns both (and anything unexpected) into tool errors.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import functools
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.types import Annotations, CallToolResult, ContentBlock, TextContent

from codecompass.clients.analysis_model import (
    FileChunks,
    TraceDirection,
    TraceOutcome,
    TracePartialReason,
    TraceResolution,
    TraceRoot,
)
from codecompass.clients.errors import INVALID, NOT_FOUND, ServiceError
from codecompass.common.chunks import Language, NodeKind
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import current_trace_ids, tracer
from codecompass.common.tokens import count_tokens
from codecompass.policy.relevance import priority
from codecompass.retrieval.filters import FilterError, Filters
from codecompass.retrieval.state import IndexStatusReport
from codecompass_gateway import errors, skips
from codecompass_gateway.advisor import Advice
from codecompass_gateway.answer import no_confident_match, semantic_channels_line
from codecompass_gateway.errors import ToolInputError, one_line
from codecompass_gateway.symbols import SymbolView

log = get_logger("codecompass.gateway.tools")
_tracer = tracer("codecompass.gateway")

# Claude Code rejects a tool result over 25,000 tokens; no answer may reach it, whatever the caller
# asks for. The selection budget stays below it so the structured content and notes fit beside it.
RESPONSE_MAX_TOKENS = 25_000
SELECTION_MAX_TOKENS = 20_000
# Claude Code saves a result over 50,000 characters to a file instead of showing it; an answer at
# the default budget stays under that.
DEFAULT_MAX_CHARS = 50_000
# Code lines per result when selection did not run (the ranked list answers with stored code).
RANKED_CODE_LINES = 80
TRACE_MAX_LIMIT = 200
# Members read_symbol shows in full at once: each one is a resolution (a type-checker call).
EXPAND_MAX_NAMES = 50
SNIPPET_CHARS = 160


def error_result(message: str, code: str = errors.INVALID_ARGUMENT, tool: str = "") -> CallToolResult:
    return errors.error_result(message, code, tool)


def tool_errors(name: str) -> Callable[[Callable[..., CallToolResult]], Callable[..., CallToolResult]]:
    """One span per tool call, and every failure as a tool error with one clear line and its code."""

    def wrap(fn: Callable[..., CallToolResult]) -> Callable[..., CallToolResult]:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> CallToolResult:
            with _tracer.start_as_current_span(f"tool {name}") as span:
                span.set_attribute("codecompass.tool.name", name)
                try:
                    return fn(*args, **kwargs)
                except ToolInputError as exc:
                    span.set_attribute("codecompass.tool.error", exc.code)
                    return error_result(f"{name}: {exc}", exc.code, name)
                except ServiceError as exc:
                    code = errors.code_for_service_error(exc.kind)
                    span.set_attribute("codecompass.tool.error", code)
                    log.warning("tool call failed", extra={"tool": name, "service": exc.service, "kind": exc.kind})
                    if exc.kind in (INVALID, NOT_FOUND):
                        return error_result(f"{name}: {exc}", code, name)
                    return error_result(f"{name}: {exc.user_message()}", code, name)
                except Exception as exc:  # the boundary: a bug must not end the session
                    span.record_exception(exc)
                    log.exception("tool crashed", extra={"tool": name})
                    return error_result(f"{name}: internal error ({type(exc).__name__}); the gateway's log has details",
                                        errors.INTERNAL_ERROR, name)

        return run

    return wrap


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's argument schema as pydantic writes it, less what costs the model tokens and tells it
    nothing (every `title`; an optional argument's `anyOf [T, null]` and its null default: leaving
    it out says the same), and closed: the tool takes no argument it does not list."""

    def lean(node: Any) -> Any:
        if isinstance(node, list):
            return [lean(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: ({name: lean(sub) for name, sub in value.items()} if key == "properties" else lean(value))
               for key, value in node.items() if key != "title"}
        options = out.get("anyOf")
        if isinstance(options, list) and {"type": "null"} in options:
            rest = [option for option in options if option != {"type": "null"}]
            del out["anyOf"]
            out = {**rest[0], **out} if len(rest) == 1 else {**out, "anyOf": rest}
            if "default" in out and out["default"] is None:
                del out["default"]
        return out

    return {**lean(schema), "additionalProperties": False}


# Arguments agents give that another name means; the first one the tool takes is suggested.
_MEANT = {"limit": ("max_tokens",), "max_results": ("limit", "max_tokens"), "top_k": ("limit", "max_tokens"),
          "k": ("limit", "max_tokens"), "max_tokens": ("limit",), "relative_path": ("path",), "file": ("path",),
          "file_path": ("path",), "filepath": ("path",), "name": ("symbol", "query"), "q": ("query",),
          "text": ("query",), "members": ("expand",), "root": ("workspace",), "workspace_root": ("workspace",)}


def unknown_arguments(tool: str, unknown: list[str], takes: list[str]) -> str:
    """One line: the arguments `tool` does not take, what each may have meant, and all it takes."""
    parts = []
    for name in unknown:
        meant = [m for m in _MEANT.get(name, ()) if m in takes][:1] or difflib.get_close_matches(name, takes, 1, 0.6)
        parts.append(f"{name!r} (did you mean {meant[0]}?)" if meant else repr(name))
    noun = "argument" if len(unknown) == 1 else "arguments"
    return f"{tool}: unknown {noun} {', '.join(parts)}; {tool} takes {', '.join(takes)}"


def trace_id() -> str:
    ids = current_trace_ids()
    return ids[0] if ids else ""


# --- workspaces --------------------------------------------------------------------------------


def resolve_workspace(given: str | None, default: Path, roots: tuple[Path, ...] = ()) -> Path:
    """The workspace a call is about: the server's own (`default`) when none is given, else an
    absolute folder at or under `default` or one of `roots` (the server's other --workspace folders
    and its allowed roots). The allow-list is judged before the folder is looked at, so that a
    refused caller learns nothing about what exists outside it."""
    if given is None or not given.strip():
        return default
    path = Path(given.strip()).expanduser()
    if not path.is_absolute():
        raise ToolInputError(f"workspace must be an absolute path, got {given!r}", errors.INVALID_WORKSPACE)
    path = path.resolve()  # a link or `..` cannot lead out of an allowed folder
    allowed = (default, *roots)
    if not any(path == root or root in path.parents for root in allowed):
        raise ToolInputError(f"workspace {str(path)!r} is not a folder this server opens: it opens "
                             f"{', '.join(str(r) for r in allowed)} and the folders under them (start it with "
                             "--workspace or --allow-root for more)", errors.WORKSPACE_REFUSED)
    if not path.exists():
        raise ToolInputError(f"workspace {str(path)!r} does not exist", errors.INVALID_WORKSPACE)
    if not path.is_dir():
        raise ToolInputError(f"workspace {str(path)!r} is not a folder", errors.INVALID_WORKSPACE)
    return path


# --- semantic_search ---------------------------------------------------------------------------


def search_filters(path: str | None, kind: str | None, include_tests: bool) -> Filters:
    try:
        return Filters(
            path_patterns=(path.strip(),) if path and path.strip() else (),
            node_kinds=(NodeKind(kind),) if kind else (),
            exclude_tests=not include_tests,
        )
    except FilterError as exc:
        raise ToolInputError(f"invalid path filter: {exc}") from None
    except ValueError:
        kinds = ", ".join(k.value for k in NodeKind)
        raise ToolInputError(f"kind must be one of {kinds}; got {kind!r}") from None


@dataclass(frozen=True)
class SearchBudget:
    selection_tokens: int | None  # None: the configured default
    max_chars: int | None  # None: no character cap (the caller chose a budget)


def search_budget(max_tokens: int | None) -> SearchBudget:
    """The tool's schema bounds max_tokens by SELECTION_MAX_TOKENS; a larger one never gets here."""
    if max_tokens is None:
        return SearchBudget(selection_tokens=None, max_chars=DEFAULT_MAX_CHARS)
    return SearchBudget(selection_tokens=max_tokens, max_chars=None)


def _result_text(result: dict[str, Any]) -> str:
    header = result.get("header") or f"// {result['path']} > {result['qualified_name']}"
    if result.get("stale"):
        header += "  (stale: the file changed since it was indexed; read_symbol shows it as it is now)"
    text = f"{header}\n{result['code']}"
    omitted = result.get("code_lines_omitted") or result.get("lines_omitted") or 0
    if omitted and not result.get("header"):
        text += f"\n// … {omitted} more lines: read_symbol \"{result['path']}:{result['start_line']}\""
    return text


def _being_written(meta: dict[str, Any]) -> str | None:
    """How far the index is when a sync was still writing it as the search ran: the answer
    covers only that part. None when the index was complete (or the sync had finished)."""
    progress = meta.get("indexing_progress")
    if not progress or meta.get("indexing_status") == "ready":
        return None
    step = {"lexical": "first pass", "chunking": "full pass", "writing": "writing",
            "scanning": "listing files"}.get(progress["phase"], progress["phase"])
    files = (f"{progress['files_done']:,} of {progress['files_total']:,} files, "
             if progress.get("files_total") else "")
    return f"{step}: {files}{progress.get('chunks_written', 0):,} chunks searchable so far"


def search_notes(payload: dict[str, Any], workspace: Path, query: str,
                 filters: dict[str, Any] | None = None) -> list[str]:
    """What the agent must know besides the code: first, when it is so, that nothing is a confident
    match and why; then how far the index is, names it lacks, a filter that matched nothing, and
    why an answer is empty. An empty answer never just says 'no match' when the reason is elsewhere."""
    meta = payload["metadata"]
    status = meta.get("indexing_status", "ready")
    written = _being_written(meta)
    missing, nearest = meta.get("missing_names") or [], meta.get("nearest_names") or []
    # An answer with results shows the filters matched; an older server leaves filtered_chunks 0.
    filtered_out = (not payload["results"] and bool(meta.get("total_chunks"))
                    and meta.get("filtered_chunks") == 0)
    low, reason = bool(meta.get("low_confidence")), meta.get("low_confidence_reason") or ""
    # A filter that matched nothing is said first by its own note, which names the filter.
    notes = [no_confident_match(query, reason, bool(payload["results"]))] if low and not filtered_out else []
    if meta.get("freshness_reason"):
        notes.append(f"Possibly out of date: {meta['freshness_reason']}.")
    if written is not None:
        notes.append(f"The index of {workspace} is still being written ({written}): these results come from that "
                     "part only; ask again shortly for the rest (index_status shows progress).")
    elif status == "failed":
        notes.append(f"Indexing {workspace} did not finish: these results come from what was indexed; "
                     "index_status says why.")
    elif status != "ready" and "static" in (meta.get("vector_channels") or ()):
        notes.append(f"The index of {workspace} is {status.replace('_', ' ')}; {semantic_channels_line(meta)}: "
                     "semantic matches of chunks not embedded yet come from static vectors; ask again later "
                     "for the primary model's.")
    elif status != "ready":
        total, embedded = meta.get("total_chunks", 0), meta.get("embedded_chunks", 0)
        share = f", {embedded}/{total} chunks embedded" if total else ""
        notes.append(f"The index of {workspace} is {status.replace('_', ' ')}{share}: these results are lexical "
                     "(exact words and identifiers) until embeddings catch up; ask again later for semantic matches.")
    elif meta.get("freshness_status") == "syncing":
        notes.append("Recent edits are still being indexed: results marked stale show the code as it was "
                     "indexed; read_symbol shows it as it is now.")
    elif meta.get("semantic_fallback"):
        reason = meta.get("semantic_skipped_reason") or "unavailable"
        notes.append(f"Semantic search was skipped ({reason}); results are lexical.")
    elif meta.get("primary_unavailable_reason"):
        notes.append(f"The embedding model could not embed the query; {semantic_channels_line(meta)}.")
    if missing and not (low and all(name in reason for name in missing)):  # else the first line named them
        names = ", ".join(missing)
        closest = f"; the nearest names are {', '.join(nearest)}" if nearest else ""
        notes.append(f"Nothing in the index is named {names}{closest}. Results below (if any) are only near matches.")
    if filtered_out:
        given = ", ".join(f"{k}={v!r}" for k, v in (filters or {}).items() if v not in (None, "", True))
        notes.append(f"The filter{' ' + given if given else 's'} matched no indexed code (the index holds "
                     f"{meta['total_chunks']:,} chunks): paths are relative to {workspace}, e.g. `src/auth` or "
                     "`**/*.tsx`. Search again without it, or with another one.")
    if not payload["results"] and written is not None:
        notes.append(f"Nothing matched {query!r} in the part of {workspace} indexed so far; the rest is still "
                     "being written.")
    elif not payload["results"] and not filtered_out and low:
        notes.append("Try the identifiers you expect (a function or class name), or other words.")
    elif not payload["results"] and not filtered_out:
        notes.append(f"No code in {workspace} matched {query!r} within the budget. Try a larger max_tokens, the "
                     "identifiers you expect (a function or class name), or a shorter query.")
    return notes


def search_result(payload: dict[str, Any], workspace: Path, query: str, budget: SearchBudget,
                  extra_metadata: dict[str, Any]) -> CallToolResult:
    """One text item per result (header + code, priority = relevance), structured content without
    the code, and the whole within RESPONSE_MAX_TOKENS (and DEFAULT_MAX_CHARS at the default budget):
    the lowest-ranked results go first when it is not."""
    results = list(payload["results"])
    best = max((r["score"] for r in results), default=0.0)
    notes = search_notes(payload, workspace, query, extra_metadata.get("filters"))
    items = [(_result_text(r), priority(r.get("relevance"), r["score"], best)) for r in results]
    structured_results = [{k: v for k, v in r.items() if k != "code"} for r in results]
    metadata = {**payload["metadata"], **extra_metadata, "workspace": str(workspace)}

    def build(keep: int) -> tuple[list[TextContent], dict[str, Any]]:
        content = [TextContent(type="text", text=note, annotations=Annotations(audience=["assistant"], priority=1.0))
                   for note in notes]
        content += [TextContent(type="text", text=text, annotations=Annotations(audience=["assistant"], priority=p))
                    for text, p in items[:keep]]
        structured: dict[str, Any] = {"results": structured_results[:keep], "selection": payload.get("selection"),
                                      "metadata": dict(metadata)}
        if keep < len(items):
            structured["metadata"]["response_truncated"] = {
                "dropped_results": len(items) - keep,
                "reason": "response size cap (25,000 tokens; 50,000 characters at the default budget)"}
        if not content:
            content = [TextContent(type="text", text="No results.")]
        return content, structured

    keep = len(items)
    content, structured = build(keep)
    while keep > 0 and not _fits(content, structured, budget.max_chars):
        keep -= 1
        content, structured = build(keep)
    tokens = sum(count_tokens(c.text) for c in content) + count_tokens(json.dumps(structured))
    structured["metadata"]["response_tokens"] = tokens
    # As a list of any content block, the type the result's field has (a list's item type is invariant).
    return CallToolResult(content=list[ContentBlock](content), structured_content=structured)


def _fits(content: list[TextContent], structured: dict[str, Any], max_chars: int | None) -> bool:
    serialized = json.dumps(structured)
    if max_chars is not None and sum(len(c.text) for c in content) + len(serialized) > max_chars:
        return False
    return sum(count_tokens(c.text) for c in content) + count_tokens(serialized) <= RESPONSE_MAX_TOKENS


# --- search_code -------------------------------------------------------------------------------

SEARCH_CODE_MAX_LIMIT = 50
# A snippet is the head of the result's collapsed code: enough to recognise it, small enough that
# 50 results stay far below the response cap.
SNIPPET_LINES = 8
SNIPPET_LINE_CHARS = 160
# What `ref` may say to mean the files as they are now: the only thing indexed.
WORKING_TREE_REFS = frozenset({"", "working_tree", "worktree"})
# A language as an agent names it -> the languages of the index it covers.
LANGUAGES: dict[str, tuple[Language, ...]] = {
    "typescript": (Language.TYPESCRIPT, Language.TSX),
    "tsx": (Language.TSX,),
    "javascript": (Language.JAVASCRIPT, Language.JSX),
    "jsx": (Language.JSX,),
}


def check_ref(ref: str | None) -> None:
    """Only the working tree is indexed: any other ref is refused rather than silently answered
    from files that may differ from it."""
    if ref is None or ref.strip().lower() in WORKING_TREE_REFS:
        return
    raise ToolInputError(f"ref {ref.strip()!r} is not indexed: only the working tree is (the files as they are "
                         "on disk); omit ref. Branch- and commit-aware indexes are on the roadmap",
                         errors.UNSUPPORTED_REF)


def language_filters(language: str | None) -> Filters:
    if language is None or not language.strip():
        return Filters()
    covered = LANGUAGES.get(language.strip().lower())
    if covered is None:
        raise ToolInputError(f"language must be one of {', '.join(LANGUAGES)} (the languages this index "
                             f"covers); got {language!r}")
    return Filters(languages=covered)


def search_code_text(payload: dict[str, Any], query: str) -> str:
    """The answer as the model reads it: that nothing is a confident match, when so; one header line
    (how many, the query's intent, how sure); what to do when unsure; then one line per result and
    its snippet. Programs read the same answer as structured content (seed 003's JSON); it is not
    repeated here."""
    meta = payload["metadata"]
    results = payload["results"]
    confidence = meta.get("confidence")
    sure = f", confidence {confidence:.2f}" if confidence is not None else ""
    intent = payload.get("query_intent", "unknown").replace("_", " ")
    total = payload.get("total_candidates", len(results))
    low = bool(meta.get("low_confidence"))
    lines = [no_confident_match(query, meta.get("low_confidence_reason"), bool(results))] if low else []
    lines.append(f"{len(results)} results of {total} candidates (query read as {intent}{sure})")
    if low:
        lines.append(f"Next: {meta.get('suggested_action')}")
    if meta.get("intent_escalation_hint"):
        lines.append(meta["intent_escalation_hint"])
    status = meta.get("indexing_status", "ready")
    if status != "ready":
        lines.append(f"The index is {status.replace('_', ' ')}: results match exact words and names until it is "
                     "ready.")
    elif meta.get("freshness_status") == "stale":
        lines.append("The index may be out of date: results marked stale show code as it was indexed.")
    if meta.get("result_completeness") == "truncated":
        lines.append("Results were cut to fit the response limit: ask for fewer (limit).")
    for rank, result in enumerate(results, 1):
        stale = "  stale" if result.get("stale") else ""
        lines.append(f"{rank}. {result['path']}:{result['line_start']}-{result['line_end']}  {result['kind']} "
                     f"{result['qualified_name']}  score {result['score']:.2f} ({result['provenance']}){stale}")
        lines += [f"   {line}" for line in result["snippet"].splitlines()]
    return "\n".join(lines)


def search_code_result(payload: dict[str, Any], query: str) -> CallToolResult:
    """Seed 003's answer as structured content, and as text for the model, within
    RESPONSE_MAX_TOKENS together: the lowest-ranked results go first when they are not (then
    `result_completeness: truncated`)."""
    payload = {**payload, "results": list(payload["results"]), "metadata": dict(payload["metadata"])}
    text = search_code_text(payload, query)
    while payload["results"] and count_tokens(text) + count_tokens(json.dumps(payload)) > RESPONSE_MAX_TOKENS:
        payload["results"].pop()
        payload["metadata"]["result_completeness"] = "truncated"
        text = search_code_text(payload, query)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload)


# --- codebase_trace ----------------------------------------------------------------------------

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


def outline_result(chunks: FileChunks, workspace: Path, metadata: dict[str, Any]) -> CallToolResult:
    if chunks.status == "skipped":
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


def status_result(report: IndexStatusReport, workspace: Path, background: str | None,
                  metadata: dict[str, Any], advice: Advice | None = None) -> CallToolResult:
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
