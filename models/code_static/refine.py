"""Refinement of the distilled static model on corpus text: tokenlearn's method, on our tokenization.

Distillation gives each token the teacher's vector for that token alone. Tokenlearn (MinishLab,
MIT) then trains the token vectors so that the mean over a text's tokens predicts the teacher's
vector for the whole text: the targets are the teacher's text vectors reduced by PCA to the
student's dimensions, the student is the token table (rows normalised, their norms a learned
per-token weight), the mean of the weighted rows and a linear layer, trained with MSE and
stopped early on a held-out tenth of the texts; the weighted rows are the new model, the linear
layer is dropped.

We follow `tokenlearn.pretrain` step for step rather than install it: tokenlearn requires
model2vec[distill], whose transformers<5.4 cap would downgrade the transformers this project
runs on. Two things differ on purpose: texts are tokenized by `StaticProvider.token_ids`, so the
model trains on exactly the words it is served (identifier parts, header-first window); and the
teacher is an embedding profile itself (code-small since v2), which embeds a text exactly as the index does.

Texts: chunks of the training repositories' TS/JS files, made by the real analysis service, so
they are the index's own embedding texts, and the questions mined from the same repositories.
code-small embeds ~80 chunks a second on two cores (questions, being short, several times
more), so the CPU config uses tens of thousands; the features are cached under models/.work/.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import math
import random
import re
from pathlib import Path

import numpy as np

from models.code_static import vocabulary

log = logging.getLogger("models.code_static.refine")

PAIRS_DIR = Path(__file__).resolve().parent.parent / "corpus" / "pairs"
TEXTS_DIR = Path(__file__).resolve().parent.parent / ".work" / "code_static" / "texts"

# Chunks the analysis service makes of a typical source file (measured on commander.js: ~10).
CHUNKS_PER_FILE = 8
# Texts per teacher call: the provider batches them by length within a call, so a large call
# pads less.
TEACHER_BATCH = 2048
VALIDATION_SHARE = 0.1
BATCH_SIZE = 256
LEARNING_RATE = 1e-3
PATIENCE = 5
# An epoch counts as progress when it lowers the validation MSE by this share. Relative: the
# loss falls by an order of magnitude in training (0.007 -> 0.0008 on code-small's targets), and
# an absolute step of 1e-4 stopped that run at epoch 2 while it was still improving; past 1% an
# epoch, it levels off (0.00077 at epoch 4, 0.00076 at epochs 6-10).
MIN_RELATIVE_GAIN = 0.01
MAX_EPOCHS = 200


def chunker_version() -> str:
    """The analysis service's CHUNKER_VERSION, read from its source (node_ts_service/src/chunker.ts)."""
    chunker = Path(__file__).resolve().parents[2] / "node_ts_service" / "src" / "chunker.ts"
    source = chunker.read_text(encoding="utf-8")
    found = re.search(r"CHUNKER_VERSION = '([^']+)'", source)
    if found is None:
        raise SystemExit("node_ts_service/src/chunker.ts: no CHUNKER_VERSION")
    return found.group(1)


def corpus_chunks(roots: list[Path], count: int, seed: int) -> list[str]:
    """About `count` chunk embedding texts from the TS/JS files of `roots`, sampled (seeded).

    The real analysis service chunks them, so the texts are what the index embeds: preamble
    (path > name, signature, dependencies, referenced symbols), `---`, the collapsed code.
    Files are drawn evenly across repositories so that no large repository dominates.
    """
    from codecompass.clients.analysis import AnalysisClient
    from codecompass_dev.evaluation.services import start_analysis

    # Chunking is the slow half of a run that finds the teacher's vectors cached (about 6 ms a
    # chunk on two cores), so its texts are cached too, by the sources, the count, the seed and the
    # chunker's version (which the service bumps whenever a chunk's text changes).
    key = "\0".join([*(str(root.resolve()) for root in roots), str(count), str(seed), chunker_version()])
    cache = TEXTS_DIR / f"chunks-{hashlib.sha256(key.encode()).hexdigest()[:16]}.json.gz"
    if cache.is_file():
        with gzip.open(cache, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    rng = random.Random(seed)
    files_per_repo = max(1, math.ceil(count / CHUNKS_PER_FILE / max(1, len(roots))))
    texts: list[str] = []
    analysis = start_analysis()
    client = AnalysisClient(analysis.address, timeout_s=120)
    try:
        for root in roots:
            files = [str(path.relative_to(root)) for path in vocabulary.source_files(root)
                     if vocabulary.file_words(path)]
            rng.shuffle(files)
            if not files:
                continue
            for chunked in client.chunk_files(str(root.resolve()), sorted(files[:files_per_repo])):
                texts.extend(chunk.embedding_text for chunk in chunked.chunks if chunk.embedding_text)
    finally:
        client.close()
        analysis.stop()
    rng.shuffle(texts)
    texts = texts[:count]
    cache.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(cache, "wt", encoding="utf-8") as fh:
        json.dump(texts, fh)
    return texts


def corpus_questions(repositories: set[str], count: int, seed: int) -> list[str]:
    """Up to `count` distinct mined questions (models/corpus/pairs) of `repositories`, sampled (seeded).

    Chunks teach the words of code; these teach the words agents ask in (commit subjects, JSDoc
    and doc sentences, test titles, error messages, concept sentences), which no chunk holds.
    """
    if count <= 0:
        return []
    questions: dict[str, None] = {}
    for path in sorted(PAIRS_DIR.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                pair = json.loads(line)
                if pair.get("repo") in repositories and pair.get("query"):
                    questions[pair["query"]] = None
    ordered = list(questions)
    random.Random(seed).shuffle(ordered)
    return ordered[:count]


def cache_path(texts: list[str], cache_dir: Path, teacher) -> Path:
    """Where featurize keeps the teacher's vectors of `texts` (teacher.py fills it from an accelerator)."""
    identity = teacher.info().model_version
    digest = hashlib.sha256("\0".join([identity, *texts]).encode()).hexdigest()[:16]
    return cache_dir / f"teacher-{digest}.npy"


def featurize(texts: list[str], cache_dir: Path, teacher) -> np.ndarray:
    """The teacher's vectors for `texts`, cached by the teacher's identity and the texts."""
    cache = cache_path(texts, cache_dir, teacher)
    if cache.is_file():
        return np.load(cache)
    parts = []
    for start in range(0, len(texts), TEACHER_BATCH):
        parts.append(teacher.embed(texts[start:start + TEACHER_BATCH], "document"))
        log.info("teacher: %d of %d texts", start + len(parts[-1]), len(texts))
    vectors = np.concatenate(parts)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def _pca(targets: np.ndarray, dims: int) -> np.ndarray:
    centred = targets - targets.mean(axis=0)
    _, _, components = np.linalg.svd(centred, full_matrices=False)
    return centred @ components[:dims].T


def refine(table: np.ndarray, pad_id: int, token_ids: list[list[int]], targets: np.ndarray,
           seed: int) -> tuple[np.ndarray, dict]:
    """New token vectors (same shape as `table`) and the training's log (losses, epochs)."""
    import torch
    from torch import nn
    from torch.nn.utils.rnn import pad_sequence

    torch.manual_seed(seed)
    targets = _pca(targets.astype(np.float64), table.shape[1]).astype(np.float32)
    order = np.random.default_rng(seed).permutation(len(token_ids))
    n_val = max(1, int(len(order) * VALIDATION_SHARE))
    val_index, train_index = order[:n_val], order[n_val:]

    vectors = torch.from_numpy(table.astype(np.float32))
    norms = vectors.norm(dim=1).clamp_min(1e-12)
    embeddings = nn.Embedding.from_pretrained(vectors / norms[:, None], freeze=False, padding_idx=pad_id)
    weights = nn.Parameter(norms.clone())
    with torch.no_grad():
        weights[pad_id] = 0
    head = nn.Linear(table.shape[1], targets.shape[1])
    optimizer = torch.optim.AdamW([embeddings.weight, weights, *head.parameters()], lr=LEARNING_RATE)

    def pooled(ids: torch.Tensor) -> torch.Tensor:
        mask = (ids != pad_id).float()
        w = weights[ids] * mask
        return torch.bmm(w[:, None, :], embeddings(ids)).squeeze(1) / (mask.sum(1, keepdim=True) + 1e-16)

    def batch(indices) -> tuple[torch.Tensor, torch.Tensor]:
        ids = pad_sequence([torch.tensor(token_ids[i] or [pad_id]) for i in indices], batch_first=True,
                           padding_value=pad_id)
        return ids, torch.from_numpy(targets[indices])

    def validation_loss() -> float:
        with torch.no_grad():
            losses = [nn.functional.mse_loss(head(pooled(x)), y).item() * len(y)
                      for x, y in (batch(val_index[i:i + BATCH_SIZE]) for i in range(0, n_val, BATCH_SIZE))]
        return sum(losses) / n_val

    best = validation_loss()
    start_loss, best_state, waited, epochs = best, None, 0, 0
    rng = np.random.default_rng(seed + 1)
    for epoch in range(1, MAX_EPOCHS + 1):
        epochs = epoch
        shuffled = rng.permutation(train_index)
        for i in range(0, len(shuffled), BATCH_SIZE):
            x, y = batch(shuffled[i:i + BATCH_SIZE])
            optimizer.zero_grad()
            nn.functional.mse_loss(head(pooled(x)), y).backward()
            optimizer.step()
        loss = validation_loss()
        log.info("refinement epoch %d: validation MSE %.5f", epoch, loss)
        if loss < best * (1 - MIN_RELATIVE_GAIN):
            best, waited = loss, 0
            best_state = (embeddings.weight.detach().clone(), weights.detach().clone())
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    if best_state is None:
        log.info("refinement did not lower the validation loss (%.4f); keeping the distilled vectors", start_loss)
        return table, {"epochs": epochs, "validation_mse_start": start_loss, "validation_mse_best": best,
                       "improved": False}
    rows, row_weights = best_state
    log.info("refined over %d epochs: validation MSE %.4f -> %.4f", epochs, start_loss, best)
    new_table = (rows * row_weights[:, None]).numpy()
    return new_table, {"epochs": epochs, "validation_mse_start": round(start_loss, 5),
                       "validation_mse_best": round(best, 5), "improved": True}
