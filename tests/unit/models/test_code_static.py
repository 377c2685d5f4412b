"""code-static training inputs: the vocabulary's sources, its counting and selection, the manifest's train split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models.code_static import refine, train, tune, vocabulary


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


def test_refinement_questions_are_the_given_repositories_mined_questions_each_once():
    semver = refine.corpus_questions({"npm/node-semver"}, 10_000, seed=0)
    both = refine.corpus_questions({"npm/node-semver", "tj/commander.js"}, 10_000, seed=0)
    assert semver and len(semver) == len(set(semver)) and set(semver) < set(both)
    assert refine.corpus_questions({"npm/node-semver"}, 10_000, seed=0) == semver
    assert refine.corpus_questions({"npm/node-semver"}, 5, seed=0) == semver[:5]
    assert refine.corpus_questions({"npm/node-semver"}, 0, seed=0) == []
    # A held-out repository gives nothing unless asked for by name (train.py never does).
    assert not refine.corpus_questions(set(), 10_000, seed=0)


class _Teacher:
    """Stands in for a transformer: a fixed random vector per input sequence, recorded."""

    def __init__(self) -> None:
        self.inputs: list[list[int]] = []

    def embed_token_ids(self, inputs, input_type):
        self.inputs.extend(inputs)
        return np.stack([np.random.default_rng(abs(hash(tuple(ids))) % 2**32).normal(size=32) for ids in inputs])


def test_distilling_from_a_served_teacher_gives_one_row_per_token_of_the_base_vocabulary(tmp_path):
    from codecompass.embedding.static import StaticProvider

    model_dir, _ = train.base_model_dir()
    teacher = _Teacher()
    model = train.distill(model_dir, [], 16, "code-small", teacher)
    vocabulary = model.tokenizer.get_vocab()
    assert model.embedding.shape == (len(vocabulary), 16) and len(teacher.inputs) == len(vocabulary)
    assert not any(token.startswith("[unused") for token in vocabulary)
    # Each token went through the teacher alone, between [CLS] and [SEP], as model2vec feeds it.
    cls, sep = 101, 102
    assert all(ids[0] == cls and ids[-1] == sep and len(ids) == 3 for ids in teacher.inputs)
    assert model.config["apply_pca"] == 16 and model.config["tokenizer_name"] == train.BASE_MODEL
    # The product serves the saved model as it serves the committed one.
    model.save_pretrained(tmp_path)
    served = StaticProvider(model_dir=tmp_path)
    served.warmup()
    assert served.embed(["parse the version range"], "query").shape == (1, 16)


def test_tuning_brings_each_question_nearer_its_answer_than_the_other_chunks():
    rng = np.random.default_rng(0)
    vocab, dims = 200, 16
    # A question is asked in a word of 1-99; its answer is written in another word (100 + it) that
    # no question uses, so only training can tie them: the starting rows are random.
    asked = [int(rng.integers(1, 100)) for _ in range(800)]
    queries = [[q] for q in asked]
    positives = [[100 + q, 100 + q, int(rng.integers(100, 200))] for q in asked]
    negatives = [[int(rng.integers(100, 200)) for _ in range(3)] for _ in asked]
    # Small starting rows: the module's learning rate moves them far enough in the few steps 800 examples give.
    start = (0.05 * rng.normal(size=(vocab, dims))).astype(np.float32)
    table, record = tune.tune(start, queries, positives, negatives, seed=0)
    assert table.shape == start.shape and record["improved"]
    assert record["held_out_loss_best"] < 0.8 * record["held_out_loss_start"]
    again, _ = tune.tune(start, queries, positives, negatives, seed=0)
    np.testing.assert_array_equal(table, again)
    # A token no example holds keeps its row.
    np.testing.assert_array_equal(table[0], start[0])


def test_the_accelerator_teacher_runs_the_served_code_small_weights():
    # teacher.py runs code-small's own int8 graph's weights in torch on an accelerator; its vectors
    # must be the served provider's, but for the activation quantization onnxruntime adds.
    from models.code_static import teacher

    served = train.teacher_provider("code-small")
    texts = ["src/retry.ts > retryWithBackoff\nfunction retryWithBackoff(attempt: number): number\n---\n"
             "export function retryWithBackoff(attempt: number): number {\n"
             "  return Math.min(30000, 2 ** attempt * 100)\n}",
             "parse the semver range before comparing versions", "x"]
    expected = served.embed(texts, "document")
    encoder = teacher.Encoder(teacher.served_weights(), "cpu")
    vectors = teacher.encode(encoder, [np.array(served.token_ids(text)) for text in texts], batch_size=2)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert ((vectors * expected).sum(axis=1) > 0.97).all()
    # Another text's vector is far from each (a wrong reading of the graph would not keep them apart).
    assert (vectors[0] * expected[1]).sum() < 0.9


def test_the_teachers_vectors_travel_as_int8_and_join_into_refines_cache(tmp_path, monkeypatch):
    from models.code_static import teacher

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(5, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    quantized, scale = teacher.to_int8(vectors)
    assert quantized.dtype == np.int8 and (np.abs(quantized).max(axis=1) == 127).all()
    assert ((teacher.from_int8(quantized, scale) * vectors).sum(axis=1) > 0.9999).all()

    bundle, parts = tmp_path / "bundle", tmp_path / "parts"
    bundle.mkdir()
    sequences = [[101, 7, 8, 102], [101, 102], [101, 9, 102], [101, 5, 102], [101, 6, 6, 6, 102]]
    np.savez_compressed(bundle / "ids.npz", tokens=np.array([t for s in sequences for t in s], dtype=np.uint16),
                        lengths=np.array([len(s) for s in sequences], dtype=np.uint16))
    assert [list(s) for s in teacher.read_sequences(bundle)] == sequences
    (bundle / "plan.json").write_text(json.dumps({"texts": 5, "cache": "teacher-0123456789abcdef.npy"}))
    monkeypatch.setattr(teacher, "PART_ROWS", 2)
    parts.mkdir()
    names = []
    for index, start in enumerate(range(0, 5, 2)):
        names.append(f"vectors-{index:02d}.npz")
        np.savez_compressed(parts / names[-1], q=quantized[start:start + 2], scale=scale[start:start + 2])
    import hashlib
    record = {"parts": names, "sha256_int8": hashlib.sha256(quantized.tobytes()).hexdigest()}
    (parts / "parts.json").write_text(json.dumps(record))
    monkeypatch.setattr(train, "WORK_DIR", tmp_path / "work")
    cache = teacher.unpack(bundle, parts)
    assert cache == tmp_path / "work" / "features" / "teacher-0123456789abcdef.npy"
    assert ((np.load(cache) * vectors).sum(axis=1) > 0.9999).all()
    # A part lost on the way is refused, not cached short.
    (parts / "parts.json").write_text(json.dumps(record | {"parts": names[:2]}))
    with pytest.raises(SystemExit, match="do not join"):
        teacher.unpack(bundle, parts)
