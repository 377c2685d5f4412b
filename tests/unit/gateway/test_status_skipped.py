"""index_status says what the index left out: the skips counted by reason, and each file whose
code is not in the index (it could not be chunked, is minified, binary, ...) named with why,
in the text an agent reads and in the structured answer."""

from __future__ import annotations

from pathlib import Path

from codecompass_gateway import present

from codecompass.contracts.analysis.model import SkippedFile
from codecompass.contracts.retrieval.model import IndexingStatus, IndexStatusReport

DEEP = "nested too deep to parse: the parser ran out of stack (Maximum call stack size exceeded)"


def _report(*skipped: SkippedFile) -> IndexStatusReport:
    return IndexStatusReport(indexing_status=IndexingStatus.READY, files=3, chunks=9, embedded_chunks=9,
                             embedding_model_id="m", embedding_model_version="1", index_format_version="f",
                             error="", index_bytes=1000, skipped=skipped)


def test_index_status_names_the_files_left_out_and_counts_every_skip() -> None:
    result = present.status_result(_report(SkippedFile("dist", "excluded", "build output", folder=True),
                                           SkippedFile("src/deep.ts", "chunk_failed", DEEP),
                                           SkippedFile("src/link.ts", "duplicate", "same file as src/real.ts")),
                                   Path("/ws"), None, {})
    lines = result.content[0].text.splitlines()
    assert "3 skipped (1 could not be chunked, 1 duplicate path, 1 excluded)" in lines
    assert f"  not indexed: src/deep.ts (could not be chunked: {DEEP})" in lines
    assert result.structured_content["skipped"] == {
        "count": 3, "by_reason": {"chunk_failed": 1, "duplicate": 1, "excluded": 1},
        "not_indexed": [{"path": "src/deep.ts", "reason": "chunk_failed", "detail": DEEP}], "not_indexed_count": 1,
    }


def test_index_status_with_nothing_skipped_says_nothing_about_skips() -> None:
    result = present.status_result(_report(), Path("/ws"), None, {})
    assert "skipped" not in result.content[0].text
    assert result.structured_content["skipped"] == {"count": 0, "by_reason": {}, "not_indexed": [],
                                                    "not_indexed_count": 0}
