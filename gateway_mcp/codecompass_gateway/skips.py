"""What `codecompass index` says about the paths it left out: the reasons on the summary line,
and the list `--show-skipped` prints, where a folder skipped whole is one line and many files
of one folder skipped for one reason are one line too (an ignored build tree, generated code)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from codecompass.contracts.analysis.model import SkippedFile

# (one, several): how a count of each reason reads, e.g. "2 declaration files", "3 minified".
_LABELS = {
    "ignored": ("ignored", "ignored"),
    "excluded": ("excluded", "excluded"),
    "nested_repository": ("nested repository", "nested repositories"),
    "declaration_file": ("declaration file", "declaration files"),
    "minified": ("minified", "minified"),
    # Generated source (a generator's header marker or file-name suffix; ANALYSIS_INDEX_GENERATED keeps it).
    "generated": ("generated", "generated"),
    "binary": ("binary", "binary"),
    "not_utf8": ("not UTF-8", "not UTF-8"),
    "too_large": ("too large", "too large"),
    "unreadable": ("unreadable", "unreadable"),
    "vanished": ("vanished", "vanished"),
    "outside_workspace": ("outside the workspace", "outside the workspace"),
    "symlink_loop": ("symlink loop", "symlink loops"),
    # Read but not chunkable: the parser or type checker ran out of stack, crashed or timed out.
    "chunk_failed": ("could not be chunked", "could not be chunked"),
    # Another name (a symlink inside the workspace) for a file or folder indexed under its own path.
    "duplicate": ("duplicate path", "duplicate paths"),
}
# More files than this in one folder skipped for one reason and detail print as one line.
GROUP_AT = 10
# Reasons a source file's own content is missing from the index, as opposed to a path the
# workspace's rules leave out (ignored, excluded, ...) or one that another path stands for
# (duplicate, symlink loop): what someone searching for that file's code must be told. Generated
# code is here, unlike declaration files: its symbols are indexed nowhere else.
CONTENT_LEFT_OUT = frozenset({"chunk_failed", "minified", "generated", "binary", "not_utf8", "too_large",
                              "unreadable"})


def label(reason: str, count: int = 1) -> str:
    one, several = _LABELS.get(reason, (reason.replace("_", " ") or "skipped",) * 2)
    return one if count == 1 else several


def summary(skipped: Sequence[SkippedFile]) -> str:
    """'14 skipped (6 ignored, 5 declaration files, 2 excluded, 1 minified)': most frequent first."""
    if not skipped:
        return "0 skipped"
    counts = Counter(s.reason for s in skipped)
    parts = ", ".join(f"{n} {label(reason, n)}" for reason, n in sorted(counts.items(), key=lambda i: (-i[1], i[0])))
    return f"{len(skipped)} skipped ({parts})"


def listing(skipped: Sequence[SkippedFile]) -> list[str]:
    """One line per skipped folder, per group of files, or per file: path, reason, detail."""
    rows: list[tuple[str, str, str]] = []
    groups: dict[tuple[str, str, str], list[SkippedFile]] = {}
    for entry in skipped:
        if entry.folder:
            rows.append((f"{entry.relative_path}/", entry.reason, entry.detail))
        else:
            parent = entry.relative_path.rpartition("/")[0]
            groups.setdefault((parent, entry.reason, entry.detail), []).append(entry)
    for (parent, reason, detail), files in groups.items():
        if len(files) > GROUP_AT:
            rows.append((f"{parent or '.'}/ ({len(files)} files)", reason, detail))
        else:
            rows.extend((f.relative_path, f.reason, f.detail) for f in files)
    rows.sort()
    width = max((len(path) for path, _, _ in rows), default=0)
    return [f"  {path:<{width}}  {label(reason):<21}  {detail}".rstrip() for path, reason, detail in rows]
