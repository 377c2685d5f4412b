"""The first stage over a real LanceDB store: channels, provenance, ranks, ratio cap and fallbacks."""

from dataclasses import replace

import numpy as np
import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy.ranking import FUSION_ONLY, SKIP_RATIO_ZERO, SKIP_SHORT_CIRCUIT
from codecompass.policy.shape import NATURAL_LANGUAGE, SYMBOL, analyze
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.search.hybrid import (
    SKIP_DIMENSION_MISMATCH,
    SKIP_EMBEDDING_UNAVAILABLE,
    SKIP_NO_VECTORS,
    hybrid_search,
    shared_ranks,
)

MODEL = EmbeddingModel("local", "test-model", "1", 4)


def make_chunk(chunk_id: str, name: str, source: str, *, is_test: bool = False) -> Chunk:
    return Chunk(
        id=chunk_id,
        snippet_hash=f"hash-{chunk_id}",
        relative_path=f"src/{chunk_id}.ts",
        language=Language.TYPESCRIPT,
        node_kind=NodeKind.FUNCTION,
        name=name,
        qualified_name=name,
        parent_id="",
        child_ids=(),
        depth=0,
        signature=f"function {name}()",
        full_source=source,
        collapsed_source=source,
        start_line=1,
        end_line=5,
        jsdoc="",
        jsdoc_start_line=0,
        relevant_imports=(),
        is_test=is_test,
        embedding_text=source,
    )


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


# "login" concept lives on axis 0; the lexical-only chunk shares words but not meaning.
LOGIN = unit(1, 0, 0, 0)


@pytest.fixture
def store(tmp_path) -> ChunkWriter:
    s = ChunkWriter.open(str(tmp_path / "index"), model=MODEL, chunker_version="c1")
    s.apply_changes(
        upserts=[
            make_chunk(
                "auth",
                "authenticateUser",
                "function authenticateUser(name, password) { check }",
            ),
            make_chunk("session", "startSession", "function startSession(user) { user login }"),
            make_chunk("banner", "renderLoginBanner", "function renderLoginBanner() { login }"),
            make_chunk("parse", "parseUrl", "function parseUrl(u) { return new URL(u) }"),
            make_chunk("pending", "handleUserLogin", "function handleUserLogin() { pending }"),
        ],
        delete_ids=[],
        vectors={
            "auth": unit(1, 0.05, 0, 0),
            "session": unit(1, 0.4, 0, 0),
            "banner": unit(0, 0, 1, 0),
            "parse": unit(0, 0, 0, 1),
        },
    )
    return s


def by_id(outcome):
    return {r.chunk.id: r for r in outcome.results}


@pytest.mark.parametrize("policy", [None, FUSION_ONLY])
def test_natural_language_query_fuses_both_channels(store, policy):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.5,
        **({"policy": policy} if policy else {}),
    )
    assert outcome.semantic_ratio_used == 0.5
    assert outcome.semantic_skipped_reason is None
    results = by_id(outcome)
    assert results["session"].provenance == "hybrid"
    assert results["session"].lexical_rank >= 1 and results["session"].semantic_rank >= 1
    assert results["parse"].provenance == "semantic"
    assert results["parse"].lexical_rank == 0 and results["parse"].lexical_score == 0.0
    assert results["pending"].provenance == "lexical"
    assert results["pending"].semantic_rank == 0 and results["pending"].vector_similarity == 0.0
    # Vectors are stored in half precision: cosine within 1e-3.
    assert results["session"].vector_similarity == pytest.approx(float(unit(1, 0.4, 0, 0)[0]), abs=1e-3)
    # Fusion alone puts the chunk strong in both channels first; the ranking policy lifts the
    # function whose name the query spells (handleUserLogin).
    assert outcome.results[0].chunk.id == ("session" if policy else "pending")


@pytest.mark.parametrize("policy", [None, FUSION_ONLY])
@pytest.mark.parametrize("ratio", [0.0, 0.3, 0.5, 1.0])
def test_fused_scores_are_in_unit_interval_and_sorted(store, policy, ratio):
    outcome = hybrid_search(
        store,
        "user login session",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=ratio,
        **({"policy": policy} if policy else {}),
    )
    scores = [r.score for r in outcome.results]
    assert scores and all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= r.lexical_score <= 1.0 for r in outcome.results)


def test_top_in_both_channels_scores_one(store):
    outcome = hybrid_search(
        store,
        "authenticate user password",
        query_vector=unit(1, 0.05, 0, 0),
        filters=Filters(),
        limit=3,
        semantic_ratio=0.5,
    )
    top = outcome.results[0]
    assert top.chunk.id == "auth" and top.lexical_rank == 1 and top.semantic_rank == 1
    assert top.score == pytest.approx(1.0)


def test_exact_identifier_short_circuits_semantic(store):
    outcome = hybrid_search(
        store,
        "parseUrl",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.8,
    )
    assert outcome.semantic_ratio_used == 0.0
    assert outcome.semantic_skipped_reason == SKIP_SHORT_CIRCUIT
    assert outcome.results[0].chunk.id == "parse"
    assert outcome.results[0].signals["definition"] > 0
    assert all(r.provenance == "lexical" for r in outcome.results)


def test_a_sent_shape_is_honoured_over_retrievals_own_reading(store):
    # The gateway judged "parseUrl" as a question (its shape, sent with the search); retrieval's
    # own reading would say symbol and short-circuit the vectors. The sent one decides.
    own = analyze("parseUrl")
    assert own.intent == SYMBOL
    sent = replace(own, intent=NATURAL_LANGUAGE, intent_confidence=0.6, identifiers=())
    outcome = hybrid_search(store, "parseUrl", query_vector=LOGIN, filters=Filters(), limit=10, semantic_ratio=0.8,
                            shape=sent)
    assert outcome.shape is sent
    assert outcome.semantic_ratio_used == 0.8 and outcome.semantic_skipped_reason is None
    assert "definition" not in by_id(outcome)["parse"].signals
    unsent = hybrid_search(store, "parseUrl", query_vector=LOGIN, filters=Filters(), limit=10, semantic_ratio=0.8)
    assert unsent.shape == own and unsent.semantic_skipped_reason == SKIP_SHORT_CIRCUIT


def test_code_shaped_query_without_exact_match_leans_lexical(store):
    outcome = hybrid_search(
        store,
        "userLogin",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.6,
    )
    assert outcome.semantic_skipped_reason is None
    assert outcome.semantic_ratio_used == pytest.approx(0.3)


def test_missing_query_vector_falls_back_to_lexical(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=None,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.5,
    )
    assert outcome.semantic_ratio_used == 0.0
    assert outcome.semantic_skipped_reason == SKIP_EMBEDDING_UNAVAILABLE
    assert outcome.results and all(r.provenance == "lexical" for r in outcome.results)


def test_caller_supplied_unavailable_reason_is_reported(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=None,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.5,
        unavailable_reason="external_provider_blocked",
    )
    assert outcome.semantic_skipped_reason == "external_provider_blocked"


def test_wrong_dimension_query_vector_falls_back(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=np.ones(384, dtype=np.float32),
        filters=Filters(),
        limit=10,
        semantic_ratio=0.5,
    )
    assert outcome.semantic_skipped_reason == SKIP_DIMENSION_MISMATCH
    assert outcome.semantic_ratio_used == 0.0
    assert outcome.results


def test_store_without_vectors_reports_no_vectors(tmp_path):
    s = ChunkWriter.open(str(tmp_path / "idx"), model=MODEL, chunker_version="c1")
    s.apply_changes(
        upserts=[make_chunk("a", "startSession", "user login")],
        delete_ids=[],
        vectors={},
    )
    outcome = hybrid_search(
        s,
        "user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=5,
        semantic_ratio=0.5,
    )
    assert outcome.semantic_skipped_reason == SKIP_NO_VECTORS
    assert [r.chunk.id for r in outcome.results] == ["a"]


def test_zero_ratio_is_pure_lexical(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=0.0,
    )
    assert outcome.semantic_skipped_reason == SKIP_RATIO_ZERO
    assert all(r.provenance == "lexical" for r in outcome.results)


def test_ratio_one_is_the_vector_channel_alone(store):
    outcome = hybrid_search(
        store,
        "parseUrl user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=1.0,
        policy=FUSION_ONLY,
    )
    assert outcome.semantic_ratio_used == 1.0
    assert outcome.results and all(r.provenance == "semantic" for r in outcome.results)
    assert outcome.results[0].chunk.id == "auth"


def test_ratio_one_without_vectors_answers_nothing(store):
    outcome = hybrid_search(
        store, "user login", query_vector=None, filters=Filters(), limit=10, semantic_ratio=1.0
    )
    assert outcome.results == []
    assert outcome.semantic_skipped_reason == SKIP_EMBEDDING_UNAVAILABLE


def test_ratio_is_clamped(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=10,
        semantic_ratio=7.0,
    )
    assert outcome.semantic_ratio_used == 1.0


def test_no_lexical_hits_uses_full_cap_for_identifier_query(store):
    outcome = hybrid_search(
        store,
        "xyzzyQuux",
        query_vector=LOGIN,
        filters=Filters(),
        limit=2,
        semantic_ratio=0.4,
    )
    assert outcome.semantic_ratio_used == 0.4
    assert [r.provenance for r in outcome.results] == ["semantic", "semantic"]
    assert [r.semantic_rank for r in outcome.results] == [1, 2]


def test_filters_apply_to_fused_results(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=LOGIN,
        filters=Filters(path_patterns=("src/session.ts", "src/parse.ts")),
        limit=10,
        semantic_ratio=0.5,
    )
    assert {r.chunk.id for r in outcome.results} == {"session", "parse"}


def test_limit_cuts_and_reports_candidates(store):
    outcome = hybrid_search(
        store,
        "user login",
        query_vector=LOGIN,
        filters=Filters(),
        limit=2,
        semantic_ratio=0.5,
    )
    assert len(outcome.results) == 2
    assert outcome.total_candidates > 2


def test_path_query_returns_the_named_file(store):
    outcome = hybrid_search(
        store, "src/parse.ts", query_vector=LOGIN, filters=Filters(), limit=3, semantic_ratio=0.5
    )
    assert outcome.shape.intent == "path"
    assert outcome.results[0].chunk.id == "parse"
    assert "path" in outcome.results[0].signals


def test_identifier_used_but_not_defined_keeps_a_semantic_share(store):
    store.apply_changes(
        upserts=[make_chunk("cfg", "loadSettings", "function loadSettings() { readConfigFile(path) }")],
        delete_ids=[],
        vectors={"cfg": unit(0, 1, 0, 0)},
    )
    outcome = hybrid_search(
        store,
        "readConfigFile",
        query_vector=LOGIN,
        filters=Filters(),
        limit=5,
        semantic_ratio=0.5,
    )
    # Nothing is named readConfigFile: the caller is the best lexical answer, and vectors may
    # still help, at half weight.
    assert outcome.semantic_skipped_reason is None
    assert outcome.semantic_ratio_used == pytest.approx(0.25)
    assert outcome.results[0].chunk.id == "cfg"


def test_equal_scores_share_the_better_rank():
    assert shared_ranks([0.9, 0.6, 0.6, 0.3]) == [1, 2, 2, 4]
    assert shared_ranks([0.3, 0.6, 0.9, 0.6]) == [4, 2, 1, 2]
    assert shared_ranks([]) == []


@pytest.mark.parametrize("policy", [None, FUSION_ONLY])
def test_the_same_code_in_two_files_ranks_the_same_whichever_was_written_first(tmp_path, policy):
    # A monorepo's packages repeat a file; the full-text engine returns equal scores in whatever
    # order it meets them, and an answer must not depend on that order.
    twins = [make_chunk(name, "pollQueue", "function pollQueue(queue) { drain the queue }")
             for name in ("twin-a", "twin-b")]
    answers = []
    for written in (twins, twins[::-1]):
        s = ChunkWriter.open(str(tmp_path / f"index-{written[0].id}"), model=MODEL, chunker_version="c1")
        s.apply_changes(upserts=[*written, make_chunk("other", "flushQueue", "function flushQueue() { queue }")],
                        delete_ids=[], vectors={c.id: LOGIN for c in written})
        outcome = hybrid_search(s, "drain the queue", query_vector=LOGIN, filters=Filters(), limit=5,
                                semantic_ratio=0.5, **({"policy": policy} if policy else {}))
        twin_results = [r for r in outcome.results if r.chunk.id.startswith("twin")]
        assert twin_results[0].lexical_rank == twin_results[1].lexical_rank == 1
        assert twin_results[0].semantic_rank == twin_results[1].semantic_rank == 1
        answers.append([(r.chunk.id, r.score, r.lexical_rank, r.semantic_rank) for r in outcome.results])
    assert answers[0] == answers[1]
