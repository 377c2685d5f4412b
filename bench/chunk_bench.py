"""Chunking benchmark against the real analysis service (issue 2, section 4).

Starts `node node_ts_service/dist/src/main.js` on port 0 (a fresh process per
pass, so timings and peak RSS do not leak between passes) and over gRPC:
  1. syntactic pass: ScanWorkspace + ChunkFiles(include_references=false);
  2. reference pass: ScanWorkspace + ChunkFiles(include_references=true),
     then every chunk is validated (bench/lib/chunk_checks.py) and the ids
     are compared with the syntactic pass (ids must not depend on the mode);
  3. no-change re-scan of the corpus and of 10k generated files.
Prints a markdown table and writes every number it shows to bench/results/chunk-<UTC>.json
(+ chunk-latest.json), from which `make bench-report` renders the README tables.

Unlike the other benchmarks it speaks the analysis service's wire directly rather than through
`codecompass.clients`: what it validates is the ChunkFiles messages themselves, field by field,
and what it times is the service alone, without a client's decoding of ~100k chunks in the numbers.

Run: .venv/bin/python -m bench.chunk_bench [--workspace bench/.work/chunk-corpus]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import grpc

from bench.lib.chunk_checks import TOKEN_CEILING, ChunkView, LineCoverage, Violation, check_file, line_coverage
from bench.report.chunk import chunk_table
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, chunk_pb2
from codecompass_dev.evaluation.results import RESULTS_DIR, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, ServiceProcess, start_analysis

WORK_DIR = REPO_ROOT / "bench" / ".work"
TARGET_LINES_PER_S = 50_000
TARGET_LINE_COVERAGE = 0.99
TARGET_REFS_SECONDS_300K = 60.0
TARGET_RSS_MIB = 1536.0
TARGET_RESCAN_MS = 1000.0
CHUNK_DEADLINE_S = 900.0
VIOLATIONS_KEPT = 100


@dataclass
class PassResult:
    mode: str
    files: int = 0
    files_skipped: int = 0
    files_syntax_errors: int = 0
    lines: int = 0
    chunks: int = 0
    scan_s: float = 0.0
    chunk_s: float = 0.0
    peak_rss_mib: float | None = None
    cpu_s: float | None = None
    kinds: Counter = field(default_factory=Counter)
    skipped: list[str] = field(default_factory=list)
    largest_by_lines: tuple[int, int, str] = (0, 0, "")
    largest_by_tokens: tuple[int, int, str] = (0, 0, "")
    references: int = 0
    error: str = ""

    @property
    def total_s(self) -> float:
        return self.scan_s + self.chunk_s

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.total_s if self.total_s else 0.0


def pass_json(result: PassResult) -> dict:
    # asdict() would rebuild the Counter from (key, value) pairs and count the pairs.
    data = asdict(result)
    data["kinds"] = dict(result.kinds.most_common())
    return {**data, "lines_per_s": result.lines_per_s, "total_s": result.total_s}


def kind_name(value: int) -> str:
    return chunk_pb2.NodeKind.Name(value).removeprefix("NODE_KIND_").lower()


def to_view(chunk: chunk_pb2.Chunk) -> ChunkView:
    return ChunkView(
        id=chunk.id,
        parent_id=chunk.parent_id,
        child_ids=tuple(chunk.child_ids),
        depth=chunk.depth,
        start_line=chunk.start_line,
        end_line=chunk.end_line,
        full_source=chunk.full_source,
        collapsed_source=chunk.collapsed_source,
        embedding_token_count=chunk.embedding_token_count,
        qualified_name=chunk.qualified_name,
        jsdoc_start_line=chunk.jsdoc_start_line,
        node_kind=kind_name(chunk.node_kind),
    )


def read_source(path: Path) -> str:
    """File text as the service sees it: UTF-8 with any BOM removed."""
    return path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")


def absorb(
    result: PassResult, ids: dict[str, set[str]], kept: list, reply: analysis_pb2.ChunkFilesResponse, keep: bool
) -> None:
    result.files += 1
    if reply.status == analysis_pb2.FILE_STATUS_SKIPPED:
        result.files_skipped += 1
        reason = analysis_pb2.SkipReason.Name(reply.skip_reason)
        result.skipped.append(f"{reply.relative_path} ({reason}: {reply.skip_detail})")
        return
    if reply.status == analysis_pb2.FILE_STATUS_SYNTAX_ERRORS:
        result.files_syntax_errors += 1
    result.lines += reply.line_count
    result.chunks += len(reply.chunks)
    for chunk in reply.chunks:
        ids.setdefault(reply.relative_path, set()).add(chunk.id)
        result.kinds[kind_name(chunk.node_kind)] += 1
        result.references += len(chunk.references)
        n_lines = chunk.end_line - chunk.start_line + 1
        where = f"{reply.relative_path}:{chunk.start_line}-{chunk.end_line} {chunk.qualified_name}"
        if n_lines > result.largest_by_lines[0]:
            result.largest_by_lines = (n_lines, chunk.embedding_token_count, where)
        if chunk.embedding_token_count > result.largest_by_tokens[1]:
            result.largest_by_tokens = (n_lines, chunk.embedding_token_count, where)
    if keep:
        kept.append(reply)


def run_pass(
    service: ServiceProcess, workspace: Path, include_references: bool, keep: bool, skip: frozenset[str] = frozenset()
) -> tuple[PassResult, dict[str, set[str]], list[analysis_pb2.ChunkFilesResponse]]:
    result = PassResult("with one-hop references" if include_references else "syntactic")
    ids: dict[str, set[str]] = {}
    kept: list[analysis_pb2.ChunkFilesResponse] = []
    with service.channel() as channel:
        stub = analysis_pb2_grpc.CodeAnalysisServiceStub(channel)
        cpu0 = service.cpu_seconds()
        t0 = time.perf_counter()
        scan = stub.ScanWorkspace(analysis_pb2.ScanWorkspaceRequest(workspace_root=str(workspace)), timeout=120)
        t1 = time.perf_counter()
        request = analysis_pb2.ChunkFilesRequest(
            workspace_root=str(workspace),
            paths=[entry.relative_path for entry in scan.files if entry.relative_path not in skip],
            include_references=include_references,
        )
        done: set[str] = set()
        try:
            for reply in stub.ChunkFiles(request, timeout=CHUNK_DEADLINE_S):
                done.add(reply.relative_path)
                absorb(result, ids, kept, reply, keep)
        except grpc.RpcError as err:
            pending = [p for p in request.paths if p not in done]
            result.error = f"{err.code().name}: {err.details()} after {len(done)} files (next: {pending[:1]})"
        t2 = time.perf_counter()
    for entry in scan.skipped:
        result.skipped.append(
            f"{entry.relative_path} (scan {analysis_pb2.SkipReason.Name(entry.reason)}: {entry.detail})"
        )
    result.scan_s = t1 - t0
    result.chunk_s = t2 - t1
    result.peak_rss_mib = service.peak_rss_mib()
    cpu1 = service.cpu_seconds()
    result.cpu_s = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    return result, ids, kept


@dataclass
class CoverageReport:
    """Line coverage of the chunked (not skipped) files of one pass."""

    total: LineCoverage = field(default_factory=LineCoverage)
    files: int = 0
    files_without_chunks: list[str] = field(default_factory=list)
    # (uncovered code lines, code lines, path) of the least covered files.
    worst: list[tuple[int, int, str]] = field(default_factory=list)


def validate(
    workspace: Path, replies: list[analysis_pb2.ChunkFilesResponse], coverage: CoverageReport | None = None
) -> tuple[int, list[Violation]]:
    checked = 0
    violations: list[Violation] = []
    for reply in replies:
        if reply.status == analysis_pb2.FILE_STATUS_SKIPPED:
            continue
        text = read_source(workspace / reply.relative_path)
        views = [to_view(chunk) for chunk in reply.chunks]
        checked += len(views)
        if coverage is not None:
            file_coverage = line_coverage(text, views)
            coverage.total.add(file_coverage)
            coverage.files += 1
            if not views and file_coverage.lines:
                coverage.files_without_chunks.append(reply.relative_path)
            missing = file_coverage.code_lines - file_coverage.code_covered
            if missing:
                coverage.worst.append((missing, file_coverage.code_lines, reply.relative_path))
        for violation in check_file(text, views):
            violations.append(
                Violation(violation.kind, violation.chunk_id, f"{reply.relative_path}: {violation.detail}")
            )
    return checked, violations


def time_rescan(service: ServiceProcess, workspace: Path) -> dict:
    with service.channel() as channel:
        stub = analysis_pb2_grpc.CodeAnalysisServiceStub(channel)
        t0 = time.perf_counter()
        first = stub.ScanWorkspace(analysis_pb2.ScanWorkspaceRequest(workspace_root=str(workspace)), timeout=300)
        t1 = time.perf_counter()
        try:
            again = stub.ScanWorkspace(
                analysis_pb2.ScanWorkspaceRequest(workspace_root=str(workspace), previous=first.files), timeout=300
            )
        except grpc.RpcError as err:
            # Reported in the table rather than aborting: the other numbers are still worth having.
            return {
                "workspace": display_path(workspace),
                "files": len(first.files),
                "error": f"{err.code().name}: {err.details()}",
                "first_scan_ms": (t1 - t0) * 1000,
            }
        t2 = time.perf_counter()
    return {
        "workspace": display_path(workspace),
        "files": len(again.files),
        "first_scan_ms": (t1 - t0) * 1000,
        "rescan_ms": (t2 - t1) * 1000,
        "rescan_server_ms": again.duration_ms,
        "changes": len(again.added) + len(again.changed) + len(again.removed),
    }


def display_path(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def build_payload(
    syntactic: PassResult,
    refs: PassResult | None,
    checked: int,
    violations: list[Violation],
    id_drift: int | None,
    rescans: list[dict],
    workspace: Path,
    skipped_by_request: frozenset[str] = frozenset(),
    coverage: CoverageReport | None = None,
    load_avg_end: tuple[float, float, float] | None = None,
) -> dict:
    """Every number the bench prints, with its targets: the results file and the printed table's source."""
    biggest = max((r.largest_by_tokens for r in (syntactic, refs) if r is not None), key=lambda t: t[1])
    by_kind = Counter(v.kind for v in violations)
    return {
        "workspace": {"name": workspace.name, "path": display_path(workspace)},
        "targets": {
            "lines_per_s": TARGET_LINES_PER_S,
            "line_coverage": TARGET_LINE_COVERAGE,
            "references_s_per_300k_lines": TARGET_REFS_SECONDS_300K,
            "rss_mib": TARGET_RSS_MIB,
            "chunk_tokens_below": TOKEN_CEILING,
            "violations": 0,
            "rescan_ms": TARGET_RESCAN_MS,
        },
        "passes": {"syntactic": pass_json(syntactic), "references": None if refs is None else pass_json(refs)},
        "largest_embedding_text": {"lines": biggest[0], "tokens": biggest[1], "where": biggest[2]},
        "skipped_by_request": sorted(skipped_by_request),
        "load_avg_end": list(load_avg_end if load_avg_end is not None else os.getloadavg()),
        "chunks_validated": checked,
        # A broken chunker can fail every chunk: the file keeps the counts and the first few.
        "violations": {
            "total": len(violations),
            "by_kind": dict(by_kind.most_common()),
            "first": [asdict(v) for v in violations[:VIOLATIONS_KEPT]],
        },
        "line_coverage": None
        if coverage is None
        else {
            **asdict(coverage.total),
            "files": coverage.files,
            "files_without_chunks": coverage.files_without_chunks,
            "worst": [list(w) for w in sorted(coverage.worst, reverse=True)[:3]],
        },
        "id_drift": id_drift,
        "rescans": rescans,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=WORK_DIR / "chunk-corpus")
    parser.add_argument(
        "--rescan-10k",
        type=Path,
        default=WORK_DIR / "ws-10k-files",
        help="folder of many small files for the no-change re-scan timing (skipped if absent)",
    )
    parser.add_argument("--no-references", action="store_true", help="skip the one-hop reference pass")
    parser.add_argument(
        "--skip-file",
        action="append",
        default=[],
        help="workspace-relative file to leave out of the reference pass (repeatable), e.g. one that crashes it",
    )
    parser.add_argument("--json", type=Path, help="also write the results document here")
    parser.add_argument(
        "--results-dir", type=Path, default=RESULTS_DIR, help="where chunk-<UTC>.json and chunk-latest.json go"
    )
    parser.add_argument("--echo-logs", action="store_true", help="echo the service's output to stderr")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    skip = frozenset(args.skip_file)
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: run codecompass_dev/corpus/install.sh and "
                         "python -m codecompass_dev.corpus.assemble all")

    service = start_analysis(echo=args.echo_logs)
    try:
        syntactic, syntactic_ids, syntactic_replies = run_pass(service, workspace, include_references=False, keep=True)
        rescans = [time_rescan(service, workspace)]
        if args.rescan_10k.is_dir():
            rescans.append(time_rescan(service, args.rescan_10k.resolve()))
    finally:
        service.stop()

    refs: PassResult | None = None
    id_drift: int | None = None
    # Both passes are validated: the hierarchy is mode-independent, but references grow embedding_text.
    coverage = CoverageReport()
    checked, violations = validate(workspace, syntactic_replies, coverage)
    del syntactic_replies
    if not args.no_references:
        service = start_analysis(echo=args.echo_logs)
        try:
            refs, ref_ids, ref_replies = run_pass(service, workspace, include_references=True, keep=True, skip=skip)
        finally:
            service.stop()
        ref_checked, ref_violations = validate(workspace, ref_replies)
        checked += ref_checked
        violations += ref_violations
        # Only files both passes chunked are comparable (a pass may fail or leave files out).
        common = syntactic_ids.keys() & ref_ids.keys()
        id_drift = sum(len(syntactic_ids[path] ^ ref_ids[path]) for path in common)

    payload = build_payload(syntactic, refs, checked, violations, id_drift, rescans, workspace, skip, coverage)
    print(chunk_table(payload))
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2, default=str))
    path = write_results("chunk", payload, results_dir=args.results_dir)
    print(f"\nwrote {display_path(path)}; `make bench-report` puts it in the READMEs")
    return 1 if violations or syntactic.error or (refs is not None and refs.error) else 0


if __name__ == "__main__":
    raise SystemExit(main())
