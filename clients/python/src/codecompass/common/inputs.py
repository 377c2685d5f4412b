"""What every entry point checks of a text argument before using it, and how a refusal quotes one.

A path or name from a caller reaches the file system, SQL literals and log lines: a NUL there is
never meant (no path or identifier holds one) and fails deep inside with a message about
something else ("embedded null byte", a type name), and one longer than any path the system
allows fails as an OSError. Both are refused where the argument enters, in one line naming it.
A refusal quotes only a prefix of what it refuses: echoing a 100 KB argument back fills the
caller's screen or an agent's context with its own input.
"""

from __future__ import annotations

# Linux's PATH_MAX (macOS's is 1,024; Windows' long paths 32,767): no file or folder the services
# could open has a longer name, so a longer path or symbol is a mistake, never a lookup to try.
MAX_PATH_CHARS = 4096
# A single path component longer than this is refused by every common file system (NAME_MAX).
MAX_NAME_BYTES = 255
# Characters of a refused argument a message shows.
QUOTE_CHARS = 80


def quoted(value: object, limit: int = QUOTE_CHARS) -> str:
    """`value` as a message shows it: a text's repr, or its first `limit` characters' and its
    length; any other value's repr, cut at `limit` characters likewise."""
    if not isinstance(value, str):
        shown = repr(value)
        return shown if len(shown) <= limit else f"{shown[:limit]}… ({len(shown):,} characters)"
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value):,} characters)"


def text_problem(text: str, name: str, max_chars: int) -> str | None:
    """Why the argument `name` cannot be used, in words, or None: a NUL character, or more than
    `max_chars` characters."""
    if (at := text.find("\x00")) >= 0:
        return f"{name} contains a NUL character (at position {at:,}): {quoted(text)}"
    if len(text) > max_chars:
        return f"{name} is {len(text):,} characters long, over the limit of {max_chars:,}: {quoted(text)}"
    return None


def path_problem(text: str, name: str) -> str | None:
    """`text_problem` for a path, which also may not hold a component no file system allows."""
    if (problem := text_problem(text, name, MAX_PATH_CHARS)) is not None:
        return problem
    longest = max(_utf8_length(part) for part in text.replace("\\", "/").split("/"))
    if longest > MAX_NAME_BYTES:
        return (f"{name} has a file or folder name of {longest:,} bytes, over the {MAX_NAME_BYTES} any file "
                f"system allows: {quoted(text)}")
    return None


def _utf8_length(text: str) -> int:
    # surrogatepass: a JSON string may carry a lone surrogate, which strict UTF-8 cannot encode.
    return len(text.encode("utf-8", "surrogatepass"))
