"""Assemble benchmark workspaces from the installed corpus (bench/.corpus/).

The analysis service excludes node_modules by default, so the shipped sources are
copied out into plain folders under bench/.work/:

  chunk-corpus  typescript.js + the sources of rxjs, TanStack Query, knex and fastify, one
                folder per package (the chunking benchmark)
  ws-300k       the sources of effect, rxjs, TanStack Query, knex, undici and mocha laid
                out as a monorepo (>= 300k lines of ordinary code; scale and speed benchmarks)
  ws-10k-files  10,000 small generated TypeScript files (re-scan timing only)
  quality       one workspace per repository, bench/.work/quality/<repo>/, laid out with
                the repository's own paths (a user has one repository open, so the queries
                of repository R are searched in workspace R); the JSDoc comments that
                `jsdoc` queries of bench/quality/queries.jsonl were taken from are blanked
                (spaces, line breaks kept), everything else is the published source.

Usage: python -m bench.corpus.assemble {chunk-corpus|ws-300k|ws-10k-files|quality|all} [--force]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from bench.corpus.policy import assert_allowed
from bench.lib.text import blank_spans

BENCH_DIR = Path(__file__).resolve().parent.parent
CORPUS_MODULES = BENCH_DIR / ".corpus" / "node_modules"
WORK_DIR = BENCH_DIR / ".work"
QUALITY_DIR = WORK_DIR / "quality"
QUERIES_PATH = BENCH_DIR / "quality" / "queries.jsonl"
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
class RepoSlice:
    """Files of an installed package that are a folder of its repository at the release tag."""

    package: str
    subpath: str  # inside the package: a folder or one file
    repo_prefix: str = ""  # where the package sits in its repository ("packages/query-core/")


@dataclass(frozen=True)
class QualityRepo:
    """A repository of the quality benchmark: its published sources and where its history is.

    The workspace bench/.work/quality/<name>/ holds each slice at its repository path, so
    a path in a commit of the repository is a path in the workspace.
    """

    name: str
    github: str
    release_tag: str  # the git tag of the pinned npm version (bench/corpus/package.json)
    split: str  # "dev" (tune on it) or "test" (report it); fixed, see bench/README.md
    slices: tuple[RepoSlice, ...]
    exclude: tuple[str, ...] = ()  # workspace paths left out (generated code)


# Half of the repositories (and about half of the commit queries) in each split; the split
# is by repository so that no tuning decision sees the code or history of a test repository.
QUALITY_REPOS: tuple[QualityRepo, ...] = (
    QualityRepo("rxjs", "ReactiveX/rxjs", "7.8.2", "dev", (RepoSlice("rxjs", "src"),)),
    QualityRepo(
        "tanstack-query",
        "TanStack/query",
        "@tanstack/query-core@5.102.0",
        "test",
        (
            RepoSlice("@tanstack/query-core", "src", "packages/query-core/"),
            RepoSlice("@tanstack/react-query", "src", "packages/react-query/"),
        ),
    ),
    QualityRepo(
        "fastify",
        "fastify/fastify",
        "v5.12.1",
        "dev",
        (RepoSlice("fastify", "fastify.js"), RepoSlice("fastify", "lib")),
    ),
    QualityRepo("pino", "pinojs/pino", "v10.3.1", "test", (RepoSlice("pino", "pino.js"), RepoSlice("pino", "lib"))),
    QualityRepo("knex", "knex/knex", "3.3.0", "test", (RepoSlice("knex", "knex.js"), RepoSlice("knex", "lib"))),
    QualityRepo("mocha", "mochajs/mocha", "v11.8.0", "dev", (RepoSlice("mocha", "lib"),)),
    QualityRepo(
        "preact",
        "preactjs/preact",
        "10.29.8",
        "test",
        (RepoSlice("preact", "src"), RepoSlice("preact", "hooks/src"), RepoSlice("preact", "compat/src")),
    ),
    QualityRepo("immer", "immerjs/immer", "v11.1.18", "dev", (RepoSlice("immer", "src"),)),
    QualityRepo("mobx", "mobxjs/mobx", "mobx@7.0.3", "test", (RepoSlice("mobx", "src", "packages/mobx/"),)),
    QualityRepo(
        "undici",
        "nodejs/undici",
        "v8.10.0",
        "dev",
        (RepoSlice("undici", "index.js"), RepoSlice("undici", "lib")),
        # WebAssembly of llhttp as base64: generated, megabytes on a few lines.
        exclude=("lib/llhttp/llhttp-wasm.js", "lib/llhttp/llhttp_simd-wasm.js"),
    ),
)
QUALITY_REPOS_BY_NAME = {repo.name: repo for repo in QUALITY_REPOS}
for _part in CORPUS_PARTS:
    assert_allowed(_part.package)
for _repo in QUALITY_REPOS:
    assert_allowed(_repo.github)
    for _slice in _repo.slices:
        assert_allowed(_slice.package)

# Tests and fixtures are not what a user searches for the code's behaviour; they also hold
# copies of the very sentences and messages queries are made of.
TEST_DIR_NAMES = {"test", "tests", "__tests__", "__mocks__", "spec", "fixtures", "node_modules"}
TEST_SUFFIXES = (".test.ts", ".test.tsx", ".test.js", ".spec.ts", ".spec.tsx", ".spec.js", ".test-d.ts")


def is_source(path: Path) -> bool:
    name = path.name
    return name.endswith(SOURCE_SUFFIXES) and not name.endswith((".d.ts", ".d.mts", ".d.cts"))


def is_quality_source(repo_path: str) -> bool:
    """A repository path that belongs in a quality workspace: source, not a test or a declaration."""
    parts = repo_path.split("/")
    return is_source(Path(parts[-1])) and not parts[-1].endswith(TEST_SUFFIXES) and not set(parts[:-1]) & TEST_DIR_NAMES


def quality_files(repo: QualityRepo) -> dict[str, Path]:
    """Workspace path (= repository path) -> installed file, for every source of `repo`."""
    files: dict[str, Path] = {}
    for piece in repo.slices:
        base = CORPUS_MODULES / piece.package
        root = base / piece.subpath
        if not root.exists():
            raise SystemExit(f"{root} is missing: run bench/corpus/install.sh first")
        found = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for src in found:
            rel = piece.repo_prefix + src.relative_to(base).as_posix()
            if is_quality_source(rel) and rel not in repo.exclude:
                files[rel] = src
    return dict(sorted(files.items()))


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


def read_source(path: Path) -> str:
    return path.read_text(encoding="utf-8").removeprefix("\ufeff")


def assemble_quality(force: bool, queries_path: Path | None = QUERIES_PATH, dest: Path = QUALITY_DIR) -> Path:
    """Copy every quality repository's sources; blank the JSDoc that `jsdoc` queries name (None: blank nothing)."""
    if prepare(dest, force):
        blanks = load_blanks(queries_path) if queries_path else {}
        total_files = total_lines = blanked = 0
        for repo in QUALITY_REPOS:
            files = quality_files(repo)
            lines = 0
            for rel, src in files.items():
                text = read_source(src)
                spans = blanks.pop((repo.name, rel), [])
                if spans:
                    out = blank_spans(text, spans, keep_width=True)
                    if out.count("\n") != text.count("\n"):
                        raise AssertionError(f"line count changed while blanking {repo.name}/{rel}")
                    text = out
                    blanked += len(spans)
                target = dest / repo.name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                lines += text.count("\n") + (not text.endswith("\n"))
            print(f"quality/{repo.name}: {len(files)} files, {lines} lines ({repo.split})")
            total_files += len(files)
            total_lines += lines
        if blanks:
            raise SystemExit(f"queries name JSDoc in files missing from the workspaces: {sorted(blanks)[:5]}")
        print(f"quality: {total_files} files, {total_lines} lines, {blanked} JSDoc comments blanked in {dest}")
    return dest


def iter_part_files(part: CorpusPart) -> list[Path]:
    root = CORPUS_MODULES / part.package / part.subpath
    if not root.exists():
        raise SystemExit(f"{root} is missing: run bench/corpus/install.sh first")
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
    parser.add_argument("target", choices=["chunk-corpus", "ws-300k", "ws-10k-files", "quality", "all"])
    parser.add_argument("--force", action="store_true", help="rebuild even if the folder exists")
    args = parser.parse_args(argv)
    builders = {
        "chunk-corpus": assemble_chunk_corpus,
        "ws-300k": assemble_ws_300k,
        "ws-10k-files": assemble_ws_10k_files,
        "quality": assemble_quality,
    }
    targets = list(builders) if args.target == "all" else [args.target]
    for target in targets:
        builders[target](args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
