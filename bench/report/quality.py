"""Quality sections: a quality run (bench/quality/run_quality.py), the ranking ablation
(tune_ranking.py) and test code in the ranked list (testcode_share.py).

The split and query-group helpers read the `tables` rows a quality-shaped results file carries
(split, group, mode or stage, metrics); the pipeline and comparison sections use them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.report.tables import fmt_int, fmt_metric, md_table, provenance
from codecompass_dev.evaluation.metrics import BUDGET_METRIC_NAMES, FILE_METRIC_NAMES, METRIC_NAMES

SPLIT_ORDER = ("test", "dev")
QUALITY_COLUMNS = (*METRIC_NAMES, *BUDGET_METRIC_NAMES)
FILE_LEVEL_NOTE = (
    "File level: each relevant file counts once, at its first result (overlapping the target's lines when it "
    "has a span); a symbol target is its file with the symbol's lines, a `concept` query's files are whole files"
)


def has_file_level(doc: dict[str, Any], key: str = FILE_METRIC_NAMES[0]) -> bool:
    """Results files from before the file-level metrics have none: their tables stay as they were."""
    return any(key in row for row in doc["tables"])


def quality_columns(doc: dict[str, Any]) -> tuple[str, ...]:
    return (*QUALITY_COLUMNS, *FILE_METRIC_NAMES) if has_file_level(doc) else QUALITY_COLUMNS


def query_count(row: dict[str, Any]) -> str:
    """Queries of a row; when only some have symbol targets (concept), how many the symbol-level means cover."""
    if "n symbol" in row:
        return f"{row['n']} ({row['n symbol']} with symbol targets)"
    return str(row["n"])


def _rows(doc: dict[str, Any], split: str, group: str) -> list[dict[str, Any]]:
    return [r for r in doc["tables"] if r["split"] == split and r["group"] == group]


def headline_split(doc: dict[str, Any]) -> str:
    present = {r["split"] for r in doc["tables"]}
    return next(s for s in SPLIT_ORDER if s in present)


def quality_overview(doc: dict[str, Any]) -> str:
    queries = doc["queries"]
    settings = doc["settings"]
    counts = ", ".join(f"{k} {v}" for k, v in queries["by_split_type"].items())
    repos = ", ".join(f"{k} ({v})" for k, v in queries["by_repo"].items())
    models = ", ".join(settings.get("embedding_models", [])) or "?"
    unanswerable = sum(len(v) for v in queries.get("unanswerable", {}).values())
    query_file = f"`{settings.get('queries_file', '?')}` (sha256 {settings.get('queries_sha256', '?')[:12]})"
    return (
        f"{queries['total']} queries from {query_file} ({counts}) in {len(queries['by_repo'])} repo "
        f"workspace(s): {repos}. "
        f"Embedding model {models}. {unanswerable} queries have no target chunk in the analysis "
        "service's output and count as misses."
    )


def quality_mode_table(doc: dict[str, Any], split: str, group: str) -> str:
    latency = doc.get("latency", {})
    columns = quality_columns(doc)
    header = ("Mode", "Queries", *columns, "Tokens@10 median", "Search ms p50 / p95, all splits")
    rows = []
    for row in _rows(doc, split, group):
        lat = latency.get(row["mode"], {})
        rows.append(
            (
                f"`{row['mode']}`",
                query_count(row),
                *(fmt_metric(row.get(c)) for c in columns),
                fmt_int(row.get("tokens@10 median")),
                f"{fmt_int(lat.get('search_ms p50'))} / {fmt_int(lat.get('search_ms p95'))}",
            )
        )
    return md_table(header, rows)


def quality_type_matrix(
    doc: dict[str, Any], split: str, metric: str, fmt: Callable[[float | None], str] = fmt_metric
) -> str:
    """Query groups down, modes across, one metric."""
    modes = list(doc["settings"]["modes"])
    groups = [g for g in dict.fromkeys(r["group"] for r in doc["tables"] if r["split"] == split)]
    rows = []
    for group in groups:
        by_mode = {r["mode"]: r for r in _rows(doc, split, group)}
        n = next(iter(by_mode.values()))["n"] if by_mode else 0
        rows.append((group, n, *(fmt(by_mode.get(m, {}).get(metric)) for m in modes)))
    return md_table(("Query type", "Queries", *(f"`{m}`" for m in modes)), rows)


def split_caption(doc: dict[str, Any], split: str) -> str:
    if split == "test":
        return "**Test split** (held out: nothing was tuned on it)"
    if any(r["split"] == "test" for r in doc["tables"]):
        return "**Dev split** (the ranking is tuned on it, so it flatters)"
    return "**Dev split** (this query set has no test split yet)"


def render_quality_summary(doc: dict[str, Any]) -> str:
    """README: the headline split, all query types, every mode; then MRR@10 (and file-level nDCG@10,
    when the run has it) by query type."""
    split = headline_split(doc)
    parts = [
        provenance(doc),
        quality_overview(doc),
        f"{split_caption(doc, split)}, all query types:",
        quality_mode_table(doc, split, "all"),
        "MRR@10 by query type:",
        quality_type_matrix(doc, split, "MRR@10"),
    ]
    if has_file_level(doc):
        parts += [
            f"File-level nDCG@10 by query type ({FILE_LEVEL_NOTE}):",
            quality_type_matrix(doc, split, "file nDCG@10"),
        ]
    return "\n\n".join(parts)


def render_quality_full(doc: dict[str, Any]) -> str:
    """bench/README: every split x group x mode, latency, what the server did, the indexes."""
    parts = [provenance(doc), quality_overview(doc)]
    splits = [s for s in SPLIT_ORDER if any(r["split"] == s for r in doc["tables"])]
    for split in splits:
        parts.append(split_caption(doc, split) + ":")
        groups = list(dict.fromkeys(r["group"] for r in doc["tables"] if r["split"] == split))
        for group in groups:
            parts.append(f"{split}, {group}:")
            parts.append(quality_mode_table(doc, split, group))
        if has_file_level(doc):
            parts.append(f"File-level nDCG@10 by query type, {split} ({FILE_LEVEL_NOTE}):")
            parts.append(quality_type_matrix(doc, split, "file nDCG@10"))
        parts.append(f"Tokens of the top 10 results (mean), {split}:")
        parts.append(quality_type_matrix(doc, split, "tokens@10 mean", fmt=fmt_int))
    parts.append("Latency per mode over all queries (server `search_ms`; client = the whole RPC):")
    parts.append(
        md_table(
            ("Mode", "Server p50", "Server p95", "Client p50", "Client p95"),
            [
                (
                    f"`{mode}`",
                    *(
                        fmt_int(v)
                        for v in (
                            lat.get("search_ms p50"),
                            lat.get("search_ms p95"),
                            lat.get("client_ms p50"),
                            lat.get("client_ms p95"),
                        )
                    ),
                )
                for mode, lat in doc.get("latency", {}).items()
            ],
        )
    )
    parts.append("What the server did with each mode's request:")
    diag_rows = []
    for mode, diag in doc.get("mode_diagnostics", {}).items():
        request = ", ".join(f"{k}={v}" for k, v in diag["request"].items())
        skipped = ", ".join(f"{k} {v}" for k, v in diag.get("semantic_skipped", {}).items()) or "–"
        diag_rows.append(
            (
                f"`{mode}`",
                request,
                f"{diag['semantic_ratio_used mean']:.2f}",
                diag["ratio_lowered"],
                skipped,
                diag["results mean"],
                diag["budget_not_spent"],
                diag.get("errors", 0),
            )
        )
    parts.append(
        md_table(
            (
                "Mode",
                "Request",
                "Ratio used (mean)",
                "Ratio lowered",
                "Semantic skipped",
                "Results (mean)",
                "Results ran out before 8k tokens",
                "Errors",
            ),
            diag_rows,
        )
    )
    parts.append("Indexes:")
    parts.append(
        md_table(
            ("Repo", "Files", "Chunks", "Embedded", "Index MiB", "Sync s (this run)", "Status"),
            [
                (
                    repo,
                    fmt_int(info["files"]),
                    fmt_int(info["chunks"]),
                    fmt_int(info["embedded"]),
                    f"{info['index_bytes'] / 2**20:.1f}",
                    info["sync_seconds"],
                    info["status"].removeprefix("INDEXING_STATUS_"),
                )
                for repo, info in doc.get("indexes", {}).items()
            ],
        )
    )
    unanswerable = doc["queries"].get("unanswerable", {})
    if unanswerable:
        listed = "; ".join(
            f"{repo}: {', '.join(ids[:10])}{' …' if len(ids) > 10 else ''}" for repo, ids in unanswerable.items()
        )
        parts.append(f"Queries whose targets match no chunk (scored as misses): {listed}.")
    return "\n\n".join(parts)


def render_ranking_ablation(doc: dict[str, Any]) -> str:
    """One row per ablation variant: all query types, then each type's MRR@10."""
    rows = doc["rows"]
    types = sorted({r["type"] for r in rows if r["type"] != "all"})
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    by = {(r["variant"], r["type"]): r for r in rows}
    header = ["Variant", *METRIC_NAMES, *(f"{t} MRR@10" for t in types)]
    table_rows = []
    for variant in variants:
        overall = by.get((variant, "all"), {})
        table_rows.append([
            variant,
            *(fmt_metric(overall.get(m)) for m in METRIC_NAMES),
            *(fmt_metric(by.get((variant, t), {}).get("MRR@10")) for t in types),
        ])
    n = by.get((variants[0], "all"), {}).get("n", 0) if variants else 0
    caption = (
        f"{doc['split']} split, {n} queries, semantic ratio cap {doc['semantic_ratio_cap']}, "
        f"candidate pool {doc['candidate_pool']}; each row changes one signal of `policy/ranking.py` "
        "(`- x`: off, `+ x`: on although the default has it off; `fusion only`: every signal off). "
        + provenance(doc)
    )
    return caption + "\n\n" + md_table(header, table_rows)


# --- Test code in the ranked list (bench/quality/testcode_share.py) ------------------------------

TESTCODE_COLUMNS = ("first_test", "first_unpenalised", "first_other", "test_top10", "mrr10", "mrr10_no_tests", "r8k",
                    "r8k_no_tests", "library_flagged", "about_tests")  # fmt: skip


def render_testcode(doc: dict[str, Any]) -> str:
    """The default policy per query type and repository, then every variant's all-types row and MRR@10 by type."""
    columns = doc["columns"]
    rows = doc["rows"]
    default = [r for r in rows if r["variant"] == "default"]
    header = ("Group", "Queries", *(columns[c] for c in TESTCODE_COLUMNS))
    parts = [
        provenance(doc),
        (
            f"{doc['split'].capitalize()} split, index: {doc.get('label') or doc['state_dir']}; the product's ranking "
            f"(list depth {doc['list_depth']}, recall within {doc['token_budget']:,} tokens)."
        ),
        md_table(header, [(r["group"], r["n"], *(fmt_metric(r.get(c)) for c in TESTCODE_COLUMNS)) for r in default]),
    ]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    if len(variants) > 1:
        types = [g for g in dict.fromkeys(r["group"] for r in default) if g != "all" and not g.startswith("repo ")]
        by = {(r["variant"], r["group"]): r for r in rows}
        body = []
        for variant in variants:
            changes = ", ".join(f"{k}={v}" for k, v in doc["variants"].get(variant, {}).items()) or "as configured"
            row = by[(variant, "all")]
            body.append((f"{variant} ({changes})", fmt_metric(row.get("first_test")), fmt_metric(row.get("mrr10")),
                         fmt_metric(row.get("r8k")), *(fmt_metric(by[(variant, t)].get("mrr10")) for t in types)))
        parts += ["Ranking variants, all query types, and MRR@10 by type:",
                  md_table(("Variant", columns["first_test"], "MRR@10", "R@8k tok", *(f"{t} MRR@10" for t in types)),
                           body)]  # fmt: skip
    return "\n\n".join(parts)
