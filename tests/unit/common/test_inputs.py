"""What every entry point checks of a text argument, and how a refusal quotes it (issue 29 §5)."""

from __future__ import annotations

from codecompass.common.inputs import MAX_PATH_CHARS, path_problem, quoted, text_problem


def test_a_short_text_is_quoted_whole_and_a_long_one_by_a_prefix_and_its_length() -> None:
    assert quoted("src/x.ts") == "'src/x.ts'"
    long = quoted("a" * 100_000)
    assert long.startswith("'" + "a" * 80 + "'…") and long.endswith("(100,000 characters)")
    assert quoted(["x"] * 50_000).endswith("(250,000 characters)")  # not a text: its repr, cut alike


def test_a_nul_anywhere_is_named_with_its_position() -> None:
    assert text_problem("ab\x00c", "query", 100) == "query contains a NUL character (at position 2): 'ab\\x00c'"
    assert text_problem("abc", "query", 100) is None


def test_a_text_over_its_limit_is_refused_by_its_length() -> None:
    assert text_problem("x" * 11, "ref", 10) == "ref is 11 characters long, over the limit of 10: 'xxxxxxxxxxx'"


def test_a_path_is_held_to_what_file_systems_allow() -> None:
    assert path_problem("/a/" + "b" * 255, "path") is None
    assert "a file or folder name of 256 bytes" in (path_problem("/a/" + "b" * 256, "path") or "")
    # Bytes, not characters: 128 Cyrillic letters are 256 bytes in UTF-8.
    assert "256 bytes" in (path_problem("src/" + "ж" * 128, "path") or "")
    assert "over the limit of 4,096" in (path_problem("a/" * MAX_PATH_CHARS, "path") or "")
    assert path_problem("x\ud800y", "path") is None  # a lone surrogate from JSON is measured, not a crash
