"""Runs side by side: before / after a change (bench/quality/compare_runs.py) and the embedding
models (bench/quality/compare_models.py)."""

from __future__ import annotations

from typing import Any

from bench.report.quality import SPLIT_ORDER, split_caption
from bench.report.tables import fmt_int, fmt_metric, md_table, provenance

# --- Comparison of runs (before / after a change) ------------------------------------------------


def _comparison_table(doc: dict[str, Any], source: str, split: str) -> str | None:
    metrics = doc["metrics"][source]
    labels = list(doc["runs"][source])
    rows = [r for r in doc["rows"] if r["source"] == source and r["split"] == split]
    if not rows:
        return None
    by = {(r["group"], r["label"]): r for r in rows}
    header = ["Query type", "Queries"]
    header += [f"{label}: {metric}" if i == 0 else metric for label in labels for i, metric in enumerate(metrics)]
    body = []
    for group in dict.fromkeys(r["group"] for r in rows):
        counts = {by[(group, label)]["n"] for label in labels if (group, label) in by}
        cells = []
        for label in labels:
            row = by.get((group, label), {})
            cells += [fmt_metric(row.get(metric)) for metric in metrics]
        body.append((group, " / ".join(str(n) for n in sorted(counts)), *cells))
    return md_table(header, body)


def _comparison_runs(doc: dict[str, Any]) -> str:
    rows = []
    for source, runs in doc["runs"].items():
        for label, info in runs.items():
            rows.append((f"{label} ({source})", f"`{info['file']}`", info.get("date_utc") or "?",
                         f"`{(info.get('commit') or '?')[:10]}`", fmt_int(info.get("files")),
                         fmt_int(info.get("chunks")), ", ".join(info.get("index_format") or []) or "–"))
    return md_table(("Run", "Results file", "Date (UTC)", "Commit", "Files indexed", "Chunks", "Index format"), rows)


def render_comparison(doc: dict[str, Any]) -> str:
    """Runs side by side per split and query type: the ranked list, then the selected answer."""
    parts = [provenance(doc), doc["title"], _comparison_runs(doc)]
    for split in SPLIT_ORDER:
        ranked = _comparison_table(doc, "quality", split)
        if ranked:
            parts += [f"{split_caption(doc_with_splits(doc), split)}, the ranked list (`{doc['ranked_mode']}`):",
                      ranked]
        selected = _comparison_table(doc, "pipeline", split)
        if selected:
            parts += [f"{split.capitalize()} split, the selected answer (`{doc['selected_stage']}`):", selected]
    return "\n\n".join(parts)


# --- Embedding models side by side (bench/quality/compare_models.py) ------------------------


def _models_table(doc: dict[str, Any], split: str) -> str | None:
    rows = [r for r in doc["rows"] if r["split"] == split]
    if not rows:
        return None
    by = {(r["group"], r["model"], r["mode"]): r for r in rows}
    labels = list(doc["models"])
    header = ["Query type", "Queries", "BM25 alone"]
    header += [f"{label} vectors alone" for label in labels] + [f"hybrid, {label}" for label in labels]
    body = []
    for group in dict.fromkeys(r["group"] for r in rows):
        lexical = by.get((group, "", "bm25"), {})
        cells = [fmt_metric(by.get((group, label, "vector"), {}).get(doc["metric"])) for label in labels]
        cells += [fmt_metric(by.get((group, label, "hybrid+ranking"), {}).get(doc["metric"])) for label in labels]
        body.append((group, lexical.get("n", "?"), fmt_metric(lexical.get(doc["metric"])), *cells))
    return md_table(header, body)


def render_models(doc: dict[str, Any]) -> str:
    """Per split and query type: BM25 alone, each model's vectors alone, each model in the hybrid."""
    runs = md_table(
        ("Model", "Embedding model (as the index records it)", "Results file", "Commit", "Chunks"),
        [(label, ", ".join(info.get("embedding_models") or []) or "?", f"`{info['file']}`",
          f"`{(info.get('commit') or '?')[:10]}`", fmt_int(info.get("chunks")))
         for label, info in doc["models"].items()],
    )
    parts = [provenance(doc), runs]
    for split in SPLIT_ORDER:
        table = _models_table(doc, split)
        if table:
            caption = (f"{split_caption(doc_with_splits(doc), split)}, {doc['metric']} (hybrid = the product's "
                       "ranked list, `hybrid+ranking`):")
            parts += [caption, table]
    return "\n\n".join(parts)


def doc_with_splits(doc: dict[str, Any]) -> dict[str, Any]:
    """split_caption reads `tables`; a comparison's rows carry the same split field."""
    return {"tables": doc["rows"]}
