"""What counts as test code and as a question about tests: one definition for the ranking's
test penalty and the selection's focus, so the two never disagree about a file."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Test code by path convention: a test folder, a `*.test.*` or `*.spec.*` file, or a file named
# `test.*`, `tests.*` or `spec.*` (tests beside the code: `src/users/test.ts`). Not `mock/` or
# `testing/`: libraries ship those as product code (undici's MockAgent, rxjs's TestScheduler).
# The same expression as isTestPath in node_ts_service/src/chunker.ts, which sets each chunk's
# is_test (a describe/it/test block is test code wherever it is, by the chunker's say alone);
# tests/fixtures/test_paths.json pins both to one table.
_TEST_PATH = re.compile(
    r"(?:^|/)(?:__tests__|__mocks__|__fixtures__|tests?|specs?|e2e|fixtures?|mocks)(?:/|$)"
    r"|\.(?:test|spec)\.[cm]?[jt]sx?$|(?:^|/)(?:tests?|spec)\.[cm]?[jt]sx?$"
)
# Words that make a query about tests rather than about the code under test.
TEST_WORDS = frozenset(
    ["test", "tests", "testing", "spec", "specs", "unit", "e2e", "mock", "mocks", "fixture", "fixtures", "jest",
     "mocha"]
)


def is_test_path(relative_path: str) -> bool:
    return bool(_TEST_PATH.search(relative_path))


def mentions_tests(lowered_words: Iterable[str]) -> bool:
    return any(w in TEST_WORDS for w in lowered_words)
