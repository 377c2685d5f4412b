"""Commit subjects -> the symbols the commit touched: the benchmark's `nl` rule, at scale.

The rule is codecompass_dev/queries/commits.py's, word for word (its steps 1-5 run here through
`mine_history`): non-merge commits reachable from the pinned commit, the newest --max-commits;
conventional prefixes and PR references stripped, generic subjects dropped (release, version
bump, merge, revert, docs, chore, typo, lint, dependencies, < 4 words); commits touching more
than six code files dropped; each changed line goes to the innermost named symbol containing
it; 1..3 symbols per commit; targets are those symbols as they stand at the pinned commit
(same path, same qualified name; a commit none of whose symbols survive is dropped).
The corpus differs in what counts as code (every non-test source file of the repository,
models/corpus/pairs.py is_train_file, as a user's clone has it, not an npm package's folders),
in dropping subjects that name a target (the bench tags them), and in its window: the whole
history by default (--window-days restores one). The bench's five-year window keeps its few
queries near the pinned code; training needs the volume, and the pinned-target check already
keeps only answers that exist in the code a user has.
A target longer than MAX_TARGET_LINES is dropped (the commit too, when it had no other).
Nothing is blanked: a commit subject is not in the code. Newest commits are kept first.
"""

from __future__ import annotations

from collections import Counter

from codecompass.common.testcode import is_test_path
from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.queries.commits import DEFAULT_MAX_COMMITS, GOLD_RULE, mine_history
from models.corpus.pairs import Pair, Repo, finalize, is_train_file, leaks_any

RULE = "commit"
# A change deep inside a symbol this long (lodash's runInContext wraps the whole library in
# 14,000 lines) cannot be told from the symbol's chunk, which an embedding sees only the head of.
MAX_TARGET_LINES = 500
# None: the whole history reachable from the pinned commit.
DEFAULT_WINDOW_DAYS: int | None = None


def is_code(rel: str) -> bool:
    return is_train_file(rel) and not is_test_path(rel)


def mine(
    repo: Repo,
    cap: int,
    stats: Counter,
    window_days: int | None = DEFAULT_WINDOW_DAYS,
    max_commits: int = DEFAULT_MAX_COMMITS,
) -> list[Pair]:
    if repo.mirror is None:
        stats["commit_no_history"] += 1
        return []
    history: Counter = Counter()
    found = mine_history(repo.mirror, repo.commit, repo.root, (), is_code, window_days, max_commits, history)
    stats.update({f"commit_{key}": value for key, value in history.items()})
    pairs = []
    for item in found:
        targets = [Target(**t) for t in item.targets]
        large = [t for t in targets if t.end_line - t.start_line + 1 > MAX_TARGET_LINES]
        if large:
            stats["commit_large_target_dropped"] += len(large)
            targets = [t for t in targets if t not in large]
            if not targets:
                continue
        if leaks_any(item.commit.query, [t.qualified_name.split(".")[-1] for t in targets]):
            stats["commit_leaks_name"] += 1
            continue
        source = {
            "commit": item.commit.sha,
            "date": item.commit.date,
            "subject": item.commit.subject,
            "gold_rule": GOLD_RULE,
            "gold_in_commit": item.gold_in_commit,
        }
        pairs.append(Pair(RULE, item.commit.query, targets, [], source))
    # git log lists the newest first: the commits nearest the pinned code are kept.
    kept, dropped = finalize(pairs, cap, repo.github, ordered=True)
    stats.update({f"commit_{key}": value for key, value in dropped.items()})
    return kept
