"""Training examples of `code-small`: (mined query, the answer's chunk, a hard negative chunk).

For each train pair of a repository that is not held out (vocabulary.held_out: those validate
the model, evaluate.py), the positive is the embedding text of the chunk that answers it,
exactly as the index builds it: the real analysis service chunks a copy of the repository with
the pairs' blanks applied (evaluate.py's `blanked_workspace` and `answer_of`, so training and
validation see documents made the same way). All of a repository's blanks are applied to one
copy, as in validation: chunking one copy per pair would cost a program per pair, and a
blanked JSDoc only ever removes text the query was mined from.

The hard negative, by a fixed rule: among the chunks of the repository's answer files (the
validation's candidate set, so the model learns the distinctions it is measured on), the one
with the highest BM25 score for the query that answers no target of the pair and is not the
positive's text; if no chunk shares a word with the query, a seeded draw from the same pool.
Same-repository, same-vocabulary chunks are what a good model must rank below the answer.

The CPU config caps the pairs per repository (a seeded sample) so that no large repository
dominates and chunking stays within the session; the full config takes every pair.
Each repository's examples are cached under models/.work/code_small/examples/ by its pairs'
digest, so a rerun chunks nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from codecompass.embedding.text import to_words
from codecompass_dev.corpus.mirrors import folder_name
from models.code_static.evaluate import CHECKOUTS, answer_of, blanked_workspace, checkout_of, read_pairs
from models.code_static.vocabulary import check_source, held_out

log = logging.getLogger("models.code_small.examples")

MODELS_DIR = Path(__file__).resolve().parent.parent
PAIRS = MODELS_DIR / "corpus" / "pairs" / "train.jsonl.gz"
WORK_DIR = MODELS_DIR / ".work" / "code_small"

# Paths per ChunkFiles call: large repositories would otherwise need one very long call.
CHUNK_CALL_PATHS = 64
# BM25's usual constants.
_K1, _B = 1.2, 0.75


def train_pairs(pairs_path: Path, per_repo: int, seed: int) -> dict[str, list[dict]]:
    """Pairs of the non-held-out repositories by repository; at most `per_repo` each (0: all), seeded."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for pair in read_pairs(pairs_path):
        if not held_out(pair["repo"]) and pair["targets"]:
            by_repo[pair["repo"]].append(pair)
    if per_repo:
        for github, pairs in by_repo.items():
            if len(pairs) > per_repo:
                by_repo[github] = random.Random(f"{seed}:{github}").sample(pairs, per_repo)
    return dict(sorted(by_repo.items()))


class BM25:
    """Okapi BM25 over the index's words (identifiers split), for choosing hard negatives."""

    def __init__(self, documents: list[str]) -> None:
        self._docs = [Counter(to_words(text)) for text in documents]
        self._lengths = [sum(doc.values()) for doc in self._docs]
        self._mean = sum(self._lengths) / max(1, len(self._docs))
        frequency = Counter(word for doc in self._docs for word in doc)
        n = len(self._docs)
        self._idf = {word: math.log(1 + (n - df + 0.5) / (df + 0.5)) for word, df in frequency.items()}

    def scores(self, query: str) -> list[float]:
        words = [w for w in set(to_words(query)) if w in self._idf]
        out = []
        for doc, length in zip(self._docs, self._lengths, strict=True):
            norm = _K1 * (1 - _B + _B * length / max(self._mean, 1e-9))
            out.append(sum(self._idf[w] * doc[w] * (_K1 + 1) / (doc[w] + norm) for w in words if w in doc))
        return out


def hard_negative(query: str, answers: set[int], texts: list[str], bm25: BM25, rng: random.Random) -> int | None:
    """The stated rule: the best BM25 non-answer chunk with a text unlike the answers', else a seeded draw."""
    forbidden = {texts[i] for i in answers}
    pool = [i for i in range(len(texts)) if i not in answers and texts[i] not in forbidden]
    if not pool:
        return None
    scores = bm25.scores(query)
    best = max(pool, key=lambda i: (scores[i], -i))
    return best if scores[best] > 0 else rng.choice(pool)


def repository_examples(client, checkout: Path, pairs: list[dict], scratch: Path, seed: int) -> list[dict]:
    """The examples of one repository's pairs (`client`: an AnalysisClient)."""
    check_source(checkout)
    github = pairs[0]["repo"]
    workspace = blanked_workspace(checkout, pairs, scratch / checkout.name)
    paths = sorted({t["path"] for pair in pairs for t in pair["targets"] if (workspace / t["path"]).is_file()})
    chunks = []
    for start in range(0, len(paths), CHUNK_CALL_PATHS):
        for chunked in client.chunk_files(str(workspace), paths[start:start + CHUNK_CALL_PATHS]):
            chunks.extend(chunk for chunk in chunked.chunks if chunk.embedding_text)
    texts = [chunk.embedding_text for chunk in chunks]
    bm25 = BM25(texts)
    rng = random.Random(f"{seed}:{github}:negatives")
    examples = []
    for pair in pairs:
        answers = {answer_of(target, chunks) for target in pair["targets"]} - {None}
        if not answers:
            continue
        negative = hard_negative(pair["query"], answers, texts, bm25, rng)
        if negative is None:
            continue
        # The first target's chunk is the positive (most pairs have one target; the others
        # are excluded from the negatives all the same).
        positive = answer_of(pair["targets"][0], chunks)
        positive = positive if positive is not None else min(answers)
        examples.append({"id": pair["id"], "repo": github, "rule": pair["rule"], "query": pair["query"],
                         "positive": texts[positive], "negative": texts[negative]})
    return examples


def build(pairs_path: Path, cache_dir: Path, per_repo: int, seed: int) -> tuple[list[dict], dict]:
    """Every example of the selected pairs (cached per repository) and counts for the log."""
    from codecompass.clients.analysis import AnalysisClient
    from codecompass_dev.evaluation.services import start_analysis

    by_repo = train_pairs(pairs_path, per_repo, seed)
    cache_dir.mkdir(parents=True, exist_ok=True)
    examples: list[dict] = []
    analysis = client = None
    try:
        with tempfile.TemporaryDirectory(prefix="code-small-examples-") as scratch:
            for number, (github, pairs) in enumerate(by_repo.items(), 1):
                digest = hashlib.sha256(json.dumps([p["id"] for p in pairs]).encode()).hexdigest()[:12]
                cache = cache_dir / f"{folder_name(github)}-{digest}-s{seed}.jsonl"
                if cache.is_file():
                    rows = [json.loads(line) for line in cache.read_text(encoding="utf-8").splitlines()]
                else:
                    if client is None:
                        analysis = start_analysis()
                        client = AnalysisClient(analysis.address, timeout_s=600)
                    checkout = checkout_of(github, CHECKOUTS)
                    if checkout is None:
                        log.warning("%s: no checkout; skipped", github)
                        continue
                    rows = repository_examples(client, checkout, pairs, Path(scratch), seed)
                    cache.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
                log.info("examples %d/%d %s: %d of %d pairs", number, len(by_repo), github, len(rows), len(pairs))
                examples.extend(rows)
    finally:
        if client is not None:
            client.close()
            analysis.stop()
    counts = {"repositories": len(by_repo), "pairs": sum(len(p) for p in by_repo.values()),
              "examples": len(examples), "by_rule": dict(sorted(Counter(e["rule"] for e in examples).items()))}
    return examples, counts


if __name__ == "__main__":
    import argparse

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m models.code_small.examples", description=__doc__.split("\n")[0])
    parser.add_argument("--per-repo", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    _, counts = build(PAIRS, WORK_DIR / "examples", args.per_repo, args.seed)
    print(json.dumps(counts, indent=2))
