"""Pipeline sections (bench/quality/run_pipeline.py): each stage of the search pipeline, beside the
quality run's BM25 row on the same split and query type."""

from __future__ import annotations

from typing import Any

from bench.report.quality import FILE_LEVEL_NOTE, SPLIT_ORDER, has_file_level, headline_split, query_count
from bench.report.tables import fmt_int, fmt_metric, md_table, provenance
from codecompass_dev.evaluation.metrics import TOKEN_BUDGETS
from codecompass_dev.evaluation.results import RESULTS_DIR, load_latest

PIPELINE_COLUMNS = (("MRR@10", "mrr10"), ("nDCG@10", "ndcg10"), ("R@1", "r1"), ("R@5", "r5"),
                    ("R@500 tok", "r_500tok"), ("R@2k tok", "r_2000tok"), ("R@8k tok", "r_8000tok"),
                    ("Gold lines", "gold_line_share"))
PIPELINE_FILE_COLUMNS = (("file nDCG@10", "file_ndcg10"), ("file R@10", "file_r10"))
# A pipeline column's name in the quality run's tables (the BM25 row), where it has one.
QUALITY_NAME = {"mrr10": "MRR@10", "ndcg10": "nDCG@10", "r1": "R@1", "r5": "R@5", "r_500tok": "R@500 tok",
                "r_2000tok": "R@2k tok", "r_8000tok": "R@8k tok", "file_ndcg10": "file nDCG@10",
                "file_r10": "file R@10"}


def pipeline_columns(doc: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return PIPELINE_COLUMNS + PIPELINE_FILE_COLUMNS if has_file_level(doc, "file_ndcg10") else PIPELINE_COLUMNS


def _bm25_row(split: str, group: str) -> dict[str, Any] | None:
    quality = load_latest("quality", RESULTS_DIR)
    if quality is None:
        return None
    return next((r for r in quality["tables"] if r["split"] == split and r["group"] == group and r["mode"] == "bm25"),
                None)


def pipeline_stage_table(doc: dict[str, Any], split: str, group: str) -> str:
    columns = pipeline_columns(doc)
    header = ("Stage", "Queries", *(label for label, _ in columns), "Tokens per answer (mean / median / max)",
              "Empty answers")
    rows = []
    bm25 = _bm25_row(split, group)
    if bm25 is not None:
        rows.append(("BM25 only (quality run)", query_count(bm25),
                     *(fmt_metric(bm25.get(QUALITY_NAME[key])) if key in QUALITY_NAME else "–" for _, key in columns),
                     f"{fmt_int(bm25.get('tokens@10 mean'))} / {fmt_int(bm25.get('tokens@10 median'))} / – (top 10)",
                     "–"))
    for row in doc["tables"]:
        if row["split"] != split or row["group"] != group:
            continue
        tokens = (f"{fmt_int(row.get('tokens'))} / {fmt_int(row.get('tokens median'))} / "
                  f"{fmt_int(row.get('tokens max'))}")
        if not row["stage"].startswith("selection"):
            tokens += " (top 10)"
        rows.append((f"`{row['stage']}`", query_count(row), *(fmt_metric(row.get(key)) for _, key in columns),
                     tokens, f"{row.get('empty answers', 0):.0%}"))
    return md_table(header, rows)


def pipeline_type_matrix(doc: dict[str, Any], split: str, key: str = "mrr10") -> str:
    """Query types down, BM25 and the stages across, one metric (a pipeline column's key)."""
    stages = list(doc["settings"]["stages"])
    groups = list(dict.fromkeys(r["group"] for r in doc["tables"] if r["split"] == split))
    rows = []
    for group in groups:
        by_stage = {r["stage"]: r for r in doc["tables"] if r["split"] == split and r["group"] == group}
        bm25 = _bm25_row(split, group)
        n = next(iter(by_stage.values()))["n"]
        rows.append((group, n, fmt_metric(bm25.get(QUALITY_NAME[key])) if bm25 else "–",
                     *(fmt_metric(by_stage[s].get(key)) if s in by_stage else "–" for s in stages)))
    return md_table(("Query type", "Queries", "BM25 only", *(f"`{s}`" for s in stages)), rows)


def pipeline_latency_table(doc: dict[str, Any]) -> str:
    rows = []
    for stage, by_name in doc["latency_ms"].items():
        cells = ", ".join(f"{name} {v['p50']:.0f} / {v['p95']:.0f}" for name, v in by_name.items() if name != "total")
        total = by_name.get("total", {})
        rows.append((f"`{stage}`", cells, f"{total.get('p50', 0):.0f} / {total.get('p95', 0):.0f}"))
    return md_table(("Stage configuration", "Per stage, ms p50 / p95", "Whole pipeline, ms p50 / p95"), rows)


def pipeline_nonsense(doc: dict[str, Any]) -> str:
    if "unanswerable" not in doc:  # a results file from before the three kinds
        nonsense = doc["nonsense"]
        n = sum(len(v) for v in nonsense["results_by_repo"].values())
        return (f"Queries with no answer ({len(nonsense['queries'])} per workspace, {n} in all: punctuation, names "
                f"that exist nowhere, unrelated sentences): at most {nonsense['max_results']} results; "
                f"{nonsense['at_most_two']:.0%} return 2 or fewer.")
    summary = doc["unanswerable"]["summary"]
    if any("within_budget" in v for v in summary.values()):
        rows = [(kind, v["n"], f"{v['within_budget']:.0%}", fmt_int(v["max_tokens"]), v["max_results"],
                 f"{v['low_confidence']:.0%}") for kind, v in summary.items()]
        header = ("Kind", "Queries", "Within 1,000 tokens", "Most tokens", "Most results", "Flagged in text")
    else:  # before low confidence flagged instead of cutting to two results
        rows = [(kind, v["n"], f"{v['at_most_two']:.0%}", v["max_results"], f"{v['low_confidence']:.0%}")
                for kind, v in summary.items()]
        header = ("Kind", "Queries", "2 results or fewer", "Most results", "Flagged low_confidence")
    return "\n".join([("Queries with no answer (nonsense; another repository's queries asked of a workspace; "
                      "code-shaped names no workspace defines), answered by the default pipeline:"), "",
                      md_table(header, rows)])


def pipeline_budget_curve(doc: dict[str, Any], split: str) -> str:
    rows = []
    for row in doc.get("budget_curve", []):
        if row["split"] != split or "selection" not in row:
            continue
        cells = [f"{s:.3f} / {lst:.3f}" for s, lst in zip(row["selection"], row.get("list", row["selection"]),
                                                            strict=True)]
        rows.append((row["group"], row["n"], *cells))
    budgets = next((r["budgets"] for r in doc.get("budget_curve", [])), [])
    return md_table(("Query type", "Queries", *(f"{b:,} tokens" for b in budgets)), rows)


def pipeline_calibration(doc: dict[str, Any], split: str) -> str:
    found = doc.get("calibration", {}).get(split)
    if not found:
        return ""
    parts = []
    observed = f"Observed: {found.get('observed', 'a target in the first 10')}"
    for name in ("calibrated", "composite"):
        table = found[name]
        rows = [(b["bin"], b["n"], f"{b['predicted']:.3f}", f"{b['observed']:.3f}") for b in table["bins"]]
        parts += [f"`{name}` confidence (expected calibration error {table['ece']:.3f}, {table['n']} queries):", "",
                  md_table(("Predicted", "Queries", "Mean predicted", observed), rows), ""]
    if table := found.get("answerability"):
        rows = [(b["bin"], b["n"], f"{b['predicted']:.3f}", f"{b['observed']:.3f}") for b in table["bins"]]
        parts += [f"`answerability` (expected calibration error {table['ece']:.3f}, {table['n']} queries):", "",
                  md_table(("Predicted", "Queries", "Mean predicted", "Observed: a target in the first 10"), rows),
                  ""]
    parts.append(f"Answerable queries flagged low_confidence (composite below {found['composite_threshold']}): "
                 f"{found['answerable_low_confidence']:.0%}.")
    return "\n".join(parts)


def pipeline_answer_vs_list(doc: dict[str, Any], split: str) -> str:
    """Per query type, the selected answer's recall within each budget against its own ranked list's
    (`first stage`): the answer must hold at least what the list does (issue 26 §3)."""
    budgets = doc["settings"].get("token_budgets", TOKEN_BUDGETS)
    rows = []
    for group in dict.fromkeys(r["group"] for r in doc["tables"] if r["split"] == split):
        by_stage = {r["stage"]: r for r in doc["tables"] if r["split"] == split and r["group"] == group}
        listed, answer = by_stage.get("first stage"), by_stage.get("selection")
        if listed is None or answer is None or listed.get(f"r_{budgets[0]}tok") is None:
            continue
        pairs = [(listed[f"r_{b}tok"], answer[f"r_{b}tok"]) for b in budgets]
        holds = all(a >= lst for lst, a in pairs)
        rows.append((group, query_count(listed), *(f"{lst:.3f} / {a:.3f}" for lst, a in pairs),
                     "yes" if holds else "**no**"))
    return md_table(("Query type", "Queries", *(f"R@{b:,} tok, list / answer" for b in budgets), "Answer ≥ list"),
                    rows)


def render_pipeline_summary(doc: dict[str, Any]) -> str:
    split = headline_split(doc)
    parts = [provenance(doc), "",
             (f"**{split.capitalize()} split**, all query types (`+ rerank` with the local provider keeps the first "
             "stage's order, so it is that row):"), "",
             pipeline_stage_table(doc, split, "all"), "",
             f"{split.capitalize()} split, natural-language queries (commit subjects):", "",
             pipeline_stage_table(doc, split, "nl"), ""]
    if any(r["split"] == split and r["group"] == "concept" for r in doc["tables"]):
        parts += [f"{split.capitalize()} split, concept questions (how a part works; answered by files):", "",
                  pipeline_stage_table(doc, split, "concept"), ""]
    parts += [f"{split.capitalize()} split, the selected answer against its own ranked list, by query type:", "",
              pipeline_answer_vs_list(doc, split), ""]
    parts += [pipeline_nonsense(doc), "", "Latency on the quality workspaces (all splits):", "",
              pipeline_latency_table(doc)]
    return "\n".join(parts)


def render_pipeline_full(doc: dict[str, Any]) -> str:
    parts = [provenance(doc), ""]
    for split in SPLIT_ORDER:
        if not any(r["split"] == split for r in doc["tables"]):
            continue
        parts += [f"**{split.capitalize()} split**, MRR@10 by query type and stage:", "",
                  pipeline_type_matrix(doc, split), ""]
        if has_file_level(doc, "file_ndcg10"):
            parts += [f"{split.capitalize()} split, file-level nDCG@10 by query type and stage ({FILE_LEVEL_NOTE}):",
                      "", pipeline_type_matrix(doc, split, "file_ndcg10"), ""]
        for group in dict.fromkeys(r["group"] for r in doc["tables"] if r["split"] == split):
            parts += [f"{split.capitalize()} split, `{group}`:", "", pipeline_stage_table(doc, split, group), ""]
        if any(r["split"] == split and "selection" in r for r in doc.get("budget_curve", [])):
            parts += [(f"{split.capitalize()} split, recall by budget: the answer selection gives when asked for "
                      "that many tokens (a target counts when shown whole) / the ranked list within them:"), "",
                      pipeline_budget_curve(doc, split), ""]
        if doc.get("calibration", {}).get(split):
            parts += [f"{split.capitalize()} split, reliability of the search's confidence:", "",
                      pipeline_calibration(doc, split), ""]
    parts += [pipeline_nonsense(doc), "", pipeline_latency_table(doc)]
    return "\n".join(parts)
