"""is_test_path keeps the definition of test code by path that the analysis service uses for a
chunk's is_test (isTestPath in node_ts_service/src/chunker.ts): both read one table of paths,
tests/fixtures/test_paths.json, so the ranking's test penalty and the chunker never disagree."""

from __future__ import annotations

import json
from pathlib import Path

from codecompass.common.testcode import is_test_path

TABLE = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "test_paths.json").read_text())


def test_every_test_path_of_the_table_is_test_code() -> None:
    assert [p for p in TABLE["test"] if not is_test_path(p)] == []


def test_no_other_path_of_the_table_is() -> None:
    assert [p for p in TABLE["not_test"] if is_test_path(p)] == []
