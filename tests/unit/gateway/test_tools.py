"""The tools' pure parts: workspaces, budgets and the response cap, and how traces, symbols and
outlines read."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from codecompass_gateway import errors, present, symbols, tools, workspaces
from tests.fixtures.answers import answer_of

from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.tokens import count_tokens
from codecompass.contracts.analysis.model import (
    ChunkedFile,
    FileStatus,
    TraceDirection,
    TraceNode,
    TraceOutcome,
    TracePartialReason,
    TraceRoot,
)


def test_a_workspace_is_the_default_or_an_absolute_existing_folder(tmp_path: Path) -> None:
    assert tools.resolve_workspace(None, tmp_path) == tmp_path
    assert tools.resolve_workspace("  ", tmp_path) == tmp_path
    (tmp_path / "ws").mkdir()
    assert tools.resolve_workspace(str(tmp_path / "ws" / ".." / "ws"), Path("/")) == tmp_path / "ws"
    for bad, reason in (("ws", "absolute"), (str(tmp_path / "nope"), "does not exist")):
        with pytest.raises(tools.ToolInputError, match=reason):
            tools.resolve_workspace(bad, tmp_path)


def test_a_search_may_name_several_workspaces_or_all(tmp_path: Path) -> None:
    a, b, c, allowed = (tmp_path / name for name in ("a", "b", "c", "allowed"))
    for folder in (a, b, c, allowed / "d"):
        folder.mkdir(parents=True)
    opened, roots = (b,), (b, allowed)
    assert tools.resolve_workspaces(None, a, opened, roots) == (a,)
    assert tools.resolve_workspaces([], a, opened, roots) == (a,)
    assert tools.resolve_workspaces(str(b), a, opened, roots) == (b,)
    # Each once, in the order named; "all" is every folder the server opens, not its allowed roots.
    assert tools.resolve_workspaces([str(allowed / "d"), str(b), str(b)], a, opened, roots) == (allowed / "d", b)
    assert tools.resolve_workspaces(" ALL ", a, opened, roots) == (a, b)
    assert tools.resolve_workspaces([str(allowed / "d"), "all"], a, opened, roots) == (allowed / "d", a, b)
    # A folder in the list is refused as it would be alone: the first one wrong, in one line.
    with pytest.raises(tools.ToolInputError, match="is not a folder this server opens") as refused:
        tools.resolve_workspaces([str(b), str(c), "relative"], a, opened, roots)
    assert refused.value.code == errors.WORKSPACE_REFUSED and "\n" not in str(refused.value)
    with pytest.raises(tools.ToolInputError, match="does not exist"):
        tools.resolve_workspaces([str(b), str(b / "nope")], a, opened, roots)


def test_each_workspace_runs_at_once_and_one_that_fails_is_one_line(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    started = threading.Barrier(3, timeout=10)  # all three run at once, or this times out

    def run(root: Path) -> str:
        started.wait()
        if root == b:
            raise ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "connection refused")
        return root.name

    answered, failed = workspaces.each_workspace([a, b, c], run)
    assert answered == [(a, "a"), (c, "c")]
    [(root, reason)] = [(f.root, f.reason) for f in failed]
    assert root == b and "\n" not in reason and "retrieval" in reason

    def broken(root: Path) -> str:
        raise tools.ToolInputError(f"{root.name} refused")

    with pytest.raises(tools.ToolInputError, match="a refused"):  # all failed: the first is the call's
        workspaces.each_workspace([a, b], broken)


def test_a_file_path_is_recognised_only_inside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.ts").write_text("export {};\n")
    assert symbols.workspace_file(tmp_path, "src/a.ts") == "src/a.ts"
    assert symbols.workspace_file(tmp_path, str(tmp_path / "src" / "a.ts")) == "src/a.ts"
    assert symbols.workspace_file(tmp_path, "src") is None
    assert symbols.workspace_file(tmp_path, "../etc/passwd") is None
    assert symbols.workspace_file(tmp_path, "TokenService") is None
    assert symbols.location_of("src/a.ts:12") == ("src/a.ts", 12)
    assert symbols.location_of("TokenService.validateToken") is None


def test_filters_name_what_is_wrong() -> None:
    filters = tools.search_filters("src/auth", "method", include_tests=False)
    assert filters.path_patterns == ("src/auth",) and filters.node_kinds == (NodeKind.METHOD,)
    assert filters.exclude_tests
    with pytest.raises(tools.ToolInputError, match="kind must be one of function"):
        tools.search_filters(None, "widget", True)
    with pytest.raises(tools.ToolInputError, match="invalid path filter"):
        tools.search_filters("src/[a", None, True)


def test_the_default_budget_also_caps_characters() -> None:
    # A larger max_tokens than SELECTION_MAX_TOKENS is refused by the tool's schema (test_server).
    assert tools.search_budget(None) == tools.SearchBudget(None, tools.DEFAULT_MAX_CHARS)
    assert tools.search_budget(3000) == tools.SearchBudget(3000, None)


def _payload(results: int, code_lines: int) -> dict:
    code = "\n".join(f"  const value{i} = compute(value{i - 1}, 'some text here');" for i in range(code_lines))
    return {
        "results": [{"path": f"src/f{i}.ts", "qualified_name": f"f{i}", "start_line": 1, "end_line": code_lines,
                     "header": f"// src/f{i}.ts > f{i}", "code": code, "score": 1.0 - i / 100,
                     "relevance": 1.0 - i / 50, "why": "match"} for i in range(results)],
        "selection": None,
        "metadata": {"indexing_status": "ready"},
    }


def test_the_response_never_exceeds_25000_tokens_whatever_the_budget() -> None:
    payload = _payload(results=30, code_lines=150)  # ~60k tokens of code
    result = present.search_result(answer_of(payload), Path("/ws"), "q", tools.search_budget(1_000_000), {})
    texts = [c.text for c in result.content]
    total = sum(count_tokens(t) for t in texts) + count_tokens(json.dumps(result.structured_content))
    assert total <= tools.RESPONSE_MAX_TOKENS
    meta = result.structured_content["metadata"]
    assert meta["response_truncated"]["dropped_results"] == 30 - len(texts) > 0
    assert len(result.structured_content["results"]) == len(texts)
    assert texts[0].startswith("// src/f0.ts > f0\n  const value0")
    assert [c.annotations.priority for c in result.content] == sorted(
        (c.annotations.priority for c in result.content), reverse=True)


def test_the_default_budget_stays_under_50000_characters() -> None:
    result = present.search_result(answer_of(_payload(results=12, code_lines=100)), Path("/ws"), "q",
                                   tools.search_budget(None), {})
    size = sum(len(c.text) for c in result.content) + len(json.dumps(result.structured_content))
    assert size <= tools.DEFAULT_MAX_CHARS and "response_truncated" in result.structured_content["metadata"]


def test_no_results_and_a_cold_index_are_said_not_left_empty() -> None:
    payload = {"results": [], "selection": None,
               "metadata": {"indexing_status": "indexing", "total_chunks": 10, "embedded_chunks": 2,
                            "low_confidence": True, "low_confidence_reason": None}}
    result = present.search_result(answer_of(payload), Path("/ws"), "nothing", tools.search_budget(None), {})
    texts = [c.text for c in result.content]
    assert not result.is_error and len(texts) == 3
    assert texts[0] == 'No confident match for "nothing" — nothing in the index matched it.'
    assert "lexical" in texts[1] and "2/10 chunks embedded" in texts[1]
    assert texts[2] == "Try the identifiers you expect (a function or class name), or other words."


def test_a_low_confidence_answer_says_so_first_and_names_missing_names_once() -> None:
    payload = _payload(results=3, code_lines=3)
    payload["metadata"].update({
        "low_confidence": True, "missing_names": ["validateTokenz"], "nearest_names": ["validateToken"],
        "low_confidence_reason": "nothing in the index is named validateTokenz (nearest: validateToken)"})
    result = present.search_result(answer_of(payload), Path("/ws"), "validateTokenz", tools.search_budget(None), {})
    texts = [c.text for c in result.content]
    assert texts[0] == ('No confident match for "validateTokenz" — nothing in the index is named validateTokenz '
                        "(nearest: validateToken); the closest code follows.")
    assert result.content[0].annotations.priority == 1.0
    assert [t.splitlines()[0] for t in texts[1:]] == ["// src/f0.ts > f0", "// src/f1.ts > f1", "// src/f2.ts > f2"]
    # Lexical only (the semantic channel skipped) names them once all the same.
    payload["metadata"].update({"semantic_fallback": True, "semantic_skipped_reason": "no vectors yet"})
    texts = [c.text for c in present.search_result(answer_of(payload), Path("/ws"), "validateTokenz",
                                                   tools.search_budget(None), {}).content]
    assert sum("validateTokenz" in t for t in texts) == 1
    assert any(t.startswith("Semantic search was skipped (no vectors yet)") for t in texts)
    # A filter that matched nothing is said first by its own note, which names the filter.
    filtered = {"results": [], "selection": None, "metadata": {
        "indexing_status": "ready", "total_chunks": 9, "filtered_chunks": 0, "low_confidence": True,
        "low_confidence_reason": "the filters matched no indexed code"}}
    texts = [c.text for c in present.search_result(answer_of(filtered), Path("/ws"), "q", tools.search_budget(None),
                                                   {"filters": {"path": "nothere/"}}).content]
    assert texts[0].startswith("The filter path='nothere/' matched no indexed code") and len(texts) == 1
    # A confident answer opens with its code.
    assert present.search_result(answer_of(_payload(results=1, code_lines=3)), Path("/ws"), "q",
                                 tools.search_budget(None), {}).content[0].text.startswith("// src/f0.ts > f0")


def test_a_trace_reads_one_line_per_location() -> None:
    outcome = TraceOutcome(
        root=TraceRoot("src/a.ts", "A.run", 3, 9, "id-a"),
        nodes=(TraceNode("src/b.ts", "main", "id-b", 12, "  a.run(   1 )  ", 1),
               TraceNode("src/c.ts", "", "", 2, "x" * 400, 2)),
        partial=True, partial_reason=TracePartialReason.LIMIT, total_found=7)
    text = present.trace_text(outcome, TraceDirection.CALLERS, 2)
    lines = text.splitlines()
    assert lines[0] == "callers of A.run (src/a.ts:3-9)"
    assert lines[1].startswith("2 shown of 7 found — partial (limit; raise limit")
    assert lines[2] == "src/b.ts:12  main  — a.run( 1 )"
    assert lines[3].startswith("  src/c.ts:2  (top level)  — xxx") and len(lines[3]) < 200
    none = present.trace_text(TraceOutcome(outcome.root, (), False, None, 0), TraceDirection.SUBTYPES, 1)
    assert none.splitlines()[1:] == ["0 found (depth 1), complete",
                                     "none: the type checker found no subtypes in the workspace"]


def test_a_long_symbol_is_cut_at_a_line_to_fit() -> None:
    text = "\n".join(f"line {i} " + "word " * 20 for i in range(3000))
    clipped, cut = present.clip_to_tokens(text, 1000)
    assert count_tokens(clipped) <= 1000 and cut > 0 and len(clipped.splitlines()) + cut == 3000
    assert present.clip_to_tokens("short", 10) == ("short", 0)


def _chunk(name: str, kind: NodeKind, depth: int, start: int, end: int, signature: str) -> Chunk:
    return Chunk(id=name, snippet_hash="", relative_path="src/a.ts", language=Language.TYPESCRIPT, node_kind=kind,
                 name=name.rsplit(".", 1)[-1], qualified_name=name, parent_id="", child_ids=(), depth=depth,
                 signature=signature, full_source="", collapsed_source="", start_line=start, end_line=end, jsdoc="",
                 jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="")


def test_an_outline_lists_declarations_by_nesting() -> None:
    chunks = ChunkedFile("src/a.ts", FileStatus.OK, (
        _chunk("<module>", NodeKind.MODULE, 0, 1, 20, ""),
        _chunk("A", NodeKind.CLASS, 1, 2, 19, "export class A"),
        _chunk("A.run", NodeKind.METHOD, 2, 3, 9, "run(x: number):\n  void"),
    ), line_count=20)
    result = present.outline_result(chunks, Path("/ws"), {})
    lines = result.content[0].text.splitlines()
    assert lines[1:] == ["L2-19  export class A", "L3-9    run(x: number): void"]
    assert [e["qualified_name"] for e in result.structured_content["outline"]] == ["A", "A.run"]
    with pytest.raises(tools.ToolInputError, match="not indexed") as skipped:
        present.outline_result(ChunkedFile("min.js", FileStatus.SKIPPED, (), skip_detail="minified"), Path("/ws"), {})
    assert skipped.value.code == "not_found"


def test_expand_names_are_relative_to_the_symbol() -> None:
    root = TraceRoot("src/a.ts", "A", 1, 9, "id")
    assert symbols.expand_name(root, "run") == "A.run"
    assert symbols.expand_name(root, "A.run") == "A.run"
    query = symbols.resolve_query(Path("/ws"), "A.run", "src/a.ts")
    assert (query.direction, query.limit, query.relative_path) == (TraceDirection.SUPERTYPES, 1, "src/a.ts")


def test_a_stale_result_and_a_running_sync_are_flagged() -> None:
    payload = _payload(results=2, code_lines=3)
    payload["results"][1]["stale"] = True
    payload["metadata"]["freshness_status"] = "syncing"
    result = present.search_result(answer_of(payload), Path("/ws"), "q", tools.search_budget(None), {})
    texts = [c.text for c in result.content]
    assert "still being indexed" in texts[0]
    assert "(stale:" not in texts[1].splitlines()[0] and "(stale:" in texts[2].splitlines()[0]


def test_a_partly_written_index_a_missing_name_and_an_empty_filter_are_said() -> None:
    """An agent acts on what it is told: an empty answer from the first 501 chunks of a cold
    index, a name nothing is called, or a filter that matched no file never reads as 'no code
    matched'."""
    cold = {"results": [], "selection": None, "metadata": {
        "indexing_status": "indexing", "total_chunks": 501, "filtered_chunks": 501, "embedded_chunks": 0,
        "indexing_progress": {"phase": "lexical", "files_done": 120, "files_total": 1000, "chunks_written": 501}}}
    texts = [c.text for c in present.search_result(answer_of(cold), Path("/ws"), "q", tools.search_budget(None),
                                                   {}).content]
    assert "still being written (first pass: 120 of 1,000 files, 501 chunks searchable so far)" in texts[0]
    assert "Nothing matched 'q' in the part of /ws indexed so far" in texts[-1]
    assert not any("No code in /ws matched" in t for t in texts)

    missing = {"results": [], "selection": None, "metadata": {
        "indexing_status": "ready", "total_chunks": 9, "filtered_chunks": 9, "missing_names": ["validateTokenz"],
        "nearest_names": ["validateToken", "ValidationResult"]}}
    texts = [c.text for c in present.search_result(answer_of(missing), Path("/ws"), "validateTokenz",
                                                   tools.search_budget(None), {}).content]
    assert texts[0] == ("Nothing in the index is named validateTokenz; the nearest names are validateToken, "
                        "ValidationResult. Results below (if any) are only near matches.")

    filtered = {"results": [], "selection": None, "metadata": {
        "indexing_status": "ready", "total_chunks": 9, "filtered_chunks": 0}}
    result = present.search_result(answer_of(filtered), Path("/ws"), "q", tools.search_budget(None),
                                   {"filters": {"path": "nothere/", "kind": None, "include_tests": True}})
    texts = [c.text for c in result.content]
    assert texts == [("The filter path='nothere/' matched no indexed code (the index holds 9 chunks): paths are "
                      "relative to /ws, e.g. `src/auth` or `**/*.tsx`. Search again without it, or with another one.")]


def test_the_answer_says_which_vectors_answered() -> None:
    """While the primary model is still embedding, and when it cannot embed the query, the agent is
    told that semantic matches come from the static vectors, and for how many chunks."""
    embedding = {"results": [], "selection": None, "metadata": {
        "indexing_status": "indexing", "total_chunks": 35_300, "filtered_chunks": 35_300, "embedded_chunks": 4_100,
        "embedding_model_id": "all-MiniLM-L6-v2", "static_model_id": "code-static",
        "vector_channels": ["primary", "static"], "primary_vector_chunks": 4_100, "static_vector_chunks": 31_200}}
    texts = [c.text for c in present.search_result(answer_of(embedding), Path("/ws"), "q", tools.search_budget(None),
                                                   {}).content]
    assert texts[0] == ("The index of /ws is indexing; semantic: code-static for 31,200 chunks, all-MiniLM-L6-v2 "
                        "for 4,100 (still embedding): semantic matches of chunks not embedded yet come from static "
                        "vectors; ask again later for the primary model's.")

    down = {"results": [], "selection": None, "metadata": {
        "indexing_status": "ready", "total_chunks": 9, "filtered_chunks": 9, "embedded_chunks": 9,
        "embedding_model_id": "all-MiniLM-L6-v2", "static_model_id": "code-static", "vector_channels": ["static"],
        "static_vector_chunks": 9, "primary_unavailable_reason": "embedding_unavailable"}}
    texts = [c.text for c in present.search_result(answer_of(down), Path("/ws"), "q", tools.search_budget(None),
                                                   {}).content]
    assert texts[0] == ("The embedding model could not embed the query; semantic: code-static for 9 chunks "
                        "(all-MiniLM-L6-v2 unavailable: embedding_unavailable).")
