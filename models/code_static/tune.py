"""Contrastive tuning of the static model on the corpus's mined pairs (question -> the chunk that answers it).

Distillation and refinement (refine.py) teach the token table to reproduce the teacher's vector of
a text. A mean of token vectors cannot reproduce a transformer's vectors closely (refinement
levels off at a validation MSE near 8e-4), and what the index needs is narrower: a question's
vector nearest its answer's. So the last step trains that directly, as code-small itself was
trained (models/code_small): the same examples (models/code_small/examples.py: a mined question,
the embedding text of the chunk that answers it, a hard negative from the same files by BM25), the
same loss (in-batch negatives plus the hard one, cross-entropy over scaled cosines), on the token
table alone: a text's vector is the normalised sum of its tokens' rows, exactly as
`StaticProvider` serves it.

A tenth of the examples (by a seeded draw) is held out to stop the training: the epoch whose
held-out loss is lowest is kept. The held-out repositories (vocabulary.held_out) give no example.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("models.code_static.tune")

BATCH_SIZE = 256
LEARNING_RATE = 1e-3
# Cosines scaled before the softmax: sentence-transformers' MultipleNegativesRankingLoss default,
# which code-small trains with too.
SCALE = 20.0
VALIDATION_SHARE = 0.1
PATIENCE = 2
MAX_EPOCHS = 40


def tune(table: np.ndarray, queries: list[list[int]], positives: list[list[int]], negatives: list[list[int]],
         seed: int) -> tuple[np.ndarray, dict]:
    """A new token table (same shape) and the training's log; the input table when nothing improved."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    weight = nn.Parameter(torch.from_numpy(table.astype(np.float32).copy()))
    # Adam without weight decay: a token that no example holds keeps its refined vector.
    optimizer = torch.optim.Adam([weight], lr=LEARNING_RATE)
    order = np.random.default_rng(seed).permutation(len(queries))
    n_val = max(1, int(len(order) * VALIDATION_SHARE))
    val_index, train_index = order[:n_val], order[n_val:]

    def encode(texts: list[list[int]]) -> torch.Tensor:
        flat = torch.tensor([token for ids in texts for token in ids], dtype=torch.long)
        offsets = torch.tensor(np.cumsum([0, *(len(ids) for ids in texts[:-1])]), dtype=torch.long)
        summed = nn.functional.embedding_bag(flat, weight, offsets, mode="sum")
        return nn.functional.normalize(summed, dim=1)

    def loss_of(indices) -> torch.Tensor:
        asked = encode([queries[i] for i in indices])
        candidates = encode([positives[i] for i in indices] + [negatives[i] for i in indices])
        scores = SCALE * asked @ candidates.T
        return nn.functional.cross_entropy(scores, torch.arange(len(indices)))

    def validation_loss() -> float:
        with torch.no_grad():
            parts = [loss_of(val_index[i:i + BATCH_SIZE]).item() * len(val_index[i:i + BATCH_SIZE])
                     for i in range(0, n_val, BATCH_SIZE)]
        return sum(parts) / n_val

    best = start = validation_loss()
    best_table, waited, epochs = None, 0, 0
    rng = np.random.default_rng(seed + 1)
    for epoch in range(1, MAX_EPOCHS + 1):
        epochs = epoch
        shuffled = rng.permutation(train_index)
        for i in range(0, len(shuffled), BATCH_SIZE):
            optimizer.zero_grad()
            loss_of(shuffled[i:i + BATCH_SIZE]).backward()
            optimizer.step()
        loss = validation_loss()
        log.info("tuning epoch %d: held-out loss %.4f", epoch, loss)
        if loss < best:
            best, waited, best_table = loss, 0, weight.detach().numpy().copy()
        else:
            waited += 1
            if waited >= PATIENCE:
                break
    record = {"examples": len(queries), "held_out": n_val, "epochs": epochs,
              "held_out_loss_start": round(start, 4), "held_out_loss_best": round(best, 4),
              "improved": best_table is not None}
    if best_table is None:
        log.info("tuning did not lower the held-out loss (%.4f); keeping the refined table", start)
        return table, record
    log.info("tuned over %d epochs: held-out loss %.4f -> %.4f", epochs, start, best)
    return best_table, record
