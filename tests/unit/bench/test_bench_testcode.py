"""The benchmark's yardstick for test code: blocks, test files beside the code, test folders, never the library."""

from __future__ import annotations

import pytest
from bench.lib.testcode import why_test_code


@pytest.mark.parametrize(
    ("path", "name", "flag", "reason"),
    [
        ("src/query/test.ts", "describe('query') > it('retries')", False, "block"),
        ("src/query/test.ts", "<module top level>", False, "path"),
        ("src/tests.js", "helper", False, "path"),
        ("lib/spec.mjs", "helper", False, "path"),
        ("src/query.test.tsx", "render", False, "path"),
        ("test/unit/pool.js", "makePool", False, "path"),
        ("packages/x/__tests__/a.ts", "a", False, "path"),
        ("src/index.ts", "describe.skip('x')", False, "block"),
        ("src/index.ts", "test.each('%s')", False, "block"),
        ("src/index.ts", "suite('runner') > setup", False, "block"),
        ("src/index.ts", "anything", True, "flag"),
        ("src/index.ts", "describer", False, None),
        ("src/testing/TestScheduler.ts", "TestScheduler", False, None),
        ("lib/mock/mock-agent.js", "MockAgent", False, None),
        ("src/contest.ts", "latest", False, None),
    ],
)
def test_each_reason(path: str, name: str, flag: bool, reason: str | None) -> None:
    assert why_test_code(path, name, flag) == reason


def test_the_librarys_own_code_is_never_test_code() -> None:
    # mocha's Test class lives in lib/test.js; even a product flag does not make it a test.
    assert why_test_code("lib/test.js", "Test", True, library_code=True) is None
    assert why_test_code("lib/test.js", "Test", False) == "path"


def test_a_query_answered_first_by_a_test_and_what_taking_tests_out_would_give() -> None:
    from bench.quality.testcode_share import Judged, query_row

    # A describe block first (not penalised), the target second, a penalised test file third.
    judged = Judged(reasons=["block", None, "path"], penalised=[False, False, True], library=[False, True, False],
                    hits=[None, 0, None], costs=[7000, 900, 50], library_flagged=0)  # fmt: skip
    row = query_row(judged, n_targets=1)
    assert row["first_test"] == row["first_block"] == row["first_unpenalised"] == 1.0
    assert row["first_flag"] == row["first_path"] == row["first_other"] == 0.0
    assert row["test_top10"] == 0.2 and row["answer_under_test"] == 1.0
    assert (row["mrr10"], row["mrr10_no_tests"]) == (0.5, 1.0)
    # 7,000 + 900 tokens fit in 8,000; without the test the target costs 900.
    assert (row["r8k"], row["r8k_no_tests"]) == (1.0, 1.0)


def test_an_example_answering_first_is_other_non_library_code() -> None:
    from bench.quality.testcode_share import Judged, query_row

    judged = Judged(reasons=[None, None], penalised=[False, False], library=[False, True], hits=[None, 0],
                    costs=[100, 100], library_flagged=0)  # fmt: skip
    row = query_row(judged, n_targets=1, about_tests=True)
    assert row["first_other"] == 1.0 and row["first_test"] == 0.0 and row["about_tests"] == 1.0
    assert "answer_under_test" not in row  # only asked of queries a test answered first
