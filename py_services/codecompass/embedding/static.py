"""Local provider `code-static`: our own static code embeddings (models/code_static), numpy only.

A model2vec StaticModel is one table of token vectors: a text's vector is the mean of its
tokens' rows, so embedding costs a lookup and a gather, thousands of chunks a second on two
cores, with no torch or ONNX Runtime in the process. Its vocabulary holds the identifier parts
that the index's text preparation produces ("validate", "jwt", "middleware"), so texts go
through the same `text` preparation as minilm's (identifier splitting, header-preserving
window), and the model's tokenizer sees the resulting words.

The window is counted in words, not tokens: each word costs the model one gather whatever its
token count, and nearly every word is a single token of this vocabulary.

The model's identity includes a hash of its weights, so a retrained model is a new index
channel rather than vectors silently mixed with the old ones.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codecompass.common.config import CHECKOUT_ROOT
from codecompass.contracts.embedding.model import InputType, ModelInfo
from codecompass.embedding.base import ProviderNotReady, ProviderStartError, normalize_rows
from codecompass.embedding.text import TEXT_PREP_VERSION, fit_window, split_sections

if TYPE_CHECKING:
    # safetensors and tokenizers load in warmup, not when the provider module is imported.
    from tokenizers import Tokenizer

MODEL_ID = "code-static"
# The committed artifact of `make code-static` (models/code_static/train.py).
DEFAULT_MODEL_DIR = CHECKOUT_ROOT / "models" / "code_static" / "model"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
# Enough of the weights' sha256 to tell two trainings apart.
_HASH_CHARS = 12
# Distinct words remembered with their token ids: a large workspace has ~100k.
_MAX_CACHED_WORDS = 500_000


def prepare(text: str, window: int) -> list[str]:
    """The words of `text` the model sees: identifiers split, header first, at most `window` words."""
    sections = split_sections(text).capped(window)
    words = sections.words
    return [words[index] for index in fit_window(sections, [1] * len(words), window)]


def weights_hash(model_dir: Path) -> str:
    digest = hashlib.sha256()
    with open(model_dir / WEIGHTS_FILE, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:_HASH_CHARS]


def _read_model(model_dir: Path) -> tuple[np.ndarray, Tokenizer]:
    """A model2vec folder's token table, as float32 rows with its optional token mapping and
    weights folded in (a text's vector is then a plain gather and sum), and its tokenizer.

    The two files are read directly, as model2vec's own loader does: that loader imports
    huggingface_hub for model cards and downloads, half a second of CPU on every service start,
    for nothing this provider uses."""
    from safetensors import safe_open
    from tokenizers import Tokenizer

    with safe_open(str(model_dir / WEIGHTS_FILE), framework="numpy") as tensors:
        names = set(tensors.keys())
        table = np.asarray(tensors.get_tensor("embeddings"), dtype=np.float32)
        mapping = tensors.get_tensor("mapping") if "mapping" in names else None
        weights = tensors.get_tensor("weights") if "weights" in names else None
    if mapping is not None:
        table = table[mapping]
    if weights is not None:
        table = table * np.asarray(weights, dtype=np.float32)[:, None]
    tokenizer = Tokenizer.from_file(str(model_dir / TOKENIZER_FILE))
    if mapping is None and table.shape[0] != tokenizer.get_vocab_size():
        raise ValueError(f"{table.shape[0]} vectors for {tokenizer.get_vocab_size()} tokens")
    return table, tokenizer


class StaticProvider:
    """Embeds with a model2vec StaticModel's tokenizer and vectors, one memoised word at a time.

    model2vec's own `encode` runs the whole tokenizer pipeline over every text; ours are already
    words (the same for the tokenizer, which splits at spaces: a text's ids are its words' ids
    in order), and code repeats its words, so each distinct word is tokenized once and a text
    costs dictionary lookups and one gather. The result is model2vec's mean, then normalised.
    """

    def __init__(self, *, model_dir: Path | None = None, max_tokens: int = 256) -> None:
        self._model_dir = Path(model_dir) if model_dir is not None else DEFAULT_MODEL_DIR
        self._window = max_tokens
        self._ready = threading.Event()
        self._table: np.ndarray | None = None
        self._tokenizer: Tokenizer | None = None
        self._word_ids: dict[str, tuple[int, ...]] = {}
        self._unknown: int | None = None
        self._empty_ids: tuple[int, ...] = ()
        self._version = ""

    def info(self) -> ModelInfo:
        if not self._ready.is_set():
            # The version is the loaded weights' hash; guessing it would mislabel vectors.
            raise ProviderNotReady("code-static: the model is still loading")
        assert self._table is not None, "warmup sets the table before it sets _ready"
        return ModelInfo(
            provider=MODEL_ID,
            model_id=MODEL_ID,
            model_version=self._version,
            dimensions=int(self._table.shape[1]),
            max_input_tokens=self._window,
        )

    def warmup(self) -> None:
        if not (self._model_dir / WEIGHTS_FILE).is_file():
            raise ProviderStartError(
                f"code-static: no model at {self._model_dir} (expected {WEIGHTS_FILE}); "
                "run `make code-static` or set CODECOMPASS_EMBEDDING_MODEL to a model2vec folder"
            )
        try:
            table, tokenizer = _read_model(self._model_dir)
        except ImportError as exc:
            raise ProviderStartError(
                f"code-static: a required package is missing ({exc.name}); run `make setup`") from None
        except Exception as exc:  # safetensors and tokenizers raise their own untyped errors for a bad file
            raise ProviderStartError(f"code-static: cannot load the model in {self._model_dir}: {exc}") from exc
        tokenizer.no_truncation()
        tokenizer.no_padding()
        # model2vec drops the unknown token from every text; a text left with no ids (empty,
        # punctuation only, all unknown) would be a zero vector, whose cosine distance is NaN,
        # so it gets the unknown token's vector instead: a defined "nothing in particular".
        unknown = getattr(tokenizer.model, "unk_token", None)
        self._unknown = tokenizer.token_to_id(unknown) if unknown is not None else None
        self._empty_ids = (self._unknown if self._unknown is not None else 0,)
        self._tokenizer = tokenizer
        self._table = table
        self._word_ids = {}
        self._version = f"m2v-{weights_hash(self._model_dir)}+{TEXT_PREP_VERSION}+win{self._window}w"
        self._ready.set()
        self.embed(["warm up the model"], "query")

    def token_ids(self, text: str) -> list[int]:
        """The model's token ids for `text`, as `embed` sees them (also what training feeds the model)."""
        if not self._ready.is_set():
            raise ProviderNotReady("code-static: the model is still loading")
        return self._ids(prepare(text, self._window))

    def _ids(self, words: list[str]) -> list[int]:
        cache = self._word_ids
        new = [word for word in dict.fromkeys(words) if word not in cache]
        if new:
            if len(cache) > _MAX_CACHED_WORDS:
                # A workspace's words repeat; a cache this full is mostly one-off strings.
                cache.clear()
            tokenizer = self._tokenizer
            assert tokenizer is not None, "warmup sets the tokenizer before it sets _ready, which callers check"
            for word, encoding in zip(new, tokenizer.encode_batch(new, add_special_tokens=False), strict=True):
                cache[word] = tuple(token for token in encoding.ids if token != self._unknown)
        ids = [token for word in words for token in cache[word]]
        return ids or list(self._empty_ids)

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        """Queries and documents share one preparation: the model has no instruction prefixes."""
        if not self._ready.is_set():
            raise ProviderNotReady("code-static: the model is still loading")
        table = self._table
        assert table is not None, "warmup sets the table before it sets _ready"
        if not texts:
            return np.zeros((0, table.shape[1]), dtype=np.float32)
        # One small gather per text: a gather of the whole batch at once would copy
        # (total tokens x dimensions) floats through memory and is ten times slower.
        sums = np.stack([table[self.token_ids(text)].sum(axis=0) for text in texts])
        return normalize_rows(sums)
