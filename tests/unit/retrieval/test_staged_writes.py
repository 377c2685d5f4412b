"""Staged writes: rows written as uncommitted Lance fragments by one process and committed by the
writer in one version per table (ChunkWriter.stage / commit_staged), on a local LanceDB."""

import json
from collections import Counter

import lancedb
import numpy as np
import pytest
from tests.unit.retrieval.test_store import MODEL, make_chunk, unit

from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.filters import Filters
from codecompass.retrieval.index.chunk_writer import ChunkWriter, StagedWrite
from codecompass.retrieval.schema import sources_table_name
from codecompass.retrieval.search.chunk_reader import StoreError

STATIC = EmbeddingModel("static", "code-static", "w1", 3)


@pytest.fixture
def uri(tmp_path) -> str:
    return str(tmp_path / "index")


def open_store(uri: str, static: EmbeddingModel | None = STATIC) -> ChunkWriter:
    return ChunkWriter.open(uri, model=MODEL, chunker_version="c1", static=static)


def source_keys(uri: str, store: ChunkWriter) -> list[str]:
    table = lancedb.connect(uri).open_table(sources_table_name(store.table_name))
    return table.to_arrow().column("key").to_pylist()


def versions(store: ChunkWriter, uri: str) -> tuple[int, int]:
    sources = lancedb.connect(uri).open_table(sources_table_name(store.table_name))
    return store.version_count(), len(sources.list_versions())


def shipped(write: StagedWrite) -> StagedWrite:
    """The write as another process receives it."""
    return StagedWrite.from_json(json.loads(json.dumps(write.to_json())))


def test_staged_rows_are_invisible_until_one_commit_per_table(uri):
    writer = open_store(uri)
    worker = open_store(uri)
    chunks = [make_chunk("a1", "parseConfig", "src/a.ts"), make_chunk("b1", "renderPage", "src/b.ts")]
    staged = worker.stage(chunks, {"a1": unit(1, 0, 0, 0)}, {"a1": unit(1, 0, 0), "b1": unit(0, 1, 0)})
    before = versions(writer, uri)

    assert staged.rows == 2 and staged.paths == ("src/a.ts", "src/b.ts")
    assert writer.counts() == (0, 0)
    assert open_store(uri).counts() == (0, 0)
    assert source_keys(uri, writer) == []

    writer.commit_staged([shipped(staged)])

    assert versions(writer, uri) == (before[0] + 1, before[1] + 1)
    assert writer.counts() == (2, 1)
    [a, b] = writer.get_chunks(["a1", "b1"])
    assert (a, b) == (chunks[0], chunks[1])
    assert [h.chunk.id for h in writer.search_lexical("parse config", Filters(), 5)] == ["a1"]
    assert [h.chunk.id for h in writer.search_vector(unit(1, 0, 0, 0), Filters(), 5)] == ["a1"]
    static_hits = writer.search_static_vector(unit(0, 1, 0), Filters(), 5, without_primary=False)
    assert next(h.chunk.id for h in static_hits) == "b1"
    assert writer.vector_counts().static == 2
    # A reader that opens the index afterwards sees the same rows.
    assert open_store(uri).counts() == (2, 1)


def test_a_text_staged_by_two_workers_is_stored_once(uri):
    writer = open_store(uri)
    # Two files with the same content: the same text, under the same content key, in two shards.
    same = "export const version = '1.0.0';"
    first = open_store(uri).stage([make_chunk("x1", "version", "pkg/x/version.ts", source=same)], {}, {})
    second = open_store(uri).stage([make_chunk("y1", "version", "pkg/y/version.ts", source=same)], {}, {})
    assert first.source_keys == second.source_keys

    writer.commit_staged([first, second])

    assert source_keys(uri, writer) == list(first.source_keys)
    assert [c.full_source for c in writer.get_chunks(["x1", "y1"])] == [same, same]


def test_a_reindex_replaces_the_rows_of_its_files_in_one_chunk_version(uri):
    writer = open_store(uri)
    writer.apply_changes(upserts=[make_chunk("a1", "oldName", "src/a.ts"), make_chunk("a2", "gone", "src/a.ts"),
                                  make_chunk("b1", "keep", "src/b.ts"), make_chunk("c1", "skipped", "src/c.ts")],
                         delete_ids=[], vectors={})
    chunk_versions = writer.version_count()
    staged = open_store(uri).stage([make_chunk("a1", "newName", "src/a.ts"), make_chunk("a3", "added", "src/a.ts")],
                                   {}, {})

    # src/c.ts was re-chunked by a worker too, and is now skipped: its rows go as well.
    writer.commit_staged([staged], replace_paths=["src/c.ts"])

    assert writer.version_count() == chunk_versions + 1
    rows = writer.outline()
    assert Counter(r["id"] for r in rows) == Counter({"a1": 1, "a3": 1, "b1": 1})
    assert writer.get_chunks(["a1"])[0].name == "newName"


def test_texts_already_in_the_table_are_not_stored_twice(uri):
    writer = open_store(uri)
    chunk = make_chunk("a1", "parseConfig", "src/a.ts")
    writer.apply_changes(upserts=[chunk], delete_ids=[], vectors={})
    keys = source_keys(uri, writer)

    writer.commit_staged([open_store(uri).stage([chunk], {}, {})])

    assert source_keys(uri, writer) == keys
    assert writer.get_chunks(["a1"]) == [chunk]


def test_rows_staged_for_another_identity_are_refused_and_nothing_is_committed(uri):
    writer = open_store(uri)
    other = open_store(uri, static=None).stage([make_chunk("a1", "parseConfig")], {}, {})
    before = versions(writer, uri)

    with pytest.raises(StoreError, match="staged rows for table .* cannot be committed to"):
        writer.commit_staged([other])

    assert versions(writer, uri) == before
    assert writer.counts() == (0, 0)


def test_staging_checks_vector_dimensions_like_apply_changes(uri):
    worker = open_store(uri)
    with pytest.raises(StoreError, match="has 3 dimensions but the index was built for 4"):
        worker.stage([make_chunk("a1", "f")], {"a1": np.ones(3, dtype=np.float32)}, {})


def test_staged_rows_are_the_rows_apply_changes_writes(tmp_path):
    chunks = [make_chunk("a1", "parseConfig", "src/a.ts", jsdoc="/** Parses. */"),
              make_chunk("a2", "readFile", "src/a.ts", is_test=True), make_chunk("b1", "render", "src/b.ts")]
    vectors = {"a1": unit(1, 2, 0, 0)}
    static = {c.id: unit(1, 0, i) for i, c in enumerate(chunks)}
    merged = open_store(str(tmp_path / "merged"))
    merged.apply_changes(upserts=chunks, delete_ids=[], vectors=vectors, static_vectors=static)
    staged = open_store(str(tmp_path / "staged"))
    staged.commit_staged([staged.stage(chunks, vectors, static)])

    def rows(store: ChunkWriter, uri: str):
        db = lancedb.connect(uri)
        return (db.open_table(store.table_name).to_arrow().sort_by("id"),
                db.open_table(sources_table_name(store.table_name)).to_arrow().sort_by("key"))

    assert rows(staged, str(tmp_path / "staged")) == rows(merged, str(tmp_path / "merged"))


def test_a_reindex_over_indexed_rows_is_searchable_at_once(uri):
    writer = open_store(uri)
    writer.apply_changes(upserts=[make_chunk("a1", "parseConfig", "src/a.ts"),
                                  make_chunk("b1", "renderPage", "src/b.ts")],
                         delete_ids=[], vectors={"a1": unit(1, 0, 0, 0)})
    writer.maintain()
    assert writer.index_status(), "the full-text index exists"

    writer.commit_staged([open_store(uri).stage([make_chunk("a1", "loadSettings", "src/a.ts")],
                                                {"a1": unit(0, 1, 0, 0)}, {})])

    assert [h.chunk.id for h in writer.search_lexical("load settings", Filters(), 5)] == ["a1"]
    assert writer.search_lexical("parse config", Filters(), 5) == []
    assert [h.chunk.id for h in writer.search_lexical("render page", Filters(), 5)] == ["b1"]
    assert [h.chunk.id for h in writer.search_vector(unit(0, 1, 0, 0), Filters(), 1)] == ["a1"]


def test_vector_counts_from_the_snapshot_are_the_tables_counts(uri):
    # Without a vector index the counts come from the version's vector snapshot, not four scans.
    writer = open_store(uri)
    chunks = [make_chunk("a1", "parseConfig", "src/a.ts"), make_chunk("b1", "renderPage", "src/b.ts"),
              make_chunk("c1", "loadFile", "src/c.ts")]
    writer.apply_changes(upserts=chunks,
                         delete_ids=[], vectors={"a1": unit(1, 0, 0, 0)},
                         static_vectors={"a1": unit(1, 0, 0), "b1": unit(0, 1, 0)})
    counts = writer.vector_counts()
    table = writer._table
    assert (counts.total, counts.primary) == (table.count_rows(), table.count_rows("has_vector = true")) == (3, 1)
    assert (counts.static, counts.static_only) == (2, 1)
    # A new version is counted again.
    writer.apply_changes(upserts=[], delete_ids=["b1"], vectors={})
    assert (writer.vector_counts().total, writer.vector_counts().static_only) == (2, 0)
