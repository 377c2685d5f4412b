"""Repositories and packages that must never be part of a benchmark corpus, query set or tuning.

They are the independent-evaluation repositories (DEVELOPERS.md): a ranking tuned on them
would be scored on its own training data. tests/unit/bench/test_corpus_policy.py checks the
committed corpus and queries against its own copy of this list.
"""

from __future__ import annotations

import re

# npm package names / scopes and GitHub repositories, lower case.
OFF_LIMITS_PACKAGES = frozenset(
    {"zod", "hono", "date-fns", "express", "vite", "vitest", "axios", "redux", "@excalidraw/excalidraw"}
)
OFF_LIMITS_SCOPES = frozenset({"@trpc", "@continuedev", "@reduxjs", "@excalidraw", "@vitest", "@hono"})
OFF_LIMITS_REPOS = frozenset(
    {
        "colinhacks/zod",
        "honojs/hono",
        "date-fns/date-fns",
        "expressjs/express",
        "excalidraw/excalidraw",
        "vitejs/vite",
        "vitest-dev/vitest",
        "trpc/trpc",
        "continuedev/continue",
        "axios/axios",
        "reduxjs/redux",
        "reduxjs/redux-toolkit",
        "minishlab/semble",
    }
)
# Repository names alone (a workspace folder, a query's `repo`).
OFF_LIMITS_NAMES = frozenset(
    {
        "zod",
        "hono",
        "date-fns",
        "express",
        "excalidraw",
        "vite",
        "vitest",
        "trpc",
        "continue",
        "axios",
        "redux",
        "semble",
    }
)
_SCOPE_OF = re.compile(r"^(@[^/]+)/")


def off_limits(name: str) -> bool:
    """True for an off-limits npm package, scope member, GitHub repository or repository name."""
    lowered = name.lower().strip()
    scope = _SCOPE_OF.match(lowered)
    return (
        lowered in OFF_LIMITS_PACKAGES
        or lowered in OFF_LIMITS_REPOS
        or lowered in OFF_LIMITS_NAMES
        or (scope is not None and scope.group(1) in OFF_LIMITS_SCOPES)
        or lowered.split("/")[-1] in OFF_LIMITS_NAMES
        and "/" in lowered
        and not lowered.startswith("@")
    )


def assert_allowed(name: str) -> None:
    if off_limits(name):
        raise SystemExit(f"{name} is off-limits for the benchmarks (codecompass_dev/corpus/policy.py)")
