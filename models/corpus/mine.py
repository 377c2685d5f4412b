"""Mine the training pairs of the corpus's repositories, each pair by a rule (models/corpus/mine_*.py).

Rules: commit (commit subject -> the symbols it touched), jsdoc (JSDoc first sentence -> the
symbol, that JSDoc blanked), comment (the same for a plain `//` or `/* */` comment on a
declaration), doc (a README or docs section's first sentence -> the one symbol its heading
names), test (test title -> the non-test symbols its body calls), header (file header
comment -> the file, blanked), error (thrown message -> the thrower). Each
repository is read from a checkout of its pinned commit: the `make corpus` checkout
models/.work/corpus/<owner>+<name>/ when there is one, else one written here from its git mirror
under models/.work/checkouts/; its history comes from the mirror ($BENCH_MIRRORS or --mirrors).

Output: models/.work/pairs/<owner>+<name>.jsonl per repository, then every selected repository's
file merged into models/corpus/pairs/train.jsonl.gz (committed: queries, names, line ranges and
offsets only, no code). A pair: id, rule, repo, commit, query, targets [{path, qualified_name,
start_line, end_line}], blank [{path, spans: [[start, end], ...]}] (code-point offsets to blank in
the pinned file before it is a document), source (the rule's provenance).

Run: .venv/bin/python -m models.corpus.mine [--repos owner/name[@commit] ...] [--cap 400]
     [--cap-per-symbol 0.1] [--window-days N] [--max-commits 3000] [--jobs 2] [--reuse]
     (no --repos: every repository of models/corpus/manifest.json)
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from codecompass_dev.corpus.assemble import QUALITY_REPOS
from codecompass_dev.corpus.mirrors import MIRRORS_ENV, MirrorError, checkout, find_mirror, folder_name, git
from codecompass_dev.corpus.policy import off_limits
from codecompass_dev.queries.symbols import EXTRACTOR, extract
from models.corpus import mine_comments, mine_commits, mine_docs, mine_errors, mine_headers, mine_jsdoc, mine_tests
from models.corpus.pairs import CAP_PER_SYMBOL, DEFAULT_CAP, Repo, repo_cap, repository_files, scan

HERE = Path(__file__).resolve().parent
MODELS_DIR = HERE.parent
WORK_DIR = MODELS_DIR / ".work"
CORPUS_CHECKOUTS = WORK_DIR / "corpus"
OWN_CHECKOUTS = WORK_DIR / "checkouts"
PAIRS_DIR = WORK_DIR / "pairs"
MANIFEST_PATH = MODELS_DIR / "corpus" / "manifest.json"
MERGED_PATH = MODELS_DIR / "corpus" / "pairs" / "train.jsonl.gz"
RULES = ("commit", "jsdoc", "comment", "doc", "test", "header", "error")
QUALITY_GITHUB = frozenset(repo.github.lower() for repo in QUALITY_REPOS)


class MineError(Exception):
    """A repository cannot be mined (off-limits, no mirror, no checkout); the message says which."""


def refuse_excluded(github: str) -> None:
    if off_limits(github):
        raise MineError(f"{github} is off-limits (codecompass_dev/corpus/policy.py)")
    if github.lower() in QUALITY_GITHUB:
        raise MineError(f"{github} is a quality benchmark repository (dev/test), never training data")


def prepare(github: str, commit: str | None) -> Repo:
    """The repository at its pinned commit: the corpus checkout, or one written from the mirror."""
    refuse_excluded(github)
    mirror = find_mirror(github)
    if commit is None:
        if mirror is None:
            raise MineError(f"{github}: no pinned commit given and no mirror to read one from")
        commit = git(mirror, "rev-parse", "HEAD").strip()
    built = CORPUS_CHECKOUTS / folder_name(github)
    if built.is_dir():
        return Repo(github, commit, built, mirror)
    if mirror is None:
        raise MineError(f"{github}: no checkout in {CORPUS_CHECKOUTS} and no mirror (set {MIRRORS_ENV} or --mirrors)")
    root = OWN_CHECKOUTS / folder_name(github)
    stamp = root / ".mined-commit"
    if not (stamp.is_file() and stamp.read_text().strip() == commit):
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        # A partial snapshot may lack its largest blobs: those files are simply not mined.
        checkout(mirror, commit, root, lambda _path: True)
        stamp.write_text(commit + "\n")
    return Repo(github, commit, root, mirror)


def mine_repo(
    repo: Repo,
    rules: tuple[str, ...],
    cap_floor: int,
    max_commits: int,
    *,
    cap_per_symbol: float = CAP_PER_SYMBOL,
    window_days: int | None = mine_commits.DEFAULT_WINDOW_DAYS,
) -> tuple[list[dict], Counter]:
    stats: Counter = Counter()
    sources, tests = repository_files(repo.root)
    stats["source_files"], stats["test_files"] = len(sources), len(tests)
    records = extract(repo.root, sources) if sources else []
    stats["symbols"] = sum(len(record["symbols"]) for record in records)
    cap = stats["cap"] = repo_cap(stats["symbols"], cap_floor, cap_per_symbol)
    texts = {r["path"]: (repo.root / r["path"]).read_text(encoding="utf-8", errors="replace") for r in records}
    texts = {path: text.removeprefix("\ufeff") for path, text in texts.items()}
    scanned = scan(repo.root, sources, tests) if {"test", "header", "jsdoc", "doc"} & set(rules) and sources else []
    seed = repo.github
    by_rule = {
        "commit": lambda: mine_commits.mine(repo, cap, stats, window_days, max_commits),
        "jsdoc": lambda: mine_jsdoc.mine(records, texts, scanned, cap, f"{seed}:jsdoc", stats),
        "comment": lambda: mine_comments.mine(records, texts, cap, f"{seed}:comment", stats),
        "doc": lambda: mine_docs.mine(repo.root, records, scanned, cap, f"{seed}:doc", stats),
        "test": lambda: mine_tests.mine(scanned, cap, f"{seed}:test", stats),
        "header": lambda: mine_headers.mine(scanned, records, cap, f"{seed}:header", stats),
        "error": lambda: mine_errors.mine(records, cap, f"{seed}:error", stats),
    }
    rows = []
    for rule in rules:
        pairs = by_rule[rule]()
        stats[f"pairs_{rule}"] = len(pairs)
        rows.extend(pair.record(repo, n) for n, pair in enumerate(pairs, start=1))
    return rows, stats


def manifest_repos() -> list[tuple[str, str | None]]:
    if not MANIFEST_PATH.is_file():
        raise MineError(f"{MANIFEST_PATH} does not exist yet: name repositories with --repos owner/name[@commit]")
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    return [(entry["github"], entry["commit"]) for entry in manifest["repositories"] if entry.get("split") == "train"]


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def merge(paths: list[Path], out: Path) -> int:
    """Per-repository files into one gzip."""
    return write_gzip((path.read_bytes() for path in paths), out)


def write_gzip(chunks: Iterable[bytes], out: Path) -> int:
    """Lines into a gzip, byte-identical for identical inputs (no timestamp); the line count."""
    out.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as fh:
        for data in chunks:
            count += data.count(b"\n")
            fh.write(data)
    return count


def repos_to_mine(args: argparse.Namespace, prog: str) -> list[tuple[str, str | None]] | None:
    """The repositories a miner's command line names (`repos`, else the manifest's), its `--mirrors`
    folder put where the checkouts look for it; None, after one line on stderr, when a name is bad."""
    if args.mirrors:
        os.environ[MIRRORS_ENV] = str(args.mirrors)
    try:
        return [parse_repo(spec) for spec in args.repos] if args.repos else manifest_repos()
    except MineError as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return None


def parse_repo(spec: str) -> tuple[str, str | None]:
    github, _, commit = spec.partition("@")
    if github.count("/") != 1:
        raise MineError(f"{spec!r} is not owner/name[@commit]")
    return github, commit or None


def miner_version() -> str:
    """A hash of every file that decides a pair: the miners and the extractors they run."""
    files = sorted(HERE.glob("mine*.py")) + [HERE / "pairs.py", HERE / "extract_tests.js", EXTRACTOR]
    # The shared rules the miners run, beside the extractor in codecompass_dev/queries/.
    rules = ("symbols.py", "symbol_queries.py", "commits.py", "text.py", "markdown.py")
    files += [EXTRACTOR.parent / name for name in rules]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def stamp_of(github: str, commit: str, args: argparse.Namespace, version: str) -> dict:
    settings = ("rules", "cap", "cap_per_symbol", "max_commits", "window_days")
    # Pairs mined from a mirror's checkout are mined again once `make corpus` has written the
    # deduplicated checkout: its removed files (copies of dev/test code) must not be targets.
    checkout = "corpus" if (CORPUS_CHECKOUTS / folder_name(github)).is_dir() else "mirror"
    return {"commit": commit, "miner": version, "checkout": checkout, **{key: getattr(args, key) for key in settings}}


def mine_one(github: str, commit: str | None, args: argparse.Namespace, version: str) -> tuple[Path | None, dict]:
    """One repository mined and written, or the one line that says why not."""
    started = time.monotonic()
    path = PAIRS_DIR / f"{github.replace('/', '+')}.jsonl"
    stamp_path = path.with_suffix(".stamp.json")
    # --reuse: a repository mined at this commit by these miners with these settings is not mined again.
    if args.reuse and commit and stamp_path.is_file() and path.is_file():
        stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
        if stamp.get("settings") == stamp_of(github, commit, args, version):
            return path, stamp["report"]
    try:
        repo = prepare(github, commit)
        rows, stats = mine_repo(
            repo,
            tuple(args.rules),
            args.cap,
            args.max_commits,
            cap_per_symbol=args.cap_per_symbol,
            window_days=args.window_days,
        )
    except (MineError, MirrorError) as err:
        return None, {"repo": github, "error": str(err)}
    except subprocess.CalledProcessError as err:
        tail = (err.stderr or "").strip().splitlines()[-1:] or ["no message"]
        return None, {"repo": github, "error": f"{Path(err.cmd[-1]).name} failed: {tail[0]}"}
    except subprocess.TimeoutExpired as err:
        return None, {"repo": github, "error": f"timed out after {err.timeout:.0f} s"}
    write_rows(path, rows)
    seconds = round(time.monotonic() - started, 1)
    report = {"repo": github, "commit": repo.commit, "pairs": len(rows), "seconds": seconds, **stats}
    stamp = {"settings": stamp_of(github, repo.commit, args, version), "report": report}
    stamp_path.write_text(json.dumps(stamp, sort_keys=True) + "\n", encoding="utf-8")
    return path, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", nargs="*", metavar="OWNER/NAME[@COMMIT]", help="default: the manifest's")
    parser.add_argument("--rules", nargs="*", choices=RULES, default=list(RULES))
    parser.add_argument("--cap", type=int, default=DEFAULT_CAP, help="per-rule cap of the smallest repositories")
    parser.add_argument(
        "--cap-per-symbol", type=float, default=CAP_PER_SYMBOL, help="per-rule cap per named non-test symbol"
    )
    parser.add_argument("--max-commits", type=int, default=mine_commits.DEFAULT_MAX_COMMITS)
    parser.add_argument(
        "--window-days", type=int, default=mine_commits.DEFAULT_WINDOW_DAYS, help="commit window (default: all)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="repositories mined at once")
    parser.add_argument(
        "--reuse", action="store_true", help="keep a repository's pairs mined at the same commit, miners and settings"
    )
    parser.add_argument("--mirrors", type=Path, help=f"folder of git mirrors (default ${MIRRORS_ENV})")
    parser.add_argument("--out", type=Path, default=MERGED_PATH)
    args = parser.parse_args(argv)
    wanted = repos_to_mine(args, "mine")
    if wanted is None:
        return 2
    written: dict[str, Path] = {}
    failed, totals = 0, Counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        version = miner_version()
        futures = [pool.submit(mine_one, github, commit, args, version) for github, commit in wanted]
        for future in as_completed(futures):
            path, report = future.result()
            if path is None:
                print(f"{report['repo']}: skipped: {report['error']}", file=sys.stderr, flush=True)
                failed += 1
                continue
            written[report["repo"]] = path
            totals.update({k: v for k, v in report.items() if k.startswith("pairs_")})
            print(json.dumps(report), flush=True)
    # Merged in the order asked for, whichever finished first.
    count = merge([written[github] for github, _ in wanted if github in written], args.out)
    print(f"{count} pairs from {len(written)} repositories -> {args.out} ({dict(totals)}); {failed} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
