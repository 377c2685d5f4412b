"""The JSDoc, test-title, file-header and error rules of the training corpus, on one small synthetic repository.

One run of the real miners (the TypeScript compiler in Node) over a tree in tmp_path, shared by
the module: each rule makes its expected pair and refuses the ambiguous and leaky cases.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from models.corpus.mine import mine_repo
from models.corpus.pairs import Repo
from tests.fixtures.trees import write_tree

TREE = {
    "package.json": json.dumps({"name": "mylib"}),
    "src/token.ts": """// Signing, verification and expiry of the credentials a client presents.

import { now } from './clock';

export function verifyToken(token: string): boolean {
  if (!token) throw new Error("a session credential must be a non-empty string");
  return token.length > 3 && now() > 0;
}
""",
    "src/clock.ts": """/*! Copyright (c) 2024 Someone. Released under the MIT License. */
export function now(): number {
  return Date.now();
}
""",
    "src/format.ts": """/** Formats a date the way the audit log prints it, in UTC. */
export function formatDate(d: Date): string {
  if (Number.isNaN(d.getTime())) throw new Error("the date is not a valid calendar date");
  return d.toISOString();
}

/** Returns the tokens of a tiny expression grammar. */
export function parse(s: string): string[] {
  return s.split(' ');
}

/** The parse options builder for every expression of the grammar. */
export function parseOptions(): object {
  return {};
}
""",
    "src/grammar.ts": """// Helpers of the grammar module that every expression goes through.

/** Returns the tokens of a tiny expression grammar. */
export function parse(s: string): number {
  if (!s) throw new Error("the date is not a valid calendar date");
  return s.length;
}
""",
    "src/stats.ts": """/* Original author: Jim Blandy, who wrote the first version of this parser */

export function countEntries(list: string[]): number {
  return list.length;
}
""",
    "src/client.ts": """export interface Client {
  get(url: string): string;
}
export const client: Client = {
  get: (url) => url,
};
""",
    "test/token.test.ts": """import { verifyToken } from '../src/token';
import { formatDate, parse } from 'mylib';
import { client } from '../src/client';

describe('sessions', () => {
  it('rejects an expired or unsigned credential', () => {
    expect(verifyToken('')).toBe(false);
  });
  it('verifyToken accepts long enough strings', () => {
    expect(verifyToken('abcdef')).toBe(true);
  });
  it('works', () => {
    verifyToken('x');
  });
});

test('prints the audit log timestamp in UTC', () => {
  formatDate(new Date(0));
});

test('splits an expression into its words', () => {
  parse('a b');
});

test('fetches the profile page of the current user', () => {
  client.get('/me');
});
""",
}


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], Counter]:
    root = write_tree(tmp_path_factory.mktemp("repo"), TREE)
    rows, stats = mine_repo(Repo("someone/mylib", "0" * 40, root), ("jsdoc", "test", "header", "error"), 400, 10)
    return root, rows, stats


def by_rule(rows: list[dict], rule: str) -> dict[str, dict]:
    return {row["query"]: row for row in rows if row["rule"] == rule}


def blanked_text(root: Path, row: dict) -> list[str]:
    texts = []
    for blank in row["blank"]:
        text = (root / blank["path"]).read_text(encoding="utf-8")
        texts.extend(text[start:end] for start, end in blank["spans"])
    return texts


def test_jsdoc_rule_pairs_the_sentence_with_its_symbol_and_blanks_the_comment(mined) -> None:
    root, rows, _ = mined
    jsdoc = by_rule(rows, "jsdoc")
    # The sentence documenting two `parse`s has no single answer; the one naming parseOptions leaks.
    assert list(jsdoc) == ["Formats a date the way the audit log prints it, in UTC."]
    row = jsdoc["Formats a date the way the audit log prints it, in UTC."]
    assert row["targets"] == [{"path": "src/format.ts", "qualified_name": "formatDate", "start_line": 2, "end_line": 5}]
    assert blanked_text(root, row) == ["/** Formats a date the way the audit log prints it, in UTC. */"]
    assert (row["repo"], row["commit"], row["id"]) == ("someone/mylib", "0" * 40, "jsdoc-someone+mylib-0001")


def test_test_rule_pairs_titles_with_the_one_symbol_each_call_resolves_to(mined) -> None:
    root, rows, stats = mined
    tests = by_rule(rows, "test")
    # Refused: the title naming verifyToken, 'works' (too short), `parse` (two definitions),
    # `client.get` (an interface's method: a call into the repository with no named symbol).
    assert sorted(tests) == [
        "prints the audit log timestamp in UTC",
        "sessions rejects an expired or unsigned credential",
    ]
    session = tests["sessions rejects an expired or unsigned credential"]
    assert [(t["path"], t["qualified_name"]) for t in session["targets"]] == [("src/token.ts", "verifyToken")]
    assert session["source"]["resolved_by"] == ["checker"]
    assert blanked_text(root, session) == ["'rejects an expired or unsigned credential'"]
    # 'mylib' imports the repository by its package name, which the compiler cannot follow here.
    audit = tests["prints the audit log timestamp in UTC"]
    assert [(t["path"], t["qualified_name"]) for t in audit["targets"]] == [("src/format.ts", "formatDate")]
    assert audit["source"]["resolved_by"] == ["name"]
    assert (stats["test_ambiguous_call"], stats["test_unnamed_call"], stats["test_leaks_name"]) == (1, 1, 1)
    assert stats["test_too_short_or_long"] == 1


def test_header_rule_pairs_a_real_file_header_with_its_file(mined) -> None:
    root, rows, _ = mined
    headers = by_rule(rows, "header")
    # Not: the banners of clock.ts (licence) and stats.ts (author), the JSDoc sitting on formatDate,
    # grammar.ts's header naming its file.
    assert list(headers) == ["Signing, verification and expiry of the credentials a client presents."]
    row = headers["Signing, verification and expiry of the credentials a client presents."]
    assert [(t["qualified_name"], t["start_line"], t["end_line"]) for t in row["targets"]] == [
        ("<module top level>", 1, 9),
        ("verifyToken", 5, 8),
    ]
    assert blanked_text(root, row) == ["// Signing, verification and expiry of the credentials a client presents."]


def test_error_rule_pairs_a_message_thrown_in_one_place_with_its_thrower(mined) -> None:
    _, rows, _ = mined
    errors = by_rule(rows, "error")
    # "the date is not a valid calendar date" is thrown by two functions: no single answer.
    assert list(errors) == ["a session credential must be a non-empty string"]
    assert errors["a session credential must be a non-empty string"]["targets"][0]["qualified_name"] == "verifyToken"
    assert errors["a session credential must be a non-empty string"]["blank"] == []
