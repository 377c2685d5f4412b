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
collapsed, or a file's outline), `index_status`. Errors carry a code from `errors.ERROR_CODES`.
Every tool takes an optional `workspace`: one of the server's --workspace folders, or a folder under
one of them or under an allowed root (`remote.ServerPlan`); no other. The two searches also take a
list of them, or "all" (every --workspace folder): searched at once and merged fairly (`workspaces`).
In stdio mode stdout carries the protocol only; logs are JSON lines on stderr. Over HTTP, `remote`
says who may connect.

The handshake never waits on indexing: a workspace that is not indexed starts indexing in the
background (lexical index first, embeddings after), and searches answer lexically meanwhile.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from mcp.types import Tool as MCPTool
from pydantic import Field, ValidationError

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.channel import Locate, address_for
from codecompass.clients.errors import INVALID, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common import names, tokens
from codecompass.common.chunks import NodeKind
from codecompass.common.config import Settings
from codecompass.common.inputs import quoted
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import record_tool_call
from codecompass.contracts.analysis.model import ChunkedFile, TraceDirection, TraceQuery
from codecompass.policy.shape import MAX_QUERY_CHARS
from codecompass_gateway import advisor, errors, packages, present, remote, symbols, tools, wire, workspaces
from codecompass_gateway.answer import CodeSearchAnswer, code_search_answer, search_answer
from codecompass_gateway.errors import ToolInputError, not_found_as_input
from codecompass_gateway.handshake import Front
from codecompass_gateway.indexing import LEXICAL_WAIT_S, STATUS_TIMEOUT_S, BackgroundIndexer
from codecompass_gateway.pipeline import Pipeline, PipelineAnswer, PipelineRequest
from codecompass_gateway.readiness import Readiness
from codecompass_gateway.rewrite import Rewriter
from codecompass_gateway.sampling import client_rewriter

log = get_logger("codecompass.gateway.server")

SERVER_NAME = "codecompass"
HTTP_PATH = "/mcp"

INSTRUCTIONS = """\
CodeCompass answers questions about the TypeScript/JavaScript workspace this server was started for
(and the other folders it was started to open, named by `workspace`; a search may name several, or
"all"). Start with `semantic_search`
for a question in words or a half-remembered name: it returns the code itself. `search_code` gives a
ranked list to choose from, with how sure the search is. Then `read_symbol` reads a symbol or a
file's outline instead of a whole file, and `codebase_trace` follows calls and types through the
type checker. `index_status` says how far indexing has come. A call that fails answers one line
that says what to change, ending in a code such as [invalid_argument]."""


@dataclass
class Gateway:
    """What the tools share for the server's lifetime: the clients, and the default workspace."""

    settings: Settings
    workspace: Path
    pipeline: Pipeline
    retrieval: RetrievalClient
    analysis: AnalysisClient
    indexer: BackgroundIndexer
    # Where else a call may name a workspace: the server's other --workspace folders and its
    # allowed roots (and the folders under them).
    roots: tuple[Path, ...] = ()
    # The server's other --workspace folders: with `workspace`, what a search of "all" covers.
    also: tuple[Path, ...] = ()
    # Whether the services are up: `codecompass mcp` starts them behind the handshake, and a tool
    # waits for them before its first call to one.
    ready: Readiness = field(default_factory=Readiness.already)

    @classmethod
    def open(cls, settings: Settings, workspace: Path, locate: Locate | None = None,
             ready: Readiness | None = None) -> Gateway:
        """The clients reach the configured addresses, or where `locate` finds each service at
        each call (`codecompass mcp`: the local runtime, whose services `up` may restart)."""
        ready = ready or Readiness.already()
        retrieval = RetrievalClient(address_for(names.RETRIEVAL, settings.retrieval_addr, locate))
        pipeline = Pipeline(settings, locate)
        # Indexing goes to the index writer: the pipeline's client for it when the roles run apart.
        writer = pipeline.writer if settings.writer_addr else None
        return cls(settings=settings, workspace=workspace, pipeline=pipeline, retrieval=retrieval,
                   analysis=AnalysisClient(address_for(names.ANALYSIS, settings.analysis_addr, locate)),
                   indexer=BackgroundIndexer(retrieval, settings.long_rpc_timeout_s, writer, ready), ready=ready)

    def close(self) -> None:
        self.pipeline.close()
        self.retrieval.close()
        self.analysis.close()

    def workspace_for(self, given: str | None) -> Path:
        """The workspace a call is about. Only a search starts indexing it (`workspace_to_search`):
        the other tools are read-only, and need no index (trace and read ask the type checker)."""
        return tools.resolve_workspace(given, self.workspace, self.roots)

    def workspaces_to_search(self, given: str | list[str] | None) -> tuple[Path, ...]:
        """The workspaces a search is about (`tools.resolve_workspaces`), each indexing if it is not."""
        workspaces = tools.resolve_workspaces(given, self.workspace, self.also, self.roots)
        for workspace in workspaces:
            self.indexer.ensure(workspace)
        return workspaces

    # --- the tools, as plain methods (the MCP wrappers below only add the schema) ---

    def scope(self, root: Path, package: str | None) -> tuple[tuple[packages.Package, ...], str | None]:
        """(the workspace's packages, the folder of the one named), or a one-line refusal naming
        those it has."""
        declared = packages.packages_of(root)
        if package is None or not package.strip():
            return declared, None
        name = package.strip()
        for candidate in declared:
            if name in (candidate.name, candidate.folder):
                return declared, candidate.folder
        if not declared:
            raise ToolInputError(f"{root} declares no packages (package.json workspaces, pnpm-workspace.yaml, "
                                 f"lerna.json or tsconfig references): use path to scope a search")
        names = ", ".join(p.name for p in declared[:20]) + (", …" if len(declared) > 20 else "")
        raise ToolInputError(f"no package named {quoted(name)} in {root}; its packages: {names}")

    def scopes(self, roots: tuple[Path, ...], package: str | None
               ) -> tuple[dict[Path, tuple[tuple[packages.Package, ...], str | None]], list[workspaces.Failed]]:
        """Each workspace's `scope`, and those left out. Over several workspaces a package scopes
        those that declare it and leaves the others out (each one line in the answer); the search
        is refused only when none declares it."""
        scoped: dict[Path, tuple[tuple[packages.Package, ...], str | None]] = {}
        left_out: list[workspaces.Failed] = []
        refusal: ToolInputError | None = None
        for root in roots:
            try:
                scoped[root] = self.scope(root, package)
            except ToolInputError as exc:
                left_out.append(workspaces.Failed(root, str(exc)))
                refusal = refusal or exc
        if not scoped and refusal is not None:
            raise refusal
        return scoped, left_out

    @tools.tool_errors("semantic_search")
    def semantic_search(self, query: str, max_tokens: int | None, min_relevance: float | None, path: str | None,
                        kind: str | None, include_tests: bool, rewrite: bool | None,
                        workspace: str | list[str] | None, rewriter: Rewriter | None = None,
                        package: str | None = None) -> CallToolResult:
        roots = self.workspaces_to_search(workspace)
        if not query.strip():
            raise ToolInputError("query is empty: describe the code you are looking for")
        budget = tools.search_budget(max_tokens)
        scopes, left_out = self.scopes(roots, package)
        filters = {root: tools.search_filters(tools.within(folder, path), kind, include_tests)
                   for root, (_, folder) in scopes.items()}
        self.ready.wait()

        def run(root: Path) -> tuple[PipelineAnswer, bool]:
            lexical_ready = self.indexer.wait_lexical(root, LEXICAL_WAIT_S)
            return self.pipeline.run(PipelineRequest(
                workspace_root=str(root), query=query, filters=filters[root], max_tokens=budget.selection_tokens,
                min_relevance=min_relevance, rewrite=rewrite, rewriter=rewriter, building=not lexical_ready,
            )), lexical_ready

        extra: dict[str, object] = {"trace_id": tools.trace_id(), "query": query, "filters": {
            "path": path, "kind": kind, "include_tests": include_tests, "package": package}}
        if len(scopes) == 1 and not left_out:  # one workspace asked for: its answer, as ever
            [(root, (declared, _))] = scopes.items()
            answer, lexical_ready = run(root)
            return present.search_result(search_answer(answer, tools.RANKED_CODE_LINES), root, query, budget,
                                         {**extra, "lexical_index_ready": lexical_ready}, declared)
        answered, failed = workspaces.each_workspace(list(scopes), run)
        searched = [(workspaces.Searched(root, scopes[root][0], search_answer(answer, tools.RANKED_CODE_LINES),
                                         answer.confidence.composite), answer) for root, (answer, _) in answered]
        threshold = self.settings.gateway.confidence_threshold if min_relevance is None else min_relevance
        merged = workspaces.merge_answers(searched, [*left_out, *failed],
                                          budget.selection_tokens or self.settings.selection.max_tokens, threshold)
        extra["lexical_index_ready"] = all(ready for _, (_, ready) in answered)
        return present.workspaces_search_result(merged, query, budget, extra)

    @tools.tool_errors("search_code")
    def search_code(self, query: str, ref: str | None, language: str | None, limit: int,
                    semantic_ratio: float | None, confidence_threshold: float | None, rewrite: bool | None,
                    semantic_mode: str | None, workspace: str | list[str] | None,
                    rewriter: Rewriter | None = None, package: str | None = None) -> CallToolResult:
        if not query.strip():
            raise ToolInputError("query is empty: give a symbol name, a file path, an error message or a question")
        tools.check_ref(ref)
        roots = self.workspaces_to_search(workspace)
        scopes, left_out = self.scopes(roots, package)
        languages = tools.language_filters(language)
        filters = {root: dataclasses.replace(languages,
                                             path_patterns=tools.search_filters(folder, None, True).path_patterns)
                   for root, (_, folder) in scopes.items()}
        self.ready.wait()
        threshold = (self.settings.gateway.confidence_threshold if confidence_threshold is None
                     else confidence_threshold)

        def run(root: Path) -> tuple[PipelineAnswer, bool]:
            lexical_ready = self.indexer.wait_lexical(root, LEXICAL_WAIT_S)
            # The ranked list is judged by the threshold semantic_search's gate uses (min_relevance).
            return self.pipeline.run(PipelineRequest(
                workspace_root=str(root), query=query, filters=filters[root], semantic_ratio=semantic_ratio,
                select=False, limit=limit, semantic_mode=semantic_mode, rewrite=rewrite, rewriter=rewriter,
                min_relevance=threshold, building=not lexical_ready,
            )), lexical_ready

        def ranked(answer: PipelineAnswer) -> CodeSearchAnswer:
            return code_search_answer(answer, threshold=threshold, trace_id=tools.trace_id(),
                                      max_lines=tools.SNIPPET_LINES, max_line_chars=tools.SNIPPET_LINE_CHARS)

        if len(scopes) == 1 and not left_out:  # one workspace asked for: its answer, as ever
            [(root, (declared, _))] = scopes.items()
            answer, lexical_ready = run(root)
            return present.search_code_result(ranked(answer), query,
                                              {"workspace": str(root), "lexical_index_ready": lexical_ready}, declared)
        answered, failed = workspaces.each_workspace(list(scopes), run)
        searched = [(workspaces.Searched(root, scopes[root][0], ranked(answer), answer.confidence.composite), answer)
                    for root, (answer, _) in answered]
        merged = workspaces.merge_ranked(searched, [*left_out, *failed], limit, threshold)
        return present.workspaces_code_result(merged, query, {
            "workspaces": [str(s.root) for s in merged.searched],
            "lexical_index_ready": all(ready for _, (_, ready) in answered)})

    @tools.tool_errors("codebase_trace")
    def codebase_trace(self, symbol: str, direction: str, depth: int, limit: int, path: str | None,
                       workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        if not symbol.strip():
            raise ToolInputError("symbol is empty: give a qualified name (TokenService.validateToken) "
                                 "or path:line (src/auth/tokenService.ts:42)")
        chosen = TraceDirection(direction)
        query = TraceQuery(workspace_root=str(root), symbol=symbol.strip(), direction=chosen,
                           relative_path=(path or "").strip(), depth=depth, limit=limit)
        self.ready.wait()
        with not_found_as_input("check the spelling, or give path:line"):
            outcome = self.analysis.trace(query, self.settings.rpc_timeout_s)
        return present.trace_result(outcome, chosen, depth, root, {"trace_id": tools.trace_id()})

    @tools.tool_errors("read_symbol")
    def read_symbol(self, symbol: str, expand: list[str] | None, path: str | None,
                    workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        text = symbol.strip()
        if not text:
            raise ToolInputError("symbol is empty: give a qualified name, path:line, or a file path")
        metadata: dict[str, object] = {"trace_id": tools.trace_id()}
        self.ready.wait()
        read = symbols.read(self.analysis, root, text, expand or (), (path or "").strip(), self.settings.rpc_timeout_s)
        if isinstance(read, ChunkedFile):
            return present.outline_result(read, root, metadata)
        return present.symbol_result(read, root, metadata)

    @tools.tool_errors("index_status")
    def index_status(self, workspace: str | None) -> CallToolResult:
        root = self.workspace_for(workspace)
        self.ready.wait()
        try:
            report = self.retrieval.status(str(root), STATUS_TIMEOUT_S)
        except ServiceError as exc:
            if exc.kind != INVALID:
                raise
            # The only argument is an existing absolute folder: the service refuses to index it
            # (the filesystem root, the home folder, a system folder), and says why.
            raise ToolInputError(str(exc), errors.WORKSPACE_REFUSED) from None
        advice = advisor.advise(report.files, advisor.ts_js_share(root), advisor.DEFAULT_LATENCY_BUDGET_MS,
                                self.settings.embedding)
        return present.status_result(report, root, self.indexer.describe(root), {"trace_id": tools.trace_id()},
                                     advice, packages.packages_of(root))


# --- the MCP surface ---------------------------------------------------------------------------

# Module level: the tools' annotations are evaluated from module globals.
_REWRITE_DOC = "LLM rewrite into code terms, if one is configured (default: when it helps)."


class GatewayServer(MCPServer[Gateway]):
    """MCPServer whose argument errors read as one line per field, for the model to correct:
    `codebase_trace: direction: Input should be 'callers', … (got 'sideways')`; whose tool schemas
    are closed (an argument a tool does not take is an error naming those it does) and lean; and
    whose stdio transport answers every request, whatever its bytes (`wire`)."""

    # The handshake's front, when one answered the client while the server loaded (`handshake`).
    front: Front | None = None

    async def run_stdio_async(self) -> None:
        # The SDK's transport, with a stdin that screens each line first: the SDK drops a line it
        # cannot parse without an answer. Without a front, stdout stays the SDK's (and so does its
        # fd diversion); with one, the front owns both ends of the wire and has moved fd 0 and 1.
        if self.front is None:
            stdin = wire.ScreenedStdin(sys.stdin.buffer)
            transport = stdio_server(stdin=stdin)  # type: ignore[arg-type]
        else:
            inbox, outbox = self.front.hand_over()
            stdin = wire.ScreenedStdin(inbox)  # type: ignore[arg-type]
            transport = stdio_server(stdin=stdin, stdout=anyio.wrap_file(outbox))  # type: ignore[arg-type]
        async with transport as (read_stream, write_stream):
            stdin.answer_on(write_stream)
            lowlevel = self._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def list_tools(self) -> list[MCPTool]:
        return [tool.model_copy(update={"input_schema": tools.lean_schema(tool.input_schema)})
                for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, object], context: Context[Gateway] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        """Every tools/call, refusals included, in `mcp.server.operation.duration`."""
        started = time.perf_counter()
        takes = {t.name: list(t.input_schema.get("properties", {})) for t in await super().list_tools()}.get(name)
        # A name no tool has is whatever a client sent: one label for all of them keeps the series bounded.
        tool = name if takes is not None else "_OTHER"
        error: str | None = errors.INTERNAL_ERROR  # what escapes as an exception
        try:
            result = await self._call_tool(name, arguments, takes, context)
            error = errors.code_of(result) if isinstance(result, CallToolResult) else None
            return result
        finally:
            record_tool_call(tool, time.perf_counter() - started, error)

    async def _call_tool(self, name: str, arguments: dict[str, object], takes: list[str] | None,
                         context: Context[Gateway] | None) -> CallToolResult | InputRequiredResult:
        # The SDK ignores an argument its model does not declare: `limit` on semantic_search, or a
        # misspelt `relative_path`, would be answered as if it had not been given.
        unknown = [key for key in arguments if takes is not None and key not in takes]
        if unknown and takes is not None:
            return tools.error_result(tools.unknown_arguments(name, unknown, takes), errors.INVALID_ARGUMENT, name)
        if (problem := tools.argument_problem(arguments)) is not None:
            return tools.error_result(f"{name}: {problem}", errors.INVALID_ARGUMENT, name)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                + (f" (got {quoted(err['input'])})" if err["type"] != "missing" else "")
                for err in cause.errors()
            )
            return tools.error_result(f"{name}: invalid arguments: {problems}", errors.INVALID_ARGUMENT, name)


WorkspaceArg = Annotated[str | None, Field(description="Absolute folder; default: the server's.")]
# A search may span several workspaces: a list of folders, or "all" (`tools.resolve_workspaces`).
SearchWorkspacesArg = Annotated[str | list[str] | None, Field(
    description='Absolute folder(s), or "all"; default: the server\'s. One not yet indexed starts indexing.')]
PathArg = Annotated[str | None, Field(description="File that declares the symbol, when several do.")]
PackageArg = Annotated[str | None, Field(description="Monorepo package.")]
QueryArg = Annotated[str, Field(max_length=MAX_QUERY_CHARS, description="A question in words, or names.")]
Direction = Literal["callers", "callees", "references", "implementations", "supertypes", "subtypes"]
if TYPE_CHECKING:
    # A Literal built at run time is no type to the checker: to it, a kind is a string (the tools
    # pass it on as one). Pydantic reads the Literal below and lists its values in the tool schema.
    Kind = str
else:
    Kind = Literal[tuple(k.value for k in NodeKind)]
SearchLanguage = Literal["typescript", "tsx", "javascript", "jsx"]
SemanticMode = Literal["off", "rerank_only", "hybrid"]

# A search given the `workspace` of a folder that has no index starts indexing it (it writes an
# index under the state dir): not read-only. Trace, read and status never start indexing. (The
# destructive and idempotent hints mean something only for a tool that is not read-only.)
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_MAY_INDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)

SEMANTIC_SEARCH = """\
Start here. Returns the code that answers a question in words ("how are auth tokens validated") or \
a half-remembered name, best first, one item per piece headed `// path > Parent.member`, within \
max_tokens. Few results: nothing else was relevant enough."""

SEARCH_CODE = """\
A ranked list to choose from: location, kind, score and a short snippet per result, how sure the \
search is and, when unsure, the next call to make. Best for an exact name, a file path or an error \
message; semantic_search returns the code itself."""

CODEBASE_TRACE = """\
Follows a symbol through the TypeScript type checker: callers, callees, references, \
implementations, supertypes or subtypes. Use it before changing a function, or to find what \
implements an interface. One line per location, with the total and whether it is complete."""

READ_SYMBOL = """\
Reads one symbol instead of its whole file: members collapsed to signatures, those named in \
`expand` in full; a file path gives the file's outline. Use it to see more of what a search or \
trace found."""

INDEX_STATUS = """\
How far indexing of a workspace has come (files, chunks, share embedded) and its last error. Until \
it is ready, searches match exact words and names only."""


def build_server(settings: Settings, workspace: Path, locate: Locate | None = None, *, also: tuple[Path, ...] = (),
                 allowed_roots: tuple[Path, ...] = (), ready: Readiness | None = None,
                 front: Front | None = None) -> GatewayServer:
    """The MCP server for `workspace` (and the workspaces `also`, all indexed at start; calls may
    name these and folders under them or under `allowed_roots`); its lifespan owns one Gateway
    (the clients) for all sessions. `ready`: the services are starting behind the server."""

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Gateway]) -> AsyncIterator[Gateway]:
        gateway = dataclasses.replace(Gateway.open(settings, workspace, locate, ready), roots=(*also, *allowed_roots),
                                      also=also)
        # The tokenizer loads after the handshake, before the first answer is counted.
        threading.Thread(target=tokens.preload, name="load tokenizer", daemon=True).start()
        # In the background: the client's handshake never waits on the index.
        for served in (workspace, *also):
            gateway.indexer.ensure(served)
        try:
            yield gateway
        finally:
            gateway.indexer.close()
            gateway.close()
            await anyio.to_thread.run_sync(gateway.indexer.wait_stopped)

    server = GatewayServer(SERVER_NAME, instructions=INSTRUCTIONS, lifespan=lifespan,
                           middleware=[wire.InitializeFirst()])
    server.front = front

    def gateway_of(ctx: Context[Gateway]) -> Gateway:
        return ctx.request_context.lifespan_context

    @server.tool(description=SEMANTIC_SEARCH, annotations=_MAY_INDEX, title="Semantic code search")
    def semantic_search(
        query: QueryArg,
        ctx: Context[Gateway],
        max_tokens: Annotated[int | None, Field(ge=100, le=tools.SELECTION_MAX_TOKENS,
                                                description="Default 8000.")] = None,
        min_relevance: Annotated[float | None, Field(ge=0.0, le=1.0, description="Default 0.5; lower shows "
                                                     "weaker matches.")] = None,
        path: Annotated[str | None, Field(description="Folder or glob (`src/auth`, `**/*.tsx`).")] = None,
        kind: Kind | None = None,
        include_tests: bool = True,
        rewrite: Annotated[bool | None, Field(description=_REWRITE_DOC)] = None,
        workspace: SearchWorkspacesArg = None,
        package: PackageArg = None,
    ) -> CallToolResult:
        gateway = gateway_of(ctx)
        return gateway.semantic_search(query, max_tokens, min_relevance, path, kind, include_tests, rewrite,
                                       workspace, client_rewriter(ctx, gateway.settings.gateway.rewrite_timeout_s),
                                       package)

    @server.tool(description=SEARCH_CODE, annotations=_MAY_INDEX, title="Ranked code search")
    def search_code(
        query: QueryArg,
        ctx: Context[Gateway],
        ref: Annotated[str | None, Field(description="Omit: only the working tree is indexed.")] = None,
        language: SearchLanguage | None = None,
        limit: Annotated[int, Field(ge=1, le=tools.SEARCH_CODE_MAX_LIMIT)] = 10,
        semantic_ratio: Annotated[float | None, Field(ge=0.0, le=1.0, description="Most weight of meaning over "
                                                      "words.")] = None,
        confidence_threshold: Annotated[float | None, Field(ge=0.0, le=1.0, description="Default 0.5.")] = None,
        rewrite: Annotated[bool | None, Field(description=_REWRITE_DOC)] = None,
        semantic_mode: Annotated[SemanticMode | None, Field(description="off: words only; rerank_only: no "
                                                            "vectors; default hybrid.")] = None,
        workspace: SearchWorkspacesArg = None,
        package: PackageArg = None,
    ) -> CallToolResult:
        gateway = gateway_of(ctx)
        return gateway.search_code(query, ref, language, limit, semantic_ratio, confidence_threshold, rewrite,
                                   semantic_mode, workspace,
                                   client_rewriter(ctx, gateway.settings.gateway.rewrite_timeout_s), package)

    @server.tool(description=CODEBASE_TRACE, annotations=_READ_ONLY, title="Trace a symbol")
    def codebase_trace(
        symbol: Annotated[str, Field(description="Qualified name (`TokenService.validateToken`) or `path:line`.")],
        direction: Direction,
        ctx: Context[Gateway],
        depth: Annotated[int, Field(ge=1, le=3)] = 1,
        limit: Annotated[int, Field(ge=1, le=tools.TRACE_MAX_LIMIT)] = 50,
        path: PathArg = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        return gateway_of(ctx).codebase_trace(symbol, direction, depth, limit, path, workspace)

    @server.tool(description=READ_SYMBOL, annotations=_READ_ONLY, title="Read a symbol or outline")
    def read_symbol(
        symbol: Annotated[str, Field(description="Qualified name, `path:line`, or a file path.")],
        ctx: Context[Gateway],
        expand: Annotated[list[str] | None, Field(max_length=tools.EXPAND_MAX_NAMES,
                                                  description="Members to show in full (`validateToken`).")] = None,
        path: PathArg = None,
        workspace: WorkspaceArg = None,
    ) -> CallToolResult:
        return gateway_of(ctx).read_symbol(symbol, expand, path, workspace)

    @server.tool(description=INDEX_STATUS, annotations=_READ_ONLY, title="Index status")
    def index_status(ctx: Context[Gateway], workspace: WorkspaceArg = None) -> CallToolResult:
        return gateway_of(ctx).index_status(workspace)

    return server


class ListenError(Exception):
    """The HTTP server cannot listen where it was told to; the message says where and why."""


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, bound before the server starts anything: given the
    address, uvicorn would start the server's lifespan (and its indexing) first, then log a taken
    port and exit. `::` listens on every address of both families (dual-stack, as the gRPC
    services do), or on every IPv4 address where the machine has no IPv6."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        if host == "::" and exc.errno in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
            log.info("no IPv6 on this machine: listening on every IPv4 address", extra={"port": port})
            return listening_socket("0.0.0.0", port)
        raise ListenError(f"cannot listen on {host}:{port}: {_reason(exc)}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if host == "::":
            # IPv4 too, whatever the system's default (net.ipv6.bindv6only).
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {_reason(exc)}") from None
    return sock


def _reason(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return reason[:1].lower() + reason[1:]


def serve(settings: Settings, plan: remote.ServerPlan, locate: Locate | None = None,
          ready: Readiness | None = None, front: Front | None = None) -> None:
    workspace, *also = plan.workspaces
    server = build_server(settings, workspace, locate, also=tuple(also), allowed_roots=plan.allowed_roots,
                          ready=ready, front=front)
    served = {"workspaces": [str(w) for w in plan.workspaces], "allowed_roots": [str(r) for r in plan.allowed_roots]}
    exposure = plan.exposure
    if exposure is None:
        log.info("serving", extra={"transport": plan.transport, **served, "retrieval": settings.retrieval_addr,
                                   "analysis": settings.analysis_addr})
        server.run("stdio")
        return
    # Bound before the log says "serving": a taken port ends here, in one line.
    listening = listening_socket(exposure.host, exposure.port)
    stateless = settings.gateway.stateless_http
    summary = {**exposure.summary(plan.workspaces, plan.allowed_roots),
               "sessions": "none (stateless: any gateway process answers any request)" if stateless
               else "kept in this process"}
    if exposure.loopback:
        log.info("serving", extra={"transport": plan.transport, **summary})
    else:
        log.warning("serving beyond this machine", extra={"transport": plan.transport, **summary})
    if stateless:
        # Its one INFO line, "Terminating session: None", would come once per request.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    import uvicorn

    sdk_app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=exposure.host,
                                         transport_security=wire.transport_security(exposure),
                                         stateless_http=stateless)
    app = wire.Guarded(wire.ScreenedHttp(sdk_app, HTTP_PATH, sessions=not stateless), exposure)
    uvicorn.Server(uvicorn.Config(app, host=exposure.host, port=exposure.port,
                                  log_level=settings.log_level.lower())).run(sockets=[listening])
