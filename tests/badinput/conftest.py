"""The bad-input suite (issue 10, section 6): one set of real services for this folder, started
by `codecompass up` on a private state dir, driven through the `codecompass` CLI as a user drives
it, with the index read back from its tables afterwards.

Every test carries ``@pytest.mark.badinput(case=..., behaviour=...)``; `make bench-badinput`
runs exactly the tests so marked (here and elsewhere) and writes the table the README shows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from codecompass_cli.services import NODE_ENTRY
from tests.badinput.harness import Stack


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One `codecompass up` for the whole folder; each module indexes its own workspaces."""
    if not NODE_ENTRY.is_file():
        pytest.fail(f"{NODE_ENTRY} is missing: run `make setup`", pytrace=False)
    stack = Stack(tmp_path_factory.mktemp("badinput"))
    stack.up()
    try:
        yield stack
    finally:
        stack.cli("down")
