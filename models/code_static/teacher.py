"""The teacher's vectors of many chunks on an accelerator, for the static model's refinement.

refine.py's teacher is code-small as the product serves it: its int8 ONNX graph on onnxruntime,
about 40-80 chunks a second on two cores, so a run on this machine refines on tens of thousands of
chunks. Issue 27 asks for as many as the hardware allows, all of them on an accelerator. There the
same weights run in torch:

    here:  python -m models.code_static.teacher pack BUNDLE [--refine-texts N] [--seed S]
    there: PYTHONPATH=py_services python3 -m models.code_static.teacher embed BUNDLE OUT
    here:  python -m models.code_static.teacher unpack BUNDLE OUT

`pack` writes the chunks' token ids exactly as the served provider feeds them (its
WindowedTokenizer: [CLS], the header-first window, [SEP]) and the name of the cache that
refine.featurize looks up for those texts. `embed` needs torch, numpy and onnx, and this
checkout's py_services on PYTHONPATH for the served provider's batching (numpy only): it reads
the committed graph's weights, dequantizes each int8 matrix once (per output channel, as the
graph does at run time), and runs the graph's arithmetic in float32 with the same mean pooling
and L2 normalisation; the vectors come back as int8 with one scale each, in parts small enough
to travel. `unpack` joins them into that cache, so `make code-static` with
the same --refine-texts and seed finds them and never runs the teacher on the CPU.

The one difference from the served teacher: onnxruntime also quantizes each activation to uint8
before every matrix product, torch does not. `verify` measures what that changes on this machine
(cosine of the two vectors of the same chunks); the model card records it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from codecompass.embedding.batching import length_sorted_batches, padded, run_in_batches

ONNX_MODEL = Path(__file__).resolve().parent.parent / "code_small" / "model" / "model.onnx"
HIDDEN = 384
HEADS = 12
# Texts per forward pass on the accelerator, sorted by length so that a batch pads little.
EMBED_BATCH = 512
# Parts that travel back: the device returns at most 8 files of 16 MiB, 64 MiB in all.
PART_ROWS = 40_000


class WeightsError(ValueError):
    """The graph is not the 6-layer BERT encoder this reader knows."""


def served_weights(onnx_path: Path = ONNX_MODEL) -> dict:
    """The encoder's weights in float32, read from the served int8 graph by following its nodes.

    The exported graph has no parameter names, only its structure: the embedding Gather and its
    DequantizeLinear, the position table the Slice reads, then per layer three projections from one
    LayerNormalization (told apart by where they lead: the key is transposed to [0, 2, 3, 1], the
    query scaled into the scores, the value multiplied by the probabilities), the attention output,
    the feed-forward pair, and two LayerNormalizations.
    """
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    init = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def after(tensor: str, op: str):
        found = [node for node in consumers.get(tensor, []) if node.op_type == op]
        if len(found) != 1:
            raise WeightsError(f"{tensor}: expected one {op} after it, found {len(found)}")
        return found[0]

    def constant(node) -> np.ndarray:
        values = [init[name] for name in node.input if name in init]
        if len(values) != 1:
            raise WeightsError(f"{node.name}: expected one constant input")
        return values[0].astype(np.float32)

    def dense(matmul) -> tuple[np.ndarray, np.ndarray, object]:
        quantized, zero = init[matmul.input[1]], init[matmul.input[3]]
        # The quantizer names a weight's scale after the weight: <name>_quantized, <name>_scale.
        scale = init[matmul.input[1].removesuffix("_quantized") + "_scale"]
        weight = (quantized.astype(np.float32) - zero.astype(np.float32)) * scale.astype(np.float32)
        bias_add = after(after(after(matmul.output[0], "Cast").output[0], "Mul").output[0], "Add")
        return weight, constant(bias_add), bias_add

    gather = next(node for node in graph.node if node.op_type == "Gather" and node.input[0] in init
                  and init[node.input[0]].ndim == 2)
    dequantize = after(gather.output[0], "DequantizeLinear")
    word = (init[gather.input[0]].astype(np.float32) - init[dequantize.input[2]].astype(np.float32)) \
        * init[dequantize.input[1]].astype(np.float32)
    position = next(init[node.input[0]] for node in graph.node if node.op_type == "Slice"
                    and node.input[0] in init and init[node.input[0]].ndim == 2).astype(np.float32)
    token_type = constant(after(after(dequantize.output[0], "Add").output[0], "Add"))
    norms = [node for node in graph.node if node.op_type == "LayerNormalization"]
    matmuls = [node for node in graph.node if node.op_type == "MatMulInteger"]
    layers = len(matmuls) // 6
    if len(matmuls) != 6 * layers or len(norms) != 2 * layers + 1 or word.shape[1] != HIDDEN:
        raise WeightsError(f"{onnx_path}: {len(matmuls)} int8 products and {len(norms)} norms "
                           "are not a BERT encoder's")

    def norm(node) -> tuple[np.ndarray, np.ndarray, float]:
        epsilon = next((attr.f for attr in node.attribute if attr.name == "epsilon"), 1e-5)
        return init[node.input[1]].astype(np.float32), init[node.input[2]].astype(np.float32), float(epsilon)

    def role(bias_add) -> str:
        transpose = after(after(bias_add.output[0], "Reshape").output[0], "Transpose")
        perm = list(next(attr.ints for attr in transpose.attribute if attr.name == "perm"))
        if perm == [0, 2, 3, 1]:
            return "key"
        ops = {node.op_type for node in consumers.get(transpose.output[0], [])}
        return "query" if "Mul" in ops else "value"

    encoder = []
    for index in range(layers):
        first = matmuls[6 * index: 6 * index + 6]
        projections = {}
        for matmul in first[:3]:
            weight, bias, bias_add = dense(matmul)
            projections[role(bias_add)] = (weight, bias)
        if set(projections) != {"query", "key", "value"}:
            raise WeightsError(f"layer {index}: projections {sorted(projections)}")
        encoder.append({**projections,
                        "attention_out": dense(first[3])[:2], "intermediate": dense(first[4])[:2],
                        "output": dense(first[5])[:2],
                        "attention_norm": norm(norms[1 + 2 * index]), "output_norm": norm(norms[2 + 2 * index])})
    return {"word": word, "position": position, "token_type": token_type, "norm": norm(norms[0]),
            "layers": encoder}


class Encoder:
    """The served graph's arithmetic in torch (float32): embeddings, 6 layers, mean pool, L2 norm."""

    def __init__(self, weights: dict, device: str) -> None:
        import torch

        self.torch = torch
        self.device = device

        def tensor(value):
            if isinstance(value, tuple):
                return tuple(tensor(v) for v in value)
            if isinstance(value, float):
                return value
            return torch.from_numpy(np.ascontiguousarray(value)).to(device)

        self.word, self.position, self.token_type = (tensor(weights[k]) for k in ("word", "position", "token_type"))
        self.norm = tensor(weights["norm"])
        self.layers = [{key: tensor(value) for key, value in layer.items()} for layer in weights["layers"]]

    def __call__(self, ids, mask):
        torch = self.torch
        functional = torch.nn.functional
        batch, width = ids.shape
        head = HIDDEN // HEADS

        def layer_norm(x, params):
            gamma, beta, epsilon = params
            return functional.layer_norm(x, (HIDDEN,), gamma, beta, epsilon)

        def heads(x):
            return x.view(batch, width, HEADS, head).transpose(1, 2)

        x = layer_norm(self.word[ids] + self.position[:width] + self.token_type, self.norm)
        blocked = (mask == 0)[:, None, None, :]
        for layer in self.layers:
            query, key, value = (heads(x @ layer[name][0] + layer[name][1]) for name in ("query", "key", "value"))
            scores = (query @ key.transpose(-1, -2)) / head ** 0.5
            scores = scores.masked_fill(blocked, torch.finfo(scores.dtype).min)
            context = (scores.softmax(-1) @ value).transpose(1, 2).reshape(batch, width, HIDDEN)
            x = layer_norm(context @ layer["attention_out"][0] + layer["attention_out"][1] + x,
                           layer["attention_norm"])
            inner = functional.gelu(x @ layer["intermediate"][0] + layer["intermediate"][1])
            x = layer_norm(inner @ layer["output"][0] + layer["output"][1] + x, layer["output_norm"])
        weights = mask[:, :, None].to(x.dtype)
        pooled = (x * weights).sum(1) / weights.sum(1).clamp_min(1e-9)
        return functional.normalize(pooled, dim=1)


def encode(encoder: Encoder, sequences: list[np.ndarray], batch_size: int = EMBED_BATCH) -> np.ndarray:
    """Unit vectors of `sequences` (token ids with [CLS] and [SEP]), in their order, batched by
    length as the served provider batches them."""
    torch = encoder.torch

    def run(batch: list[int]) -> np.ndarray:
        ids, mask = padded(sequences, batch)
        vectors = encoder(torch.from_numpy(ids).to(encoder.device), torch.from_numpy(mask).to(encoder.device))
        return vectors.float().cpu().numpy()

    batches = length_sorted_batches([len(s) for s in sequences], batch_size, batch_size * 256)
    with torch.inference_mode():
        return run_in_batches(batches, len(sequences), HIDDEN, run)


def to_int8(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row scaled by its largest magnitude into int8: 384 bytes a vector, error <= scale/2."""
    scale = np.abs(vectors).max(axis=1).clip(min=1e-12) / 127.0
    return np.round(vectors / scale[:, None]).astype(np.int8), scale.astype(np.float32)


def from_int8(quantized: np.ndarray, scale: np.ndarray) -> np.ndarray:
    vectors = quantized.astype(np.float32) * scale[:, None]
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-12)


def read_sequences(bundle: Path) -> list[np.ndarray]:
    with np.load(bundle / "ids.npz") as data:
        tokens, lengths = data["tokens"].astype(np.int64), data["lengths"].astype(np.int64)
    return np.split(tokens, np.cumsum(lengths)[:-1])


def pack(bundle: Path, texts_count: int, seed: int) -> dict:
    """The chunks train.py refines on, as the served teacher's ids, and the cache they fill."""
    from models.code_static import refine, train

    sources = train.train_repositories(train.MANIFEST, train.CORPUS_DIR)
    chunks = refine.corpus_chunks([Path(s["checkout"]) for s in sources], texts_count, seed)
    teacher = train.teacher_provider("code-small")
    sequences = [teacher.token_ids(text) for text in chunks]
    bundle.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(bundle / "ids.npz", tokens=np.fromiter((t for s in sequences for t in s), dtype=np.uint16),
                        lengths=np.array([len(s) for s in sequences], dtype=np.uint16))
    plan = {"texts": len(chunks), "tokens": int(sum(len(s) for s in sequences)), "seed": seed,
            "refine_texts": texts_count, "teacher": teacher.info().model_version,
            "onnx_sha256": hashlib.sha256(ONNX_MODEL.read_bytes()).hexdigest(),
            "cache": refine.cache_path(chunks, train.WORK_DIR / "features", teacher).name}
    (bundle / "plan.json").write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
    return plan


def embed(bundle: Path, out: Path, device: str | None = None) -> dict:
    """The bundle's vectors, computed here (an accelerator when torch sees one), in parts under `out`."""
    import torch

    plan = json.loads((bundle / "plan.json").read_text(encoding="utf-8"))
    if hashlib.sha256(ONNX_MODEL.read_bytes()).hexdigest() != plan["onnx_sha256"]:
        raise SystemExit(f"{ONNX_MODEL} is not the graph the bundle was packed for")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False
    started = time.monotonic()
    encoder = Encoder(served_weights(), device)
    sequences = read_sequences(bundle)
    loaded_s = time.monotonic() - started
    started = time.monotonic()
    vectors = encode(encoder, sequences)
    embed_s = time.monotonic() - started
    quantized, scale = to_int8(vectors)
    out.mkdir(parents=True, exist_ok=True)
    parts = []
    for index, start in enumerate(range(0, len(vectors), PART_ROWS)):
        name = f"vectors-{index:02d}.npz"
        np.savez_compressed(out / name, q=quantized[start:start + PART_ROWS], scale=scale[start:start + PART_ROWS])
        parts.append(name)
    record = {"texts": len(vectors), "parts": parts, "device": torch.cuda.get_device_name() if device == "cuda"
              else device, "torch": torch.__version__, "seconds_load": round(loaded_s, 1),
              "seconds_embed": round(embed_s, 1), "texts_per_second": round(len(vectors) / max(embed_s, 1e-9)),
              "cache": plan["cache"], "sha256_int8": hashlib.sha256(quantized.tobytes()).hexdigest()}
    (out / "parts.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def unpack(bundle: Path, parts_dir: Path) -> Path:
    """The parts joined, checked against their digest and the plan, and saved as refine's cache."""
    from models.code_static import train

    plan = json.loads((bundle / "plan.json").read_text(encoding="utf-8"))
    record = json.loads((parts_dir / "parts.json").read_text(encoding="utf-8"))
    pieces = [np.load(parts_dir / name) for name in record["parts"]]
    quantized = np.concatenate([piece["q"] for piece in pieces])
    scale = np.concatenate([piece["scale"] for piece in pieces])
    if hashlib.sha256(quantized.tobytes()).hexdigest() != record["sha256_int8"] or len(quantized) != plan["texts"]:
        raise SystemExit(f"{parts_dir}: the parts do not join into the {plan['texts']} vectors the bundle asked for")
    cache = train.WORK_DIR / "features" / plan["cache"]
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, from_int8(quantized, scale))
    (cache.with_suffix(".json")).write_text(json.dumps({"plan": plan, "embedded": record}, indent=2) + "\n",
                                            encoding="utf-8")
    return cache


def verify(count: int, seed: int) -> dict:
    """On this machine: the torch teacher's vectors of `count` corpus chunks against the served ones."""
    from models.code_static import refine, train

    sources = train.train_repositories(train.MANIFEST, train.CORPUS_DIR)
    chunks = refine.corpus_chunks([Path(s["checkout"]) for s in sources], count, seed)
    teacher = train.teacher_provider("code-small")
    served = teacher.embed(chunks, "document")
    mine = encode(Encoder(served_weights(), "cpu"), [np.array(teacher.token_ids(t)) for t in chunks], 32)
    cosine = (served * from_int8(*to_int8(mine))).sum(axis=1)
    return {"texts": len(chunks), "cosine_mean": round(float(cosine.mean()), 5),
            "cosine_min": round(float(cosine.min()), 5), "cosine_p01": round(float(np.quantile(cosine, 0.01)), 5)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.code_static.teacher", description=__doc__.split("\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("pack", help="here: the refinement chunks as the teacher's token ids")
    step.add_argument("bundle", type=Path)
    step.add_argument("--refine-texts", type=int, default=32000, help="as train.py's --refine-texts")
    step.add_argument("--seed", type=int, default=0)
    step = steps.add_parser("embed", help="on the accelerator: the vectors, in parts under OUT")
    step.add_argument("bundle", type=Path)
    step.add_argument("out", type=Path)
    step.add_argument("--device", help="default: cuda when torch sees it, else cpu")
    step = steps.add_parser("unpack", help="here: the parts joined into refine.py's teacher cache")
    step.add_argument("bundle", type=Path)
    step.add_argument("parts", type=Path)
    step = steps.add_parser("verify", help="here: the torch teacher against the served one on N chunks")
    step.add_argument("--texts", type=int, default=500)
    step.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.step == "pack":
        print(json.dumps(pack(args.bundle, args.refine_texts, args.seed)))
    elif args.step == "embed":
        print(json.dumps(embed(args.bundle, args.out, args.device)))
    elif args.step == "unpack":
        print(unpack(args.bundle, args.parts))
    else:
        print(json.dumps(verify(args.texts, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
