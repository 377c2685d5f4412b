"""README tables generated from benchmark results files.

Every benchmark writes `bench/results/<kind>-latest.json` (codecompass_dev/evaluation/results.py). Markdown
files hold marked sections:

    <!-- bench:<section>:start -->
    ...generated...
    <!-- bench:<section>:end -->

and SECTIONS maps each section name to the results kind it reads and the renderer that
draws it. `python -m bench.report` rewrites every marked section of README.md, docs/*.md and
bench/README.md; `--check` rewrites nothing and exits 1 when a section differs from what
the latest results render to (a hand-edited table, or results committed without a
refresh). A new benchmark plugs in by writing its results file through
`codecompass_dev.evaluation.results.write_results`, adding a renderer to its family's module of bench/report/
and its section to SECTIONS here.

Run: .venv/bin/python -m bench.report [--check]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report.chunk import render_chunk_full, render_chunk_summary
from bench.report.comparison import render_comparison, render_models
from bench.report.faults import render_badinput, render_drills
from bench.report.load import render_load
from bench.report.pipeline import render_pipeline_full, render_pipeline_summary
from bench.report.quality import render_quality_full, render_quality_summary, render_ranking_ablation, render_testcode
from bench.report.speed import (
    render_cold_start,
    render_edit_visible,
    render_health,
    render_index_size,
    render_index_stages,
    render_mcp_speed,
    render_pipeline_speed,
    render_render_speed,
    render_shard_speed,
    render_speed_full,
    render_speed_summary,
    render_store_speed,
    render_vector_fidelity,
)
from codecompass_dev.evaluation.results import REPO_ROOT, RESULTS_DIR, load_latest

# The README is the front door; the generated tables live mostly in docs/benchmarks.md.
MARKDOWN_FILES = (REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
                  REPO_ROOT / "bench" / "README.md")
SECTION_RE = re.compile(
    r"(?P<start><!-- bench:(?P<name>[\w.+-]+):start -->\n)(?P<body>.*?)(?P<end><!-- bench:(?P=name):end -->)",
    re.DOTALL,
)


@dataclass(frozen=True)
class Section:
    kind: str  # reads bench/results/<kind>-latest.json
    render: Callable[[dict[str, Any]], str]


SECTIONS: dict[str, Section] = {
    "quality": Section("quality", render_quality_summary),
    "quality-full": Section("quality", render_quality_full),
    "ranking-ablation": Section("ranking", render_ranking_ablation),
    "speed": Section("speed", render_speed_summary),
    "speed-full": Section("speed", render_speed_full),
    "chunk": Section("chunk", render_chunk_summary),
    "chunk-full": Section("chunk", render_chunk_full),
    "pipeline": Section("pipeline", render_pipeline_summary),
    "pipeline-full": Section("pipeline", render_pipeline_full),
    "comparison": Section("comparison", render_comparison),
    "models": Section("models", render_models),
    "testcode": Section("testcode", render_testcode),
    "health": Section("health", render_health),
    "mcp-speed": Section("mcp-speed", render_mcp_speed),
    "cold-start": Section("cold-start", render_cold_start),
    "index-stages": Section("index-stages", render_index_stages),
    "index-stages-1m": Section("index-stages-1m", render_index_stages),
    "index-size": Section("index-size", render_index_size),
    "vector-fidelity": Section("vector-fidelity", render_vector_fidelity),
    "edit-visible": Section("edit-visible", render_edit_visible),
    "pipeline-speed": Section("pipeline-speed", render_pipeline_speed),
    "render-speed": Section("render-speed", render_render_speed),
    "shard-speed": Section("shard-speed", render_shard_speed),
    "store-speed": Section("store-speed", render_store_speed),
    "load": Section("load", render_load),
    "drills": Section("drills", render_drills),
    "badinput": Section("badinput", render_badinput),
}


class ReportError(Exception):
    pass


def rewrite(text: str, render_section: Callable[[str], str | None]) -> str:
    """Replace the body of every marked section with `render_section(name)`; None keeps it."""

    def replace(match: re.Match) -> str:
        body = render_section(match["name"])
        if body is None:
            return match.group(0)
        return f"{match['start']}{body.rstrip()}\n{match['end']}"

    return SECTION_RE.sub(replace, text)


def section_renderer(results_dir: Path, strict: bool) -> Callable[[str], str | None]:
    cache: dict[str, dict[str, Any] | None] = {}

    def render(name: str) -> str | None:
        section = SECTIONS.get(name)
        if section is None:
            raise ReportError(f"unknown bench section {name!r}; known: {', '.join(SECTIONS)}")
        if section.kind not in cache:
            cache[section.kind] = load_latest(section.kind, results_dir)
        doc = cache[section.kind]
        if doc is None:
            if strict:
                raise ReportError(f"section {name!r} needs {results_dir / (section.kind + '-latest.json')}")
            return None
        return section.render(doc)

    return render


def update_files(paths: Sequence[Path], results_dir: Path = RESULTS_DIR, check: bool = False) -> list[Path]:
    """Rewrite (or, with check, only compare) the marked sections; returns the files that differ."""
    render = section_renderer(results_dir, strict=check)
    stale = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, render)
        if new != text:
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return stale


def main(argv: list[str] | None = None) -> int:
    # Named as it is run: argparse would call it after the file, __main__.py.
    parser = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a section is stale")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("files", nargs="*", type=Path,
                        help="markdown files (default: README.md, docs/*.md, bench/README.md)")
    args = parser.parse_args(argv)
    files = args.files or list(MARKDOWN_FILES)
    try:
        stale = update_files(files, args.results_dir, check=args.check)
    except ReportError as err:
        print(f"bench.report: {err}", file=sys.stderr)
        return 2
    for path in stale:
        verb = "is out of date (run: make bench-report)" if args.check else "updated"
        print(f"{path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}: {verb}", file=sys.stderr)
    return 1 if (args.check and stale) else 0
