"""What fewer bits cost the static channel (bench/vector_fidelity.py): the agreement measures on
known vectors, the benchmark questions mapped onto ws-300k's packages, and the rendered section."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bench import vector_fidelity as vf
from bench.report.speed import render_vector_fidelity
from tests.unit.retrieval.test_store import make_chunk

from codecompass.retrieval.search.readcache import unit_rows


def test_a_stored_form_equal_to_the_floats_agrees_fully_and_int4_keeps_most_of_a_ranking() -> None:
    rng = np.random.default_rng(0)
    originals = unit_rows(rng.normal(size=(500, 64)).astype(np.float32))
    queries = unit_rows(rng.normal(size=(40, 64)).astype(np.float32))
    same = vf._agreement(originals, originals, queries)
    assert same["top10_kept"] == same["top1_same"] == 1.0 and same["top10_largest_score_change"] == 0.0
    forms = vf._forms(originals)
    assert list(forms) == ["float32", "int8", "int4"]
    int8, int4 = (vf._agreement(originals, forms[f], queries) for f in ("int8", "int4"))
    assert int8["row_cosine_min"] > 0.999 and int8["top10_kept"] > 0.95
    assert 0.95 < int4["row_cosine_mean"] < int8["row_cosine_mean"] and int4["top10_kept"] > 0.6


def test_a_benchmark_question_is_answered_in_its_own_package_by_name_and_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rxjs's target in the repository is src/x.ts; TanStack's is packages/query-core/src/q.ts,
    # published as the @tanstack/query-core package.
    chunks = [make_chunk("c0", "map", "packages/rxjs/src/x.ts"), make_chunk("c1", "map", "packages/knex/src/x.ts"),
              make_chunk("c2", "QueryCache.find", "packages/@tanstack__query-core/src/q.ts")]
    assert vf._without_monorepo_folder("packages/query-core/src/q.ts") == "src/q.ts"
    assert vf._without_monorepo_folder("src/x.ts") == "src/x.ts"
    questions = [
        {"repo": "rxjs", "split": "dev", "type": "nl", "query": "a",
         "targets": [{"path": "src/x.ts", "qualified_name": "map"}]},
        {"repo": "tanstack-query", "split": "test", "type": "nl", "query": "b",
         "targets": [{"path": "packages/query-core/src/q.ts", "qualified_name": "QueryCache.find"}]},
        {"repo": "fastify", "split": "dev", "type": "nl", "query": "c",
         "targets": [{"path": "x.js", "qualified_name": "f"}]},
        {"repo": "knex", "split": "test", "type": "nl", "query": "d",
         "targets": [{"path": "lib/gone.js", "qualified_name": "g"}]},
    ]
    queries = tmp_path / "queries.jsonl"
    queries.write_text("\n".join(json.dumps(q) for q in questions), encoding="utf-8")
    monkeypatch.setattr(vf, "BENCH_QUERIES", queries)
    # The knex row is nearest every question, but it is in another package than rxjs's and TanStack's.
    forms = {"float32": unit_rows(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32))}
    quality = vf._bench_quality(chunks, forms, lambda texts: np.array([[1.0, 0.2]] * len(texts), dtype=np.float32))
    # fastify is not in ws-300k and knex's target is not in its package: two questions count.
    assert quality == {"float32": {"dev all": {"queries": 1, "mrr10": 1.0}, "dev nl": {"queries": 1, "mrr10": 1.0},
                                   "test all": {"queries": 1, "mrr10": 1.0}, "test nl": {"queries": 1, "mrr10": 1.0}}}


def test_the_section_shows_each_form_and_the_static_vectors_alone() -> None:
    agreement = {"row_cosine_mean": 0.9917, "row_cosine_p1": 0.9845, "row_cosine_min": 0.9425, "top10_kept": 0.89,
                 "top1_same": 0.847, "top10_largest_score_change": 0.0459}
    doc = {
        "kind": "vector-fidelity",
        "run": {"date_utc": "2026-12-02T00:30:00+00:00", "git": {"commit": "abc", "dirty_files": []},
                "machine": {"nproc": 2, "ram_gib": 23.5, "load_avg": [1, 1, 1]}},
        "workspace": "bench/.work/ws-300k", "rows": 22_141, "dimensions": 256, "questions": 1_000, "seed": 0,
        "static_model": "code-static/m", "bytes_per_row": {"float32": 1024, "int8": 256, "int4": 128},
        "agreement": {"int4": agreement},
        "bench_quality": {form: {"dev all": {"queries": 427, "mrr10": value},
                                 "dev jsdoc": {"queries": 53, "mrr10": 0.4}}
                          for form, value in (("float32", 0.334), ("int8", 0.334), ("int4", 0.3366))},
    }
    text = render_vector_fidelity(doc)
    assert "| int4 | 128 | 0.9917 / 0.9845 / 0.9425 | 89.0% | 84.7% | 0.046 |" in text
    assert "| dev all | 427 | 0.334 | 0.334 | 0.337 |" in text and "dev jsdoc" not in text
