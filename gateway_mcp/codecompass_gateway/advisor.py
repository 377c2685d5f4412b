"""The semantic profile advisor (seed 004 FR-728): a deterministic recommendation of an embedding
profile tier for a workspace, with reason codes, that never changes the configuration.

Tiers and what they mean here:
- `fast_local`: the local default (`embedding.profile: code-small`, our fine-tuned encoder): offline,
  ~40-80 chunks/s on 2 cores.
- `code_quality`: a larger local model (`e5-small`). Not recommended for now: the quality benchmark
  has no evidence that it ranks code better than the default, and FR-726 makes promotion
  benchmark-gated, so the advisor says so instead of guessing.
- `high_quality`: a code-aware external model (`voyage`, voyage-code-3), only when both privacy
  gates are open and a key is configured.

Inputs: the repository's size bucket (files: < 10k, 10k-50k, > 50k), its language mix (the share
of TypeScript/JavaScript among the files indexed) and the latency budget of a query.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from codecompass.common.config import EmbeddingSettings

FAST_LOCAL, CODE_QUALITY, HIGH_QUALITY = "fast_local", "code_quality", "high_quality"
PROFILE_OF_TIER = {FAST_LOCAL: "code-small", CODE_QUALITY: "e5-small", HIGH_QUALITY: "voyage"}
# A query's end-to-end budget below which embedding the query with a larger model does not fit.
TIGHT_LATENCY_MS = 150.0
# The budget the product is built to (the whole pipeline's p95 target).
DEFAULT_LATENCY_BUDGET_MS = 250.0
_TS_JS = frozenset({".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"})
_OTHER_CODE = frozenset({".py", ".go", ".rs", ".java", ".kt", ".rb", ".php", ".cs", ".cpp", ".cc", ".c", ".h",
                         ".hpp", ".swift", ".scala", ".m", ".dart", ".lua", ".ex", ".exs"})
_SKIP_DIRS = frozenset({".git", "node_modules", "dist", "build", "out", "vendor", ".venv", "target"})
# Enough to judge a mix; a huge tree is sampled in walk order, which is stable for one snapshot.
_MAX_FILES = 50_000
# How long a folder's language mix is reused before it is walked again.
SHARE_TTL_S = 60.0
_shares: dict[Path, tuple[float, float]] = {}
_shares_lock = threading.Lock()


@dataclass(frozen=True)
class Advice:
    tier: str
    profile: str  # the `embedding.profile` value that tier means
    current_profile: str
    reasons: tuple[str, ...]
    size_bucket: str


def ts_js_share(root: Path) -> float:
    """Share of TypeScript/JavaScript among the code files under `root` (1.0 when there are none),
    walked at most once a SHARE_TTL_S per folder: the walk took 4.6 ms of ws-300k's 12 ms
    `index_status`, an agent asks that often, and a language mix moves over weeks, not seconds."""
    now = time.monotonic()
    with _shares_lock:
        known = _shares.get(root)
    if known is not None and now - known[0] < SHARE_TTL_S:
        return known[1]
    share = _walk_share(root)
    with _shares_lock:
        _shares[root] = (now, share)
    return share


def _walk_share(root: Path) -> float:
    ts_js = other = seen = 0
    for _, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            suffix = os.path.splitext(name)[1].lower()
            ts_js += suffix in _TS_JS
            other += suffix in _OTHER_CODE
            seen += 1
            if seen >= _MAX_FILES:
                return ts_js / (ts_js + other) if ts_js + other else 1.0
    return ts_js / (ts_js + other) if ts_js + other else 1.0


def size_bucket(files: int) -> str:
    return "<10k" if files < 10_000 else ("10k-50k" if files <= 50_000 else ">50k")


def advise(files: int, ts_js_share: float, latency_budget_ms: float, embedding: EmbeddingSettings) -> Advice:
    """The same inputs always give the same advice (SC-709)."""
    bucket = size_bucket(files)
    reasons = [f"repo_size_{bucket}"]
    reasons.append("language_mix_ts_js" if ts_js_share >= 0.8 else "language_mix_other")
    external_ok = embedding.external_allowed and bool(embedding.api_key)
    if latency_budget_ms < TIGHT_LATENCY_MS:
        reasons.append("latency_budget_tight")
        tier = FAST_LOCAL
    elif external_ok and ts_js_share >= 0.5:
        reasons.append("external_provider_allowed")
        tier = HIGH_QUALITY
    else:
        reasons.append("external_provider_blocked" if not embedding.external_allowed else "external_key_missing")
        if bucket == ">50k":
            reasons.append("embedding_time_dominates_large_repo")
        reasons.append("no_benchmark_evidence_for_larger_local_model")
        tier = FAST_LOCAL
    return Advice(tier=tier, profile=PROFILE_OF_TIER[tier], current_profile=embedding.profile,
                  reasons=tuple(reasons), size_bucket=bucket)
