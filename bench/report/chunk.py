"""Chunking sections (bench/chunk_bench.py): the issue-2 targets and every number the bench prints."""

from __future__ import annotations

from typing import Any

from bench.report.tables import md_table, mib, provenance


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2%}" if whole else "n/a"


def _cpu(result: dict[str, Any]) -> str:
    # The machine's cores are shared with other work; CPU time is what the service itself spent.
    if not result.get("cpu_s"):
        return "n/a"
    return f"{result['cpu_s']:.1f} s = {result['lines'] / result['cpu_s']:,.0f} lines per CPU-second"


def _kinds(result: dict[str, Any]) -> str:
    ordered = sorted(result["kinds"].items(), key=lambda kv: -kv[1])  # stable: ties keep the bench's order
    return ", ".join(f"{k} {v:,}" for k, v in ordered)


def _rescan_label(rescan: dict[str, Any]) -> str:
    return f"No-change re-scan, {rescan['files']:,} files ({rescan['workspace']})"


def chunk_coverage_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    cov = doc["line_coverage"]
    without = cov["files_without_chunks"]
    return [
        (
            "**Line coverage** (non-blank lines inside a chunk, comments counted)",
            (
                f"**{_share(cov['covered'], cov['lines'])}** = {cov['covered']:,} / {cov['lines']:,} "
                f"(target ≥ {doc['targets']['line_coverage']:.0%})"
            ),
        ),
        (
            "Code-line coverage (comment-only lines left out)",
            f"{_share(cov['code_covered'], cov['code_lines'])} = {cov['code_covered']:,} / {cov['code_lines']:,}",
        ),
        (
            "Code lines inside a symbol chunk (module chunks left out)",
            (
                f"{_share(cov['code_covered_by_symbols'], cov['code_lines'])} = "
                f"{cov['code_covered_by_symbols']:,} / {cov['code_lines']:,}"
            ),
        ),
        (
            "Files with zero chunks (of files chunked)",
            f"{len(without)} / {cov['files']:,}" + (f": {', '.join(without[:5])}" if without else ""),
        ),
        (
            "Least covered files (uncovered / code lines)",
            "; ".join(f"{path} {missing}/{lines}" for missing, lines, path in cov["worst"]) or "none",
        ),
    ]


def chunk_table(doc: dict[str, Any]) -> str:
    """Every number of one chunk_bench run (what the bench prints), then skipped files and violations."""
    syn, refs, targets = doc["passes"]["syntactic"], doc["passes"]["references"], doc["targets"]
    by_lines, biggest = syn["largest_by_lines"], doc["largest_embedding_text"]
    rows = [
        ("Workspace", doc["workspace"]["path"]),
        (
            "Files chunked / skipped / with syntax errors",
            f"{syn['files'] - syn['files_skipped']:,} / {syn['files_skipped']} / {syn['files_syntax_errors']}",
        ),
        ("Lines", f"{syn['lines']:,}"),
        ("Chunks", f"{syn['chunks']:,}"),
        ("Chunks per kind", _kinds(syn)),
        ("Largest chunk (lines)", f"{by_lines[0]:,} lines, {by_lines[1]:,} tokens — `{by_lines[2]}`"),
        (
            "Largest embedding_text (tokens, either pass)",
            f"{biggest['tokens']:,} tokens ({biggest['lines']:,} lines) — `{biggest['where']}`",
        ),
        (
            "Syntactic scan+chunk",
            (
                f"{syn['total_s']:.2f} s (scan {syn['scan_s']:.2f} s) = **{syn['lines_per_s']:,.0f} lines/s** "
                f"(target ≥ {targets['lines_per_s']:,}); Node CPU {_cpu(syn)}"
            ),
        ),
        ("Node peak RSS, syntactic", mib(syn["peak_rss_mib"])),
    ]
    if refs is not None:
        rows += [
            (
                "Scan+chunk with one-hop references",
                (
                    f"**{refs['total_s']:.2f} s** (scan {refs['scan_s']:.2f} s) = {refs['lines_per_s']:,.0f} lines/s "
                    f"(target ≤ {targets['references_s_per_300k_lines']:.0f} s for 300k lines); "
                    f"{refs['references']:,} references; Node CPU {_cpu(refs)}"
                ),
            ),
            (
                "Node peak RSS, with references",
                f"**{mib(refs['peak_rss_mib'])}** (target ≤ {targets['rss_mib']:,.0f} MiB)",
            ),
        ]
    for result in (syn, refs):
        if result is not None and result["error"]:
            rows.append((f"**{result['mode']} pass failed**", result["error"]))
    if doc["skipped_by_request"]:
        rows.append(("Files left out of the reference pass (--skip-file)", ", ".join(doc["skipped_by_request"])))
    rows.append(
        ("Machine load (1/5/15-min load average at the end)", " / ".join(f"{x:.1f}" for x in doc["load_avg_end"]))
    )
    violations = doc["violations"]
    rows.append(
        ("Chunks validated (both passes) / violations", f"{doc['chunks_validated']:,} / **{violations['total']}**")
    )
    if doc.get("line_coverage") is not None:
        rows += chunk_coverage_rows(doc)
    if doc["id_drift"] is not None:
        rows.append(("Chunk ids differing between the two passes", str(doc["id_drift"])))
    for rescan in doc["rescans"]:
        if "error" in rescan:
            value = f"**failed**: {rescan['error']} (first scan {rescan['first_scan_ms']:.0f} ms)"
        else:
            value = (
                f"{rescan['rescan_ms']:.0f} ms (server {rescan['rescan_server_ms']:.0f} ms; first scan "
                f"{rescan['first_scan_ms']:.0f} ms; {rescan['changes']} changes reported)"
            )
        rows.append((_rescan_label(rescan), value))
    lines = [md_table(("Measure", "Value"), rows)]
    skipped = sorted(set(syn["skipped"]))
    if skipped:
        lines += ["", "Skipped files: " + "; ".join(skipped[:20]) + (" …" if len(skipped) > 20 else "")]
    if violations["total"]:
        lines += ["", "Violations by kind: " + ", ".join(f"{k} {n}" for k, n in violations["by_kind"].items())]
        lines += [f"- {v['kind']}: {v['detail']}" for v in violations["first"][:15]]
    return "\n".join(lines)


def render_chunk_summary(doc: dict[str, Any]) -> str:
    """README: the issue-2 targets, one row each, then chunks per kind."""
    syn, refs, targets = doc["passes"]["syntactic"], doc["passes"]["references"], doc["targets"]
    by_lines = syn["largest_by_lines"]
    biggest = doc["largest_embedding_text"]
    rows = [
        ("Chunks", f"{syn['chunks']:,}", ""),
        (
            "Syntactic scan + chunk through gRPC",
            f"**{syn['lines_per_s']:,.0f} lines/s** ({syn['total_s']:.1f} s)",
            f"≥ {targets['lines_per_s']:,} lines/s",
        ),
    ]
    if refs is not None:
        rows += [
            (
                "Scan + chunk with one-hop references",
                f"**{refs['total_s']:.1f} s** ({refs['references']:,} references)",
                f"≤ {targets['references_s_per_300k_lines']:.0f} s for 300k lines",
            ),
            ("Node peak RSS with references", mib(refs["peak_rss_mib"]), f"≤ {targets['rss_mib']:,.0f} MiB"),
        ]
    for result in (syn, refs):
        if result is not None and result["error"]:
            rows.append((f"**{result['mode']} pass failed**", result["error"], ""))
    rows.append(
        (
            "Chunks validated / violations (exact source, tiling, ids, token ceiling)",
            f"{doc['chunks_validated']:,} / **{doc['violations']['total']}**",
            str(targets["violations"]),
        )
    )
    cov = doc.get("line_coverage")
    if cov is not None:
        rows.append(
            (
                "Line coverage (non-blank lines inside a chunk)",
                f"{_share(cov['covered'], cov['lines'])}",
                f"≥ {targets['line_coverage']:.0%}",
            )
        )
    rows.append(
        (
            "Largest chunk; largest embedding text",
            (
                f"`{by_lines[2].rsplit(' ', 1)[-1]}`: {by_lines[0]:,} lines, {by_lines[1]:,} tokens; "
                f"`{biggest['where'].rsplit(' ', 1)[-1]}`: {biggest['tokens']:,} tokens"
            ),
            f"< {targets['chunk_tokens_below']:,} tokens",
        )
    )
    rescans = "; ".join(
        f"{r['files']:,} files: " + (f"**{r['rescan_ms']:.0f} ms**" if "error" not in r else "**failed**")
        for r in doc["rescans"]
    )
    rows.append(("No-change re-scan", rescans, f"< {targets['rescan_ms']:,.0f} ms"))
    header = (
        f"Measure ({doc['workspace']['name']}: {syn['files'] - syn['files_skipped']:,} files, {syn['lines']:,} lines)",
        "Result",
        "Target",
    )
    return "\n\n".join((provenance(doc), md_table(header, rows), f"Chunks per kind: {_kinds(syn)}."))


def render_chunk_full(doc: dict[str, Any]) -> str:
    """bench/README: the table chunk_bench prints."""
    return "\n\n".join((provenance(doc), chunk_table(doc)))
