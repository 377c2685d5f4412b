"""`codecompass index`: the reasons on the summary line and the `--show-skipped` list."""

from __future__ import annotations

from codecompass_gateway.skips import GROUP_AT, listing, summary

from codecompass.contracts.analysis.model import SkippedFile

GENERATED = 'matches "*.js" in .gitignore'


def test_summary_counts_each_reason_most_frequent_first() -> None:
    skipped = [SkippedFile(f"t{i}.d.ts", "declaration_file") for i in range(3)] + [
        SkippedFile("vendor", "nested_repository", folder=True), SkippedFile("a.min.js", "minified"),
        SkippedFile("b.min.js", "minified"), SkippedFile("data.js", "binary")]
    assert summary(skipped) == "7 skipped (3 declaration files, 2 minified, 1 binary, 1 nested repository)"
    assert summary([]) == "0 skipped"


def test_listing_prints_folders_once_and_groups_many_files_of_one_folder() -> None:
    skipped = [
        SkippedFile("node_modules", "excluded", "dependencies or build output, left out by default", folder=True),
        *(SkippedFile(f"src/lib/f{i}.js", "ignored", GENERATED) for i in range(GROUP_AT + 1)),
        SkippedFile("src/types.d.ts", "declaration_file", "declarations only"),
        SkippedFile("src/app.min.js", "minified", "longest line 48213 chars"),
    ]
    assert GROUP_AT + 1 == 11  # the widths below
    assert listing(skipped) == [
        "  node_modules/        excluded               dependencies or build output, left out by default",
        "  src/app.min.js       minified               longest line 48213 chars",
        f"  src/lib/ (11 files)  ignored                {GENERATED}",
        "  src/types.d.ts       declaration file       declarations only",
    ]


def test_a_few_files_of_one_folder_are_listed_each() -> None:
    skipped = [SkippedFile(f"gen/f{i}.js", "ignored", GENERATED) for i in range(GROUP_AT)]
    assert [line.split()[0] for line in listing(skipped)] == [f"gen/f{i}.js" for i in range(GROUP_AT)]
