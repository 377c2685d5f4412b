"""A file system under edit (issue 15 §2): files renamed, deleted and rewritten while `index`
runs, as a `git checkout` in the middle of a first index does. The run finishes (exit 0) and
says what moved under it; the next run converges to exactly the rows a clean index of the final
files has: nothing lost, nothing stale, nothing duplicated."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from tests.badinput.harness import ROW_COLUMNS, CliRun, Stack
from tests.fixtures.chain_workspace import write_chain_workspace

FILES = 500
MOVED = range(300, 420)  # renamed into src/moved/ (the old paths vanish, new ones appear)
DELETED = range(420, 440)
REWRITTEN = range(440, 460)
# Vectors fill in after `index --no-wait`: the comparison is of what the rows are, not of when
# each got its vector.
WITHOUT_VECTOR = ROW_COLUMNS.index("has_vector")


def _rows(stack: Stack, root: Path) -> list[tuple]:
    return sorted(row[:WITHOUT_VECTOR] for row in stack.rows(root))


def _checkout(root: Path) -> None:
    src = root / "src"
    (src / "moved").mkdir()
    for i in MOVED:
        (src / f"mod{i}.ts").rename(src / "moved" / f"mod{i}.ts")
    for i in DELETED:
        (src / f"mod{i}.ts").unlink()
    for i in REWRITTEN:
        path = src / f"mod{i}.ts"
        path.write_text(path.read_text().replace(f"helper{i}(", f"renamedHelper{i}("))


@pytest.mark.badinput(case="files renamed, deleted and rewritten during `index` (a checkout mid-index)",
                      behaviour="exit 0; the summary says `edited while indexing: N vanished (dropped), M changed`; "
                                "the next `index` leaves exactly the rows of a clean index of the final files")
def test_a_checkout_during_the_first_index(stack: Stack, tmp_path: Path) -> None:
    root = write_chain_workspace(tmp_path / "ws", FILES)
    index = subprocess.Popen(stack.command("index", str(root), "--no-wait"), env=stack.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert index.stderr is not None
    seen: list[str] = []
    for line in index.stderr:
        seen.append(line)
        # The full (type-checked) pass has started: its later windows are not read yet.
        if line.startswith("chunking "):
            _checkout(root)
            break
    out, err = index.communicate(timeout=300)
    Stack.record(CliRun(("index", str(root), "--no-wait"), index.returncode, out, "".join(seen) + err))
    assert index.returncode == 0, err
    edited = [line for line in out.splitlines() if line.strip().startswith("edited while indexing:")]
    assert edited and " vanished (dropped)" in edited[0], out

    again = stack.cli("index", str(root), "--no-wait")
    assert again.code == 0, again.err
    clean = shutil.copytree(root, tmp_path / "clean" / "ws")
    assert stack.cli("index", str(clean), "--no-wait").code == 0
    assert _rows(stack, root) == _rows(stack, clean)
    ids = [row[0] for row in stack.rows(root)]
    assert len(ids) == len(set(ids))
