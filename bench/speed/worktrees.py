"""Worktrees of one repository (issue 30 §1): a new worktree's index from the repository's base,
and two agents alternating questions in two worktrees.

Copies `--workspace` into a git repository with a remote (one commit), indexes it through the
real services with every vector (so its base is written), then adds a worktree on a branch that
changes `--diff` files by a written rule (the first N TypeScript files by path each get one new
exported function named after the branch) and times IndexWorkspace of the new worktree with every
vector written: how long until it is searchable at full quality. Then `--questions` rounds of
Sync + Search alternate between the two worktrees, as two agents would: each sync must write
nothing (no re-indexing between them), and a search of the main checkout must never return a
branch-only function. Prints the numbers and writes bench/results/worktrees-<time>.json.

Run: .venv/bin/python -m bench.speed.worktrees [--workspace bench/.work/ws-300k] [--diff 20]
     [--questions 20] [--profile code-small]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass_dev.evaluation.services import REPO_ROOT, start_stack

DEFAULT_WORKSPACE = REPO_ROOT / "bench" / ".work" / "ws-300k"
RESULTS = REPO_ROOT / "bench" / "results"
BASE_WITHIN_S = 600.0


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def _index(client: RetrievalClient, root: Path) -> tuple[float, dict]:
    started = time.perf_counter()
    reports = list(client.index(str(root), wait_for_embeddings=True, timeout_s=3600))
    stats = reports[-1].stats
    return time.perf_counter() - started, vars(stats) if stats is not None else {}


def _probe(i: int) -> str:
    return f"branchOnlyProbe{i}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--diff", type=int, default=20, help="files the worktree's branch changes")
    parser.add_argument("--questions", type=int, default=20, help="alternating Sync + Search rounds")
    parser.add_argument("--profile", default="", help="embedding profile (default: the product's)")
    parser.add_argument("--echo-logs", action="store_true")
    parser.add_argument("--keep", action="store_true", help="leave the repository and the indexes in /tmp")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cc-worktrees-"))
    main_root, feature = work / "repo", work / "repo-feature"
    shutil.copytree(args.workspace, main_root, ignore=shutil.ignore_patterns(".git", "node_modules"))
    _git(main_root, "init", "-q", "-b", "main")
    for key, value in (("user.email", "bench@example.com"), ("user.name", "bench"), ("core.autocrlf", "false")):
        _git(main_root, "config", key, value)
    _git(main_root, "remote", "add", "origin", "https://example.com/bench/worktrees.git")
    _git(main_root, "add", "-A")
    _git(main_root, "commit", "-q", "-m", "base")
    lines = sum(len(p.read_bytes().splitlines()) for p in main_root.rglob("*") if p.is_file() and ".git" not in p.parts)

    env = {"CODECOMPASS_STATE_DIR": str(work / "state"),
           **({"CODECOMPASS_EMBEDDING_PROFILE": args.profile} if args.profile else {})}
    stack = start_stack(env, echo=args.echo_logs)
    client = RetrievalClient(stack.retrieval.address)
    try:
        main_s, _ = _index(client, main_root)
        started = time.perf_counter()
        while not any(i.kind == "base" for i in client.list_indexes(30)):
            if time.perf_counter() - started > BASE_WITHIN_S:
                raise SystemExit("no base was written")
            time.sleep(0.2)
        base_wait_s = time.perf_counter() - started

        _git(main_root, "worktree", "add", "-q", "-b", "feature", str(feature))
        targets = sorted(p for p in feature.rglob("*.ts") if ".git" not in p.parts and not p.name.endswith(".d.ts"))
        for i, path in enumerate(targets[:args.diff]):
            with path.open("a", encoding="utf-8") as out:
                out.write(f"\nexport function {_probe(i)}(value: number): number {{\n  return value + {i};\n}}\n")
        _git(feature, "commit", "-q", "-am", "feature")
        worktree_s, worktree_stats = _index(client, feature)

        syncs, searches, written, leaks = [], [], 0, 0
        for round_ in range(args.questions):
            root = (main_root, feature)[round_ % 2]
            t0 = time.perf_counter()
            outcome = client.sync(str(root), 30_000, 60)
            syncs.append((time.perf_counter() - t0) * 1000)
            if outcome.stats is not None:
                written += outcome.stats.chunks_upserted + outcome.stats.chunks_deleted
            t0 = time.perf_counter()
            found = client.search(SearchQuery(workspace_root=str(root), query=_probe(round_ % args.diff), limit=10), 30)
            searches.append((time.perf_counter() - t0) * 1000)
            names = {r.chunk.name for r in found.results}
            if root == main_root and any(n.startswith("branchOnlyProbe") for n in names):
                leaks += 1
    finally:
        client.close()
        stack.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    result = {
        "workspace": str(args.workspace), "lines": lines, "diff_files": min(args.diff, len(targets)),
        "profile": args.profile or "default", "main_index_s": round(main_s, 2), "base_written_after_s":
        round(base_wait_s, 2), "worktree_index_s": round(worktree_s, 2), "worktree_sync": worktree_stats,
        "alternating_rounds": args.questions, "chunks_written_while_alternating": written,
        "main_answers_with_branch_code": leaks, "sync_ms_p50": round(statistics.median(syncs), 1),
        "search_ms_p50": round(statistics.median(searches), 1),
    }
    print(f"{args.workspace.name}: {lines} lines; main indexed in {main_s:.1f} s, base written {base_wait_s:.1f} s "
          f"later")
    print(f"new worktree with {result['diff_files']} changed files searchable at full quality in {worktree_s:.2f} s "
          f"({worktree_stats.get('files_changed')} files changed, {worktree_stats.get('chunks_embedded')} chunks "
          f"embedded)")
    print(f"{args.questions} alternating questions: {written} chunks written, {leaks} main answers with branch "
          f"code, sync p50 {result['sync_ms_p50']} ms, search p50 {result['search_ms_p50']} ms")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"worktrees-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
