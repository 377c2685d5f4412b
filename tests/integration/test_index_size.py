"""The index stays within 4x the source: real chunks of generated, deeply nested TypeScript
(every symbol at every depth is a chunk, so a depth-5 function's text is part of six chunks'
full sources) written to a real LanceDB store with 384-dimension vectors the way a sync and
an embedding run write them, then maintained. Every chunk must come back exactly as written."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from codecompass.clients.analysis import AnalysisClient
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.retrieval.index.chunk_writer import ChunkWriter

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning"),
]

FILES = 24
MODEL = EmbeddingModel("local", "all-MiniLM-L6-v2", "1", 384)
MAX_RATIO = 4.0


def _function(name: str, depth: int, indent: str, rng: random.Random) -> list[str]:
    """A documented function whose body holds a few statements and, above the deepest level,
    nested helper functions that call each other."""
    lines = [
        f"{indent}/**",
        f"{indent} * Computes the {name} stage of the pipeline at depth {depth}.",
        f"{indent} * @param input the value to transform",
        f"{indent} */",
        f"{indent}function {name}(input: number, options: {{ scale: number; label: string }}): number {{",
    ]
    inner = indent + "  "
    lines.append(f"{inner}let total = input * options.scale + {rng.randint(1, 99)};")
    for s in range(rng.randint(1, 3)):
        lines += [
            f"{inner}const part{s} = Math.max(total - {rng.randint(1, 50)}, options.scale * {s + 1});",
            f"{inner}total = part{s} % 2 === 0 ? total + part{s} : total - options.label.length;",
        ]
    helpers = []
    if depth < 5:
        for k in range(2 if depth < 3 else 1):
            helper = f"{name}Step{k}"
            helpers.append(helper)
            lines += _function(helper, depth + 1, inner, rng)
    for helper in helpers:
        lines.append(f"{inner}total += {helper}(total, options);")
    lines += [
        f"{inner}if (total > {rng.randint(100, 999)}) {{",
        f"{inner}  console.log(`${{options.label}}: ${{total}}`);",
        f"{inner}}}",
        f"{inner}return total;",
        f"{indent}}}",
    ]
    return lines


def _generate(root: Path) -> int:
    rng = random.Random(7)
    (root / "src").mkdir(parents=True)
    (root / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}, "include": ["src"]}')
    size = 0
    for i in range(FILES):
        lines = [f"import {{ run{i - 1} }} from './mod{i - 1}';", ""] if i else []
        lines += [f"export const LIMIT_{i} = {i * 10};", ""]
        lines += _function(f"stage{i}", 1, "", rng)
        lines += [
            "",
            f"export class Runner{i} {{",
            "  private count = 0;",
            "",
            "  /** Runs the stage once and counts it. */",
            "  run(input: number): number {",
            "    this.count += 1;",
            f"    return stage{i}(input, {{ scale: 2, label: 'runner{i}' }});",
            "  }",
            "}",
            "",
            f"export function run{i}(input: number): number {{",
            f"  return new Runner{i}().run(input){f' + run{i - 1}(input)' if i else ''};",
            "}",
            "",
            f"console.log(run{i}(LIMIT_{i}));",
            "",
        ]
        text = "\n".join(lines)
        (root / "src" / f"mod{i}.ts").write_text(text)
        size += len(text.encode("utf-8"))
    return size


def test_index_of_nested_code_stays_within_4x_the_source_and_gives_back_every_chunk(
    analysis_server: str, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    source_bytes = _generate(root)
    client = AnalysisClient(analysis_server, timeout_s=60)
    try:
        files = list(client.chunk_files(str(root), [f"src/mod{i}.ts" for i in range(FILES)]))
    finally:
        client.close()
    chunks = [c for f in files for c in f.chunks]
    assert max(c.depth for c in chunks) >= 4, "the fixture must nest deeply"

    store = ChunkWriter.open(str(tmp_path / "index"), model=MODEL, chunker_version="test")
    # Like a cold sync (a few flushes) and a background embedding run (many small vector writes).
    for start in range(0, len(files), 8):
        batch = [c for f in files[start : start + 8] for c in f.chunks]
        store.apply_changes(upserts=batch, delete_ids=[], vectors={})
    rng = np.random.default_rng(0)
    for start in range(0, len(chunks), 32):
        store.set_vectors({c.id: rng.normal(size=MODEL.dimensions) for c in chunks[start : start + 32]})
    store.maintain(retention=timedelta(0))

    assert store.version_count() == 1
    ratio = store.size_bytes() / source_bytes
    assert ratio <= MAX_RATIO, f"index is {ratio:.2f}x the source ({len(chunks)} chunks, {source_bytes} bytes)"
    assert store.get_chunks([c.id for c in chunks]) == chunks
