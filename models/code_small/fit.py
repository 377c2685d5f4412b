"""code-small's training loop over a packed bundle, with torch, transformers and safetensors alone.

`train.py` packs the examples into a bundle (the token ids the served provider makes, the base
weights, the plan); this module trains on it. It imports nothing of this project beyond itself,
so the same loop runs here on the CPU and on an accelerator machine that holds none of the
project's packages or services (`make code-small-bundle` packs one to carry there; the weights
come back in parts small enough for the trip; DEVELOPERS.md says when and how).

The loss is sentence-transformers' MultipleNegativesRankingLoss written out: mean-pooled BERT
embeddings, each query scored by cosine x `scale` against the batch's positives and their hard
negatives, cross-entropy towards its own positive (a test compares it with the library's).

With `--held-out` it also validates the trained model on the held-out repositories (a bundle
`train.py --pack-held-out` writes), so variants of a run (`--set epochs=5`) can be compared
where they are trained.

Run: python -m models.code_small.fit BUNDLE OUTPUT [--parts DIR --part-mib 16] [--max-minutes M]
     [--set KEY=VALUE ...] [--held-out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import sys
import time
from pathlib import Path

log = logging.getLogger("models.code_small.fit")

# Files of a bundle.
PLAN = "plan.json"
TOKENS = "tokens.npz"
BASE = "base"
# Files of a result brought back in parts.
PARTS_MANIFEST = "parts.json"
PART_PREFIX = "model.fp16.safetensors.part"
# Validation's cut-off: MRR@10, as models/code_static/evaluate.py.
VALIDATION_K = 10


def batches(rows: list, batch_size: int, steps: int, seed: int, query=lambda row: row["query"]):
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
            if query(row) in seen:
                continue
            batch.append(row)
            seen.add(query(row))
            if len(batch) == batch_size:
                yield batch
                emitted += 1
                if emitted == steps:
                    return
                batch, seen = [], set()


def padded(sequences: list, device: str) -> dict:
    """BERT inputs of token-id sequences, right-padded with 0 and masked."""
    import torch

    width = max(len(row) for row in sequences)
    input_ids = torch.zeros((len(sequences), width), dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, tokens in enumerate(sequences):
        input_ids[row, : len(tokens)] = torch.as_tensor(tokens, dtype=torch.long)
        mask[row, : len(tokens)] = 1
    features = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(input_ids)}
    return {name: tensor.to(device) for name, tensor in features.items()}


def mean_pooled(model, features: dict):
    """The mean of the last hidden states over the unmasked tokens (sentence-transformers' Pooling)."""
    hidden = model(**features).last_hidden_state
    mask = features["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def ranking_loss(queries, positives, negatives, scale: float):
    """Cross-entropy of each query's scaled cosines over [positives; negatives], its own positive the label."""
    import torch
    import torch.nn.functional as F

    candidates = F.normalize(torch.cat([positives, negatives]), dim=-1)
    scores = F.normalize(queries, dim=-1) @ candidates.T * scale
    return F.cross_entropy(scores, torch.arange(len(queries), device=scores.device))


def write_tokens(into: Path, sequences: list[list[int]], **arrays) -> int:
    """A bundle's tokens file: the token-id sequences flattened (16 bits hold the 30,522-id
    vocabulary) with their offsets, beside `arrays`. Returns the token count."""
    import numpy as np

    offsets = np.cumsum([0] + [len(ids) for ids in sequences], dtype=np.int64)
    ids = np.fromiter((t for row in sequences for t in row), dtype=np.uint16, count=int(offsets[-1]))
    into.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(into / TOKENS, ids=ids, offsets=offsets, **arrays)
    return int(offsets[-1])


def read_tokens(bundle: Path) -> tuple[list[list[int]], dict]:
    """The token-id sequences `write_tokens` stored, and its other arrays."""
    import numpy as np

    with np.load(bundle / TOKENS) as packed:
        arrays = {name: packed[name] for name in packed.files}
    ids, offsets = arrays.pop("ids"), arrays.pop("offsets")
    return [ids[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)], arrays


def load_bundle(bundle: Path) -> tuple[dict, list, list]:
    """The plan, the token-id sequences (one per distinct text) and the examples (query, positive, negative)."""
    plan = json.loads((bundle / PLAN).read_text(encoding="utf-8"))
    sequences, arrays = read_tokens(bundle)
    return plan, sequences, [tuple(int(v) for v in row) for row in arrays["triples"]]


def planned(plan: dict, overrides: dict) -> tuple[dict, int]:
    """The plan's config with `overrides` applied, and its step count: the plan's, unless the
    overrides change the epochs or the batch size (then whole epochs of the new batches)."""
    unknown = sorted(overrides.keys() - plan["config"].keys())
    if unknown:
        raise SystemExit(f"--set {unknown[0]}: not a config value of this bundle ({', '.join(sorted(plan['config']))})")
    config = plan["config"] | overrides
    if not {"epochs", "batch_size"} & overrides.keys():
        return config, plan["steps"]
    if not config.get("epochs"):
        raise SystemExit("a new batch size needs an epoch count (--set epochs=N) to size the run")
    return config, math.ceil(plan["examples"] / config["batch_size"]) * int(config["epochs"])


def fit(bundle: Path, output: Path, max_seconds: float | None = None, overrides: dict | None = None,
        held_out: Path | None = None) -> dict:
    """Fine-tune the bundle's base weights on its examples (its config, with `overrides`); the weights
    go to `output`. With `held_out` (a bundle `train.pack_held_out` wrote) the trained model is
    validated as models/code_static/evaluate.py does. Returns the log."""
    import torch
    from transformers import AutoModel

    plan, sequences, examples = load_bundle(bundle)
    config, steps = planned(plan, overrides or {})
    config["steps"] = steps
    seed = plan["seed"]
    random.seed(seed)
    torch.manual_seed(seed)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    else:
        # TF32 matrix products: several times the float32 rate on the tensor cores, weights kept in float32.
        torch.set_float32_matmul_precision("high")
    # Stored at half precision only to travel; training is float32 throughout.
    model = AutoModel.from_pretrained(str(bundle / BASE), dtype=torch.float32).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config["learning_rate"])
    warmup = max(1, int(steps * config["warmup_share"]))

    def rate(step: int) -> float:  # linear warm-up, then linear decay to zero (sentence-transformers' default)
        return step / warmup if step < warmup else max(0.0, (steps - step) / max(1, steps - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    losses, started, done, stopped_early = [], time.monotonic(), 0, False
    for step, batch in enumerate(batches(examples, config["batch_size"], steps, seed, query=lambda row: row[0]), 1):
        queries, positives, negatives = (mean_pooled(model, padded([sequences[row[column]] for row in batch], device))
                                         for column in range(3))
        loss = ranking_loss(queries, positives, negatives, config["scale"])
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
    output.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output)
    every = max(1, done // 50)
    record = {"device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu", "config": config, "seed": seed,
              "steps_planned": steps, "steps_done": done, "stopped_early_at_budget": stopped_early,
            "examples_seen": done * config["batch_size"], "seconds": round(seconds, 1),
            "steps_per_second": round(done / seconds, 3),
            "loss_first_10": round(sum(losses[:10]) / max(1, len(losses[:10])), 4),
            "loss_last_50": round(sum(losses[-50:]) / max(1, len(losses[-50:])), 4),
            "loss_curve": [[i + 1, round(sum(losses[i:i + every]) / len(losses[i:i + every]), 4)]
                           for i in range(0, len(losses), every)],
            "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__}}
    if held_out is not None:
        record["held_out"] = validate(model, held_out, device)
    return record


def embed(model, sequences: list, device: str, batch_size: int = 256):
    """L2-normalised mean-pooled embeddings of token-id sequences (in their order), as a numpy array."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    out = np.zeros((len(sequences), model.config.hidden_size), dtype=np.float32)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            vectors = F.normalize(mean_pooled(model, padded([sequences[i] for i in rows], device)), dim=-1)
            out[rows] = vectors.float().cpu().numpy()
    model.train()
    return out


def validate(model, held_out: Path, device: str) -> dict:
    """MRR@10 by query rule of `model` on a held-out bundle: each query ranks every candidate of
    its repository by cosine (models/code_static/evaluate.py's measure, on the same token ids)."""
    import numpy as np

    meta = json.loads((held_out / PLAN).read_text(encoding="utf-8"))
    sequences, arrays = read_tokens(held_out)
    vectors = embed(model, sequences, device)
    starts, q_text = arrays["repo_starts"], arrays["query_text"]
    q_repo, q_rule = arrays["query_repo"], arrays["query_rule"]
    a_offsets, a_values = arrays["answer_offsets"], arrays["answers"]
    by_rule: dict[str, list[float]] = {}
    for repo in range(len(starts) - 1):
        mine = np.nonzero(q_repo == repo)[0]
        if not len(mine):
            continue
        scores = vectors[q_text[mine]] @ vectors[starts[repo]:starts[repo + 1]].T
        ranks = np.argsort(-scores, axis=1)[:, :VALIDATION_K]
        for row, query in zip(ranks, mine, strict=True):
            answers = set(a_values[a_offsets[query]:a_offsets[query + 1]].tolist())
            hits = [position for position, index in enumerate(row.tolist()) if index in answers]
            rr = 1.0 / (hits[0] + 1) if hits else 0.0
            by_rule.setdefault(meta["rules"][q_rule[query]], []).append(rr)
            by_rule.setdefault("all", []).append(rr)
    return {"mrr@10": {rule: round(float(np.mean(v)), 4) for rule, v in sorted(by_rule.items())},
            "queries": {rule: len(v) for rule, v in sorted(by_rule.items())}}


def split_half(weights: Path, into: Path, part_bytes: int) -> dict:
    """The weights at half precision, cut into numbered parts of at most `part_bytes`; the manifest says how to join."""
    import torch
    from safetensors.torch import load_file, save

    whole = save({name: tensor.to(torch.float16) for name, tensor in load_file(str(weights)).items()})
    into.mkdir(parents=True, exist_ok=True)
    parts = []
    for number, start in enumerate(range(0, len(whole), part_bytes)):
        name = f"{PART_PREFIX}{number}"
        (into / name).write_bytes(whole[start:start + part_bytes])
        parts.append(name)
    return {"parts": parts, "bytes": len(whole), "sha256": hashlib.sha256(whole).hexdigest()}


def join_half(parts_dir: Path) -> bytes:
    """The half-precision safetensors file `split_half` cut, checked against its digest."""
    manifest = json.loads((parts_dir / PARTS_MANIFEST).read_text(encoding="utf-8"))
    whole = b"".join((parts_dir / name).read_bytes() for name in manifest["parts"])
    if len(whole) != manifest["bytes"] or hashlib.sha256(whole).hexdigest() != manifest["sha256"]:
        raise SystemExit(f"{parts_dir}: the parts do not join into the weights the manifest describes")
    return whole


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m models.code_small.fit", description=__doc__.split("\n")[0])
    parser.add_argument("bundle", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--parts", type=Path, help="also write the weights at half precision in parts here, "
                                                    "with parts.json (the log and how to join them)")
    parser.add_argument("--part-mib", type=int, default=16, help="the largest part, in MiB")
    parser.add_argument("--max-minutes", type=float, help="stop training after this long (the log says so)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override one of the bundle's config values (a variant of the run), e.g. epochs=5")
    parser.add_argument("--held-out", type=Path, help="validate the trained model on this held-out bundle")
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value)
    record = fit(args.bundle, args.output, args.max_minutes * 60 if args.max_minutes else None, overrides,
                 args.held_out)
    (args.output / "fit.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if args.parts:
        manifest = record | split_half(args.output / "model.safetensors", args.parts, args.part_mib << 20)
        (args.parts / PARTS_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    log.info("trained in %.0f s: %s", record["seconds"], args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
