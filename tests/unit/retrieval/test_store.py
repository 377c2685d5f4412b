"""ChunkReader and ChunkWriter against a real embedded LanceDB in a temp directory."""

import random
import threading
from dataclasses import replace
from datetime import timedelta

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.filters import Filters
from codecompass.retrieval.index.chunk_writer import FTS_INDEX_NAME, ChunkWriter
from codecompass.retrieval.schema import (
    FORMAT_METADATA_KEY,
    INDEX_FORMAT_VERSION,
    chunk_schema,
    int4_values,
    stored_int4,
    table_name,
)
from codecompass.retrieval.search.chunk_reader import ChunkReader, DimensionMismatch

MODEL = EmbeddingModel("local", "all-MiniLM-L6-v2", "1", 4)


def make_chunk(
    chunk_id: str,
    name: str,
    path: str = "src/a.ts",
    *,
    source: str = "",
    jsdoc: str = "",
    kind: NodeKind = NodeKind.FUNCTION,
    language: Language = Language.TYPESCRIPT,
    is_test: bool = False,
    references: tuple[SymbolReference, ...] = (),
    snippet_hash: str | None = None,
) -> Chunk:
    return Chunk(
        id=chunk_id,
        snippet_hash=snippet_hash or f"hash-{chunk_id}",
        relative_path=path,
        language=language,
        node_kind=kind,
        name=name,
        qualified_name=name,
        parent_id="",
        child_ids=(),
        depth=0,
        signature=f"function {name}()",
        full_source=source or f"function {name}() {{}}",
        collapsed_source=source or f"function {name}() {{}}",
        start_line=1,
        end_line=3,
        jsdoc=jsdoc,
        jsdoc_start_line=0,
        relevant_imports=(),
        is_test=is_test,
        embedding_text=f"{name} {source}",
        references=references,
    )


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
def store(tmp_path) -> ChunkWriter:
    return ChunkWriter.open(str(tmp_path / "index"), model=MODEL, chunker_version="c1")


def ids(hits) -> list[str]:
    return [h.chunk.id for h in hits]


def test_open_creates_then_reopens_same_table(tmp_path):
    uri = str(tmp_path / "index")
    first = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    assert first.created and not first.rebuilt
    first.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    again = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    assert not again.created and not again.rebuilt
    assert again.counts() == (1, 0)


def test_table_identity_covers_model_chunker_and_format():
    base = table_name(MODEL, "c1")
    assert base != table_name(EmbeddingModel("local", "all-MiniLM-L6-v2", "2", 4), "c1")
    assert base != table_name(EmbeddingModel("local", "all-MiniLM-L6-v2", "1", 8), "c1")
    assert base != table_name(EmbeddingModel("voyage", "all-MiniLM-L6-v2", "1", 4), "c1")
    assert base != table_name(MODEL, "c2")
    assert f"_f{INDEX_FORMAT_VERSION}_" in base
    # Sanitising must not merge distinct identities.
    assert table_name(EmbeddingModel("p", "a/b", "1", 4), "c") != table_name(EmbeddingModel("p", "a_b", "1", 4), "c")


def test_model_change_uses_a_separate_table(tmp_path):
    uri = str(tmp_path / "index")
    old = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    old.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    new_model = EmbeddingModel("local", "all-MiniLM-L6-v2", "2", 4)
    new = ChunkWriter.open(uri, model=new_model, chunker_version="c1")
    assert new.created and new.counts() == (0, 0)
    assert old.counts() == (1, 0)


def test_table_with_older_format_is_dropped_and_rebuilt(tmp_path):
    uri = str(tmp_path / "index")
    db = lancedb.connect(uri)
    name = table_name(MODEL, "c1")
    stale = chunk_schema(MODEL, "c1").with_metadata({FORMAT_METADATA_KEY: "0"})
    db.create_table(name, schema=stale)
    older_name = name.replace(f"_f{INDEX_FORMAT_VERSION}_", "_f0_")
    db.create_table(older_name, schema=stale)
    db.create_table("unrelated", schema=pa.schema([pa.field("x", pa.int32())]))

    store = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")

    assert store.rebuilt and store.created
    tables = set(lancedb.connect(uri).list_tables().tables)
    assert name in tables and older_name not in tables and "unrelated" in tables
    reopened = lancedb.connect(uri).open_table(name)
    assert reopened.schema.metadata[FORMAT_METADATA_KEY.encode()] == INDEX_FORMAT_VERSION.encode()


def test_round_trip_preserves_every_chunk_field(store):
    chunk = replace(make_chunk(
        "a",
        "validateToken",
        jsdoc="/** Checks a token. */",
        references=(SymbolReference("Token", "class Token", "src/t.ts", "t1"),),
    ), indent="\t  ")
    store.apply_changes(upserts=[chunk], delete_ids=[], vectors={"a": unit(1, 0, 0, 0)})
    assert store.get_chunks(["a"]) == [chunk]
    [stored] = store.get_stored(["a"])
    assert stored.has_vector


def test_a_vector_that_is_not_finite_is_not_stored(store):
    # A provider's NaN would become a meaningless quantised vector: the chunk is stored without
    # one, searchable by its words, and the background embedder asks again.
    store.apply_changes(upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")], delete_ids=[],
                        vectors={"a": np.full(4, np.nan, dtype=np.float32), "b": unit(1, 0, 0, 0)})
    assert store.counts() == (2, 1)
    assert not store.get_stored(["a"])[0].has_vector
    assert ids(store.search_lexical("alpha", Filters(), 10)) == ["a"]


def test_an_edit_keeps_the_vectors_of_unchanged_rows_it_replaces(store):
    store.apply_changes(upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")], delete_ids=[],
                        vectors={"a": unit(1, 0, 0, 0), "b": unit(0, 1, 0, 0)})
    changed = make_chunk("b", "beta", source="function beta() { return 2 }", snippet_hash="hash-b2")
    kept = store.apply_changes(upserts=[make_chunk("a", "alpha"), changed], delete_ids=[], vectors={},
                               keep_vectors=["a", "b"])
    # The same snippet keeps its vector; a changed one is stored without (its old vector is stale).
    assert kept == 1
    assert [s.has_vector for s in store.get_stored(["a", "b"])] == [True, False]


def test_upsert_updates_in_place_and_one_commit_per_apply(store):
    store.apply_changes(
        upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")],
        delete_ids=[],
        vectors={},
    )
    version = store.version_count()
    store.apply_changes(
        upserts=[make_chunk("a", "alpha", source="function alpha() { return 42 }")],
        delete_ids=["b"],
        vectors={},
    )
    assert store.version_count() == version + 1
    assert store.counts() == (1, 0)
    assert store.get_chunks(["a"])[0].full_source == "function alpha() { return 42 }"


def test_delete_only_and_noop(store):
    store.apply_changes(
        upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")],
        delete_ids=[],
        vectors={},
    )
    version = store.version_count()
    store.apply_changes(upserts=[], delete_ids=[], vectors={})
    assert store.version_count() == version
    store.apply_changes(upserts=[], delete_ids=["a", "missing"], vectors={})
    assert ids(store.search_lexical("beta alpha", Filters(), 10)) == ["b"]


def test_id_in_both_upserts_and_deletes_is_kept(store):
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=["a"], vectors={})
    assert store.counts() == (1, 0)


def test_quotes_in_paths_and_ids_do_not_break_filters(store):
    path = "src/o'brien/it's.ts"
    tricky = make_chunk("id'); DELETE --", "quoted", path)
    plain = make_chunk("b", "quotedToo", "src/plain.ts")
    store.apply_changes(upserts=[tricky, plain], delete_ids=[], vectors={})
    assert store.chunk_ids_for_files([path]) == [tricky.id]
    assert ids(store.search_lexical("quoted", Filters(path_patterns=("src/o'brien",)), 10)) == [tricky.id]
    assert ids(store.search_lexical("quoted", Filters(path_patterns=("src/o'brien/*.ts",)), 10)) == [tricky.id]
    store.apply_changes(upserts=[], delete_ids=[tricky.id], vectors={})
    assert store.counts() == (1, 0)
    assert store.chunk_ids_for_files([path]) == []


def test_lexical_finds_camel_case_parts(store):
    store.apply_changes(
        upserts=[
            make_chunk("v", "validateToken", source="function validateToken(t) { return !!t }"),
            make_chunk("p", "parseUrl", source="function parseUrl(u) { return new URL(u) }"),
        ],
        delete_ids=[],
        vectors={},
    )
    assert ids(store.search_lexical("token validation", Filters(), 10))[0] == "v"
    assert ids(store.search_lexical("parse url", Filters(), 10))[0] == "p"


def test_lexical_scores_are_raw_bm25_and_names_are_a_separate_lookup(store):
    noisy = "getUser getUser getUser user user user"
    store.apply_changes(
        upserts=[
            make_chunk("noisy", "loadProfile", source=f"function loadProfile() {{ {noisy} }}"),
            make_chunk("exact", "getUser", source="function getUser(id) { return db.get(id) }"),
        ],
        delete_ids=[],
        vectors={},
    )
    hits = store.search_lexical("getUser", Filters(), 10)
    # Plain BM25 scores, no boost folded in: ranking.py owns the definition signal.
    assert set(ids(hits)) == {"noisy", "exact"}
    assert all(type(h).__dataclass_fields__.keys() == {"chunk", "score"} for h in hits)
    assert [c.id for c in store.find_by_names(["GETUSER"], Filters(), 10)] == ["exact"]
    assert store.find_by_names([], Filters(), 10) == []


def test_names_are_found_in_the_version_read_and_agree_with_the_filtered_scan(store):
    method = replace(make_chunk("m", "parse", path="src/config.ts", kind=NodeKind.METHOD),
                     qualified_name="Config.parse")
    test = make_chunk("t", "parse", path="test/p.ts", is_test=True)
    store.apply_changes(upserts=[make_chunk("a", "parseArgs"), method, test], delete_ids=[], vectors={})
    assert [c.id for c in store.find_by_names(["PARSE"], Filters(), 10)] == ["m", "t"]
    assert [c.id for c in store.find_by_names(["config.Parse", "parseargs"], Filters(), 10)] == ["a", "m"]
    assert [c.id for c in store.find_by_names(["parse"], Filters(), 1)] == ["m"], "the table's order, then the limit"
    # Filtered, the scan answers; the same rows where the filter admits them.
    assert [c.id for c in store.find_by_names(["parse"], Filters(exclude_tests=True), 10)] == ["m"]
    # A later version: a renamed chunk and a deleted one are found under their new state only.
    store.apply_changes(upserts=[replace(method, name="load", qualified_name="Config.load")], delete_ids=["t"],
                        vectors={})
    assert store.find_by_names(["parse", "Config.parse"], Filters(), 10) == []
    assert [c.id for c in store.find_by_names(["config.load"], Filters(), 10)] == ["m"]


def test_find_by_path_matches_whole_path_segments(store):
    store.apply_changes(
        upserts=[make_chunk("a", "alpha", path="src/retry.ts"), make_chunk("b", "beta", path="src/myretry.ts")],
        delete_ids=[],
        vectors={},
    )
    assert [c.id for c in store.find_by_path("retry.ts", Filters(), 10)] == ["a"]
    assert [c.id for c in store.find_by_path("SRC/Retry.ts", Filters(), 10)] == ["a"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_fresh_upsert_is_found_lexically_before_reindexing(store):
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    # Writes never build indexes; unindexed rows are matched exhaustively meanwhile.
    assert store.index_status() == {}
    assert store.needs_maintenance()
    assert ids(store.search_lexical("alpha", Filters(), 10)) == ["a"]
    store.maintain(retention=timedelta(0))
    assert store.index_status()["search_text_idx"] == {"indexed": 1, "unindexed": 0}
    assert not store.needs_maintenance()

    store.apply_changes(upserts=[make_chunk("z", "zebraCrossing")], delete_ids=[], vectors={})
    assert store.index_status()["search_text_idx"]["unindexed"] == 1
    assert ids(store.search_lexical("zebra", Filters(), 10)) == ["z"]
    store.maintain(retention=timedelta(0))
    assert store.index_status()["search_text_idx"]["unindexed"] == 0
    assert ids(store.search_lexical("zebra crossing", Filters(), 10)) == ["z"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_many_unindexed_rows_call_for_maintenance(store, monkeypatch):
    monkeypatch.setattr("codecompass.retrieval.index.chunk_writer.MAX_UNINDEXED_ROWS", 2)
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(0))
    store.apply_changes(
        upserts=[make_chunk(f"n{i}", f"name{i}") for i in range(2)],
        delete_ids=[],
        vectors={},
    )
    assert not store.needs_maintenance()
    store.apply_changes(upserts=[make_chunk("n3", "name3")], delete_ids=[], vectors={})
    assert store.needs_maintenance()


def test_deleted_chunk_disappears_from_both_channels(store):
    store.apply_changes(
        upserts=[make_chunk("a", "alpha"), make_chunk("b", "alphaBeta")],
        delete_ids=[],
        vectors={"a": unit(1, 0, 0, 0), "b": unit(0, 1, 0, 0)},
    )
    store.apply_changes(upserts=[], delete_ids=["a"], vectors={})
    assert ids(store.search_lexical("alpha", Filters(), 10)) == ["b"]
    assert ids(store.search_vector(unit(1, 0, 0, 0), Filters(), 10)) == ["b"]


def test_vector_search_is_cosine_and_skips_rows_without_vectors(store):
    store.apply_changes(
        upserts=[
            make_chunk("near", "n"),
            make_chunk("far", "f"),
            make_chunk("none", "x"),
        ],
        delete_ids=[],
        vectors={"near": unit(1, 0.1, 0, 0), "far": unit(0, 0, 1, 0)},
    )
    hits = store.search_vector(np.array([2.0, 0, 0, 0]), Filters(), 10)
    assert ids(hits) == ["near", "far"]
    assert hits[0].score == pytest.approx(float(unit(1, 0.1, 0, 0)[0]), abs=1e-3)  # int8 storage
    assert hits[1].score == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("copies", [5, 14])  # a run within the slack read past the cut, and one beyond it
def test_a_cut_inside_equal_scores_keeps_the_same_hits_whatever_the_order_written(tmp_path, copies):
    # A file repeated across a monorepo's packages: every copy scores the same in both channels,
    # and a cut through them must keep the same copies (the least ids) however they were written.
    twins = [make_chunk(f"dup-{i:02d}", "pollQueue", source="function pollQueue(queue) { drain(queue) }")
             for i in range(copies)]
    other = make_chunk("other", "flushQueue", source="function flushQueue() { return 1 }")
    shuffled = twins[:]
    random.Random(7).shuffle(shuffled)
    answers = []
    for name, written in (("forward", twins), ("reversed", twins[::-1]), ("shuffled", shuffled)):
        s = ChunkWriter.open(str(tmp_path / name), model=MODEL, chunker_version="c1")
        half = len(written) // 2  # two commits: two fragments, rows in another order again
        for part in (written[:half], [*written[half:], other]):
            s.apply_changes(upserts=part, delete_ids=[], vectors={c.id: unit(1, 0.2, 0, 0) for c in part})
        answers.append((ids(s.search_lexical("drain the poll queue", Filters(), 3)),
                        ids(s.search_vector(unit(1, 0.2, 0, 0), Filters(), 3))))
    assert answers == [(["dup-00", "dup-01", "dup-02"], ["dup-00", "dup-01", "dup-02"])] * 3


def test_set_vectors_makes_chunks_vector_searchable_and_ignores_deleted(store):
    store.apply_changes(
        upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")],
        delete_ids=[],
        vectors={},
    )
    assert store.search_vector(unit(1, 0, 0, 0), Filters(), 10) == []
    version = store.version_count()
    store.set_vectors({"a": unit(1, 0, 0, 0), "gone": unit(0, 1, 0, 0)})
    assert store.version_count() == version + 1
    assert ids(store.search_vector(unit(1, 0, 0, 0), Filters(), 10)) == ["a"]
    assert store.counts() == (2, 1)
    assert [c.id for c in store.chunks_missing_vectors(10)] == ["b"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_rows_are_found_by_id_in_indexed_and_unindexed_fragments_alike(store):
    # Writes find the rows they replace through the id index where it covers them, and by a scan
    # of the fragments written since: both must give every live row and no deleted one.
    store.apply_changes(upserts=[make_chunk(f"c{i}", f"name{i}") for i in range(6)], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(0))
    assert store.index_status()["id_idx"] == {"indexed": 6, "unindexed": 0}
    store.set_vectors({"c1": unit(1, 0, 0, 0), "c4": unit(0, 1, 0, 0)})  # indexed rows, rewritten
    store.apply_changes(upserts=[make_chunk("c1", "renamed", source="function renamed() {}", snippet_hash="h1b")],
                        delete_ids=["c2"], vectors={}, keep_vectors=["c1"])  # c1 now unindexed, c2 indexed
    store.set_vectors({"c1": unit(0, 0, 1, 0), "c5": unit(0, 0, 0, 1)})
    store.apply_changes(upserts=[], delete_ids=["c4"], vectors={})
    live = store._table.to_lance().to_table(columns=["id", "name", "has_vector"]).to_pylist()
    assert sorted((r["id"], r["name"], r["has_vector"]) for r in live) == [
        ("c0", "name0", False), ("c1", "renamed", True), ("c3", "name3", False), ("c5", "name5", True)]
    assert ids(store.search_vector(unit(0, 0, 1, 0), Filters(), 1)) == ["c1"]
    assert [s.name for s in store.get_chunks(["c1", "c5"])] == ["renamed", "name5"]


def test_set_vectors_rewrites_its_rows_whole_and_keeps_their_other_columns(store):
    chunk = make_chunk("a", "alpha", source="function alpha() { return 1 }")
    store.apply_changes(upserts=[chunk, make_chunk("b", "beta")], delete_ids=[], vectors={},
                        static_vectors={"a": unit(0, 1, 0, 0)} if store.static is not None else None)
    before = store.get_chunks(["a"])
    store.set_vectors({"a": unit(1, 0, 0, 0)})
    assert store.get_chunks(["a"]) == before
    assert ids(store.search_lexical("alpha", Filters(), 10)) == ["a"]
    assert [s.has_vector for s in store.get_stored(["a", "b"])] == [True, False]


def test_dimension_mismatch_is_a_clear_error_and_writes_nothing(store):
    with pytest.raises(DimensionMismatch, match="3 dimensions but the index was built for 4"):
        store.search_vector(np.ones(3), Filters(), 10)
    with pytest.raises(DimensionMismatch):
        store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={"a": np.ones(8)})
    assert store.counts() == (0, 0)
    with pytest.raises(DimensionMismatch):
        store.set_vectors({"a": np.ones(2)})


def test_vectors_for_snippets_reuses_by_content_hash(store):
    store.apply_changes(
        upserts=[
            make_chunk("a", "alpha", snippet_hash="same"),
            make_chunk("b", "beta", snippet_hash="other"),
        ],
        delete_ids=[],
        vectors={"a": unit(0, 0, 0, 1)},
    )
    found = store.vectors_for_snippets(["same", "other", "unknown"])
    assert list(found) == ["same"]
    np.testing.assert_allclose(found["same"], unit(0, 0, 0, 1))


def test_chunks_missing_vectors_lists_implementation_before_tests(store):
    store.apply_changes(
        upserts=[
            make_chunk("t1", "testA", "a.test.ts", is_test=True),
            make_chunk("i1", "implA"),
            make_chunk("i2", "implB", "src/b.ts"),
            make_chunk("done", "implC", "src/c.ts"),
        ],
        delete_ids=[],
        vectors={"done": unit(1, 0, 0, 0)},
    )
    missing = [c.id for c in store.chunks_missing_vectors(10)]
    assert sorted(missing[:2]) == ["i1", "i2"] and missing[2:] == ["t1"]
    assert len(store.chunks_missing_vectors(1)) == 1
    assert not store.chunks_missing_vectors(1)[0].is_test


def test_ids_referencing_follows_reference_chunk_ids(store):
    ref = SymbolReference("Token", "class Token", "src/t.ts", "tok'1")
    store.apply_changes(
        upserts=[
            make_chunk("tok'1", "Token", "src/t.ts"),
            make_chunk("user", "useToken", references=(ref,)),
            make_chunk("other", "unrelated"),
        ],
        delete_ids=[],
        vectors={},
    )
    assert store.ids_referencing(["tok'1"]) == ["user"]
    assert store.ids_referencing(["nobody"]) == []


@pytest.fixture
def filtered_store(store) -> ChunkWriter:
    chunks = [
        make_chunk("impl", "handleLogin", "src/auth/login.ts"),
        make_chunk("test", "handleLoginTest", "src/auth/login.test.ts", is_test=True),
        make_chunk("cls", "LoginHandler", "src/auth/handler.ts", kind=NodeKind.CLASS),
        make_chunk("js", "handleLoginLegacy", "lib/login.js", language=Language.JAVASCRIPT),
        make_chunk("sibling", "handleLoginz", "src/authz/login.ts"),
    ]
    store.apply_changes(
        upserts=chunks,
        delete_ids=[],
        vectors={c.id: unit(1, 0.01 * i, 0, 0) for i, c in enumerate(chunks)},
    )
    return store


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (Filters(), {"impl", "test", "cls", "js", "sibling"}),
        (Filters(path_patterns=("src/auth",)), {"impl", "test", "cls"}),
        (Filters(path_patterns=("src/auth/",)), {"impl", "test", "cls"}),
        (Filters(path_patterns=("src/auth/login.ts",)), {"impl"}),
        (Filters(path_patterns=("**/*.test.ts",)), {"test"}),
        (Filters(path_patterns=("*.js", "src/authz")), {"js", "sibling"}),
        (Filters(path_patterns=("src/*/login.{ts,js}",)), {"impl", "sibling"}),
        (Filters(languages=(Language.JAVASCRIPT,)), {"js"}),
        (Filters(node_kinds=(NodeKind.CLASS,)), {"cls"}),
        (Filters(exclude_tests=True), {"impl", "cls", "js", "sibling"}),
        (Filters(only_tests=True), {"test"}),
        (Filters(path_patterns=("src/auth",), exclude_tests=True), {"impl", "cls"}),
    ],
)
def test_filters_apply_in_both_channels(filtered_store, filters, expected):
    lexical = set(ids(filtered_store.search_lexical("handle login", filters, 20)))
    semantic = set(ids(filtered_store.search_vector(unit(1, 0, 0, 0), filters, 20)))
    assert lexical == expected
    assert semantic == expected


def test_vector_prefilter_returns_full_limit_under_narrow_filter(store):
    chunks = [make_chunk(f"c{i}", f"fn{i}", f"src/{i}.ts") for i in range(30)]
    chunks.append(make_chunk("target", "needle", "special/x.ts"))
    vectors = {c.id: unit(1, 0, 0, 0) for c in chunks[:-1]}
    vectors["target"] = unit(0, 1, 0, 0)
    store.apply_changes(upserts=chunks, delete_ids=[], vectors=vectors)
    hits = store.search_vector(unit(1, 0, 0, 0), Filters(path_patterns=("special",)), 1)
    assert ids(hits) == ["target"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintain_reduces_versions_and_keeps_data(store):
    for i in range(6):
        store.apply_changes(
            upserts=[make_chunk(f"c{i}", f"function{i}")],
            delete_ids=[],
            vectors={f"c{i}": unit(1, i, 0, 0)},
        )
    before = store.version_count()
    store.maintain(retention=timedelta(0))
    assert store.version_count() < before
    assert store.counts() == (6, 6)
    assert ids(store.search_lexical("function3", Filters(), 10))[0] == "c3"
    assert store.size_bytes() > 0


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_int8_vectors_still_find_the_nearest_and_no_ann_index_is_built(store):
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((600, 4)).astype(np.float32)
    chunks = [make_chunk(f"c{i}", f"fn{i}", f"src/{i % 7}/f.ts") for i in range(620)]
    vectors = {f"c{i}": matrix[i] for i in range(600)}
    store.apply_changes(upserts=chunks, delete_ids=[], vectors=vectors)
    store.maintain(retention=timedelta(0))
    assert set(store.index_status()) == {FTS_INDEX_NAME, "id_idx"}, "Lance builds no ANN index on int8 columns"
    reopened = ChunkWriter.open(store.uri, model=MODEL, chunker_version="c1")
    for i in (0, 17, 599):
        hits = reopened.search_vector(matrix[i], Filters(), 5)
        assert hits[0].chunk.id == f"c{i}"
        assert all(int(h.chunk.id[1:]) < 600 for h in hits)
    filtered = reopened.search_vector(matrix[3], Filters(path_patterns=("src/3",)), 5)
    assert filtered[0].chunk.id == "c3"
    assert all(h.chunk.relative_path == "src/3/f.ts" for h in filtered)


def test_searches_run_while_syncs_and_maintenance_write(store):
    store.apply_changes(
        upserts=[make_chunk(f"s{i}", f"stableName{i}") for i in range(50)],
        delete_ids=[],
        vectors={f"s{i}": unit(1, i, 0, 0) for i in range(50)},
    )
    errors: list[BaseException] = []
    done = threading.Event()

    def search_loop() -> None:
        try:
            while not done.is_set():
                assert store.search_lexical("stable name", Filters(), 100)
                assert store.search_vector(unit(1, 0, 0, 0), Filters(), 5)
        # LanceDB surfaces read failures as these; they are re-raised in the main thread.
        except (AssertionError, OSError, RuntimeError, ValueError) as exc:
            errors.append(exc)

    reader = threading.Thread(target=search_loop)
    reader.start()
    try:
        for round_ in range(8):
            store.apply_changes(
                upserts=[make_chunk(f"w{round_}", f"writtenName{round_}")],
                delete_ids=[f"w{round_ - 1}"],
                vectors={},
            )
            if round_ == 4:
                store.maintain()
    finally:
        done.set()
        reader.join()
    assert errors == []
    assert store.counts() == (51, 50)


def test_lexical_filter_is_applied_before_the_limit(store):
    crowd = [make_chunk(f"c{i}", f"handleLogin{i}", f"src/crowd/{i}.ts") for i in range(60)]
    lone = make_chunk("lone", "loginHandling", "special/lone.ts")
    store.apply_changes(upserts=[*crowd, lone], delete_ids=[], vectors={})
    store.maintain()
    hits = store.search_lexical("handle login", Filters(path_patterns=("special",)), 3)
    assert ids(hits) == ["lone"]


# ---- what the store leaves out and rebuilds (see retrieval.packing) -------------------------


def nested_chunks(path: str = "src/n.ts", body: str = "return 1;") -> list[Chunk]:
    """A function holding a helper, as the chunker cuts them: the helper's text is part of
    the outer function's full source."""
    inner_full = f"function helper(x: number): number {{\n    {body}\n  }}"
    outer_full = f"function outer(): number {{\n  {inner_full}\n  return helper(2);\n}}"
    outer_collapsed = outer_full.replace(inner_full[inner_full.index("{") :], "{ /* 3 lines collapsed */ }")
    outer = replace(
        make_chunk("outer", "outer", path, source=outer_full, jsdoc="/** The outer one. */"),
        child_ids=("helper",),
        collapsed_source=outer_collapsed,
        embedding_text=f"[TypeScript] {path} > outer\n---\n\n{outer_collapsed}",
    )
    inner = replace(
        make_chunk("helper", "helper", path, source=inner_full),
        parent_id="outer",
        depth=1,
        embedding_text=f"[TypeScript] {path} > outer > helper\n---\n\n{inner_full}",
    )
    return [outer, inner]


def source_rows(store: ChunkWriter) -> int:
    return store._sources.count_rows()


def test_nested_chunks_store_their_text_once_and_read_back_exactly(store):
    chunks = nested_chunks()
    store.apply_changes(upserts=chunks, delete_ids=[], vectors={})
    assert store.get_chunks(["outer", "helper"]) == chunks
    assert source_rows(store) == 1
    rows = store._table.to_arrow()
    assert "full_source" not in rows.column_names and "embedding_text" not in rows.column_names


def test_rewriting_a_parent_alone_leaves_its_children_exact(store):
    """Texts are content-addressed: a child keeps slicing the text it was written against."""
    outer, inner = nested_chunks()
    store.apply_changes(upserts=[outer, inner], delete_ids=[], vectors={})
    edited = nested_chunks(body="return 42;")[0]
    store.apply_changes(upserts=[edited], delete_ids=[], vectors={})
    assert store.get_chunks(["outer", "helper"]) == [edited, inner]
    store.apply_changes(upserts=[], delete_ids=["outer"], vectors={})
    assert store.get_chunks(["helper"]) == [inner]


def test_a_commit_leaves_the_chunks_it_did_not_rewrite_cached_and_reads_the_rewritten_one_again(
        store, monkeypatch):
    """An edit's sync rewrites one file's rows: the searches after it read those rows again and
    take every other hit from what earlier searches read (they used to read all their hits)."""
    a = make_chunk("a", "alpha", "src/a.ts", source="function alpha() { return 1 }")
    b = make_chunk("b", "beta", "src/b.ts", source="function beta() { return 2 }")
    store.apply_changes(upserts=[a, b], delete_ids=[], vectors={})
    assert store.get_chunks(["a", "b"]) == [a, b]
    taken: list[list[str]] = []
    take = store._take_rows
    monkeypatch.setattr(store, "_take_rows", lambda snapshot, keys, wanted: taken.append(
        sorted(key.rsplit("/", 1)[1] for key in wanted)) or take(snapshot, keys, wanted))
    assert store.get_chunks(["a", "b"]) == [a, b]
    assert taken == []

    edited = make_chunk("a", "alpha", "src/a.ts", source="function alpha() { return 42 }")
    store.apply_changes(upserts=[edited], delete_ids=[], vectors={})
    assert store.get_chunks(["a", "b"]) == [edited, b]
    assert taken == [["a"]]
    store.apply_changes(upserts=[], delete_ids=["b"], vectors={})
    assert store.get_chunks(["a", "b"]) == [edited]


def test_reading_ahead_builds_each_row_no_read_has_built_once_in_the_version_s_order(store, monkeypatch):
    chunks = [make_chunk(f"c{i}", f"name{i}", f"src/f{i}.ts", source=f"function name{i}() {{ return {i} }}")
              for i in range(5)]
    store.apply_changes(upserts=chunks, delete_ids=[], vectors={})
    assert store.get_chunks(["c1"]) == [chunks[1]]
    assert store.read_ahead(2) == [chunks[0], chunks[2]]
    assert store.read_ahead(10) == [chunks[3], chunks[4]]
    assert store.read_ahead(10) == []
    # A commit: only the row it wrote is left to read.
    edited = make_chunk("c3", "name3", "src/f3.ts", source="function name3() { return 33 }")
    store.apply_changes(upserts=[edited], delete_ids=[], vectors={})
    assert store.read_ahead(10) == [edited]
    assert store.read_ahead(10) == []
    # Once the cache is full, nothing more is read: it would push out what searches read.
    store.apply_changes(upserts=[make_chunk("c9", "name9", "src/f9.ts")], delete_ids=[], vectors={})
    monkeypatch.setattr(type(store._chunk_cache), "full", property(lambda _cache: True))
    assert store.read_ahead(10) == []


def test_reading_ahead_builds_the_name_index_a_fragment_at_a_time(store):
    for i in range(3):  # a commit each: three fragments
        store.apply_changes(upserts=[make_chunk(f"c{i}", f"name{i}", f"src/f{i}.ts")], delete_ids=[], vectors={})
    fragments = store.vector_snapshot().fragments
    assert len(fragments) == 3 and not any(part.name_rows for part in fragments)
    store.read_ahead(1)
    assert [bool(part.name_rows) for part in fragments] == [True, False, False]
    store.read_ahead(1)
    store.read_ahead(1)
    assert all(part.name_rows for part in fragments)
    assert [c.id for c in store.find_by_names(["NAME2"], Filters(), 10)] == ["c2"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintenance_deletes_texts_no_chunk_uses_once_past_the_retention(store):
    store.apply_changes(upserts=nested_chunks(), delete_ids=[], vectors={})
    edited = nested_chunks(body="return 42;")
    store.apply_changes(upserts=edited, delete_ids=[], vectors={})
    assert source_rows(store) == 2
    # Within the retention a search on an older version may still slice the old text.
    store.maintain(retention=timedelta(hours=1))
    assert source_rows(store) == 2
    assert store.cleanup_due_at(timedelta(hours=1)) is not None
    store.maintain(retention=timedelta(0))
    assert source_rows(store) == 1
    assert store.get_chunks(["outer", "helper"]) == edited
    assert store.cleanup_due_at(timedelta(0)) is None


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintenance_drops_old_versions_and_the_files_only_they_used(store):
    chunks = [make_chunk(f"c{i}", f"function{i}", source=f"function function{i}() {{ {'x' * 500} }}")
              for i in range(50)]
    store.apply_changes(upserts=chunks, delete_ids=[], vectors={})
    for i, chunk in enumerate(chunks):
        store.set_vectors({chunk.id: unit(1, i, 0, 0)})
    assert store.cleanup_due_at() is not None
    bloated = store.size_bytes()
    store.maintain(retention=timedelta(0))
    assert store.version_count() == 1
    assert store.size_bytes() < bloated / 2
    assert store.cleanup_due_at() is None
    assert store.get_chunks([c.id for c in chunks]) == chunks


def test_tables_of_other_models_stay_until_retired(tmp_path):
    uri = str(tmp_path / "index")
    old = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    old.apply_changes(upserts=nested_chunks(), delete_ids=[], vectors={})
    new = ChunkWriter.open(uri, model=EmbeddingModel("local", "all-MiniLM-L6-v2", "2", 4), chunker_version="c1")
    assert len(lancedb.connect(uri).list_tables().tables) == 4
    assert old.get_chunks(["outer"]) == nested_chunks()[:1]
    assert sorted(new.drop_retired_tables()) == sorted([old.table_name, "sources_" + old.table_name[len("chunks_") :]])
    assert sorted(lancedb.connect(uri).list_tables().tables) == sorted(
        [new.table_name, "sources_" + new.table_name[len("chunks_") :]]
    )


def test_a_chunk_table_without_its_sources_is_rebuilt(tmp_path):
    uri = str(tmp_path / "index")
    store = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    store.apply_changes(upserts=nested_chunks(), delete_ids=[], vectors={})
    lancedb.connect(uri).drop_table("sources_" + store.table_name[len("chunks_") :])
    reopened = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    assert reopened.created and reopened.rebuilt and reopened.counts() == (0, 0)


def test_vectors_are_int8_on_disk_and_unit_float32_in_memory(store):
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={"a": unit(1, 2, 3, 4)})
    assert store._table.schema.field("vector").type.value_type == pa.int8()
    stored = store._table.to_arrow().column("vector").combine_chunks().values.to_numpy()
    assert np.abs(stored).max() == 127, "each row is scaled to the int8 range"
    found = store.vectors_for_snippets(["hash-a"])["hash-a"]
    assert found.dtype == np.float32
    np.testing.assert_allclose(found, unit(1, 2, 3, 4), atol=1e-2)
    assert float(found @ unit(1, 2, 3, 4)) > 0.9999


def test_static_vectors_are_packed_int4_on_disk_and_still_find_the_nearest(tmp_path):
    static = EmbeddingModel("static", "code-static", "w1", 5)  # odd: the last component pairs with zero
    store = ChunkWriter.open(str(tmp_path / "index"), model=MODEL, chunker_version="c1", static=static)
    near, far = unit(1, 2, 3, 4, 5), unit(-5, 4, -3, 2, -1)
    store.apply_changes(upserts=[make_chunk("a", "alpha"), make_chunk("b", "beta")], delete_ids=[], vectors={},
                        static_vectors={"a": near, "b": far})
    column = store._table.schema.field("static_vector").type
    assert (column.value_type, column.list_size) == (pa.uint8(), 3), "two components a byte"
    hits = store.search_static_vector(unit(1, 2, 3, 4, 4), Filters(), 2, without_primary=False)
    assert [h.chunk.id for h in hits] == ["a", "b"]
    # Five components at 4 bits are coarse (a real row has 256): cosines within 0.06.
    assert store.cosines(["a", "b"], None, near) == {
        "a": (None, pytest.approx(1.0, abs=0.06)), "b": (None, pytest.approx(float(near @ far), abs=0.06))}


def test_int4_rows_read_back_as_their_rounded_components():
    rows = np.array([[0.5, -1.0, 0.25, -0.07, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [-3.0, 3.0, 1.0, -1.0, 2.9]])
    packed = stored_int4(rows)
    assert packed.dtype == np.uint8 and packed.shape == (3, 3)
    values = int4_values(packed, 5)
    np.testing.assert_array_equal(values, [[4, -7, 2, 0, 0], [0, 0, 0, 0, 0], [-7, 7, 2, -2, 7]])
    np.testing.assert_array_equal(stored_int4(values), packed), "storing a stored row again changes nothing"


def test_reference_edges_both_ways(store):
    ref = SymbolReference("Token", "class Token", "src/t.ts", "tok")
    # A symbol outside the index has no chunk id: its reference keeps its place between the others.
    outside = SymbolReference("Buffer", "class Buffer", "", "")
    user = make_chunk("user", "useToken", references=(ref, outside, ref))
    store.apply_changes(
        upserts=[make_chunk("tok", "Token", "src/t.ts"), user, make_chunk("other", "unrelated")],
        delete_ids=[],
        vectors={},
    )
    assert store.references_of(["user", "other"]) == {"user": ["tok"], "other": []}
    assert store.references_into(["tok", "other"]) == {"user": ["tok"]}
    assert store.get_chunks(["user"])[0].references == (ref, outside, ref)
    assert store.in_degrees(["tok", "user"]) == {"tok": 1, "user": 0}


def test_hits_are_the_rows_they_name_after_deletes_and_rewrites(store):
    # A search takes its hits by their place in the version it read: deleted rows and rewritten
    # ones must not shift which chunk a hit shows.
    n = 12
    vectors = {f"c{i}": unit(*np.eye(4)[i % 4] + 0.05 * i) for i in range(n)}
    store.apply_changes(upserts=[make_chunk(f"c{i}", f"sym{i}", source=f"function sym{i}() {{ v{i} }}")
                                 for i in range(n)], delete_ids=[], vectors=vectors)
    store.apply_changes(upserts=[make_chunk("c4", "sym4", source="function sym4() { rewritten }")],
                        delete_ids=["c1", "c2", "c7"], vectors={"c4": vectors["c4"]})
    for chunk_id, vector in vectors.items():
        hits = store.search_vector(vector, Filters(), 3)
        if chunk_id in ("c1", "c2", "c7"):
            assert chunk_id not in ids(hits)
            continue
        assert hits[0].chunk.id == chunk_id
        i = chunk_id[1:]
        expected = "function sym4() { rewritten }" if chunk_id == "c4" else f"function sym{i}() {{ v{i} }}"
        assert hits[0].chunk.full_source == expected
    lexical = store.search_lexical("rewritten", Filters(), 5)
    assert ids(lexical) == ["c4"] and lexical[0].chunk.full_source == "function sym4() { rewritten }"


def _alpha_index(tmp_path) -> tuple[ChunkWriter, ChunkReader]:
    """An index of one chunk, `alpha` (body `one`), and a reader of it apart from its writer."""
    uri = str(tmp_path / "index")
    writer = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    _write_alpha(writer, "one")
    reader = ChunkReader.attach(lancedb.connect(uri), uri, model=MODEL, chunker_version="c1")
    assert reader is not None
    return writer, reader


def _write_alpha(writer: ChunkWriter, body: str) -> None:
    writer.apply_changes(upserts=[make_chunk("a", "alpha", source=f"function alpha() {{ {body} }}")], delete_ids=[],
                         vectors={"a": unit(1, 0, 0, 0)})


def test_a_reader_sees_a_commit_after_checkout_not_its_cached_chunks(tmp_path):
    writer, reader = _alpha_index(tmp_path)
    assert reader.search_vector(unit(1, 0, 0, 0), Filters(), 1)[0].chunk.full_source == "function alpha() { one }"
    _write_alpha(writer, "two")
    assert reader.search_vector(unit(1, 0, 0, 0), Filters(), 1)[0].chunk.full_source == "function alpha() { one }"
    reader.checkout_latest()
    assert reader.search_vector(unit(1, 0, 0, 0), Filters(), 1)[0].chunk.full_source == "function alpha() { two }"
    assert reader.get_chunks(["a"])[0].full_source == "function alpha() { two }"


def test_a_reader_moves_its_tables_only_when_a_newer_version_was_committed(tmp_path, monkeypatch):
    writer, reader = _alpha_index(tmp_path)
    moved: list[str] = []
    for table in (reader._table, reader._sources):
        real = table.checkout_latest
        monkeypatch.setattr(table, "checkout_latest", lambda real=real, name=table.name: (moved.append(name), real()))
    # Nothing new: a search's check reads no table again (each hop is ~0.3-1 ms through LanceDB's loop).
    for _ in range(3):
        reader.checkout_latest()
    assert moved == []
    _write_alpha(writer, "two")
    reader.checkout_latest()
    assert len(moved) == 2
    assert reader.get_chunks(["a"])[0].full_source == "function alpha() { two }"
    reader.checkout_latest()
    assert len(moved) == 2


def _fragments(store: ChunkWriter) -> list[tuple[int, int]]:
    """(fragment id, live rows) of the chunk table as it is now."""
    return [(f.fragment_id, f.count_rows()) for f in store._table.to_lance().get_fragments()]


def _segments(store: ChunkWriter) -> int:
    return store._table.index_stats("search_text_idx").num_indices


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintenance_merges_small_fragments_and_leaves_full_ones_alone(store, monkeypatch):
    monkeypatch.setattr("codecompass.retrieval.index.chunk_writer.COMPACT_TARGET_ROWS", 8)
    store.apply_changes(upserts=[make_chunk(f"big{i}", f"big{i}") for i in range(10)], delete_ids=[], vectors={})
    for i in range(3):
        store.apply_changes(upserts=[make_chunk(f"small{i}", f"small{i}")], delete_ids=[], vectors={})
    full = _fragments(store)[0]
    assert full[1] == 10 and len(_fragments(store)) == 4
    store.maintain(retention=timedelta(0))
    # The full fragment is the same file as before; the three small ones are one now. Lance's
    # default target merged every fragment of a table this size, so each maintenance rewrote
    # all of it.
    assert _fragments(store) == [full, (_fragments(store)[1][0], 3)]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_a_settled_index_is_merged_into_one_fragment_once_no_older_version_is_kept(store, monkeypatch):
    monkeypatch.setattr("codecompass.retrieval.index.chunk_writer.COMPACT_TARGET_ROWS", 4)
    chunks = [make_chunk(f"c{i}", f"name{i}") for i in range(15)]
    for start in range(0, 15, 5):
        store.apply_changes(upserts=chunks[start : start + 5], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(hours=1), settle=True)
    # Full fragments stay as they are while the versions of the run are kept.
    assert [n for _, n in _fragments(store)] == [5, 5, 5]
    store.cleanup(timedelta(hours=1))
    assert len(_fragments(store)) == 3, "an older version is still kept"
    store.cleanup(timedelta(0))
    assert [n for _, n in _fragments(store)] == [15]
    assert store.get_chunks([c.id for c in chunks]) == chunks
    assert [h.chunk.id for h in store.search_lexical("name7", Filters(), 3)][:1] == ["c7"]
    # Once: the next run's maintenance leaves it alone.
    store.apply_changes(upserts=[make_chunk("late", "late")], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(0))
    store.cleanup(timedelta(0))
    assert sorted(n for _, n in _fragments(store)) == [1, 15]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintenance_rewrites_a_fragment_once_half_its_rows_are_deleted(store, monkeypatch):
    monkeypatch.setattr("codecompass.retrieval.index.chunk_writer.COMPACT_TARGET_ROWS", 4)
    chunks = [make_chunk(f"c{i}", f"name{i}") for i in range(10)]
    store.apply_changes(upserts=chunks, delete_ids=[], vectors={})
    store.set_vectors({c.id: unit(1, i, 0, 0) for i, c in enumerate(chunks[:3])})
    store.maintain(retention=timedelta(0))
    first = _fragments(store)[0]
    assert first[1] == 7, "three of ten rows deleted is kept as it is"
    store.set_vectors({c.id: unit(1, i, 0, 0) for i, c in enumerate(chunks[3:6])})
    store.maintain(retention=timedelta(0))
    assert first not in _fragments(store) and sum(n for _, n in _fragments(store)) == 10
    assert store.get_chunks([c.id for c in chunks]) == chunks


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_maintenance_indexes_new_rows_as_a_segment_and_settling_merges_them(store):
    store.apply_changes(upserts=[make_chunk("a", "alpha")], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(0))
    assert _segments(store) == 1
    for name in ("bravo", "charlie"):
        store.apply_changes(upserts=[make_chunk(name, name)], delete_ids=[], vectors={})
        store.maintain(retention=timedelta(0))
    # Each maintenance indexed its rows alone rather than rewriting the whole index.
    assert _segments(store) == 3
    assert store.index_status()["search_text_idx"]["unindexed"] == 0
    assert ids(store.search_lexical("charlie", Filters(), 10)) == ["charlie"]
    store.apply_changes(upserts=[make_chunk("delta", "delta")], delete_ids=[], vectors={})
    store.maintain(retention=timedelta(0), settle=True)
    assert _segments(store) == 1
    assert store.index_status()["search_text_idx"] == {"indexed": 4, "unindexed": 0}
    assert ids(store.search_lexical("alpha", Filters(), 10)) == ["a"]
    assert ids(store.search_lexical("delta", Filters(), 10)) == ["delta"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_index_segments_are_merged_past_the_bound(store, monkeypatch):
    monkeypatch.setattr("codecompass.retrieval.index.chunk_writer.MAX_INDEX_SEGMENTS", 2)
    for name in ("alpha", "bravo", "charlie"):
        store.apply_changes(upserts=[make_chunk(name, name)], delete_ids=[], vectors={})
        store.maintain(retention=timedelta(0))
    assert _segments(store) == 1
    assert ids(store.search_lexical("bravo", Filters(), 10)) == ["bravo"]


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_cleanup_drops_old_versions_and_rewrites_nothing(store):
    for i in range(3):
        store.apply_changes(upserts=[make_chunk(f"c{i}", f"name{i}")], delete_ids=[], vectors={})
    before = _fragments(store)
    assert store.version_count() > 1
    store.cleanup(timedelta(0))
    # The cleanup timer's job while an embedding run commits every few seconds: what maintenance
    # left behind goes; compaction and indexing wait for the next maintenance.
    assert store.version_count() == 1 and store.cleanup_due_at(timedelta(0)) is None
    assert _fragments(store) == before
    assert store.index_status() == {}


def test_in_degrees_count_each_referencing_chunk_once(store):
    ref = lambda target: SymbolReference(name=target, signature="", relative_path="src/a.ts", chunk_id=target)  # noqa: E731
    store.apply_changes(upserts=[
        make_chunk("target", "target"),
        make_chunk("other", "other"),
        # Two references to one symbol from one chunk are one edge of the graph.
        make_chunk("a", "a", references=(ref("target"), ref("target"), ref("other"))),
        make_chunk("b", "b", references=(ref("target"),)),
        make_chunk("c", "c"),
    ], delete_ids=[], vectors={})
    assert store.in_degrees(["target", "other", "a", "missing"]) == {"target": 2, "other": 1, "a": 0, "missing": 0}
    store.apply_changes(upserts=[], delete_ids=["b"], vectors={})
    assert store.in_degrees(["target"]) == {"target": 1}
