"""What the test-title and JSDoc rules take as a target, on one small synthetic repository.

Test titles: `new F()` is F's constructor (a large class without one is no answer), and test
helpers are neither answers nor a reason to drop the test. JSDoc: classes, and the exported
module-scope constants, interfaces and types the analysis service chunks, besides functions;
never a private constant's note, never a tags-only JSDoc. Plain comments on a declaration:
the same rule, never a directive or commented-out code. Documentation sections: the one symbol
their heading names as code.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from models.corpus.mine import mine_repo
from models.corpus.pairs import Repo
from tests.fixtures.trees import write_tree

LARGE_CLASS_BODY = "\n".join(f"  option{i}(): number {{\n    return {i};\n  }}" for i in range(25))

TREE = {
    "src/command.ts": f"""export class Command {{
  parse(argv: string[]): string[] {{
    return argv.slice(2);
  }}
{LARGE_CLASS_BODY}
}}

export class Point {{
  x = 0;
  y = 0;
}}

export class Grammar {{
  rules: string[];
  constructor(rules: string[]) {{
    this.rules = rules;
  }}
}}
""",
    "src/settings.ts": """/** The values every program starts with before its flags override them. */
export const defaultSettings = {
  verbose: false,
  colour: true,
};

/** Bookkeeping of the option table during a single reading of the arguments. */
const table = new Map<string, string>();

/** Where a flag came from when the arguments were read. */
export interface FlagOrigin {
  source: string;
}

/**
 * @param name the flag
 * @returns its value
 */
export function flagValue(name: string): string {
  return table.get(name) ?? name;
}

/** A terminal application with its flags and its subcommands, ready to run. */
export class Program {
  run(): void {}
}
""",
    "src/limits.js": """/** The largest sizes a request body may reach before it is refused. */
const LIMITS = { body: 1024 };

module.exports = { LIMITS };
""",
    "src/legacy.js": """'use strict';

// Walk up from the working folder until a configuration
// file is found, and read it.
function findConfig(cwd) {
  return cwd;
}

// eslint-disable-next-line no-unused-vars
function unusedHelper() {
  return 1;
}

// const old = readSettings(cwd); return old;
function replacement() {
  return 2;
}

/* Split a list of paths on the platform's delimiter, dropping the empty ones. */
function splitPaths(list) {
  return list.split(':').filter(Boolean);
}

// Sorts the table of handlers by priority.
/** Sorts the table of handlers by their declared priority, highest first. */
function sortHandlers(table) {
  return table;
}

// We do the same thing for the other direction of the stream as well.
function mirrorStream(s) {
  return s;
}

module.exports = { findConfig, unusedHelper, replacement, splitPaths, sortHandlers, mirrorStream };
""",
    "README.md": """# cli

## Options

Every option of the program can also be set in the environment.

### `flagValue(name)`

![badge](https://example.com/b.svg)

Looks up the value a flag was given on the command line. Falls back to the name.

### program.parse(argv)

```js
# Reads nothing: a comment inside fenced code, not a heading
program.parse(process.argv)
```

Reads the arguments and runs the matching subcommand.

### `Point` and `Grammar`

Both describe the shapes the parser works with in memory.
""",
    "CHANGELOG.md": """### `flagValue(name)`

Returns the flag's name when the flag was never given.
""",
    "test/helpers.ts": """import { Command } from '../src/command';

export function expectParsed(program: Command, argv: string[]): void {
  if (program.parse(argv).length === 0) throw new Error('nothing parsed');
}
""",
    "test/cli.test.ts": """import { Command, Point, Grammar } from '../src/command';
import { expectParsed } from './helpers';

it('reads the flags given after the script name', () => {
  const program = new Command();
  program.parse(['node', 'script', '--verbose']);
  expectParsed(program, ['node', 'script', '-v']);
});

it('keeps both coordinates of a location', () => {
  new Point();
});

it('builds a table from the rule list it was given', () => {
  new Grammar(['a']);
});

it('starts a program that nobody configured at all', () => {
  new Command();
});
""",
}


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], Counter]:
    root = write_tree(tmp_path_factory.mktemp("repo"), TREE)
    rows, stats = mine_repo(Repo("someone/cli", "0" * 40, root), ("jsdoc", "comment", "doc", "test"), 400, 10)
    return root, rows, stats


def targets(rows: list[dict], rule: str) -> dict[str, list[tuple[str, str]]]:
    return {
        row["query"]: [(t["path"], t["qualified_name"]) for t in row["targets"]] for row in rows if row["rule"] == rule
    }


def test_constructing_a_class_targets_its_constructor_or_a_small_class_never_a_large_one(mined) -> None:
    _, rows, stats = mined
    assert targets(rows, "test") == {
        # The helper from test/helpers.ts and the 80-line class are not answers; the parse is.
        "reads the flags given after the script name": [("src/command.ts", "Command.parse")],
        "keeps both coordinates of a location": [("src/command.ts", "Point")],
        "builds a table from the rule list it was given": [("src/command.ts", "Grammar.constructor")],
    }
    # 'starts a program that nobody configured at all' constructs only the large class: no answer.
    assert stats["test_no_call"] == 1
    assert stats["test_large_class_constructions_ignored"] == 2
    assert stats["test_helper_calls_ignored"] == 1


def test_jsdoc_of_exported_constants_interfaces_and_classes_pairs_with_their_chunks(mined) -> None:
    root, rows, stats = mined
    jsdoc = {row["query"]: row for row in rows if row["rule"] == "jsdoc"}
    assert {query: [(t["path"], t["qualified_name"], t["start_line"], t["end_line"]) for t in row["targets"]]
            for query, row in jsdoc.items()} == {
        "The values every program starts with before its flags override them.": [
            ("src/settings.ts", "defaultSettings", 2, 5)
        ],
        "Where a flag came from when the arguments were read.": [("src/settings.ts", "FlagOrigin", 11, 13)],
        "A terminal application with its flags and its subcommands, ready to run.": [
            ("src/settings.ts", "Program", 24, 26)
        ],
        "The largest sizes a request body may reach before it is refused.": [("src/limits.js", "LIMITS", 2, 2)],
        "Sorts the table of handlers by their declared priority, highest first.": [
            ("src/legacy.js", "sortHandlers", 26, 28)
        ],
    }  # fmt: skip
    # Not the private `table`'s note, not flagValue's tags-only JSDoc.
    row = jsdoc["The values every program starts with before its flags override them."]
    text = (root / "src/settings.ts").read_text(encoding="utf-8")
    assert [text[a:b] for a, b in row["blank"][0]["spans"]] == [
        "/** The values every program starts with before its flags override them. */"
    ]
    assert (stats["jsdoc_kind_variable"], stats["jsdoc_kind_interface"], stats["jsdoc_kind_class"]) == (2, 1, 1)


def test_a_plain_comment_on_a_declaration_pairs_like_a_jsdoc(mined) -> None:
    root, rows, stats = mined
    comments = {row["query"]: row for row in rows if row["rule"] == "comment"}
    # Not the eslint directive, the commented-out code, the "We do the same..." that needs its
    # context, or the `//` above sortHandlers' JSDoc.
    assert {query: [(t["qualified_name"], t["start_line"], t["end_line"]) for t in row["targets"]]
            for query, row in comments.items()} == {
        "Walk up from the working folder until a configuration file is found, and read it.": [("findConfig", 5, 7)],
        "Split a list of paths on the platform's delimiter, dropping the empty ones.": [("splitPaths", 20, 22)],
    }  # fmt: skip
    row = comments["Walk up from the working folder until a configuration file is found, and read it."]
    text = (root / "src/legacy.js").read_text(encoding="utf-8")
    assert [text[a:b] for a, b in row["blank"][0]["spans"]] == [
        "// Walk up from the working folder until a configuration\n// file is found, and read it."
    ]
    assert stats["comment_not_prose"] == 3


def test_a_documentation_section_pairs_with_the_one_symbol_its_heading_names(mined) -> None:
    _, rows, stats = mined
    docs = {row["query"]: row for row in rows if row["rule"] == "doc"}
    # Not "## Options" (no code), not the heading naming two classes, not the changelog.
    assert {query: [(t["path"], t["qualified_name"]) for t in row["targets"]] for query, row in docs.items()} == {
        "Looks up the value a flag was given on the command line.": [("src/settings.ts", "flagValue")],
        "Reads the arguments and runs the matching subcommand.": [("src/command.ts", "Command.parse")],
    }
    assert all(row["blank"] == [] and row["source"]["path"] == "README.md" for row in docs.values())
    assert stats["doc_ambiguous_heading"] == 1
