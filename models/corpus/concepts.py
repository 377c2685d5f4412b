"""Concept pairs: the benchmark's `concept` rules over the corpus's train repositories, for training.

A concept question ("how the client retries a failed request") is answered by a file or a few
files; the ranker has to learn when a file (its card, the `<module top level>` chunk) answers.
The four rules are the benchmark's (codecompass_dev/queries/concepts.py), run through its functions on each
repository of models/corpus/manifest.json, read from its `make corpus` checkout (files removed as
copies of other code are no answer) and its git mirror (the tree's paths, the history):

docs-file, docs-api  a Markdown section naming code files by path, or API the code defines
package              a code package's package.json description -> its entry file; a README
                     inside a code folder -> that folder's code files
commit-body          a commit body's first explanatory sentence -> the 2..5 code files it changed
                     (and the symbols it changed, when 1..6), among the newest --max-commits

Where the corpus differs from the benchmark:
- code is the library's code of a whole clone (is_library_code: the other corpus rules' code,
  models/corpus/mine_commits.py is_code, less examples, docs sites, scripts, built code and tool
  configuration), not an npm package's folders; the library's "code paths" (where package
  descriptions, folder READMEs and commit history are read) are, per code file, its innermost
  package folder, else its top-level folder (or itself, at the root): a monorepo's packages each
  give their description, as the benchmark's code packages do;
- the library's own name (a sentence may open with it; no API name) is the repository's name;
- a pair whose sentence names a target (its leaks_name) is dropped, as every corpus rule drops
  one (models/corpus/pairs.py); the benchmark keeps and marks them;
- duplicates and caps are the corpus's (pairs.finalize: per repository, one text with two answers
  dropped, at most PER_TARGET_CAP per answer, at most repo_cap pairs, a seeded sample).

A pair is a training pair of models/corpus (pairs.Pair) with rule `concept`, `files` (whole-file
targets, start_line and end_line 0, as the benchmark's `files`), symbol targets where the rule
names symbols (else none), nothing blanked (docs, manifests and commit bodies are not indexed),
and source.kind = the concept rule.

Why a file of its own, models/corpus/pairs/concept.jsonl.gz, rather than a rule of mine.py:
mine.py's cache is one file per repository holding every rule it mined, so mining one rule alone
would overwrite the others' pairs; a concept pair needs the mirror's whole tree and history and
has file targets the symbol rules do not; and the other rules' pairs (train.jsonl.gz) stay byte
for byte as they are. models/ranker/workspaces.py reads both files (and dump.py the queries it
writes from them).

The committed file (every train repository, the newest 3,000 commits each as the benchmark reads
them, 22 minutes on 2 shared cores): 3,003 pairs from 147 of the 160 repositories; by rule
(pairs / repositories with any / mined before leaks, duplicates and caps / leaking, dropped):
docs-api 1,326 / 109 / 3,011 / 1,493, commit-body 1,221 / 101 / 1,827 / 591, package 260 / 113 /
309 / 14, docs-file 196 / 44 / 249 / 45; 1,359 pairs have one file, 1,644 two to five; 2,136 have
symbol targets too. The run prints every repository's counts and a summary.

Run: .venv/bin/python -m models.corpus.concepts [--repos owner/name ...] [--max-commits 3000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from codecompass.policy.ranking import example_path, vendored_path
from codecompass_dev.corpus.assemble import QualityRepo
from codecompass_dev.corpus.mirrors import MIRRORS_ENV, MirrorError, git
from codecompass_dev.evaluation.metrics import FileTarget, Target
from codecompass_dev.queries import concepts as concept_rules
from codecompass_dev.queries.commits import DEFAULT_MAX_COMMITS
from codecompass_dev.queries.symbols import extract
from models.corpus import mine_commits
from models.corpus.mine import MineError, prepare, repos_to_mine, write_gzip
from models.corpus.pairs import CAP_PER_SYMBOL, DEFAULT_CAP, Pair, Repo, finalize, repo_cap, repository_files

HERE = Path(__file__).resolve().parent
OUT_PATH = HERE / "pairs" / "concept.jsonl.gz"
RULE = "concept"


# Tool configuration beside the code (`rollup.config.js`, `karma.conf.js`, `.eslintrc.js`, a gulpfile).
_TOOL_FILE = re.compile(
    r"(?:^|/)(?:\.[^/]*|[^/]*\.conf(?:ig)?\.[cm]?[jt]sx?|(?:gulp|grunt)file\.[cm]?[jt]s)$", re.IGNORECASE
)


def is_library_code(path: str) -> bool:
    """The library's own code, what a concept pair may answer with: the corpus's code (non-test
    sources), but not examples, docs sites, scripts or benchmarks, built or vendored code (the
    ranker's own rules, policy/ranking.py, as dump.py's generated queries use them), nor tool
    configuration. The benchmark's code paths (an npm package's `src`, `lib`) leave all of these
    out; a whole clone has them, and a docs page that imports its site's components
    (`docs/components/alert.tsx`) does not name the code it explains."""
    if not mine_commits.is_code(path) or _TOOL_FILE.search(path):
        return False
    return not (example_path(path) or vendored_path(path))


class CorpusPinned(concept_rules.Pinned):
    """A train repository at its pinned commit, code judged by `is_library_code`."""

    def is_code(self, path: str) -> bool:
        return is_library_code(path)


def code_paths(code: Iterable[str], packages: Iterable[str]) -> tuple[str, ...]:
    """Per code file, its innermost package folder, else its top-level folder (a root file: itself)."""
    folders = [p for p in packages if p]
    out = set()
    for path in code:
        holder = max((p for p in folders if concept_rules.contains(p, path)), key=len, default=None)
        out.add(holder if holder is not None else path.split("/", 1)[0])
    return tuple(sorted(out))


def pinned_corpus(repo: Repo) -> CorpusPinned:
    if repo.mirror is None:
        raise MineError(f"{repo.github}: no git mirror (set {MIRRORS_ENV})")
    # Paths are the pinned tree's, so a docs link resolves as it was written; only files the
    # checkout holds (the deduplicated corpus) are code with symbols, and so answers.
    paths = sorted(git(repo.mirror, "ls-tree", "-r", "--name-only", "-z", repo.commit).strip("\0").split("\0"))
    sources = [path for path in repository_files(repo.root)[0] if is_library_code(path)]
    symbols = {record["path"]: record["symbols"] for record in extract(repo.root, sources)} if sources else {}
    packages = concept_rules.package_folders(paths)
    library = QualityRepo(
        name=repo.github.split("/")[1],
        github=repo.github,
        release_tag="",
        commit=repo.commit,
        split="train",
        code_paths=code_paths(symbols, packages),
    )
    return CorpusPinned(library, repo.root, paths, symbols, packages)


def to_pair(candidate: concept_rules.Candidate) -> Pair:
    targets = [Target(t["path"], t["qualified_name"], t["start_line"], t["end_line"]) for t in candidate.targets]
    files = [FileTarget(path) for path in candidate.files]
    return Pair(RULE, candidate.query, targets, [], candidate.source, files)


def mine_repo(repo: Repo, max_commits: int, cap_floor: int, stats: Counter) -> list[Pair]:
    pinned = pinned_corpus(repo)
    stats["symbols"] = sum(len(symbols) for symbols in pinned.symbols.values())
    if not pinned.symbols:
        return []  # no code, no answer
    candidates = concept_rules.docs_candidates(pinned, stats) + concept_rules.package_candidates(pinned, stats)
    candidates += concept_rules.commit_candidates(pinned, repo.mirror, max_commits, stats)
    pairs = []
    for candidate in candidates:
        kind = candidate.rule
        stats[f"mined_{kind}"] += 1
        if not all(path in pinned.symbols for path in candidate.files):
            stats[f"{kind}_file_not_in_checkout"] += 1  # a copy `make corpus` removed
        elif candidate.leaks_name:
            stats[f"{kind}_leaks_name"] += 1
        else:
            pairs.append(to_pair(candidate))
    kept, dropped = finalize(pairs, repo_cap(stats["symbols"], cap_floor, CAP_PER_SYMBOL), f"{repo.github}:{RULE}")
    stats.update({f"{RULE}_{key}": value for key, value in dropped.items()})
    stats.update(f"pairs_{pair.source['kind']}" for pair in kept)
    return kept


def mine_one(github: str, commit: str | None, max_commits: int, cap_floor: int) -> tuple[list[dict], dict]:
    """One repository's pair records and its report (or the one line that says why there are none)."""
    started = time.monotonic()
    stats: Counter = Counter()
    try:
        repo = prepare(github, commit)
        pairs = mine_repo(repo, max_commits, cap_floor, stats)
    except (MineError, MirrorError) as err:
        return [], {"repo": github, "error": str(err)}
    except subprocess.CalledProcessError as err:
        tail = (err.stderr or "").strip().splitlines()[-1:] or ["no message"]
        return [], {"repo": github, "error": f"{Path(err.cmd[-1]).name} failed: {tail[0]}"}
    except subprocess.TimeoutExpired as err:
        return [], {"repo": github, "error": f"timed out after {err.timeout:.0f} s"}
    rows = [pair.record(repo, n) for n, pair in enumerate(pairs, start=1)]
    report = {"repo": github, "pairs": len(rows), "seconds": round(time.monotonic() - started, 1), **stats}
    return rows, report


def summary(reports: list[dict]) -> dict:
    """Pairs per concept rule, and how many repositories have any (of each rule, of all)."""
    kinds = concept_rules.RULES
    return {
        "pairs": {kind: sum(r.get(f"pairs_{kind}", 0) for r in reports) for kind in kinds},
        "repositories_with_pairs": {kind: sum(1 for r in reports if r.get(f"pairs_{kind}")) for kind in kinds}
        | {"any": sum(1 for r in reports if r.get("pairs"))},
        "mined": {kind: sum(r.get(f"mined_{kind}", 0) for r in reports) for kind in kinds},
        "leaks_name_dropped": {kind: sum(r.get(f"{kind}_leaks_name", 0) for r in reports) for kind in kinds},
        "repositories": len(reports),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", nargs="*", metavar="OWNER/NAME[@COMMIT]", help="default: the manifest's")
    parser.add_argument("--max-commits", type=int, default=DEFAULT_MAX_COMMITS, help="newest commits read, per repo")
    parser.add_argument("--cap", type=int, default=DEFAULT_CAP, help="cap of the smallest repositories")
    parser.add_argument("--jobs", type=int, default=1, help="repositories mined at once")
    parser.add_argument("--mirrors", type=Path, help=f"folder of git mirrors (default ${MIRRORS_ENV})")
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    args = parser.parse_args(argv)
    wanted = repos_to_mine(args, "concepts")
    if wanted is None:
        return 2
    rows: list[dict] = []
    reports: list[dict] = []
    failed = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # In the order asked for, whichever finishes first: the output does not depend on --jobs.
        futures = [pool.submit(mine_one, github, commit, args.max_commits, args.cap) for github, commit in wanted]
        results = (future.result() for future in futures)
        for found, report in results:
            if "error" in report:
                print(f"{report['repo']}: skipped: {report['error']}", file=sys.stderr, flush=True)
                failed += 1
                continue
            print(json.dumps(report), flush=True)
            rows += found
            reports.append(report)
    lines = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)
    count = write_gzip((line.encode("utf-8") for line in lines), args.out)
    print(json.dumps(summary(reports)))
    print(f"{count} concept pairs from {len(reports)} repositories -> {args.out}; {failed} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
