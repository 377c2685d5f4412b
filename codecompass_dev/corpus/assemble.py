"""Assemble benchmark workspaces from the installed corpus (bench/.corpus/).

The analysis service excludes node_modules by default, so the shipped sources are
copied out into plain folders under bench/.work/:

  chunk-corpus  typescript.js + the sources of rxjs, TanStack Query, knex and fastify, one
                folder per package (the chunking benchmark)
  ws-300k       the sources of effect, rxjs, TanStack Query, knex, undici and mocha laid
                out as a monorepo (>= 300k lines of ordinary code; scale and speed benchmarks)
  ws-1m         >= 1,000,000 lines of the training corpus's repositories (the 1M-line scale
                benchmark), by a written rule: the train repositories of
                models/corpus/manifest.json in its order (npm download rank), each at its pinned
                commit, out of the git mirrors; of each, the TS/JS source files that are not tests
                or declarations (`is_quality_source`), under <owner>+<name>/; whole repositories,
                until the lines reach 1,000,000
  ws-10k-files  10,000 small generated TypeScript files (re-scan timing only)
  quality       one workspace per repository, bench/.work/quality/<repo>/: the repository
                at its pinned release commit, everything a clone has (a user has one
                repository open, so the queries of repository R are searched in workspace
                R), checked out of git mirrors (codecompass_dev/corpus/mirrors.py); the JSDoc comments
                that `jsdoc` queries of bench/quality/queries.jsonl were taken from are
                blanked (spaces, line breaks kept), everything else is as committed.

Usage: python -m codecompass_dev.corpus.assemble {chunk-corpus|ws-300k|ws-1m|ws-10k-files|quality|all} [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from codecompass_dev.corpus.mirrors import MirrorError, checkout, ensure_mirror, tag_commit
from codecompass_dev.corpus.policy import assert_allowed
from codecompass_dev.queries.text import blank_spans

# The corpus, the workspaces and the query file are the benchmark's data, in bench/.
BENCH_DIR = Path(__file__).resolve().parents[2] / "bench"
CORPUS_MODULES = BENCH_DIR / ".corpus" / "node_modules"
WORK_DIR = BENCH_DIR / ".work"
QUALITY_DIR = WORK_DIR / "quality"
QUERIES_PATH = BENCH_DIR / "quality" / "queries.jsonl"
# What a quality build was made from, kept next to the workspaces: a different stamp rebuilds them.
QUALITY_STAMP = ".assembled.json"
QUALITY_LAYOUT = "repository checkout at the pinned commit, jsdoc blanked"
SOURCE_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")


@dataclass(frozen=True)
class CorpusPart:
    """One slice of an installed package that ships real source code."""

    package: str
    subpath: str
    note: str
    in_chunk_corpus: bool = True
    in_ws_300k: bool = True


# Declaration files are excluded: they are types for the shipped JS, not sources,
# and would double-count every symbol.
CORPUS_PARTS: tuple[CorpusPart, ...] = (
    # One pathological file is the point of the chunking corpus, but it would make the
    # speed workspace mostly one file, which no real workspace is.
    CorpusPart("typescript", "lib/typescript.js", "one ~200k-line file with huge nested functions", in_ws_300k=False),
    CorpusPart("effect", "src", "TypeScript sources of effect (~234k lines)", in_chunk_corpus=False),
    CorpusPart("rxjs", "src", "TypeScript sources of rxjs"),
    CorpusPart("@tanstack/query-core", "src", "TypeScript sources of TanStack Query core"),
    CorpusPart("@tanstack/react-query", "src", "React/TSX sources (hooks, components)"),
    CorpusPart("knex", "lib", "plain CommonJS sources of knex (~23k lines)"),
    CorpusPart("fastify", "lib", "plain CommonJS sources of fastify", in_ws_300k=False),
    CorpusPart("undici", "lib", "plain CommonJS sources of undici (~38k lines)", in_chunk_corpus=False),
    CorpusPart("mocha", "lib", "plain CommonJS sources of mocha", in_chunk_corpus=False),
)


@dataclass(frozen=True)
class QualityRepo:
    """A repository of the quality benchmark, pinned at the commit of one npm release.

    Its workspace bench/.work/quality/<name>/ is that commit's whole tree as a clone has it
    (tests, fixtures, examples, docs, scripts, configs): the index leaves out what it leaves
    out for a user, and nothing else is taken away. Queries are drawn from `code_paths`, the
    library's own code: the paths its npm package publishes, which are byte-identical to the
    package at the tag (checked file by file when the workspaces moved from the packages to
    the repositories), so a path in a query, a commit or the package is the same path.
    """

    name: str
    github: str
    release_tag: str  # the git tag of the npm release (e.g. `v5.12.1` for fastify@5.12.1)
    commit: str  # what release_tag points to: the workspace is this commit's tree
    split: str  # "dev" (tune on it) or "test" (report it); fixed, see bench/README.md
    code_paths: tuple[str, ...]  # folders or files of the library's own code (query sources)
    not_code: tuple[str, ...] = ()  # paths under code_paths that are no query source (see each)


# Half of the repositories (and about half of the commit queries) in each split; the split
# is by repository so that no tuning decision sees the code or history of a test repository.
QUALITY_REPOS: tuple[QualityRepo, ...] = (
    QualityRepo("rxjs", "ReactiveX/rxjs", "7.8.2", "e5351d02e225e275ac0e497c7b66eaa5f0c88791", "dev", ("src",)),
    QualityRepo(
        "tanstack-query",
        "TanStack/query",
        "@tanstack/query-core@5.102.0",
        "574346846239b8d00d8d8dec4188c572c7cce205",
        "test",
        ("packages/query-core/src", "packages/react-query/src"),
    ),
    QualityRepo(
        "fastify",
        "fastify/fastify",
        "v5.12.1",
        "7d196a998c422062a3aaa3f8041db91ad576cea0",
        "dev",
        ("fastify.js", "lib"),
    ),
    QualityRepo(
        "pino", "pinojs/pino", "v10.3.1", "6b344980eae3ebed904fc87caf4bba0ab9dbe946", "test", ("pino.js", "lib")
    ),
    QualityRepo(
        "knex",
        "knex/knex",
        "3.3.0",
        "e25d54bcb707714a17f5a5744eba5c4246bb4d1d",
        "test",
        ("knex.js", "lib"),
        # The TypeScript source of lib/dialects/index.js: the package ships only the compiled file.
        not_code=("lib/dialects/index.ts",),
    ),
    QualityRepo("mocha", "mochajs/mocha", "v11.8.0", "90c1bb3e183a262ac91d83fa45035d03ea9f6045", "dev", ("lib",)),
    QualityRepo(
        "preact",
        "preactjs/preact",
        "10.29.8",
        "389c7bcc5140566f3fbae73cf17edf4ab44f4d96",
        "test",
        ("src", "hooks/src", "compat/src"),
    ),
    QualityRepo("immer", "immerjs/immer", "v11.1.18", "b00474e3755954f6b27a392dcb4bce97254c100c", "dev", ("src",)),
    QualityRepo(
        "mobx", "mobxjs/mobx", "mobx@7.0.3", "5dbb04a15f7eb0ef6b844904c43955357a9bbdfc", "test", ("packages/mobx/src",)
    ),
    QualityRepo(
        "undici",
        "nodejs/undici",
        "v8.10.0",
        "c8d80e6b2dcfab282557b08f51352937bc9e5692",
        "dev",
        ("index.js", "lib"),
        # WebAssembly of llhttp as base64: generated, megabytes on a few lines.
        not_code=("lib/llhttp/llhttp-wasm.js", "lib/llhttp/llhttp_simd-wasm.js"),
    ),
)
QUALITY_REPOS_BY_NAME = {repo.name: repo for repo in QUALITY_REPOS}
for _part in CORPUS_PARTS:
    assert_allowed(_part.package)
for _repo in QUALITY_REPOS:
    assert_allowed(_repo.github)

# Tests and fixtures are no query source (they are in the workspace, competing with the code,
# as in a user's clone). With these rules the code files of every quality repository are
# exactly what its npm package publishes; a broader rule would drop mocha's lib/test.js (its
# Test class) and lib/reporters/spec.js, which are the library's code.
TEST_DIR_NAMES = {"test", "tests", "__tests__", "__mocks__", "spec", "fixtures", "node_modules"}
TEST_SUFFIXES = (".test.ts", ".test.tsx", ".test.js", ".spec.ts", ".spec.tsx", ".spec.js", ".test-d.ts")


def is_source(path: Path) -> bool:
    name = path.name
    return name.endswith(SOURCE_SUFFIXES) and not name.endswith((".d.ts", ".d.mts", ".d.cts"))


def is_quality_source(repo_path: str) -> bool:
    """A repository path that queries may come from: source, not a test or a declaration."""
    parts = repo_path.split("/")
    return is_source(Path(parts[-1])) and not parts[-1].endswith(TEST_SUFFIXES) and not set(parts[:-1]) & TEST_DIR_NAMES


def in_code_paths(repo: QualityRepo, repo_path: str) -> bool:
    return any(repo_path == p or repo_path.startswith(p + "/") for p in repo.code_paths)


def is_code_file(repo: QualityRepo, repo_path: str) -> bool:
    """A file of the library's own code: where queries and commit gold come from."""
    return in_code_paths(repo, repo_path) and is_quality_source(repo_path) and repo_path not in repo.not_code


def code_files(repo: QualityRepo, workspace: Path) -> list[str]:
    """Workspace paths (= repository paths) of the library's own code in an assembled workspace."""
    found = []
    for path in repo.code_paths:
        root = workspace / path
        if not root.exists():
            raise SystemExit(f"{root} is missing: run python -m codecompass_dev.corpus.assemble quality")
        items = [root] if root.is_file() else (p for p in root.rglob("*") if p.is_file())
        found.extend(p.relative_to(workspace).as_posix() for p in items)
    return sorted(rel for rel in set(found) if is_code_file(repo, rel))


def load_blanks(queries_path: Path) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(repo, path) -> JSDoc spans (code-point offsets) to blank, from the `jsdoc` queries' provenance."""
    blanks: dict[tuple[str, str], set[tuple[int, int]]] = {}
    if not queries_path.exists():
        raise SystemExit(f"{queries_path} is missing: run python -m bench.quality.build_queries")
    with open(queries_path, encoding="utf-8") as fh:
        for line in fh:
            query = json.loads(line)
            for item in query.get("source", {}).get("blanked_jsdoc", []):
                key = (query["repo"], item["path"])
                blanks.setdefault(key, set()).update((a, b) for a, b in item["spans"])
    return {key: sorted(spans) for key, spans in blanks.items()}


def blank_file(path: Path, spans: list[tuple[int, int]]) -> None:
    """Blank JSDoc spans in place with spaces; line breaks (and a BOM) stay where they were."""
    raw = path.read_text(encoding="utf-8")
    bom = "\ufeff" if raw.startswith("\ufeff") else ""
    text = raw.removeprefix(bom)
    out = blank_spans(text, spans, keep_width=True)
    if out.count("\n") != text.count("\n"):
        raise AssertionError(f"line count changed while blanking {path}")
    path.write_text(bom + out, encoding="utf-8")


def workspace_digest(root: Path) -> str:
    """sha256 over every file's path and bytes (a symlink: its target text): what a run measured."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            data = b"link:" + os.readlink(path).encode()
        elif path.is_file():
            data = path.read_bytes()
        else:
            continue
        rel = path.relative_to(root).as_posix().encode()
        digest.update(len(rel).to_bytes(4, "big") + rel + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def source_stats(root: Path) -> tuple[int, int, int]:
    """(all files, TS/JS source files, their lines) of a workspace, before the index's own rules."""
    files = sources = lines = 0
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        files += 1
        if is_source(path):
            sources += 1
            with open(path, "rb") as fh:
                lines += sum(1 for _ in fh)
    return files, sources, lines


def invisible_to_the_index(repo_path: str) -> bool:
    """A file the analysis service never reads: not a TS/JS source and not an ignore file."""
    name = repo_path.rsplit("/", 1)[-1]
    return not name.endswith(SOURCE_SUFFIXES) and name not in (".gitignore", ".codecompassignore")


def checkout_repo(repo: QualityRepo, dest: Path) -> list[str]:
    """The pinned commit's tree into `dest`; returns the files the mirror lacked (never one the index reads).

    A tag that moved away from the pin is an error: the pin, not the tag, is what was measured.
    """
    try:
        mirror = ensure_mirror(repo.github, repo.commit)
        tagged = tag_commit(mirror, repo.release_tag)
        if tagged is not None and tagged != repo.commit:
            raise MirrorError(f"tag {repo.release_tag} of {repo.github} is {tagged} in {mirror}, pinned {repo.commit}")
        return checkout(mirror, repo.commit, dest, may_lack=invisible_to_the_index)
    except MirrorError as err:
        raise SystemExit(f"quality/{repo.name}: {err}") from None


def assemble_quality(force: bool, queries_path: Path | None = QUERIES_PATH, dest: Path = QUALITY_DIR) -> Path:
    """Check out every quality repository; blank the JSDoc that `jsdoc` queries name (None: blank nothing).

    Rebuilt when forced or when what it was built from (pins, queries, layout) changed, so a
    workspace of an older layout is never measured by mistake.
    """
    blanks = load_blanks(queries_path) if queries_path else {}
    stamp = {
        "layout": QUALITY_LAYOUT,
        "repos": {repo.name: repo.commit for repo in QUALITY_REPOS},
        "queries_sha256": hashlib.sha256(queries_path.read_bytes()).hexdigest() if queries_path else None,
    }
    stamp_path = dest / QUALITY_STAMP
    if not force and stamp_path.is_file() and json.loads(stamp_path.read_text(encoding="utf-8")) == stamp:
        print(f"{dest} is up to date (use --force to rebuild)")
        return dest
    prepare(dest, force=True)
    total_files = total_sources = total_lines = blanked = 0
    for repo in QUALITY_REPOS:
        root = dest / repo.name
        root.mkdir()
        absent = checkout_repo(repo, root)
        for (name, rel), spans in sorted(blanks.items()):
            if name == repo.name:
                if not (root / rel).is_file():
                    raise SystemExit(f"queries name JSDoc in {repo.name}/{rel}, which the checkout lacks")
                blank_file(root / rel, spans)
                blanked += len(spans)
        files, sources, lines = source_stats(root)
        print(
            f"quality/{repo.name}: {repo.github}@{repo.commit[:10]} ({repo.release_tag}), {files} files, "
            f"{sources} TS/JS sources, {lines} lines, {len(code_files(repo, root))} code files ({repo.split}); "
            f"sha256 {workspace_digest(root)[:16]}" + (f"; not in the mirror: {', '.join(absent)}" if absent else "")
        )
        total_files, total_sources, total_lines = total_files + files, total_sources + sources, total_lines + lines
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    print(
        f"quality: {total_files} files, {total_sources} TS/JS sources, {total_lines} lines, "
        f"{blanked} JSDoc comments blanked in {dest}"
    )
    return dest


def iter_part_files(part: CorpusPart) -> list[Path]:
    root = CORPUS_MODULES / part.package / part.subpath
    if not root.exists():
        raise SystemExit(f"{root} is missing: run codecompass_dev/corpus/install.sh first")
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*") if p.is_file() and is_source(p))


def copy_parts(dest: Path, parts: Iterable[CorpusPart], folder_for: Callable[[CorpusPart], Path]) -> tuple[int, int]:
    files = lines = 0
    for part in parts:
        base = CORPUS_MODULES / part.package
        for src in iter_part_files(part):
            target = dest / folder_for(part) / src.relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            files += 1
            with open(src, "rb") as fh:
                lines += sum(1 for _ in fh)
    return files, lines


def prepare(dest: Path, force: bool) -> bool:
    if dest.exists():
        if not force:
            print(f"{dest} exists (use --force to rebuild)")
            return False
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    return True


def assemble_chunk_corpus(force: bool) -> Path:
    dest = WORK_DIR / "chunk-corpus"
    if prepare(dest, force):
        parts = [p for p in CORPUS_PARTS if p.in_chunk_corpus]
        files, lines = copy_parts(dest, parts, lambda part: Path(part.package.replace("/", "__")))
        print(f"chunk-corpus: {files} files, {lines} lines in {dest}")
    return dest


def assemble_ws_300k(force: bool) -> Path:
    dest = WORK_DIR / "ws-300k"
    if prepare(dest, force):
        parts = [p for p in CORPUS_PARTS if p.in_ws_300k]
        files, lines = copy_parts(dest, parts, lambda part: Path("packages") / part.package.replace("/", "__"))
        (dest / ".gitignore").write_text("node_modules/\n")
        print(f"ws-300k: {files} files, {lines} lines in {dest}")
        if lines < 300_000:
            print(f"warning: ws-300k has only {lines} lines", file=sys.stderr)
    return dest


MANIFEST_PATH = Path(__file__).resolve().parents[2] / "models" / "corpus" / "manifest.json"
WS_1M_LINES = 1_000_000


def assemble_ws_1m(force: bool) -> Path:
    dest = WORK_DIR / "ws-1m"
    if not prepare(dest, force):
        return dest
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    files = lines = lacked = 0
    taken = []
    for entry in manifest["repositories"]:
        if lines >= WS_1M_LINES:
            break
        if entry["split"] != "train":
            continue
        assert_allowed(entry["github"])
        try:
            mirror = ensure_mirror(entry["github"], entry["commit"])
            with tempfile.TemporaryDirectory(prefix="ws-1m-") as tmp:
                # A file the mirror lacks (too large for the snapshot it came from) is left out.
                lacked += len(checkout(mirror, entry["commit"], Path(tmp), may_lack=lambda _path: True))
                target = dest / entry["github"].replace("/", "+")
                for src in sorted(Path(tmp).rglob("*")):
                    rel = src.relative_to(tmp).as_posix()
                    if src.is_file() and not src.is_symlink() and is_quality_source(rel):
                        (target / rel).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(src, target / rel)
                        files += 1
                        with open(src, "rb") as fh:
                            lines += sum(1 for _ in fh)
        except MirrorError as err:
            raise SystemExit(f"ws-1m: {err} (fetch the corpus mirrors, see DEVELOPERS.md)") from None
        taken.append(entry["github"])
    (dest / ".gitignore").write_text("node_modules/\n")
    print(f"ws-1m: {files} files, {lines} lines from {len(taken)} repositories in {dest}"
          f" ({lacked} files the mirrors lack left out)")
    if lines < WS_1M_LINES:
        print(f"warning: ws-1m has only {lines} lines", file=sys.stderr)
    return dest


GENERATED_FILE = """import {{ helper{prev} }} from "./mod{prev}";

/** Adds a constant to a value for module {n}. */
export function helper{n}(value: number): number {{
  return helper{prev}(value) + {n};
}}

export class Service{n} {{
  private count = 0;

  run(input: string): string {{
    this.count += 1;
    return `${{input}}-{n}-${{this.count}}`;
  }}
}}
"""


def assemble_ws_10k_files(force: bool) -> Path:
    dest = WORK_DIR / "ws-10k-files"
    if prepare(dest, force):
        for n in range(10_000):
            sub = dest / f"dir{n // 100:03d}"
            sub.mkdir(exist_ok=True)
            (sub / f"mod{n}.ts").write_text(GENERATED_FILE.format(n=n, prev=max(n - 1, 0)))
        print(f"ws-10k-files: 10000 files in {dest}")
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", choices=["chunk-corpus", "ws-300k", "ws-1m", "ws-10k-files", "quality", "all"])
    parser.add_argument("--force", action="store_true", help="rebuild even if the folder exists")
    args = parser.parse_args(argv)
    builders = {
        "chunk-corpus": assemble_chunk_corpus,
        "ws-300k": assemble_ws_300k,
        "ws-1m": assemble_ws_1m,
        "ws-10k-files": assemble_ws_10k_files,
        "quality": assemble_quality,
    }
    # ws-1m needs the training corpus's mirrors, which the other workspaces do not: never part of "all".
    targets = [t for t in builders if t != "ws-1m"] if args.target == "all" else [args.target]
    for target in targets:
        builders[target](args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
