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
