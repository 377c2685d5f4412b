"""What every pair rule shares: query sizes, duplicates, caps, and the repositories never mined."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from models.corpus import mine
from models.corpus.pairs import (
    DEFAULT_CAP,
    PER_TARGET_CAP,
    Pair,
    Repo,
    finalize,
    is_train_file,
    prose_words,
    repo_cap,
    well_sized,
)

from codecompass_dev.evaluation.metrics import Target


def pair(query: str, name: str) -> Pair:
    return Pair("test", query, [Target("src/a.ts", name, 1, 2)])


def test_quoted_literals_are_not_prose() -> None:
    assert prose_words('"a/*.js" should match "b/**"') == ["should", "match"]
    assert not well_sized('"a/*.js" should match "b/**"')
    assert well_sized("rejects an expired session credential")
    assert not well_sized(" ".join(["word"] * 41))


def test_one_text_for_two_answers_is_dropped_and_copies_are_kept_once() -> None:
    pairs = [
        pair("parses a header line", "parse"),
        pair("Parses a header line", "lex"),
        pair("reads one token", "read"),
    ]
    pairs.append(pair("reads one token", "read"))
    kept, stats = finalize(pairs, 10, "seed")
    assert [p.query for p in kept] == ["reads one token"]
    assert (stats["same_text_other_answer"], stats["duplicate_text"]) == (2, 1)


def test_caps_per_answer_and_per_repository() -> None:
    many = [pair(f"matches glob number {n} against the path", "isMatch") for n in range(20)]
    others = [pair(f"compiles pattern {n} into a regex", f"compile{n}") for n in range(20)]
    kept, stats = finalize(many + others, 12, "seed")
    assert sum(p.targets[0].qualified_name == "isMatch" for p in kept) == PER_TARGET_CAP
    assert len(kept) == 12 and stats["over_repo_cap"] > 0
    again, _ = finalize(many + others, 12, "seed")
    assert [p.query for p in again] == [p.query for p in kept]


@pytest.mark.parametrize(
    ("github", "reason"),
    [("colinhacks/zod", "off-limits"), ("pinojs/pino", "quality benchmark repository")],
)
def test_excluded_repositories_are_never_mined(github: str, reason: str, tmp_path: Path, capsys) -> None:
    out = tmp_path / "train.jsonl.gz"
    assert mine.main(["--repos", github, "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{github}: skipped: ") and reason in err[0]
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        assert [json.loads(line) for line in fh] == []


def test_a_malformed_repository_name_is_one_line(capsys) -> None:
    assert mine.main(["--repos", "not-a-repo"]) == 2
    assert capsys.readouterr().err.strip() == "mine: 'not-a-repo' is not owner/name[@commit]"


def test_the_per_rule_cap_grows_with_the_repository_above_a_floor() -> None:
    assert repo_cap(150) == DEFAULT_CAP == 400
    assert repo_cap(4_000) == 400
    assert repo_cap(20_000) == 2_000
    assert repo_cap(20_000, floor=100, per_symbol=0.02) == 400


def test_reuse_keeps_a_repository_mined_at_the_same_commit_and_settings(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src/a.ts").write_text(
        'export function check(x: string) {\n  if (!x) throw new Error("the input must be a non-empty string");\n}\n'
    )
    monkeypatch.setattr(mine, "PAIRS_DIR", tmp_path / "pairs")
    monkeypatch.setattr(mine, "prepare", lambda github, commit: Repo(github, commit, root))
    out = tmp_path / "train.jsonl.gz"
    argv = ["--repos", f"someone/lib@{'a' * 40}", "--rules", "error", "--reuse", "--out", str(out)]
    assert mine.main(argv) == 0
    first = out.read_bytes()

    def must_not_mine(*_args, **_kwargs):
        raise AssertionError("mined again")

    monkeypatch.setattr(mine, "mine_repo", must_not_mine)
    assert mine.main(argv) == 0
    assert out.read_bytes() == first
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        assert [json.loads(line)["query"] for line in fh] == ["the input must be a non-empty string"]
    # Another setting is another corpus: mined again.
    with pytest.raises(AssertionError, match="mined again"):
        mine.main([*argv, "--cap", "10"])


def test_tool_installed_bundles_are_not_the_repositorys_code() -> None:
    assert is_train_file("src/index.ts") and is_train_file("lib/yarn-helpers.js")
    assert not is_train_file(".yarn/releases/yarn-4.1.1.cjs")
    assert not is_train_file("node_modules/a/index.js") and not is_train_file("dist/index.min.js")
