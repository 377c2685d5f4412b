"""The benchmark's own yardstick for "this result is test code".

Deliberately independent of the product's test detection (codecompass.common.testcode, the
chunker's is_test): a measurement must not move when the thing measured changes its mind.
The library's own code (what its package publishes) is never test code, whatever its name:
mocha's lib/test.js is its Test class. Otherwise a result is test code when any of these
holds, and the first that does is its reason:

- `flag`: the product marked the chunk is_test;
- `block`: the chunk is, or lies inside, a `describe(...)` / `it(...)` / `test(...)` block
  (mocha/jest/vitest/node:test style, including `suite`, `context`, `specify` and modifiers
  such as `it.only` or `test.each`), which the chunker names after the call;
- `path`: the file is in a test folder (`test/`, `tests/`, `__tests__/`, `spec/`, `e2e/`,
  fixtures, mocks, type tests) or is named like a test (`test.ts`, `tests.js`, `spec.ts`,
  `x.test.ts`, `x.spec.js`, `x-test.js`).
"""

from __future__ import annotations

import re

REASONS = ("flag", "block", "path")

_TEST_DIR = re.compile(r"(?:^|/)(?:tests?|__tests__|specs?|e2e|__mocks__|mocks|fixtures?|__fixtures__|test-tsd)/")
_TEST_FILE = re.compile(r"(?:^|/)(?:tests?|specs?)\.[cm]?[jt]sx?$|[.\-_](?:test|spec)s?\.[cm]?[jt]sx?$")
# One segment of a qualified name (`describe('x') > it('y')`) that is a test block's name.
_TEST_BLOCK = re.compile(r"(?:^|>\s*)(?:describe|it|test|suite|context|specify)(?:\.\w+)*\s*\(")


def is_test_path(relative_path: str) -> bool:
    """A file of tests by its folder or name."""
    return bool(_TEST_DIR.search(relative_path) or _TEST_FILE.search(relative_path))


def why_test_code(relative_path: str, qualified_name: str, is_test: bool, library_code: bool = False) -> str | None:
    """Why a result is test code (one of REASONS), or None when it is not."""
    if library_code:
        return None
    if is_test:
        return "flag"
    if _TEST_BLOCK.search(qualified_name):
        return "block"
    if is_test_path(relative_path):
        return "path"
    return None


def is_test_code(relative_path: str, qualified_name: str, is_test: bool, library_code: bool = False) -> bool:
    return why_test_code(relative_path, qualified_name, is_test, library_code) is not None
