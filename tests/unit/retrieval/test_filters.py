"""Filter translation to SQL: quoting, path prefixes and globs (pure; LanceDB-backed
behaviour of the same predicates is covered in test_store.py)."""

import re

import pytest

from codecompass.common.chunks import Language, NodeKind
from codecompass.contracts.retrieval.filters import FilterError, Filters, glob_to_regex
from codecompass.retrieval.filter_sql import sql_in, sql_string, to_sql


def test_sql_string_doubles_quotes_only():
    assert sql_string("o'brien") == "'o''brien'"
    assert sql_string("a\\b%_") == "'a\\b%_'"
    assert sql_string("') OR true --") == "''') OR true --'"


def test_sql_string_rejects_nul():
    with pytest.raises(FilterError):
        sql_string("a\x00b")


def test_sql_in_quotes_every_value():
    assert sql_in("id", ["a", "b'c"]) == "id IN ('a', 'b''c')"


@pytest.mark.parametrize(
    ("glob", "matches", "rejects"),
    [
        ("src/*.ts", ["src/a.ts"], ["src/x/a.ts", "lib/a.ts", "src/a.tsx"]),
        ("src/**/*.ts", ["src/a.ts", "src/x/y/a.ts"], ["lib/a.ts"]),
        ("*.test.ts", ["a.test.ts", "src/deep/a.test.ts"], ["src/a.ts"]),
        ("src/**", ["src/a.ts", "src/x/b.ts"], ["srcx/a.ts"]),
        ("src/", ["src/a.ts", "src/x/b.ts"], ["lib/a.ts"]),
        ("src/?.ts", ["src/a.ts"], ["src/ab.ts"]),
        ("src/[ab].ts", ["src/a.ts", "src/b.ts"], ["src/c.ts"]),
        ("src/[!ab].ts", ["src/c.ts"], ["src/a.ts"]),
        ("src/*.{ts,tsx}", ["src/a.ts", "src/a.tsx"], ["src/a.js"]),
        ("lib/o'brien/*.ts", ["lib/o'brien/x.ts"], ["lib/obrien/x.ts"]),
    ],
)
def test_glob_to_regex(glob, matches, rejects):
    regex = re.compile(glob_to_regex(glob))
    for path in matches:
        assert regex.match(path), (glob, path)
    for path in rejects:
        assert not regex.match(path), (glob, path)


def test_glob_special_characters_are_literal():
    regex = re.compile(glob_to_regex("src/a+b(1)*.ts"))
    assert regex.match("src/a+b(1)x.ts")
    assert not regex.match("src/aab1x.ts")


@pytest.mark.parametrize("bad", ["src/[ab.ts", "src/{a,b.ts"])
def test_unbalanced_globs_are_rejected_at_construction(bad):
    with pytest.raises(FilterError, match="unbalanced"):
        Filters(path_patterns=(bad,))


def test_contradictory_test_filters_are_rejected():
    with pytest.raises(FilterError):
        Filters(exclude_tests=True, only_tests=True)


def test_empty_pattern_is_rejected():
    with pytest.raises(FilterError):
        Filters(path_patterns=("  ",))


@pytest.mark.parametrize("outside", ["../", "../../**", "src/../../x.ts", "..\\other"])
def test_a_pattern_leaving_the_workspace_is_rejected(outside):
    with pytest.raises(FilterError, match="leaves the workspace"):
        Filters(path_patterns=(outside,))


def test_dots_inside_names_are_no_parent_segment():
    assert Filters(path_patterns=("src/..hidden/a..b.ts",)).path_patterns == ("src/..hidden/a..b.ts",)


def test_no_filters_no_predicate():
    assert to_sql(Filters()) is None


def test_prefix_matches_whole_segments_and_quotes():
    sql = to_sql(Filters(path_patterns=("./src/o'brien/",)))
    assert sql == ("((relative_path = 'src/o''brien' OR starts_with(relative_path, 'src/o''brien/')))")


def test_filters_are_anded_and_patterns_ored():
    sql = to_sql(
        Filters(
            path_patterns=("src", "*.ts"),
            languages=(Language.TYPESCRIPT, Language.TSX),
            node_kinds=(NodeKind.FUNCTION,),
            exclude_tests=True,
        )
    )
    assert " OR regexp_like(relative_path, " in sql
    assert "language IN ('typescript', 'tsx')" in sql
    assert "node_kind IN ('function')" in sql
    assert sql.endswith("is_test = false")


def test_an_absolute_pattern_inside_the_workspace_is_read_as_the_relative_one(tmp_path):
    from codecompass.contracts.retrieval.filters import relative_patterns

    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    given = Filters(path_patterns=(f"{root}/src/auth", "lib/**", f"{root}/src/**/*.tsx", f"{root}/"))
    assert relative_patterns(given, root).path_patterns == ("src/auth", "lib/**", "src/**/*.tsx")
    link = tmp_path / "link"
    link.symlink_to(root)  # the workspace as the agent's editor names it, through a symlink
    assert relative_patterns(Filters(path_patterns=(f"{root.resolve()}/src",)), link).path_patterns == ("src",)
    relative = Filters(path_patterns=("src",))
    assert relative_patterns(relative, root) is relative
    with pytest.raises(FilterError, match=r"'/etc/passwd' is outside the workspace .*relative to its root"):
        relative_patterns(Filters(path_patterns=("/etc/passwd",)), root)
    with pytest.raises(FilterError, match="outside the workspace"):
        relative_patterns(Filters(path_patterns=(f"{root}x/src",)), root)  # a sibling sharing the prefix


@pytest.mark.parametrize(("pattern", "said"), [
    ("src\x00", "path pattern contains a NUL character (at position 3)"),
    ("s" * 100_000, "path pattern is 100,000 characters long, over the limit of 4,096"),
])
def test_a_pattern_no_path_can_match_is_refused_at_construction(pattern, said):
    # Raised at construction, the service's request conversion answers INVALID_ARGUMENT; a NUL
    # reaching the SQL literal was an internal error.
    with pytest.raises(FilterError, match=re.escape(said)) as raised:
        Filters(path_patterns=(pattern,))
    assert len(str(raised.value)) < 300
