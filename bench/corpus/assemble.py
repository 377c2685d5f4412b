"""Assemble benchmark workspaces from the installed corpus (bench/.corpus/).

The analysis service excludes node_modules by default, so the shipped sources are
copied out into plain folders under bench/.work/:

  chunk-corpus  typescript.js + the TS sources of rxjs, TanStack Query and zod, one
                folder per package (~327k lines; the chunking benchmark)
  ws-300k       the TS sources of effect, rxjs, TanStack Query and zod laid out as a
                monorepo (>= 300k lines of ordinary code; the scale and speed benchmarks)
  ws-10k-files  10,000 small generated TypeScript files (re-scan timing only)

Usage: python bench/corpus/assemble.py {chunk-corpus|ws-300k|ws-10k-files|all} [--force]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
CORPUS_MODULES = BENCH_DIR / ".corpus" / "node_modules"
WORK_DIR = BENCH_DIR / ".work"
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
    CorpusPart("zod", "src", "TypeScript sources of zod v3/v4 incl. their tests"),
)


def is_source(path: Path) -> bool:
    name = path.name
    return name.endswith(SOURCE_SUFFIXES) and not name.endswith((".d.ts", ".d.mts", ".d.cts"))


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
    parser.add_argument("target", choices=["chunk-corpus", "ws-300k", "ws-10k-files", "all"])
    parser.add_argument("--force", action="store_true", help="rebuild even if the folder exists")
    args = parser.parse_args(argv)
    builders = {
        "chunk-corpus": assemble_chunk_corpus,
        "ws-300k": assemble_ws_300k,
        "ws-10k-files": assemble_ws_10k_files,
    }
    targets = list(builders) if args.target == "all" else [args.target]
    for target in targets:
        builders[target](args.force)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
