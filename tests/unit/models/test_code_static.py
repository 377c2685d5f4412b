"""code-static training inputs: the vocabulary's sources, its counting and selection, the manifest's train split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models.code_static import refine, train, vocabulary


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize("folder", ["ReactiveX+rxjs", "TanStack+query", "fastify", "pinojs+pino", "preact"])
def test_the_benchmarks_quality_repositories_are_never_vocabulary_sources(tmp_path, folder):
    with pytest.raises(vocabulary.ExcludedSource, match="quality repository"):
        vocabulary.check_source(tmp_path / folder)


@pytest.mark.parametrize("folder", ["honojs+hono", "colinhacks+zod", "reduxjs+redux-toolkit", "vite"])
def test_off_limits_repositories_are_never_vocabulary_sources(tmp_path, folder):
    with pytest.raises(vocabulary.ExcludedSource, match="off-limits"):
        vocabulary.check_source(tmp_path / folder)


def test_a_train_repository_is_accepted_and_named_by_its_checkout(tmp_path):
    vocabulary.check_source(tmp_path / "sindresorhus+ky")
    assert vocabulary.source_name(tmp_path / "sindresorhus+ky") == "sindresorhus/ky"


def test_words_are_the_index_split_of_ts_js_sources_only(tmp_path):
    repo = write(tmp_path / "owner+repo", {
        "src/fetch.ts": "export function retryFetchWithBackoff(requestInit) { return deserializeBody(requestInit) }",
        "src/types.d.ts": "declare const declarationOnlyName: number;",
        "node_modules/dep/index.js": "function installedDependencyName() {}",
        "dist/bundle.js": "function builtBundleName() {}",
        "README.md": "prose words only",
        "src/min.js": "var " + ",".join(f"minifiedName{i}=1" for i in range(200)) + ";",
    })
    counts = vocabulary.count([repo])
    assert counts.files == 2 and counts.repositories == 1
    assert {"retry", "fetch", "backoff", "deserialize", "body", "request", "init"} <= set(counts.words)
    assert not {"declaration", "installed", "built", "prose", "minified"} & set(counts.words)


def test_selection_keeps_new_frequent_words_shared_by_enough_repositories(tmp_path):
    shared = "deserialize deserialize deserialize middleware middleware tsconfig\n"
    one = write(tmp_path / "a+one",
                {"x.ts": shared + "onlyInOneRepoWord\n" * 9 + "return x1234 abcdefabcdefabcdefabcdefabcdef"})
    two = write(tmp_path / "b+two", {"x.ts": shared})
    counts = vocabulary.count([one, two])
    base = {"return", "middleware"}
    assert vocabulary.select(counts, base, size=10, min_repos=2) == ["deserialize", "tsconfig"]
    assert vocabulary.select(counts, base, size=1, min_repos=2) == ["deserialize"]
    # Repository-specific words and numbers, hashes and base vocabulary never make it.
    assert "word" in vocabulary.select(counts, base, size=10, min_repos=1)
    assert not {"1234", "abcdefabcdefabcdefabcdefabcdef", "return"} & set(
        vocabulary.select(counts, base, size=99, min_repos=1))


def test_the_manifests_train_repositories_must_all_be_checked_out(tmp_path):
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"repositories": [
        {"github": "sindresorhus/ky", "commit": "a" * 40, "split": "train"},
        {"github": "tj/commander.js", "commit": "b" * 40, "split": "train"},
        {"github": "uuidjs/uuid", "commit": "c" * 40, "split": "train"},
    ], "excluded": [{"github": "ReactiveX/rxjs", "split": "dev"}]}))
    (tmp_path / "corpus" / "sindresorhus+ky").mkdir(parents=True)
    with pytest.raises(SystemExit, match="1 train repositories are not checked out .* tj/commander.js"):
        train.train_repositories(manifest, tmp_path / "corpus")
    (tmp_path / "corpus" / "tj+commander.js").mkdir()
    repos = train.train_repositories(manifest, tmp_path / "corpus")
    # uuidjs/uuid is one of the one-in-ten held out for validation: it needs no checkout here.
    assert vocabulary.held_out("uuidjs/uuid")
    assert [r["checkout"].name for r in repos] == ["sindresorhus+ky", "tj+commander.js"]


def test_a_development_run_never_writes_the_committed_model(tmp_path):
    with pytest.raises(SystemExit, match="train split only"):
        train.main(["--vocab-source", str(tmp_path), "--output", str(train.COMMITTED_MODEL)])


def test_a_quality_repository_given_as_a_source_stops_the_run_before_any_work(tmp_path):
    with pytest.raises(SystemExit, match="quality repository"):
        train.main(["--vocab-source", str(tmp_path / "mochajs+mocha"), "--output", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def test_refinement_teaches_the_token_vectors_to_predict_the_teachers_text_vectors():
    rng = np.random.default_rng(0)
    vocab, dims = 40, 8
    # A teacher whose text vector is the mean of hidden token vectors the student does not start with.
    hidden = rng.normal(size=(vocab, 16))
    texts = [list(rng.integers(1, vocab, size=rng.integers(3, 12))) for _ in range(400)]
    targets = np.stack([hidden[ids].mean(axis=0) for ids in texts])
    start = rng.normal(size=(vocab, dims)).astype(np.float32)
    table, record = refine.refine(start, 0, texts, targets, seed=0)
    assert table.shape == start.shape and record["improved"]
    assert record["validation_mse_best"] < 0.7 * record["validation_mse_start"]
    again, _ = refine.refine(start, 0, texts, targets, seed=0)
    np.testing.assert_array_equal(table, again)
