"""code-small training: the examples' rules (held-out repositories, hard negatives, blanks applied by the
real analysis service), the batches, the token ids training feeds the model against the served provider's,
the loss against sentence-transformers', and the bundle's round trip to an accelerator machine and back."""

from __future__ import annotations

import gzip
import json
import random

import pytest
from models.code_small import examples, export, fit, train
from models.code_static.train import base_model_dir
from tests.fixtures.embedding import CSS_CHUNK, JWT_CHUNK, QUERY

from codecompass.clients.analysis import AnalysisClient
from codecompass.embedding.minilm import CODE_SMALL_MODEL_DIR, MiniLMProvider, WindowedTokenizer, code_small

LONG_CHUNK = JWT_CHUNK + "\n" + "\n".join(f"  const retryDelayMs{i} = computeBackoff(attempt{i});" for i in range(200))
TEXTS = [QUERY, JWT_CHUNK, CSS_CHUNK, LONG_CHUNK, "", "parseHttpHeaderValue"]


def pair(repo: str, number: int, query: str = "q", **extra) -> dict:
    return {"id": f"jsdoc-{repo.replace('/', '+')}-{number:04d}", "repo": repo, "rule": "jsdoc", "query": query,
            "blank": [], "targets": [{"path": "src/a.ts", "qualified_name": "a", "start_line": 1, "end_line": 2}],
            **extra}


def test_the_bundle_holds_the_served_providers_token_ids_for_queries_and_documents(tmp_path):
    config = train.CONFIGS["cpu"]
    rows = [{"query": QUERY, "positive": text, "negative": TEXTS[(i + 2) % len(TEXTS)]} for i, text in enumerate(TEXTS)]
    plan = train.pack(rows, config, steps=1, seed=0, into=tmp_path, half=False)
    _, sequences, triples = fit.load_bundle(tmp_path)
    assert plan["examples"] == len(triples) == len(rows)
    query_provider = MiniLMProvider(spec=code_small(), max_tokens=config["query_window"])
    doc_provider = MiniLMProvider(spec=code_small(), max_tokens=config["doc_window"])
    query_provider.warmup()
    doc_provider.warmup()
    for row, (query, positive, negative) in zip(rows, triples, strict=True):
        assert sequences[query] == query_provider.token_ids(row["query"])
        assert sequences[positive] == doc_provider.token_ids(row["positive"])
        assert sequences[negative] == doc_provider.token_ids(row["negative"])
    assert len(doc_provider.token_ids(LONG_CHUNK)) == config["doc_window"]
    # One sequence per distinct text: the query repeats in every row.
    assert len({triple[0] for triple in triples}) == 1
    # The tokenizer is the base model's, read from its package: the ids above are the ids it was trained on.
    base_tokenizer = base_model_dir()[0] / "tokenizer.json"
    assert not (CODE_SMALL_MODEL_DIR / "tokenizer.json").exists()
    assert code_small().files().tokenizer.read_bytes() == base_tokenizer.read_bytes()


def tiny_bert(folder):
    """A randomly initialised two-layer BERT with the base vocabulary, saved where AutoModel reads it."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64), add_pooling_layer=False).save_pretrained(folder)
    return folder


def test_the_loss_is_sentence_transformers_multiple_negatives_ranking_loss(tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from transformers import AutoModel

    folder = tiny_bert(tmp_path / "bert")
    tokenizer = WindowedTokenizer.from_package(64)
    columns = [[QUERY, "parse the header value", "css colour"], [JWT_CHUNK, "parseHttpHeaderValue", CSS_CHUNK],
               [CSS_CHUNK, JWT_CHUNK, "renderButton"]]
    features = [fit.padded([tokenizer.ids(text) for text in column], "cpu") for column in columns]
    library = SentenceTransformer(str(folder), device="cpu")  # a plain BERT folder: Transformer + mean Pooling
    ours = AutoModel.from_pretrained(str(folder))
    library.eval()
    ours.eval()
    with torch.no_grad():
        expected = MultipleNegativesRankingLoss(library, scale=20.0)([dict(f) for f in features], None)
        actual = fit.ranking_loss(*(fit.mean_pooled(ours, f) for f in features), 20.0)
    assert actual.item() == pytest.approx(expected.item(), rel=1e-5)


def test_a_bundle_trains_and_its_weights_come_back_in_parts_that_join_only_whole(tmp_path):
    rows = [{"query": f"query {i} {QUERY}", "positive": text, "negative": CSS_CHUNK}
            for i, text in enumerate([JWT_CHUNK, LONG_CHUNK, "parseHttpHeaderValue", QUERY])]
    config = dict(train.CONFIGS["cpu"], batch_size=2)
    bundle = tmp_path / "bundle"
    train.pack(rows, config, steps=2, seed=0, into=bundle, half=True)
    # The base weights travel at half precision; a tiny BERT keeps this test fast.
    for name in ("config.json", "model.safetensors"):
        (bundle / fit.BASE / name).unlink()
    tiny_bert(bundle / fit.BASE)
    parts = tmp_path / "parts"
    assert fit.main([str(bundle), str(tmp_path / "trained"), "--parts", str(parts), "--part-mib", "1"]) == 0
    from safetensors.torch import load_file

    manifest = json.loads((parts / fit.PARTS_MANIFEST).read_text())
    assert manifest["steps_done"] == 2 and len(manifest["parts"]) > 1
    assert all((parts / name).stat().st_size <= 1 << 20 for name in manifest["parts"])
    trained = load_file(str(tmp_path / "trained" / "model.safetensors"))
    record = train.assemble(parts, tmp_path / "assembled")
    assert record["steps_done"] == 2 and record["returned_at_half_precision"]
    assert (record["config"], record["seed"]) == (dict(config, steps=2), 0)
    assembled = load_file(str(tmp_path / "assembled" / "model.safetensors"))
    assert assembled.keys() == trained.keys()
    for name, tensor in trained.items():
        assert float((assembled[name] - tensor).abs().max()) <= 1e-3 * max(1.0, float(tensor.abs().max()))
    first = parts / manifest["parts"][0]
    first.write_bytes(first.read_bytes()[:-1] + b"\0")
    with pytest.raises(SystemExit, match="do not join"):
        fit.join_half(parts)


def test_a_variant_of_the_plan_is_sized_in_whole_epochs_of_its_batches():
    plan = {"config": {"batch_size": 128, "epochs": 3, "learning_rate": 3e-5}, "steps": 753, "examples": 32039}
    assert fit.planned(plan, {}) == (plan["config"], 753)
    assert fit.planned(plan, {"learning_rate": 5e-5}) == (dict(plan["config"], learning_rate=5e-5), 753)
    assert fit.planned(plan, {"epochs": 5})[1] == 251 * 5
    assert fit.planned(plan, {"batch_size": 256})[1] == 126 * 3
    with pytest.raises(SystemExit, match="not a config value"):
        fit.planned(plan, {"epoch": 5})
    with pytest.raises(SystemExit, match="epoch count"):
        fit.planned({"config": {"batch_size": 32, "epochs": None}, "steps": 380, "examples": 100}, {"batch_size": 64})


def test_held_out_validation_ranks_each_querys_repository_as_the_evaluation_does(tmp_path):
    """The held-out bundle's MRR@10 equals evaluate.py's measure: each query's cosine ranking of its
    own repository's candidates, its first answer's reciprocal rank."""
    import numpy as np
    from transformers import AutoModel

    one = [{"query": QUERY, "rule": "jsdoc", "answers": [0]}, {"query": CSS_CHUNK, "rule": "test", "answers": [1, 2]}]
    two = [{"query": "parse header", "rule": "jsdoc", "answers": [1]}]
    tasks = {"owner/one": ([JWT_CHUNK, CSS_CHUNK, LONG_CHUNK], one),
             "owner/two": (["parseHttpHeaderValue", QUERY], two)}
    meta = train.pack_held_out(tasks, tmp_path / "held-out", window=64)
    assert meta["queries"] == 3 and meta["candidates"] == 5 and meta["rules"] == ["jsdoc", "test"]
    model = AutoModel.from_pretrained(str(tiny_bert(tmp_path / "bert")))
    result = fit.validate(model, tmp_path / "held-out", "cpu")
    tokenizer = WindowedTokenizer.from_package(64)
    expected: dict[str, list[float]] = {}
    for documents, queries in tasks.values():
        docs = fit.embed(model, [tokenizer.ids(text) for text in documents], "cpu")
        for query in queries:
            order = list(np.argsort(-(fit.embed(model, [tokenizer.ids(query["query"])], "cpu") @ docs.T)[0]))
            rr = 1.0 / (min(order.index(a) for a in query["answers"]) + 1)
            expected.setdefault(query["rule"], []).append(rr)
            expected.setdefault("all", []).append(rr)
    # A query that is its own answer's text ranks it first.
    assert expected["test"] == [1.0]
    assert result["mrr@10"] == {rule: round(float(np.mean(v)), 4) for rule, v in sorted(expected.items())}
    assert result["queries"] == {"all": 3, "jsdoc": 2, "test": 1}


def test_held_out_repositories_give_no_example_and_large_ones_are_sampled_by_seed(tmp_path):
    assert examples.held_out("uuidjs/uuid") and not examples.held_out("npm/node-semver")
    rows = [pair("uuidjs/uuid", 1)] + [pair("npm/node-semver", n) for n in range(30)] + [pair("tj/commander.js", 1)]
    path = tmp_path / "pairs.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    chosen = examples.train_pairs(path, per_repo=10, seed=0)
    assert sorted(chosen) == ["npm/node-semver", "tj/commander.js"]
    assert len(chosen["npm/node-semver"]) == 10 and len(chosen["tj/commander.js"]) == 1
    assert chosen == examples.train_pairs(path, per_repo=10, seed=0)
    assert chosen["npm/node-semver"] != examples.train_pairs(path, per_repo=10, seed=1)["npm/node-semver"]
    assert len(examples.train_pairs(path, per_repo=0, seed=0)["npm/node-semver"]) == 30


def test_the_hard_negative_is_the_best_bm25_chunk_that_is_no_answer():
    texts = ["validateToken verifies the jwt signature", "renderButton draws a button",
             "refreshToken asks for a new jwt token", "validateToken verifies the jwt signature"]
    bm25 = examples.BM25(texts)
    # 0 answers; 3 has the answer's text (a copy elsewhere) so it is no negative either.
    assert examples.hard_negative("validate the jwt token", {0}, texts, bm25, random.Random(0)) == 2


def test_without_shared_words_the_hard_negative_is_a_seeded_draw_and_none_without_candidates():
    texts = ["alpha", "beta", "gamma", "delta"]
    bm25 = examples.BM25(texts)
    drawn = {examples.hard_negative("zeta", {0}, texts, bm25, random.Random(seed)) for seed in range(20)}
    assert drawn <= {1, 2, 3} and len(drawn) > 1
    assert examples.hard_negative("zeta", {0}, texts, bm25, random.Random(5)) == \
        examples.hard_negative("zeta", {0}, texts, bm25, random.Random(5))
    assert examples.hard_negative("alpha", {0}, ["alpha", "alpha"], examples.BM25(["alpha", "alpha"]),
                                  random.Random(0)) is None


def test_batches_are_seeded_full_and_never_pit_a_query_against_itself():
    rows = [{"query": f"q{i % 7}", "positive": str(i), "negative": "n"} for i in range(40)]
    batches = list(fit.batches(rows, 5, 12, seed=3))
    assert len(batches) == 12 and all(len(b) == 5 for b in batches)
    assert all(len({r["query"] for r in b}) == 5 for b in batches)
    assert batches == list(fit.batches(rows, 5, 12, seed=3)) != list(fit.batches(rows, 5, 12, seed=4))


def test_examples_are_the_index_chunks_of_the_blanked_repository(analysis_server, tmp_path):
    """The real analysis service chunks the repository with the pair's JSDoc blanked: the positive is the
    target's chunk without the sentence the query came from, the negative the other chunk sharing its words."""
    checkout = tmp_path / "owner+tiny"
    (checkout / "src").mkdir(parents=True)
    jsdoc = "/** Checks the signature of a session token and returns its claims. */\n"
    source = (jsdoc + "export function verifySessionToken(token: string): string[] {\n"
              "  return token.split('.');\n}\n\n"
              "export function renewSessionToken(token: string): string {\n  return token + '.renewed';\n}\n\n"
              "export const buttonColour = '#0b5fff';\n")
    (checkout / "src" / "session.ts").write_text(source)
    query = "Checks the signature of a session token and returns its claims."
    mined = pair("owner/tiny", 1, query=query,
                 blank=[{"path": "src/session.ts", "spans": [[0, len(jsdoc) - 1]]}],
                 targets=[{"path": "src/session.ts", "qualified_name": "verifySessionToken",
                           "start_line": 2, "end_line": 4}])
    client = AnalysisClient(analysis_server, timeout_s=60)
    try:
        (example,) = examples.repository_examples(client, checkout, [mined], tmp_path / "scratch", seed=0)
    finally:
        client.close()
    assert example["query"] == query and example["repo"] == "owner/tiny"
    assert "verifySessionToken" in example["positive"] and "signature" not in example["positive"]
    assert "renewSessionToken" in example["negative"]


def test_export_turns_traced_constant_weights_into_initializers_so_int8_quantization_applies(tmp_path):
    """export_onnx traces weights as Constant nodes, which ONNX Runtime's quantizer skips (the model
    would stay fp32 at 90 MB); as initializers the MatMul becomes an integer MatMul with the same outputs."""
    import numpy as np
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).normal(size=(64, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["w"], value=numpy_helper.from_array(weight)),
         helper.make_node("MatMul", ["x", "w"], ["y"])],
        "traced", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])])
    (tmp_path / "fp32").mkdir()
    # IR version 8: what torch.onnx writes for opset 17, and what this ONNX Runtime loads.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, tmp_path / "fp32" / "model.onnx")
    (tmp_path / "fp32" / "tokenizer.json").write_text("{}")
    export.quantize_int8(tmp_path / "fp32", tmp_path / "int8")
    quantized = onnx.load(tmp_path / "int8" / "model.onnx")
    assert "MatMulInteger" in {node.op_type for node in quantized.graph.node}
    assert sorted(path.name for path in (tmp_path / "int8").iterdir()) == ["model.onnx", "tokenizer.json"]
    x = np.random.default_rng(1).normal(size=(4, 64)).astype(np.float32)
    (y,) = onnxruntime.InferenceSession(str(tmp_path / "int8" / "model.onnx")).run(None, {"x": x})
    np.testing.assert_allclose(y, x @ weight, atol=0.2 * float(np.abs(x @ weight).max()))
