"""The CodeCompass MCP server: code search, tracing and reading for agents, over the local services.

Usage (the services are reused when `codecompass up` runs them, else started first):

    codecompass mcp --workspace /abs/path/to/repo                      # stdio: VS Code, Claude Code
    codecompass mcp --workspace /abs/path --transport streamable-http --port 8765
                                                                        # http://127.0.0.1:8765/mcp
    python -m codecompass_gateway --workspace /abs/path                 # services at RETRIEVAL_ADDR,
                                                                        # RERANK_ADDR, SELECTION_ADDR,
                                                                        # ANALYSIS_ADDR (no starting)

    Claude Code:  claude mcp add codecompass -- codecompass mcp --workspace /abs/path/to/repo
    VS Code (.vscode/mcp.json):
        {"servers": {"codecompass": {"type": "stdio", "command": "codecompass",
                                     "args": ["mcp", "--workspace", "${workspaceFolder}"]}}}

Tools: `semantic_search` (what code answers a question), `search_code` (seed 003's ranked list with
its protocol metadata: intent, semantic mode, confidence and a suggested next call), `codebase_trace`
(who calls / what calls / who implements a symbol), `read_symbol` (a symbol with its members
collapsed, or a file's outline), `index_status`. Errors carry a code from `errors.ERROR_CODES`. Every tool takes an optional `workspace` (an absolute folder); one server serves
several workspaces. In stdio mode stdout carries the protocol only; logs are JSON lines on stderr.

The handshake never waits on indexing: a workspace that is not indexed starts indexing in the
background (lexical index first, embeddings after), and searches answer lexically meanwhile.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.analysis_model import TraceDirection, TraceQuery
from codecompass.clients.errors import NOT_FOUND, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.chunks import NodeKind
from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.retrieval.state import IndexingStatus
from codecompass_gateway import advisor, errors, tools, wire
from codecompass_gateway.answer import answer_to_dict, search_code_to_dict
from codecompass_gateway.pipeline import Pipeline, PipelineRequest
from codecompass_gateway.rewrite import Rewriter
from codecompass_gateway.sampling import client_rewriter

log = get_logger("codecompass.gateway.server")

SERVER_NAME = "codecompass"
HTTP_PATH = "/mcp"
Transport = Literal["stdio", "streamable-http"]
# Status and resolution calls are small; a trace on a large workspace first builds its Program.
STATUS_TIMEOUT_S = 5.0
# How long a search on a workspace this gateway is indexing waits for its lexical index: the
# first answer on a cold workspace is lexical, not empty (issue 9's goal: useful within 5 s).
LEXICAL_WAIT_S = 10.0
# How often a search on a workspace being indexed checks whether rows have landed.
ROWS_POLL_S = 0.25

INSTRUCTIONS = """\
CodeCompass searches and navigates the TypeScript/JavaScript workspace it was started for (and any
other absolute folder passed as `workspace`). Start with `semantic_search` for a question in words
("how are tokens validated", "where is the retry policy configured"); it returns the few pieces of
code that answer it, each headed `// path > Parent.member`. Then use `read_symbol` to read a symbol
or a file's outline instead of opening whole files, and `codebase_trace` to follow calls, references
and type hierarchies through the type checker. `search_code` gives a ranked list with snippets, the
query's intent and how sure the search is (with the next call to make when it is not).
`index_status` says how far indexing has come."""


class BackgroundIndexer:
    """Starts indexing a workspace that is not indexed, once per workspace, without waiting on it:
    `IndexWorkspace(wait_for_embeddings=False)` writes the lexical index first and returns, while
    embeddings continue in the retrieval service. A search may wait a bounded time for that
    lexical index (`wait_lexical`); the handshake never waits for anything."""

    def __init__(self, retrieval: RetrievalClient, timeout_s: float) -> None:
        self._retrieval = retrieval
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._state: dict[str, str] = {}
        self._lexical: dict[str, threading.Event] = {}

    def ensure(self, workspace: Path) -> None:
        key = str(workspace)
        with self._lock:
            if key in self._lexical:
                return
            self._lexical[key] = threading.Event()
        threading.Thread(target=self._run, args=(key,), name=f"index {key}", daemon=True).start()

    def wait_lexical(self, workspace: Path, timeout_s: float) -> bool:
        """Waits, at most `timeout_s`, until the workspace's index has rows to search: the lexical
        pass writes them in growing batches long before it ends, and a partial answer (flagged) now
        beats a complete one in half a minute. True when the lexical index is complete."""
        with self._lock:
            event = self._lexical.get(str(workspace))
        if event is None:
            return True
        deadline = time.monotonic() + timeout_s
        while not event.wait(min(ROWS_POLL_S, max(deadline - time.monotonic(), 0.0))):
            if time.monotonic() >= deadline or self._has_rows(str(workspace)):
                return False
        return True

    def _has_rows(self, key: str) -> bool:
        try:
            return self._retrieval.status(key, STATUS_TIMEOUT_S).chunks > 0
        except ServiceError:
            return False

    def describe(self, workspace: Path) -> str | None:
        """What this gateway did about the workspace's index, when it started indexing it."""
        with self._lock:
            return self._state.get(str(workspace)) or None

    def _set(self, key: str, state: str) -> None:
        with self._lock:
            self._state[key] = state

    def _run(self, key: str) -> None:
        with self._lock:
            lexical = self._lexical[key]
        try:
            status = self._retrieval.status(key, STATUS_TIMEOUT_S).indexing_status
            if status in (IndexingStatus.READY, IndexingStatus.INDEXING):
                return
            started = time.monotonic()
            self._set(key, "indexing (started by this gateway)")
            for _progress in self._retrieval.index(key, wait_for_embeddings=False, timeout_s=self._timeout_s):
                pass
            self._set(key, f"lexical index written in {time.monotonic() - started:.1f}s; "
                           "embeddings continue in the retrieval service")
        except ServiceError as exc:
            # Forget the attempt so the next call on this workspace tries again.
            with self._lock:
                self._state.pop(key, None)
                self._lexical.pop(key, None)
            log.warning("background indexing failed", extra={"workspace": key, "detail": exc.user_message()})
        finally:
            lexical.set()


@dataclass
class Gateway:
    """What the tools share for the server's lifetime: the clients, and the default workspace."""

    settings: Settings
    workspace: Path
    pipeline: Pipeline
    retrieval: RetrievalClient
    analysis: AnalysisClient
    indexer: BackgroundIndexer

    @classmethod
    def open(cls, settings: Settings, workspace: Path) -> Gateway:
        retrieval = RetrievalClient(settings.retrieval_addr)
        return cls(settings=settings, workspace=workspace, pipeline=Pipeline(settings), retrieval=retrieval,
                   analysis=AnalysisClient(settings.analysis_addr),
                   indexer=BackgroundIndexer(retrieval, settings.long_rpc_timeout_s))

    def close(self) -> None:
        self.pipeline.close()
        self.retrieval.close()
        self.analysis.close()

    def workspace_for(self, given: str | None) -> Path:
        workspace = tools.resolve_workspace(given, self.workspace)
        self.indexer.ensure(workspace)
        return workspace

    # --- the tools, as plain methods (the MCP wrappers below only add the schema) ---

    @tools.tool_errors("semantic_search")
    def semantic_search(self, query: str, max_tokens: int | None, min_relevance: float | None, path: str | None,
                        kind: str | None, include_tests: bool, rewrite: bool | None,
                        workspace: str | None, rewriter: Rewriter | None = None) -> CallToolResult:
        root = self.workspace_for(workspace)
        if not query.strip():
            raise tools.ToolInputError("query is empty: describe the code you are looking for")
        budget = tools.search_budget(max_tokens)
        lexical_ready = self.indexer.wait_lexical(root, LEXICAL_WAIT_S)
        request = PipelineRequest(
            workspace_root=str(root), query=query, filters=tools.search_filters(path, kind, include_tests),
            max_tokens=budget.selection_tokens, min_relevance=min_relevance, rewrite=rewrite, rewriter=rewriter,
        )
        answer = self.pipeline.run(request)
        payload = answer_to_dict(answer, tools.RANKED_CODE_LINES)
        extra = {"trace_id": tools.trace_id(), "query": query, "lexical_index_ready": lexical_ready,
                 "filters": {"path": path, "kind": kind, "include_tests": include_tests}}
        return tools.search_result(payload, root, query, budget, extra)

    @tools.tool_errors("search_code")
    def search_code(self, query: str, ref: str | None, language: str | None, limit: int,
                    semantic_ratio: float | None, confidence_threshold: float | None, rewrite: bool | None,
                    semantic_mode: str | None, workspace: str | None,
                    rewriter: Rewriter | None = None) -> CallToolResult:
        if not query.strip():
            raise tools.ToolInputError("query is empty: give a symbol name, a file path, an error message or a "
                                       "question")
        tools.check_ref(ref)
        filters = tools.language_filters(language)
        root = self.workspace_for(workspace)
        lexical_ready = self.indexer.wait_lexical(root, LEXICAL_WAIT_S)
        threshold = (self.settings.gateway.confidence_threshold if confidence_threshold is None
                     else confidence_threshold)
        answer = self.pipeline.run(PipelineRequest(
            workspace_root=str(root), query=query, filters=filters, semantic_ratio=semantic_ratio, select=False,
            limit=limit, semantic_mode=semantic_mode, rewrite=rewrite, rewriter=rewriter,
        ))
        payload = search_code_to_dict(answer, threshold=threshold, trace_id=tools.trace_id(),
                                      max_lines=tools.SNIPPET_LINES, max_line_chars=tools.SNIPPET_LINE_CHARS)
        payload["metadata"].update({"workspace": str(root), "lexical_index_ready": lexical_ready})
        return tools.search_code_result(payload)

    @tools.tool_errors("codebase_trace")
    def codebase_trace(self, symbol: str, direction: str, depth: int, limit: int, path: str | None,
                       workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        if not symbol.strip():
            raise tools.ToolInputError("symbol is empty: give a qualified name (TokenService.validateToken) "
                                       "or path:line (src/auth/tokenService.ts:42)")
        chosen = TraceDirection(direction)
        query = TraceQuery(workspace_root=str(root), symbol=symbol.strip(), direction=chosen,
                           relative_path=(path or "").strip(), depth=depth, limit=limit)
        with tools.not_found_as_input("check the spelling, or give path:line"):
            outcome = self.analysis.trace(query, self.settings.rpc_timeout_s)
        structured = {**tools.trace_structured(outcome, chosen),
                      "metadata": {"trace_id": tools.trace_id(), "workspace": str(root)}}
        return CallToolResult(content=[TextContent(type="text", text=tools.trace_text(outcome, chosen, depth))],
                              structured_content=structured)

    @tools.tool_errors("read_symbol")
    def read_symbol(self, symbol: str, expand: list[str] | None, path: str | None,
                    workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        text = symbol.strip()
        if not text:
            raise tools.ToolInputError("symbol is empty: give a qualified name, path:line, or a file path")
        metadata = {"trace_id": tools.trace_id()}
        timeout = self.settings.rpc_timeout_s
        file_path = tools.workspace_file(root, text) if tools.location_of(text) is None else None
        if file_path is not None:
            with tools.not_found_as_input("give a path relative to the workspace"):
                chunks = self.analysis.file_chunks(str(root), file_path, timeout)
            return tools.outline_result(chunks, root, metadata)
        with tools.not_found_as_input("check the spelling, give path:line, or a file path for its outline"):
            resolved = self.analysis.trace(tools.resolve_query(root, text, (path or "").strip()), timeout).root
        if not resolved.chunk_id:
            raise tools.ToolInputError(f"{text} resolves to {resolved.qualified_name or 'a location'} in "
                                       f"{resolved.relative_path}, which is not a declaration that can be shown")
        view_expanded: list[tuple[str, str, str]] = []  # (chunk id, qualified name, name as given)
        not_found: list[str] = []
        child_ids: list[str] = []
        for name in expand or ():
            if not name.strip():
                continue
            qualified = tools.expand_name(resolved, name)
            try:
                child = self.analysis.trace(tools.resolve_query(root, qualified, resolved.relative_path), timeout).root
            except ServiceError as exc:
                if exc.kind != NOT_FOUND:
                    raise
                not_found.append(name.strip())
                continue
            if child.chunk_id and child.chunk_id != resolved.chunk_id:
                child_ids.append(child.chunk_id)
                view_expanded.append((child.chunk_id, child.qualified_name, name.strip()))
            else:
                not_found.append(name.strip())
        (shown,) = self.analysis.render(str(root), [tools.render_request(resolved, child_ids)], timeout)
        if shown is None:
            raise tools.ToolInputError(f"{resolved.qualified_name} is no longer in {resolved.relative_path}; "
                                       "the file changed: search again", errors.NOT_FOUND_CODE)
        # A name that resolved elsewhere (not under this symbol) was not expanded: say so.
        not_found += [given for child_id, _, given in view_expanded if child_id in shown.unknown_child_ids]
        expanded_names = [qualified for child_id, qualified, _ in view_expanded
                          if child_id not in shown.unknown_child_ids]
        view = tools.SymbolView(root=dataclasses.replace(resolved, start_line=shown.start_line or resolved.start_line,
                                                         end_line=shown.end_line or resolved.end_line),
                                source=shown.source, token_count=shown.token_count, expanded=expanded_names,
                                not_found=not_found)
        return tools.symbol_result(view, root, metadata)

    @tools.tool_errors("index_status")
    def index_status(self, workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        report = self.retrieval.status(str(root), STATUS_TIMEOUT_S)
        advice = advisor.advise(report.files, advisor.ts_js_share(root), advisor.DEFAULT_LATENCY_BUDGET_MS,
                                self.settings.embedding)
        return tools.status_result(report, root, self.indexer.describe(root), {"trace_id": tools.trace_id()},
                                   advice)


# --- the MCP surface ---------------------------------------------------------------------------

# Module level: the tools' annotations are evaluated from module globals.
_REWRITE_DOC = ("Rewrite the query into code terms with an LLM (when one is configured): true forces it, "
                "false never; default: for questions in words and for queries that find nothing. "
                "metadata.rewrite says whether it applied, the terms and why.")


class GatewayServer(MCPServer[Gateway]):
    """MCPServer whose argument errors read as one line per field, for the model to correct:
    `codebase_trace: direction: Input should be 'callers', … (got 'sideways')`, and whose stdio
    transport answers every request, whatever its bytes (`wire`)."""

    async def run_stdio_async(self) -> None:
        # The SDK's transport, with a stdin that screens each line first: the SDK drops a line it
        # cannot parse without an answer. stdout stays the SDK's (and so does its fd diversion).
        stdin = wire.ScreenedStdin(sys.stdin.buffer)
        async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
            stdin.answer_on(write_stream)
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def call_tool(self, name: str, arguments: dict[str, object], context: Context[Gateway] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                + (f" (got {err['input']!r})" if err["type"] != "missing" else "")
                for err in cause.errors()
            )
            return tools.error_result(f"{name}: invalid arguments: {problems}", errors.INVALID_ARGUMENT, name)


WorkspaceArg = Annotated[str | None, Field(
    description="Absolute path of the workspace to answer about; default: the one the server was started for.")]
PathArg = Annotated[str | None, Field(
    description="Workspace-relative file that declares the symbol, when its name is declared in several files.")]
Direction = Literal["callers", "callees", "references", "implementations", "supertypes", "subtypes"]
Kind = Literal[tuple(k.value for k in NodeKind)]  # type: ignore[valid-type]
SearchLanguage = Literal["typescript", "tsx", "javascript", "jsx"]
SemanticMode = Literal["off", "rerank_only", "hybrid"]

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

SEMANTIC_SEARCH = """\
Find the code that answers a question about this codebase, by meaning and by name. Use it first,
for questions in words ("how are auth tokens validated", "where do we retry failed HTTP calls") or
names you half remember. Returns the few most relevant pieces of code, best first, one text item
each: a header `// path > Parent.member` then clean source, members that do not matter collapsed
to `{ … }`. Items carry a priority (relevance in [0, 1]); structured content has each result's
location, score and why it was chosen. Fewer results means the rest were not relevant enough.
Answers fit max_tokens (default 8,000; at most 20,000). To read more of a symbol use read_symbol;
to follow calls use codebase_trace."""

SEARCH_CODE = f"""\
Ranked code search with its full protocol metadata (CodeCompass protocol 1.0): the best matching
declarations for a symbol name (`validateToken`, `TokenService.validateToken`), a file path
(`src/auth/tokenService.ts`), an error message, or a question in words. Use it when you want a
list to choose from with scores and a short snippet each, or a verdict on how sure the search is;
use semantic_search instead for the code itself, ready to read. Returns JSON (also as structured
content): `results[]` (path, line_start, line_end, kind, name, qualified_name, language, score,
snippet: the first lines of the declaration with its members collapsed, provenance: lexical |
semantic | hybrid), `query_intent` (symbol | path | error | natural_language), `total_candidates`,
and `metadata`: freshness, indexing status, the semantic mode and ratio used, reranker,
`low_confidence` with a `suggested_action` (the next call to make, with its arguments) when the
answer is unsure, and `intent_escalation_hint` when the query could be read another way.
semantic_mode: off (names and words only), rerank_only (no vector search), hybrid (default).
`ref`: only the working tree is indexed; leave it out. {errors.REGISTRY_TEXT}"""

_ERRORS_LINE = f"Errors end in [code]: {', '.join(errors.ERROR_CODES)}."

CODEBASE_TRACE = """\
Follow one symbol through the TypeScript type checker: its callers, callees, references,
implementations, supertypes or subtypes. Use it to see who calls a function before changing it,
what a function depends on, or which classes implement an interface. `symbol` is a qualified name
as search results show it (`TokenService.validateToken`, `requireAuth`) or `path:line`. Returns
one line per location: `path:line  enclosing symbol  — that line of code`, with the total found
and whether the list is partial. depth (1-3) follows callers/callees/type hierarchies further."""

READ_SYMBOL = """\
Read one symbol instead of a whole file: a class, function, interface or member, with its members
collapsed to their signatures and the ones named in `expand` shown in full. `symbol` is a qualified
name (`TokenService`, `TokenService.validateToken`), a `path:line` inside the declaration, or a
file path (`src/auth/tokenService.ts`) for that file's outline: every declaration with its line
range and signature. Use it after semantic_search or codebase_trace to see more of what they
found, e.g. read_symbol("TokenService", expand=["validateToken"])."""

INDEX_STATUS = """\
How far indexing of a workspace has come: files, chunks, the share embedded, the embedding
model, and whether indexing is still running. While it runs, semantic_search answers lexically
(exact words and identifiers). Use it when results look thin or to check a new workspace."""


def build_server(settings: Settings, workspace: Path) -> GatewayServer:
    """The MCP server for `workspace`; its lifespan owns one Gateway (the clients) for all sessions."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Gateway]) -> AsyncIterator[Gateway]:
        gateway = Gateway.open(settings, workspace)
        # In the background: the client's handshake never waits on the index.
        gateway.indexer.ensure(workspace)
        try:
            yield gateway
        finally:
            gateway.close()

    server = GatewayServer(SERVER_NAME, instructions=INSTRUCTIONS, lifespan=lifespan,
                           middleware=[wire.InitializeFirst()])

    def gateway_of(ctx: Context[Gateway]) -> Gateway:
        return ctx.request_context.lifespan_context

    @server.tool(description=f"{SEMANTIC_SEARCH}\n{_ERRORS_LINE}", annotations=_READ_ONLY, title="Semantic code search")
    def semantic_search(
        query: Annotated[str, Field(description="What you are looking for, in words or names.")],
        ctx: Context[Gateway],
        max_tokens: Annotated[int | None, Field(ge=100, description="Token budget of the answer (default 8000; "
                                                                    "at most 20000).")] = None,
        min_relevance: Annotated[float | None, Field(ge=0.0, le=1.0, description="Relevance gate in [0, 1] "
                                                     "(default 0.5); lower it to see weaker matches.")] = None,
        path: Annotated[str | None, Field(description="Only code under this folder or matching this glob "
                                                      "(`src/auth`, `**/*.tsx`).")] = None,
        kind: Annotated[Kind | None, Field(description="Only symbols of this kind.")] = None,
        include_tests: Annotated[bool, Field(description="Include test files (default true).")] = True,
        rewrite: Annotated[bool | None, Field(description=_REWRITE_DOC)] = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        gateway = gateway_of(ctx)
        return gateway.semantic_search(query, max_tokens, min_relevance, path, kind, include_tests, rewrite,
                                       workspace, client_rewriter(ctx, gateway.settings.gateway.rewrite_timeout_s))

    @server.tool(description=SEARCH_CODE, annotations=_READ_ONLY, title="Ranked code search (protocol 1.0)")
    def search_code(
        query: Annotated[str, Field(description="A symbol name, a file path, an error message or a question.")],
        ctx: Context[Gateway],
        ref: Annotated[str | None, Field(description="Branch or ref scope. Only the working tree is indexed: "
                                                     "leave it out (anything else is an unsupported_ref error)."
                                         )] = None,
        language: Annotated[SearchLanguage | None, Field(description="Only code in this language (typescript "
                                                                     "includes tsx, javascript includes jsx).")] = None,
        limit: Annotated[int, Field(ge=1, le=tools.SEARCH_CODE_MAX_LIMIT, description="Most results (default 10).")
                         ] = 10,
        semantic_ratio: Annotated[float | None, Field(ge=0.0, le=1.0, description="Cap of the semantic share of "
                                                      "the blend (0-1); the search may use less, e.g. for a name "
                                                      "it finds defined. Default: from config.")] = None,
        confidence_threshold: Annotated[float | None, Field(ge=0.0, le=1.0, description="Below this composite "
                                                            "confidence the answer is low_confidence (default "
                                                            "0.5).")] = None,
        rewrite: Annotated[bool | None, Field(description=_REWRITE_DOC)] = None,
        semantic_mode: Annotated[SemanticMode | None, Field(description="off | rerank_only | hybrid; default: "
                                                                        "from config (hybrid).")] = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        gateway = gateway_of(ctx)
        return gateway.search_code(query, ref, language, limit, semantic_ratio, confidence_threshold, rewrite,
                                   semantic_mode, workspace,
                                   client_rewriter(ctx, gateway.settings.gateway.rewrite_timeout_s))

    @server.tool(description=f"{CODEBASE_TRACE}\n{_ERRORS_LINE}", annotations=_READ_ONLY, title="Trace a symbol")
    def codebase_trace(
        symbol: Annotated[str, Field(description="Qualified name (`TokenService.validateToken`) or `path:line`.")],
        direction: Annotated[Direction, Field(description="Which relation to follow.")],
        ctx: Context[Gateway],
        depth: Annotated[int, Field(ge=1, le=3, description="Hops for callers/callees/supertypes/subtypes "
                                                            "(1-3, default 1).")] = 1,
        limit: Annotated[int, Field(ge=1, le=tools.TRACE_MAX_LIMIT, description="Most locations to return "
                                                                                "(default 50).")] = 50,
        path: PathArg = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        return gateway_of(ctx).codebase_trace(symbol, direction, depth, limit, path, workspace)

    @server.tool(description=f"{READ_SYMBOL}\n{_ERRORS_LINE}", annotations=_READ_ONLY, title="Read a symbol or a file outline")
    def read_symbol(
        symbol: Annotated[str, Field(description="Qualified name, `path:line`, or a file path for its outline.")],
        ctx: Context[Gateway],
        expand: Annotated[list[str] | None, Field(description="Members to show in full, by name "
                                                              "(`validateToken`); the rest stay collapsed.")] = None,
        path: PathArg = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        return gateway_of(ctx).read_symbol(symbol, expand, path, workspace)

    @server.tool(description=f"{INDEX_STATUS}\n{_ERRORS_LINE}", annotations=_READ_ONLY, title="Index status")
    def index_status(ctx: Context[Gateway], workspace: WorkspaceArg = None) -> CallToolResult:
        return gateway_of(ctx).index_status(workspace)

    return server


def serve(settings: Settings, workspace: Path, transport: Transport = "stdio", host: str = "127.0.0.1",
          port: int = 8765) -> None:
    server = build_server(settings, workspace)
    log.info("serving", extra={"transport": transport, "workspace": str(workspace),
                               "retrieval": settings.retrieval_addr, "analysis": settings.analysis_addr})
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = wire.ScreenedHttp(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), HTTP_PATH)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=settings.log_level.lower())).run()
