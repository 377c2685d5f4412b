"""20 searches at once while files are being edited, added and deleted: every search answers,
and the index the edits leave behind is exactly a clean index of the final files."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, assert_clean, copy_workspace

FILES = 40
SEARCHES = 20
EDIT_INTERVAL_S = 0.05


def _module(i: int, version: int) -> str:
    return (f"/** Computes the value of stage {i}, revision {version}. */\n"
            f"export function compute{i}(x: number): number {{\n  return x * {i} + {version};\n}}\n\n"
            f"export function helper{i}v{version % 3}(x: number): number {{\n  return x - {i};\n}}\n")


class Editor(threading.Thread):
    """Edits the workspace until stopped: changes a module, adds one, deletes an added one."""

    def __init__(self, root: Path) -> None:
        super().__init__(name="editor", daemon=True)
        self.root = root
        self.stop = threading.Event()
        self.edits = 0

    def run(self) -> None:
        src = self.root / "src"
        for step in itertools.count(1):
            if self.stop.is_set():
                return
            (src / f"mod{step % FILES}.ts").write_text(_module(step % FILES, step))
            added = src / f"added{step}.ts"
            added.write_text(_module(1000 + step, step))
            if step % 2 == 0:
                (src / f"added{step - 1}.ts").unlink()
            self.edits += 1
            time.sleep(EDIT_INTERVAL_S)


@pytest.mark.badinput(case="20 concurrent searches while files are edited",
                      behaviour="every search answers (exit 0, results); the final index equals a clean index of "
                                "the final files, no duplicate rows")
def test_concurrent_searches_during_edits(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "package.json").write_text('{"name": "concurrent"}\n')
    for i in range(FILES):
        (root / "src" / f"mod{i}.ts").write_text(_module(i, 0))
    assert stack.cli("index", str(root)).code == 0

    editor = Editor(root)
    editor.start()
    try:
        searches = [subprocess.Popen(stack.command("search", str(root), f"compute the value of stage {n}", "--json"),
                                     env=stack.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for n in range(SEARCHES)]
        runs = []
        for n, process in enumerate(searches):
            out, err = process.communicate(timeout=180)
            runs.append(Stack.record(CliRun(("search", str(root), f"compute the value of stage {n}", "--json"),
                                            process.returncode, out, err)))
    finally:
        editor.stop.set()
        editor.join(timeout=10)
    assert editor.edits > 0
    assert [run.code for run in runs] == [0] * SEARCHES, [run.err for run in runs if run.code]
    for run in runs:
        assert json.loads(run.out)["metadata"]["total_chunks"] > 0

    final = stack.cli("index", str(root))
    assert final.code == 0, final.err
    clean_root = copy_workspace(root, tmp_path / "clean")
    assert stack.cli("index", str(clean_root)).code == 0
    assert_clean(stack.rows(root), stack.rows(clean_root))
