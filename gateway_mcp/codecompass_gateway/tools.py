"""What each MCP tool takes (its arguments, parsed and checked; its limits) and the boundary every
call passes, apart from the protocol plumbing (`server`) and how each answer reads (`present`).

Every tool returns a `CallToolResult`: text for the model that called it, structured content for
the client program, and `isError` with one line that says what to change when it could not answer.
Nothing here raises to the SDK: a failure the caller can fix is a `ToolInputError`, a service that
is down is a `ServiceError`, and `tool_errors` turns both (and anything unexpected) into tool errors.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult

from codecompass.clients.errors import ServiceError
from codecompass.common.chunks import Language, NodeKind
from codecompass.common.inputs import MAX_PATH_CHARS, quoted, text_problem
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import current_trace_ids, tracer
from codecompass.contracts.retrieval.filters import FilterError, Filters
from codecompass.policy.shape import MAX_QUERY_CHARS
from codecompass_gateway import errors
from codecompass_gateway.errors import ToolInputError
from codecompass_gateway.readiness import ServicesNotReady

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
                except FAILURES as exc:
                    line, code = failure(exc)
                    span.set_attribute("codecompass.tool.error", code)
                    if isinstance(exc, ServiceError):
                        log.warning("tool call failed", extra={"tool": name, "service": exc.service,
                                                               "kind": exc.kind})
                    return error_result(f"{name}: {line}", code, name)
                except Exception as exc:  # the boundary: a bug must not end the session
                    span.record_exception(exc)
                    log.exception("tool crashed", extra={"tool": name})
                    return error_result(f"{name}: internal error ({type(exc).__name__}); the gateway's log has details",
                                        errors.INTERNAL_ERROR, name)

        return run

    return wrap


# What a tool call may fail with that is not a bug: the caller's input, services not up yet, a
# service's error. Each is one line for the caller (`failure`).
FAILURES = (ToolInputError, ServicesNotReady, ServiceError)


def failure(exc: ToolInputError | ServicesNotReady | ServiceError) -> tuple[str, str]:
    """One of FAILURES as the line the caller reads and its error code."""
    if isinstance(exc, ToolInputError):
        return str(exc), exc.code
    if isinstance(exc, ServicesNotReady):
        return str(exc), errors.SERVICE_UNAVAILABLE
    return (str(exc) if exc.meaning.callers_to_fix else exc.user_message()), errors.code_for_service_error(exc.kind)


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


def argument_problem(arguments: dict[str, object]) -> str | None:
    """Why a call's arguments cannot be used whatever the tool, or None: a NUL character in any
    text, or a text longer than any the tool could use (a query its own limit; a path, symbol,
    ref or member name the longest path a file system allows). Checked before the tool runs, so
    no such value reaches a path, a service or a log line."""
    for key, value in arguments.items():
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            limit = MAX_QUERY_CHARS if key == "query" else MAX_PATH_CHARS
            if (problem := text_problem(item, key, limit)) is not None:
                return problem
    return None


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
        raise ToolInputError(f"workspace must be an absolute path, got {quoted(given)}", errors.INVALID_WORKSPACE)
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


# What a search's `workspace` may say to mean every folder the server opens.
ALL_WORKSPACES = "all"


def resolve_workspaces(given: str | list[str] | None, default: Path, opened: tuple[Path, ...] = (),
                       roots: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """The workspaces a search is about, each once, in the order named: one folder or a list of
    them, each resolved (and refused) as `resolve_workspace` does, where "all" stands for every
    folder the server opens (`default` and `opened`, its other --workspace folders; an allowed
    root only permits folders under it, it is not opened). None or an empty list: `default`."""
    named: list[str | None] = [given] if given is None or isinstance(given, str) else [*given] or [None]
    resolved: list[Path] = []
    for name in named:
        if name is not None and name.strip().lower() == ALL_WORKSPACES:
            resolved += [default, *opened]
        else:
            resolved.append(resolve_workspace(name, default, roots))
    return tuple(dict.fromkeys(resolved))


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


def within(folder: str | None, path: str | None) -> str | None:
    """A path filter inside a package's folder: the folder itself when no path is given, else the
    path taken relative to it."""
    if folder is None:
        return path
    inner = (path or "").strip().strip("/")
    return f"{folder}/{inner}" if inner else folder


@dataclass(frozen=True)
class SearchBudget:
    selection_tokens: int | None  # None: the configured default
    max_chars: int | None  # None: no character cap (the caller chose a budget)


def search_budget(max_tokens: int | None) -> SearchBudget:
    """The tool's schema bounds max_tokens by SELECTION_MAX_TOKENS; a larger one never gets here."""
    if max_tokens is None:
        return SearchBudget(selection_tokens=None, max_chars=DEFAULT_MAX_CHARS)
    return SearchBudget(selection_tokens=max_tokens, max_chars=None)


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
    raise ToolInputError(f"ref {quoted(ref.strip())} is not indexed: only the working tree is (the files as they are "
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
