"""Human-readable output of the CLI commands (`--json` prints the same data as it is: the gateway's
answer as data, each chunk's `to_json`). A search answer's presenter beside the MCP one
(`codecompass_gateway.present`): the same typed answer, read for a terminal."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codecompass_gateway import skips
from codecompass_gateway.answer import (
    AnswerMetadata,
    SearchAnswer,
    SelectedItem,
    no_confident_match,
    semantic_channels_line,
)

from codecompass.common.chunks import Chunk
from codecompass.contracts.analysis.model import ChunkedFile, FileStatus, SkippedFile
from codecompass.contracts.retrieval.model import IndexSummary, SyncStats, base_repository
from codecompass_cli.indexes import human_size


def file_header(result: ChunkedFile) -> str:
    if result.status == FileStatus.SKIPPED:
        reason = result.skip_reason or "skipped"
        detail = f" ({result.skip_detail})" if result.skip_detail else ""
        return f"{result.relative_path}  skipped  {reason}{detail}"
    return f"{result.relative_path}  {result.status.value}  {len(result.chunks)} chunks"


def chunk_line(chunk: Chunk) -> str:
    indent = "  " * (chunk.depth + 1)
    return (f"{indent}{chunk.node_kind.value} {chunk.qualified_name}  L{chunk.start_line}-{chunk.end_line}"
            f"  {chunk.embedding_token_count} tok")


def file_block(result: ChunkedFile) -> list[str]:
    lines = [file_header(result)]
    lines.extend(f"  ! {diagnostic}" for diagnostic in result.diagnostics)
    lines.extend(chunk_line(chunk) for chunk in result.chunks)
    return lines


@dataclass
class ChunkSummary:
    """Totals over a chunking run, for `codecompass run`."""

    files: int = 0
    files_with_syntax_errors: int = 0
    skipped: Counter = field(default_factory=Counter)
    lines: int = 0
    kinds: Counter = field(default_factory=Counter)
    largest: Chunk | None = None
    chunks: list[Chunk] = field(default_factory=list)

    def add(self, result: ChunkedFile) -> None:
        if result.status == FileStatus.SKIPPED:
            self.skipped[result.skip_reason or "unspecified"] += 1
            return
        self.files += 1
        self.lines += result.line_count
        if result.status == FileStatus.SYNTAX_ERRORS:
            self.files_with_syntax_errors += 1
        for chunk in result.chunks:
            self.kinds[chunk.node_kind.value] += 1
            self.chunks.append(chunk)
            if self.largest is None or _lines(chunk) > _lines(self.largest):
                self.largest = chunk

    def lines_out(self, seconds: float) -> list[str]:
        total = sum(self.kinds.values())
        out = [
            f"files     {self.files} chunked ({self.files_with_syntax_errors} with syntax errors), "
            f"{sum(self.skipped.values())} skipped"
            + (f" [{', '.join(f'{k}: {v}' for k, v in sorted(self.skipped.items()))}]" if self.skipped else ""),
            f"lines     {self.lines}",
            f"chunks    {total}: " + ", ".join(f"{kind} {count}" for kind, count in self.kinds.most_common()),
        ]
        if self.largest is not None:
            big = self.largest
            out.append(f"largest   {big.relative_path}:{big.start_line}-{big.end_line} {big.qualified_name} "
                       f"({_lines(big)} lines, {big.embedding_token_count} tokens)")
        rate = f", {self.lines / seconds:,.0f} lines/s" if seconds > 0 else ""
        out.append(f"time      {seconds:.2f}s{rate}")
        return out


def _lines(chunk: Chunk) -> int:
    return chunk.end_line - chunk.start_line + 1


_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_QUERY_KINDS = {"function", "method", "class", "component"}
FALLBACK_QUERY = "parse configuration file"


def jsdoc_purpose(jsdoc: str) -> str:
    """First sentence of a JSDoc comment, without markers and tags."""
    text_lines = []
    for line in jsdoc.splitlines():
        line = line.strip().removeprefix("/**").removesuffix("*/").strip().lstrip("*").strip()
        if line.startswith("@"):
            break
        if line:
            text_lines.append(line)
    text = " ".join(text_lines)
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return (match.group(1) if match else text).strip()


def sample_query(chunks: Iterable[Chunk]) -> tuple[str, Chunk | None]:
    """A query a user of this workspace might ask: the purpose of its most-used documented symbol.

    Usage is counted as identifier occurrences in top-level sources, one pass
    over the text, so this stays linear on big workspaces.
    """
    chunks = list(chunks)
    usage: Counter = Counter()
    for chunk in chunks:
        if chunk.depth == 0:
            usage.update(_IDENTIFIER.findall(chunk.full_source))
    candidates = [
        (usage[chunk.name], chunk.qualified_name, chunk)
        for chunk in chunks
        if not chunk.is_test and chunk.node_kind.value in _QUERY_KINDS and jsdoc_purpose(chunk.jsdoc)
    ]
    if not candidates:
        return FALLBACK_QUERY, None
    _, _, best = max(candidates, key=lambda item: (item[0], item[1]))
    return jsdoc_purpose(best.jsdoc).rstrip("."), best


def answer_lines(answer: SearchAnswer, query: str) -> list[str]:
    """The selected context (or, with --no-select, the ranked list) and how it was made. An answer
    that holds no confident match opens by saying so, in the words the MCP tools use."""
    lines: list[str] = []
    meta, results = answer.metadata, answer.results
    low, reason = meta.low_confidence, meta.low_confidence_reason or ""
    # An answer with results shows the filters matched; an older server leaves filtered_chunks 0.
    filtered_out = not results and bool(meta.total_chunks) and meta.filtered_chunks == 0
    # What the answer could not do comes first: a reader stops at the first screen. A filter that
    # matched nothing is said by its own line, which says how to write one.
    if low and not filtered_out:
        lines.append(no_confident_match(query, reason, bool(results)))
    progress = meta.indexing_progress
    if progress is not None and meta.indexing_status != "ready":
        files = f"{progress.files_done:,}/{progress.files_total:,} files, " if progress.files_total else ""
        lines.append(f"the index is still being written ({progress.phase}: {files}{progress.chunks_written:,} "
                     "chunks searchable so far): this answer covers that part only")
    missing = meta.missing_names
    if missing and not (low and all(name in reason for name in missing)):  # else the first line named them
        nearest = meta.nearest_names
        lines.append(f"nothing in the index is named {', '.join(missing)}"
                     + (f"; nearest names: {', '.join(nearest)}" if nearest else ""))
    if filtered_out:
        lines.append(f"the filters matched no indexed code (the index holds {meta.total_chunks:,} chunks); "
                     "--path patterns are relative to the workspace root")
    for rank, result in enumerate(results, start=1):
        # A selected answer was gated on relevance, and its footer prints the gate: each result shows
        # the relevance the gate read (its score is in `why`). A ranked list is ordered by score.
        value = f"relevance {result.relevance:.2f}" if isinstance(result, SelectedItem) else f"{result.score:.3f}"
        head = (f"{rank:>2}. {value}  {result.path}:{result.start_line}-{result.end_line}"
                f"  {result.qualified_name}  ({result.kind})")
        if result.stale:
            head += "  [stale: the file changed since it was indexed]"
        if isinstance(result, SelectedItem):
            lines.append(f"{head}  {result.why}")
            lines.append("")
            lines.append(f"    {result.header}")
            lines.extend(f"    {line}" for line in _align_first_line(result.code.splitlines()))
            lines.append("")
            continue
        lines.append(head)
        why = f"  {', '.join(result.signals)}" if result.signals else ""
        reason_text = "  hub" if result.reason == "hub" else ""
        lines.append(f"      lexical {result.lexical_score:.3f}  vector {result.vector_similarity:.3f}"
                     f"  {result.provenance}{why}{reason_text}")
        code = result.code or result.signature
        if code:
            lines.append("")
            lines.append(f"    // {result.path} > {result.qualified_name}")
            lines.extend(f"    {line}" for line in _align_first_line(code.splitlines()))
            if result.code_lines_omitted:
                lines.append(f"    /* … {result.code_lines_omitted} more lines: {result.path}:"
                             f"{result.start_line}-{result.end_line} */")
            lines.append("")
    if not results:
        if meta.freshness_status == "not_indexed":
            lines.append("this workspace is not indexed yet: indexing has started; run `codecompass index PATH` "
                         "to watch it, then search again")
        elif low and not filtered_out:
            lines.append("try the identifiers you expect (a function or class name), or other words")
        elif not low:
            lines.append("no results within the budget: try a larger --max-tokens")
    lines.append(pipeline_line(answer))
    lines.append(metadata_line(meta))
    return lines


def pipeline_line(answer: SearchAnswer) -> str:
    """How the answer was made, with the numbers its decisions compared: the answer's confidence,
    and for a selected answer the gate on relevance (the best relevance against it, and a tail cut
    when one was made; or, when the best relevance was under it, the budget the low-confidence
    answer was filled within)."""
    meta, selection = answer.metadata, answer.selection
    parts = [f"confidence {meta.answer_confidence:.2f}"]
    if selection is None and meta.low_confidence:
        parts.append(f"below the threshold {meta.confidence_threshold:.2f}")
    if meta.freshness_status == "syncing":
        parts.append(f"index syncing ({meta.pending_files} changed files not in it yet)")
    if selection is not None:
        tokens = f"{len(answer.results)} results, {selection.total_tokens:,}/{selection.max_tokens:,} tokens"
        if meta.low_confidence:
            parts.append(f"low confidence: best relevance {selection.best_relevance:.2f} < gate "
                         f"{selection.min_relevance:.2f}")
            parts.append(f"{tokens} (the low-confidence budget)")
            if selection.below_relevance:
                parts.append(f"{selection.below_relevance} with no relevance")
        else:
            parts.append(f"best relevance {selection.best_relevance:.2f} ≥ gate {selection.min_relevance:.2f}")
            parts.append(tokens)
            if selection.relevance_floor > 0:
                parts.append(f"kept relevance ≥ {selection.relevance_floor:.2f} ({selection.below_relevance} below it)")
            elif selection.below_relevance:
                parts.append(f"{selection.below_relevance} with no relevance")
        if selection.over_budget:
            parts.append(f"{selection.over_budget} over budget")
        if selection.merged:
            parts.append(f"{selection.merged} merged into parents")
        parts.append(f"focus {selection.focus}")
        if selection.render_fallback:
            parts.append(f"rendered from the index ({selection.render_fallback_reason})")
    if meta.rerank_provider:
        fallback = f" (fell back: {meta.rerank_fallback_reason})" if meta.rerank_fallback else ""
        parts.append(f"rerank {meta.rerank_provider}{fallback}")
    if meta.hubs_added:
        parts.append(f"hubs +{meta.hubs_added}")
    for stage, why in meta.skipped_stages.items():
        parts.append(f"{stage} {'off' if why == 'off' else 'skipped: ' + why}")
    timings = ", ".join(f"{stage} {ms:.0f}" for stage, ms in meta.stage_ms.items())
    if timings:
        parts.append(f"ms: {timings}")
    return "-- " + " · ".join(parts)


def _align_first_line(lines: list[str]) -> list[str]:
    """A symbol's source starts at the symbol, so its first line lost the indentation the rest
    keeps; shift the rest left by their common indentation so the block reads as written."""
    rest = [line for line in lines[1:] if line.strip()]
    if not rest:
        return lines
    indent = min(len(line) - len(line.lstrip(" \t")) for line in rest)
    return [lines[0], *(line[indent:] if line.strip() else line for line in lines[1:])]


def metadata_line(meta: AnswerMetadata) -> str:
    parts = [
        f"index {meta.indexing_status}",
        f"results {meta.result_completeness}",
        f"semantic ratio {meta.semantic_ratio_used:.2f}",
    ]
    if meta.semantic_fallback:
        parts.append("semantic fallback")
    if meta.semantic_skipped_reason:
        parts.append(f"semantic skipped: {meta.semantic_skipped_reason}")
    if meta.external_provider_blocked:
        parts.append("external provider blocked")
    if meta.embedding_model_id:
        parts.append(f"model {meta.embedding_model_id} {meta.embedding_model_version}".rstrip())
    parts.append(f"{meta.embedded_chunks}/{meta.total_chunks} embedded")
    if semantic := semantic_channels_line(meta):
        parts.append(semantic)
    parts.append(f"sync {meta.sync_ms:.0f} ms, search {meta.search_ms:.0f} ms")
    return "-- " + " · ".join(parts)


def index_summary_lines(workspace: str, stats: SyncStats | None, seconds: float,
                        skipped: Sequence[SkippedFile] = ()) -> list[str]:
    if stats is None:
        return [f"indexed {workspace} in {seconds:.1f}s (the service sent no summary)"]
    lines = [
        f"indexed {workspace} in {seconds:.1f}s",
        (f"  files       {stats.files_added} added, {stats.files_changed} changed, "
         f"{stats.files_removed} removed, {skips.summary(skipped)}"),
        f"  chunks      {stats.chunks_upserted} written, {stats.chunks_deleted} deleted",
        (f"  embeddings  {stats.chunks_embedded} embedded, {stats.embeddings_reused} reused, "
         f"{stats.cascade_reembedded} re-embedded by signature changes"),
    ]
    if stats.files_vanished or stats.files_changed_during_sync:
        # Files edited while the index ran: said, so a count that looks short is explained.
        lines.append(f"  edited while indexing: {stats.files_vanished} vanished (dropped), "
                     f"{stats.files_changed_during_sync} changed (indexed as read; the next sync re-reads them)")
    return lines


def status_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = [f"{'service':<10} {'state':<12} {'health':<12} {'pid':<8} address"]
    for row in rows:
        lines.append(
            f"{row['name']:<10} {row['state']:<12} {row['health'] or '-':<12} {row['pid'] or '-':<8} "
            f"{row['address'] or row.get('reason') or '-'}"
        )
    return lines


def index_row(index: IndexSummary) -> dict:
    """One index of `status --json`."""
    status = index.status
    return {"workspace_id": index.workspace_id, "root": index.root, "host": index.host,
            "status": status.indexing_status.value, "files": status.files, "chunks": status.chunks,
            "embedded_chunks": status.embedded_chunks, "index_bytes": status.index_bytes,
            "last_sync_at": status.last_sync_at, "error": status.error, "kind": index.kind,
            "base": index.base_workspace_id, "commit": status.base_commit, "used_by": list(index.used_by)}


def index_line(index: IndexSummary) -> str:
    """One index of `status`: its state, size and whose it is."""
    status = index.status
    where = index.root if index.workspace_id.startswith("local:") else f"{index.workspace_id} ({index.root})"
    if index.kind == "base":
        users = len(index.used_by)
        where = (f"base of {base_repository(index.workspace_id)} at {status.base_commit[:12]}, used by "
                 f"{users} checkout{'s' if users != 1 else ''}")
    elif index.base_workspace_id:
        where += f", from the base at {status.base_commit[:12]}"
    error = f"; {status.error}" if status.error else ""
    return (f"{status.indexing_status.value:<11} {status.files} files, {status.chunks} chunks, "
            f"{human_size(status.index_bytes)}  {where}{error}")
