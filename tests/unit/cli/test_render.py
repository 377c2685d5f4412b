"""Human output: chunk trees, summaries, sample queries, progress lines."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import replace

from codecompass_cli.progress import ProgressReporter, format_eta
from codecompass_cli.render import (
    ChunkSummary,
    file_block,
    index_summary_lines,
    jsdoc_purpose,
    metadata_line,
    sample_query,
)
from tests.fixtures.answers import answer_of, metadata_of

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.contracts.analysis.model import ChunkedFile, FileStatus, SkippedFile
from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress, SyncStats

BASE = Chunk(
    id="", snippet_hash="", relative_path="src/auth/tokenService.ts", language=Language.TYPESCRIPT,
    node_kind=NodeKind.CLASS, name="TokenService", qualified_name="TokenService", parent_id="", child_ids=(),
    depth=0, signature="", full_source="", collapsed_source="", start_line=12, end_line=80, jsdoc="",
    jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="", embedding_token_count=340,
)


def test_file_block_is_a_header_then_an_indented_tree() -> None:
    method = replace(BASE, node_kind=NodeKind.METHOD, name="validateToken",
                     qualified_name="TokenService.validateToken", depth=1, start_line=48, end_line=70,
                     embedding_token_count=120)
    result = ChunkedFile("src/auth/tokenService.ts", FileStatus.OK, (BASE, method), line_count=80)
    assert file_block(result) == [
        "src/auth/tokenService.ts  ok  2 chunks",
        "  class TokenService  L12-80  340 tok",
        "    method TokenService.validateToken  L48-70  120 tok",
    ]


def test_skipped_and_broken_files_say_why() -> None:
    skipped = ChunkedFile("dist/app.min.js", FileStatus.SKIPPED, (), line_count=1, skip_reason="minified",
                         skip_detail="longest line 48213 chars")
    assert file_block(skipped) == ["dist/app.min.js  skipped  minified (longest line 48213 chars)"]
    broken = ChunkedFile("src/broken.ts", FileStatus.SYNTAX_ERRORS, (), line_count=9,
                         diagnostics=("3:14 ';' expected",))
    assert file_block(broken) == ["src/broken.ts  syntax_errors  0 chunks", "  ! 3:14 ';' expected"]


def test_jsdoc_purpose_is_the_first_sentence_without_markers() -> None:
    jsdoc = "/**\n * Verify a JWT's signature, issuer and expiry. Returns the payload.\n * @param token raw\n */"
    assert jsdoc_purpose(jsdoc) == "Verify a JWT's signature, issuer and expiry."
    assert jsdoc_purpose("/** Parse the config file */") == "Parse the config file"
    assert jsdoc_purpose("") == ""


def test_sample_query_uses_the_most_used_documented_symbol() -> None:
    used = replace(BASE, node_kind=NodeKind.FUNCTION, name="loadConfig", qualified_name="loadConfig",
                   jsdoc="/** Parse the JSON configuration file at the given path. */")
    rarely = replace(BASE, node_kind=NodeKind.FUNCTION, name="slugify", qualified_name="slugify",
                     jsdoc="/** Turn a title into a slug. */")
    caller = replace(BASE, node_kind=NodeKind.FUNCTION, name="main", full_source="loadConfig(a); loadConfig(b);")
    test_only = replace(used, is_test=True, name="helper", jsdoc="/** Test helper. */")
    query, source = sample_query([used, rarely, caller, test_only])
    assert query == "Parse the JSON configuration file at the given path"
    assert source is used


def test_sample_query_falls_back_when_nothing_is_documented() -> None:
    assert sample_query([BASE]) == ("parse configuration file", None)


def test_chunk_summary_counts_kinds_and_finds_the_largest_chunk() -> None:
    method = replace(BASE, node_kind=NodeKind.METHOD, start_line=20, end_line=30)
    summary = ChunkSummary()
    summary.add(ChunkedFile("a.ts", FileStatus.OK, (BASE, method), line_count=80))
    summary.add(ChunkedFile("b.ts", FileStatus.SYNTAX_ERRORS, (), line_count=5))
    summary.add(ChunkedFile("c.min.js", FileStatus.SKIPPED, (), line_count=1, skip_reason="minified"))
    lines = summary.lines_out(0.5)
    assert lines[0] == "files     2 chunked (1 with syntax errors), 1 skipped [minified: 1]"
    assert lines[1] == "lines     85"
    assert lines[2] == "chunks    2: class 1, method 1"
    assert lines[3].startswith("largest   src/auth/tokenService.ts:12-80 TokenService (69 lines, 340 tokens)")
    assert lines[4] == "time      0.50s, 170 lines/s"


def _progress(phase: str = "chunking", **fields) -> IndexProgress:
    """Retrieval's progress type, as RetrievalClient.index yields it (-1: no ETA yet)."""
    base = {"files_done": 3, "files_total": 10, "chunks_done": 30, "embeddings_done": 0,
            "embeddings_total": 0, "embeddings_per_second": 0.0, "eta_seconds": -1.0, "stats": None}
    return IndexProgress(phase=IndexPhase(phase), **{**base, **fields})


def test_plain_progress_prints_a_line_per_phase_change() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, is_tty=False)
    reporter.update(_progress())
    reporter.update(_progress(files_done=3))
    reporter.update(_progress(phase="embedding", embeddings_done=5, embeddings_total=50,
                              embeddings_per_second=61.5, eta_seconds=73))
    reporter.close()
    assert stream.getvalue().splitlines() == [
        "chunking   files 3/10  chunks 30  ETA --:--",
        "embedding  files 3/10  chunks 30  embedded 5/50  61.5 emb/s  ETA 01:13",
    ]


def test_progress_waiting_for_an_indexed_job_says_how_many_workers_reported() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, is_tty=False)
    reporter.update(_progress(phase="shards", files_done=0, files_total=19, chunks_done=0, shards_total=2))
    reporter.update(_progress(phase="shards", files_done=9, files_total=19, chunks_done=0, shards_done=1,
                              shards_total=2))
    assert stream.getvalue().splitlines() == [
        "shards     waiting for 2 shard workers (Indexed Job): 0 reported  files 0/19",
        "shards     waiting for 2 shard workers (Indexed Job): 1 reported  files 9/19",
    ]


def test_plain_progress_prints_each_tenth_not_each_message() -> None:
    """A 5-minute index without a terminal: a line per phase and per 10%, not one a second."""
    stream = io.StringIO()
    reporter = ProgressReporter(stream, is_tty=False)
    reporter.update(_progress(phase="scanning", files_done=0, files_total=0))
    for done in range(1, 1001):
        reporter.update(_progress(files_done=done, files_total=1000))
        if done % 250 == 0:  # each flush writes, then chunking goes on: no line for coming back
            reporter.update(_progress(phase="writing", files_done=250, files_total=250))
    for done in range(0, 3001, 3):
        reporter.update(_progress(phase="embedding", embeddings_done=done, embeddings_total=3000))
    reporter.update(_progress(phase="done"))
    lines = stream.getvalue().splitlines()
    assert Counter(line.split()[0] for line in lines) == {"scanning": 1, "chunking": 11, "writing": 1,
                                                          "embedding": 11, "done": 1}
    chunking = [line.split()[2] for line in lines if line.startswith("chunking")]
    assert chunking == ["1/1000"] + [f"{n}/1000" for n in range(100, 1001, 100)]


def test_terminal_progress_redraws_one_bar() -> None:
    stream = io.StringIO()
    reporter = ProgressReporter(stream, is_tty=True)
    reporter.update(_progress(phase="embedding", embeddings_done=25, embeddings_total=50))
    reporter.update(_progress(phase="done", embeddings_done=50, embeddings_total=50))
    reporter.close()
    text = stream.getvalue()
    assert text.count("\r\x1b[2K") == 2 and text.endswith("\n")
    assert "[############............]  50%" in text and "100%" in text


def test_eta_format() -> None:
    assert (format_eta(None), format_eta(5), format_eta(3725)) == ("--:--", "00:05", "1:02:05")


def test_index_summary_reads_the_sync_stats() -> None:
    stats = SyncStats(files_added=2, files_changed=1, files_skipped=3, chunks_upserted=40, chunks_deleted=4,
                      chunks_embedded=36, embeddings_reused=4, cascade_reembedded=1, duration_ms=12.5)
    skipped = (SkippedFile("dist", "excluded", "dependencies or build output", folder=True),
               SkippedFile("a.d.ts", "declaration_file"), SkippedFile("b.d.ts", "declaration_file"))
    assert index_summary_lines("/ws", stats, 1.25, skipped) == [
        "indexed /ws in 1.2s",
        "  files       2 added, 1 changed, 0 removed, 3 skipped (2 declaration files, 1 excluded)",
        "  chunks      40 written, 4 deleted",
        "  embeddings  36 embedded, 4 reused, 1 re-embedded by signature changes",
    ]
    assert index_summary_lines("/ws", None, 0.5) == ["indexed /ws in 0.5s (the service sent no summary)"]


META = {
    "indexing_status": "ready", "result_completeness": "complete", "semantic_ratio_used": 0.0, "confidence": 0.9,
    "answer_confidence": 0.8, "confidence_threshold": 0.5, "low_confidence": False, "low_confidence_reason": None,
    "semantic_fallback": False, "semantic_skipped_reason": "", "external_provider_blocked": False,
    "embedding_model_id": "", "embedding_model_version": "", "embedded_chunks": 1, "total_chunks": 1,
    "sync_ms": 1.0, "search_ms": 1.0, "rerank_provider": "local", "rerank_fallback": False,
    "rerank_fallback_reason": "", "hubs_added": 0, "stage_ms": {"retrieve": 12.0, "select": 3.0},
    "skipped_stages": {"hubs": "off"},
}
CODE = "validate(token) {\n    if (!token) {\n      return false;\n    }\n    return true;\n  }"


def test_ranked_code_block_reads_as_written():
    from codecompass_cli.render import answer_lines

    result = {
        "score": 0.9, "path": "src/a.ts", "start_line": 3, "end_line": 8, "qualified_name": "Auth.validate",
        "kind": "method", "lexical_score": 0.9, "vector_similarity": 0.0, "provenance": "lexical",
        "signature": "validate(token)", "signals": {}, "code": CODE, "code_lines_omitted": 0, "reason": "match",
    }
    lines = answer_lines(answer_of({"results": [result], "selection": None, "metadata": META}), "validate")
    start = lines.index("    validate(token) {")
    assert lines[start + 1 : start + 6] == [
        "      if (!token) {", "        return false;", "      }", "      return true;", "    }",
    ]
    assert any(line.startswith("-- confidence 0.80") and "hubs off" in line for line in lines)
    assert lines[0].startswith(" 1. 0.900  src/a.ts:3-8")
    unsure = {**META, "answer_confidence": 0.31, "low_confidence": True,
              "low_confidence_reason": "no code matches its words"}
    doubtful = answer_lines(answer_of({"results": [result], "selection": None, "metadata": unsure}), "zzqx blorf")
    assert doubtful[0] == 'No confident match for "zzqx blorf" — no code matches its words; the closest code follows.'
    assert any(line.startswith("-- confidence 0.31 · below the threshold 0.50") for line in doubtful)


def test_selected_context_prints_header_why_and_budget():
    from codecompass_cli.render import answer_lines

    result = {
        "score": 0.9, "relevance": 0.8, "path": "src/a.ts", "start_line": 3, "end_line": 8,
        "qualified_name": "Auth.validate",
        "kind": "method", "why": "match (score 0.90)", "header": "// src/a.ts > Auth.validate", "code": CODE,
    }
    selection = {"total_tokens": 40, "max_tokens": 8000, "min_relevance": 0.5, "best_relevance": 0.8,
                 "relevance_floor": 0.2, "below_relevance": 3, "over_budget": 0, "merged": 1, "focus": "implementation",
                 "render_fallback": False, "render_fallback_reason": ""}
    lines = answer_lines(answer_of({"results": [result], "selection": selection, "metadata": META}), "validate")
    # The footer prints the gate on relevance: each result shows the relevance it was kept on.
    assert lines[0] == " 1. relevance 0.80  src/a.ts:3-8  Auth.validate  (method)  match (score 0.90)"
    assert "    // src/a.ts > Auth.validate" in lines
    footer = next(line for line in lines if line.startswith("-- confidence"))
    assert "1 results, 40/8,000 tokens" in footer and "1 merged" in footer
    assert "best relevance 0.80 ≥ gate 0.50" in footer and "kept relevance ≥ 0.20 (3 below it)" in footer
    # No tail cut (the default): every match was kept, and those that matched nothing are counted.
    uncut = answer_lines(answer_of({"results": [result], "selection": {**selection, "relevance_floor": 0.0},
                                    "metadata": META}), "validate")
    footer = next(line for line in uncut if line.startswith("-- confidence"))
    assert "3 with no relevance" in footer and "kept relevance" not in footer


def test_a_low_confidence_answer_says_so_first_and_its_footer_the_small_budget():
    from codecompass_cli.render import answer_lines

    result = {
        "score": 0.4, "relevance": 0.18, "path": "src/a.ts", "start_line": 3, "end_line": 8,
        "qualified_name": "Auth.validate", "kind": "method", "why": "match (score 0.40)",
        "header": "// src/a.ts > Auth.validate", "code": CODE,
    }
    selection = {"total_tokens": 40, "max_tokens": 1000, "min_relevance": 0.5, "best_relevance": 0.18,
                 "relevance_floor": 0.0, "below_relevance": 0, "over_budget": 12, "merged": 0,
                 "focus": "implementation", "render_fallback": False, "render_fallback_reason": ""}
    unsure = {**META, "answer_confidence": 0.18, "low_confidence": True, "missing_names": ["validateTokenz"],
              "nearest_names": ["validate"],
              "low_confidence_reason": "nothing in the index is named validateTokenz (nearest: validate)"}
    lines = answer_lines(answer_of({"results": [result], "selection": selection, "metadata": unsure}), "validateTokenz")
    assert lines[0] == ('No confident match for "validateTokenz" — nothing in the index is named validateTokenz '
                        "(nearest: validate); the closest code follows.")
    assert lines[1].startswith(" 1. relevance 0.18  src/a.ts:3-8")  # the names are said once, first
    footer = next(line for line in lines if line.startswith("-- confidence"))
    assert ("low confidence: best relevance 0.18 < gate 0.50 · 1 results, 40/1,000 tokens (the low-confidence "
            "budget) · 12 over budget") in footer


def test_an_empty_gated_answer_says_why():
    from codecompass_cli.render import answer_lines

    selection = {"total_tokens": 0, "max_tokens": 1000, "min_relevance": 0.5, "best_relevance": 0.0,
                 "relevance_floor": 0.0, "below_relevance": 30, "over_budget": 0, "merged": 0,
                 "focus": "implementation", "render_fallback": False, "render_fallback_reason": ""}
    nothing = {**META, "answer_confidence": 0.0, "low_confidence": True, "low_confidence_reason": None}
    lines = answer_lines(answer_of({"results": [], "selection": selection, "metadata": nothing}), "\u200b")
    assert lines[0] == 'No confident match for "\\u200b" — nothing in the index matched it.'
    assert lines[1] == "try the identifiers you expect (a function or class name), or other words"
    assert "30 with no relevance" in lines[2]


def test_stale_results_and_an_unindexed_workspace_are_said():
    from codecompass_cli.render import answer_lines

    result = {
        "score": 0.9, "path": "src/a.ts", "start_line": 3, "end_line": 8, "qualified_name": "Auth.validate",
        "kind": "method", "why": "match", "header": "// src/a.ts > Auth.validate", "code": CODE, "stale": True,
    }
    selection = {"total_tokens": 40, "max_tokens": 8000, "min_relevance": 0.5, "best_relevance": 0.9,
                 "relevance_floor": 0.2, "below_relevance": 0, "over_budget": 0, "merged": 0,
                 "focus": "implementation", "render_fallback": False, "render_fallback_reason": ""}
    syncing = {**META, "freshness_status": "syncing", "pending_files": 3}
    lines = answer_lines(answer_of({"results": [{**result, "relevance": 0.9}], "selection": selection,
                                    "metadata": syncing}), "validate")
    assert "[stale: the file changed since it was indexed]" in lines[0]
    assert any("index syncing (3 changed files not in it yet)" in line for line in lines)
    cold = answer_lines(answer_of({"results": [], "selection": None,
                                   "metadata": {**META, "freshness_status": "not_indexed"}}), "validate")
    assert cold[0].startswith("this workspace is not indexed yet")


def test_the_metadata_line_says_which_vectors_answered() -> None:
    meta = {"indexing_status": "indexing", "result_completeness": "complete", "semantic_ratio_used": 0.2,
            "semantic_fallback": False, "semantic_skipped_reason": "", "external_provider_blocked": False,
            "embedding_model_id": "all-MiniLM-L6-v2", "embedding_model_version": "1", "embedded_chunks": 4100,
            "total_chunks": 35300, "sync_ms": 3.0, "search_ms": 41.0, "vector_channels": ["primary", "static"],
            "primary_vector_chunks": 4100, "static_vector_chunks": 31200, "static_model_id": "code-static"}
    assert ("· 4100/35300 embedded · semantic: code-static for 31,200 chunks, all-MiniLM-L6-v2 for 4,100 "
            "(still embedding) · sync 3 ms") in metadata_line(metadata_of(meta))
    lexical = {**meta, "vector_channels": []}
    assert "semantic:" not in metadata_line(metadata_of(lexical))
