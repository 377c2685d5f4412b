"""Second half of `make code-small`: ONNX export, int8 quantization, validation, the committed artifact.

1. The fine-tuned weights (train.py's models/.work/code_small/trained/model.safetensors) are traced
   by `codecompass.embedding.minilm_onnx.export_onnx`, the graph the MiniLM profile serves (BERT,
   mean pooling, L2 normalisation), so the provider runs both models the same way.
2. That fp32 graph (~90 MB) is quantized with ONNX Runtime's dynamic int8 quantization (weights
   int8, activations quantized per batch at run time): about a quarter of the size, within the
   50 MB budget, and faster on CPUs.
3. Both graphs, the model committed before this run, the base MiniLM profile and code-static
   are validated on the held-out repositories (models/code_static/evaluate.py, MRR@10 by query
   rule); int8 is committed unless it costs more than MAX_INT8_LOSS MRR@10 overall (fp32 does
   not fit the budget), or unless it is below the committed model overall (`--replace-anyway`
   commits it all the same); either way the run stops and says so, validation.json written.
4. models/code_small/model/ (model.onnx, config.json; the tokenizer is the base package's),
   models/code_small/training.json (train.py's log with the export's) and validation.json.

Run: .venv/bin/python -m models.code_small.export [--replace-anyway]
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from importlib.metadata import version
from pathlib import Path

from models.code_small.train import COMMITTED_LOG, PACKAGE_DIR, TRAINED_DIR, WORK_DIR
from models.code_static.evaluate import MERGED_PAIRS, compare, held_out_tasks, report
from models.code_static.train import BASE_MODEL, base_model_dir, folder_mb, sha256

COMMITTED_MODEL = PACKAGE_DIR / "model"
VALIDATION = PACKAGE_DIR / "validation.json"
# issue 16: the exported model must be <= 50 MB.
MAX_MODEL_MB = 50.0
# Quantization may cost at most this much held-out MRR@10 (all queries) against fp32.
MAX_INT8_LOSS = 0.01
# The document window the code-small profile serves.
SERVED_WINDOW = 256

log = logging.getLogger("models.code_small.export")


def export_fp32(trained: Path, into: Path) -> Path:
    from codecompass.embedding.minilm_onnx import export_onnx

    into.mkdir(parents=True, exist_ok=True)
    export_onnx(trained, into / "model.onnx")
    shutil.copyfile(base_model_dir()[0] / "tokenizer.json", into / "tokenizer.json")
    return into


def constants_as_initializers(source: Path, target: Path) -> None:
    """The same graph with its Constant nodes' tensors as initializers.

    export_onnx traces the weights as Constant nodes (they are captured tensors, not module
    parameters); ONNX Runtime's quantizer only quantizes a MatMul or Gather whose weight is an
    initializer, and would otherwise leave the model fp32.
    """
    import onnx

    model = onnx.load(str(source))
    kept = []
    for node in model.graph.node:
        if node.op_type == "Constant" and len(node.attribute) == 1 and node.attribute[0].name == "value":
            tensor = onnx.TensorProto()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            model.graph.initializer.append(tensor)
        else:
            kept.append(node)
    del model.graph.node[:]
    model.graph.node.extend(kept)
    onnx.save(model, str(target))


def quantize_int8(fp32: Path, into: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    into.mkdir(parents=True, exist_ok=True)
    staged = into / "fp32-initializers.onnx"
    constants_as_initializers(fp32 / "model.onnx", staged)
    # Per-channel scales keep each output row's range, which matters for the attention projections.
    quantize_dynamic(str(staged), str(into / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True)
    staged.unlink()
    shutil.copyfile(fp32 / "tokenizer.json", into / "tokenizer.json")
    return into


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m models.code_small.export", description=__doc__.split("\n")[0])
    parser.add_argument("--replace-anyway", action="store_true",
                        help="commit the new model even where it validates below the committed one")
    args = parser.parse_args(argv)
    from codecompass.embedding.minilm import MiniLMProvider, code_small
    from codecompass.embedding.static import StaticProvider

    trained_log = TRAINED_DIR / "training.json"
    if not (TRAINED_DIR / "model.safetensors").is_file() or not trained_log.is_file():
        raise SystemExit(f"no trained model in {TRAINED_DIR}: run `python -m models.code_small.train` first")
    started = time.monotonic()
    fp32 = export_fp32(TRAINED_DIR, WORK_DIR / "onnx-fp32")
    int8 = quantize_int8(fp32, WORK_DIR / "onnx-int8")
    export_s = time.monotonic() - started

    started = time.monotonic()
    tasks = held_out_tasks(MERGED_PAIRS)
    if not tasks:
        raise SystemExit(f"no held-out repository with pairs and a checkout ({MERGED_PAIRS}): run `make corpus`")
    training = json.loads(trained_log.read_text(encoding="utf-8"))
    models = {"code-small": MiniLMProvider(spec=code_small(int8)),
              "code-small-fp32": MiniLMProvider(spec=code_small(fp32))}
    if training["config"]["doc_window"] < SERVED_WINDOW:
        # Trained on shorter documents than the profile serves: is the served window right for it?
        models[f"code-small-win{training['config']['doc_window']}"] = MiniLMProvider(
            spec=code_small(int8), max_tokens=training["config"]["doc_window"])
    if (COMMITTED_MODEL / "model.onnx").is_file():
        models["code-small-committed"] = MiniLMProvider(spec=code_small(COMMITTED_MODEL))
    results = compare(tasks, models | {"minilm": MiniLMProvider(), "code-static": StaticProvider()})
    validation_s = time.monotonic() - started
    loss = results["code-small-fp32"]["mrr@10"]["all"] - results["code-small"]["mrr@10"]["all"]
    if loss > MAX_INT8_LOSS:
        raise SystemExit(f"int8 costs {loss:.3f} MRR@10 against fp32 (limit {MAX_INT8_LOSS}); "
                         f"fp32 is {folder_mb(fp32):.0f} MB, over the {MAX_MODEL_MB:.0f} MB budget")

    if "code-small-committed" in results and not args.replace_anyway:
        before, after = results["code-small-committed"]["mrr@10"]["all"], results["code-small"]["mrr@10"]["all"]
        if after < before:
            report(tasks, results, WORK_DIR / "validation.json")
            raise SystemExit(f"the new model validates below the committed one ({after:.3f} < {before:.3f} "
                             f"MRR@10); kept the committed one (the table: {WORK_DIR / 'validation.json'})")

    COMMITTED_MODEL.mkdir(parents=True, exist_ok=True)
    # The tokenizer is the base package's, read from there (codecompass.embedding.minilm.code_small).
    shutil.copyfile(int8 / "model.onnx", COMMITTED_MODEL / "model.onnx")
    config = {"base_model": BASE_MODEL, "architecture": "BERT (6 layers, 384 hidden) + mean pooling + L2 norm",
              "dimensions": 384, "served_window_tokens": SERVED_WINDOW,
              "trained_document_window_tokens": training["config"]["doc_window"],
              "onnx": {"inputs": ["input_ids", "attention_mask"], "output": "embedding",
                       "quantization": "onnxruntime dynamic int8 (QInt8 weights, per channel)"},
              "weights_sha256": sha256(COMMITTED_MODEL / "model.onnx"),
              "tokenizer": "the base model's tokenizer.json, fed by codecompass.embedding.minilm.WindowedTokenizer"}
    (COMMITTED_MODEL / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    size_mb = folder_mb(COMMITTED_MODEL)
    if size_mb > MAX_MODEL_MB:
        raise SystemExit(f"{COMMITTED_MODEL}: {size_mb:.1f} MB is over the {MAX_MODEL_MB:.0f} MB budget")
    training["export"] = {
        "seconds": round(export_s, 1), "validation_seconds": round(validation_s, 1),
        "fp32_mb": round(folder_mb(fp32), 2), "int8_mb": round(folder_mb(int8), 2),
        "committed": "int8", "committed_mb": round(size_mb, 2),
        "int8_mrr_loss_vs_fp32": round(loss, 4), "weights_sha256": config["weights_sha256"],
        "onnxruntime": version("onnxruntime"),
    }
    COMMITTED_LOG.write_text(json.dumps(training, indent=2) + "\n", encoding="utf-8")
    report(tasks, results, VALIDATION)
    log.info("wrote %s (%.1f MB), %s and %s", COMMITTED_MODEL, size_mb, COMMITTED_LOG, VALIDATION)
    return 0


if __name__ == "__main__":
    sys.exit(main())
