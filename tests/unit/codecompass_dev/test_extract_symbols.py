"""The quality benchmark's extractor (codecompass_dev/queries/extract_symbols.js) with the real TypeScript compiler."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from codecompass_dev.queries.symbols import EXTRACTOR
from codecompass_dev.queries.text import blank_spans

SOURCE = """const re = /\\/\\*\\*x/g;
const s = "/** in a string */";
const t = `/** in a template ${re} */`;

/** Counts the widgets in a box. */
export class Box {
  /**
   * Opens the lid of the box.
   */
  open(): void {
    if (!this) throw new Error("box is already open");
    const inner = () => { throw new Error("inner only"); };
  }
}

/** Builds an empty crate for widgets. */
export const makeCrate = (): Box => new Box();
"""


def run_extractor(tmp_path: Path) -> dict:
    (tmp_path / "box.ts").write_text(SOURCE, encoding="utf-8")
    out = subprocess.run(
        ["node", str(EXTRACTOR), str(tmp_path)], check=True, capture_output=True, text=True, timeout=60
    )
    (record,) = [json.loads(line) for line in out.stdout.splitlines()]
    return record


def test_only_real_jsdoc_comments_are_blanked(tmp_path: Path) -> None:
    record = run_extractor(tmp_path)
    stripped = blank_spans(SOURCE, record["jsdoc_spans"])
    assert len(record["jsdoc_spans"]) == 3
    assert stripped.count("\n") == SOURCE.count("\n")
    assert "Counts the widgets" not in stripped and "Opens the lid" not in stripped
    assert "Builds an empty crate" not in stripped
    for kept in ('"/** in a string */"', "`/** in a template ${re} */`", "/\\/\\*\\*x/g"):
        assert kept in stripped


def test_symbols_carry_names_lines_docs_and_own_throws(tmp_path: Path) -> None:
    symbols = {s["qualified_name"]: s for s in run_extractor(tmp_path)["symbols"]}
    assert set(symbols) >= {"Box", "Box.open", "Box.open.inner", "makeCrate"}
    opener = symbols["Box.open"]
    assert (opener["start_line"], opener["end_line"]) == (10, 13)
    assert opener["jsdoc"].strip() == "Opens the lid of the box."
    assert [t["message"] for t in opener["throws"]] == ["box is already open"]
    assert symbols["makeCrate"]["start_line"] == 17
    assert symbols["makeCrate"]["jsdoc"].strip() == "Builds an empty crate for widgets."


def test_the_card_spans_the_file_trimmed_of_blank_lines_as_the_analysis_service_does(tmp_path: Path) -> None:
    (tmp_path / "padded.ts").write_text("\n\n  \n// Widgets.\nexport const a = 1;\n\nexport function b() {}\n\n\n",
                                        encoding="utf-8")  # fmt: skip
    (tmp_path / "comments.ts").write_text("// Nothing but a note.\n", encoding="utf-8")
    out = subprocess.run(
        ["node", str(EXTRACTOR), str(tmp_path), "padded.ts", "comments.ts"],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    padded, comments = (json.loads(line) for line in out.stdout.splitlines())
    # From the first non-blank line (the header comment) to the last; a file without statements has none.
    assert padded["card"] == {"start_line": 4, "end_line": 7}
    assert comments["card"] is None
