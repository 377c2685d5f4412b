"""The ranking policy on hand-made candidates: each signal does what its docstring says."""

import random

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.policy.ranking import (
    FUSION_ONLY,
    PRIMARY_VECTORS,
    SKIP_RATIO_ZERO,
    SKIP_SHORT_CIRCUIT,
    STATIC_VECTORS,
    Candidate,
    RankingPolicy,
    _normalise,
    _phrase_pattern,
    rank,
    semantic_weight,
)
from codecompass.policy.shape import analyze


def chunk(cid, name, path="src/a.ts", *, kind=NodeKind.FUNCTION, lines=10, source="", is_test=False, depth=0):
    return Chunk(
        id=cid, snippet_hash=cid, relative_path=path, language=Language.TYPESCRIPT, node_kind=kind, name=name,
        qualified_name=name, parent_id="", child_ids=(), depth=depth, signature=name, full_source=source,
        collapsed_source=source, start_line=1, end_line=lines, jsdoc="", jsdoc_start_line=0, relevant_imports=(),
        is_test=is_test, embedding_text=source,
    )


def ids(results):
    return [r.chunk.id for r in results]


def lexical(*chunks_and_scores):
    return [Candidate(c, bm25=s, lexical_rank=i) for i, (c, s) in enumerate(chunks_and_scores, start=1)]


def test_fusion_only_orders_by_channel_scores():
    cands = lexical((chunk("a", "caller"), 9.0), (chunk("b", "retryDelay"), 4.0))
    out = rank(analyze("retryDelay"), cands, ratio=0.0, limit=10, policy=FUSION_ONLY)
    assert ids(out) == ["a", "b"]
    assert out[0].score == pytest.approx(1.0) and out[1].score == pytest.approx(4 / 9)
    assert all(r.signals == {} for r in out)


def test_definition_beats_a_caller_with_more_bm25():
    cands = lexical((chunk("a", "caller", "src/x.ts"), 9.0), (chunk("b", "retryDelay", "src/y.ts"), 4.0))
    out = rank(analyze("retryDelay"), cands, ratio=0.0, limit=10)
    assert ids(out) == ["b", "a"]
    assert out[0].signals["definition"] >= 1.0
    assert all(0.0 <= r.score <= 1.0 for r in out)
    assert out[0].fusion_score == pytest.approx(4 / 9)


def test_case_exact_definition_wins_over_case_insensitive():
    cands = [
        Candidate(chunk("v", "token", "src/a.ts", kind=NodeKind.VARIABLE, lines=3), name_match=True),
        Candidate(chunk("c", "Token", "src/b.ts", kind=NodeKind.CLASS), name_match=True),
    ]
    assert ids(rank(analyze("Token"), cands, ratio=0.0, limit=10))[0] == "c"


def test_tests_are_penalised_unless_the_query_is_about_tests():
    impl = chunk("impl", "schedule", "src/retry.ts")
    spec = chunk("spec", "schedule", "src/retry.test.ts", is_test=True)
    cands = lexical((spec, 5.0), (impl, 4.0))
    assert ids(rank(analyze("how are retries scheduled"), cands, ratio=0.0, limit=10))[0] == "impl"
    assert ids(rank(analyze("tests for retry scheduling"), cands, ratio=0.0, limit=10))[0] == "spec"


def test_tiny_constants_lose_to_substantive_code():
    const = chunk("k", "RETRY_LIMIT", "src/a.ts", kind=NodeKind.VARIABLE, lines=1)
    fn = chunk("f", "retryLater", "src/b.ts", lines=20)
    out = rank(analyze("give up after too many attempts"), lexical((const, 5.0), (fn, 4.5)), ratio=0.0, limit=10)
    assert ids(out)[0] == "f" and out[1].signals["tiny"] < 1.0


def test_path_query_lifts_top_level_code_of_that_file():
    target = chunk("t", "mergeMap", "src/operators/mergeMap.ts")
    nested = chunk("n", "inner", "src/operators/mergeMap.ts", depth=1)
    other = chunk("o", "mergeAll", "src/operators/mergeAll.ts")
    cands = lexical((other, 8.0)) + [Candidate(target, path_match=True), Candidate(nested, path_match=True)]
    out = rank(analyze("operators/mergeMap.ts"), cands, ratio=0.0, limit=10)
    assert ids(out)[0] == "t" and out[0].signals["path"] > out[1].signals.get("path", 0)


def test_phrase_in_own_code_wins_for_error_messages():
    thrower = chunk("t", "check", "src/a.ts", source='throw new Error("Expected a function but got null")')
    mention = chunk("m", "expected", "src/b.ts", source="function expected() { /* function null */ }")
    out = rank(analyze("Expected a function but got null"), lexical((mention, 6.0), (thrower, 5.0)),
               ratio=0.0, limit=10)
    assert ids(out)[0] == "t" and "phrase" in out[0].signals


def test_saturation_lets_another_file_in():
    a1, a2, a3 = (chunk(f"a{i}", f"fa{i}", "src/a.ts") for i in range(1, 4))
    b = chunk("b", "fb", "src/b.ts")
    cands = lexical((a1, 10.0), (a2, 9.5), (a3, 9.4), (b, 8.0))
    out = rank(analyze("anything at all here"), cands, ratio=0.0, limit=4,
               policy=RankingPolicy(file_coherence=0.0, saturation=0.5))
    assert ids(out)[:2] == ["a1", "b"]


def test_semantic_min_max_scaling_spreads_a_narrow_band():
    cands = [Candidate(chunk(c, c), cosine=s, semantic_rank=i)
             for i, (c, s) in enumerate([("x", 0.42), ("y", 0.40)], 1)]
    out = rank(analyze("some natural language words"), cands, ratio=1.0, limit=10, policy=FUSION_ONLY)
    assert [r.score for r in out] == [pytest.approx(1.0), pytest.approx(0.0)]
    assert out[0].vector_similarity == pytest.approx(0.42)


@pytest.mark.parametrize(
    ("query", "cap", "has_definition", "expected"),
    [
        ("where are retries scheduled", 0.5, False, (0.5, None)),
        ("validateToken", 0.5, True, (0.0, SKIP_SHORT_CIRCUIT)),
        ("validateToken", 0.5, False, (0.25, None)),
        ("anything", 0.0, False, (0.0, SKIP_RATIO_ZERO)),
        ("validateToken", 1.0, True, (1.0, None)),
    ],
)
def test_semantic_weight_by_intent(query, cap, has_definition, expected):
    assert semantic_weight(analyze(query), cap, has_definition=has_definition) == expected


def test_limit_and_empty_input():
    assert rank(analyze("x"), [], ratio=0.0, limit=10) == []
    cands = lexical((chunk("a", "a"), 1.0), (chunk("b", "b", "src/b.ts"), 1.0))
    assert len(rank(analyze("x"), cands, ratio=0.0, limit=1)) == 1


def test_query_words_spelling_a_name_lift_that_name_over_longer_ones():
    exact = chunk("e", "mergeMap", "src/mergeMap.ts")
    longer = chunk("l", "mergeMapTo", "src/mergeMapTo.ts")
    other = chunk("o", "flatten", "src/flatten.ts")
    out = rank(analyze("merge map operator"), lexical((other, 6.0), (longer, 4.4), (exact, 4.0)), ratio=0.0, limit=10)
    assert ids(out)[:2] == ["e", "l"]
    assert out[0].signals["name_words"] > out[1].signals["name_words"]


def test_a_message_in_a_sentence_matches_code_whatever_the_intent():
    thrower = chunk("t", "connect", "src/ws.ts",
                    source="if (!ctor) throw new Error('no WebSocket constructor can be found')")
    named = chunk("n", "webSocket", "src/subject.ts",
                  source="function webSocket(cfg) { return new WebSocketSubject(cfg) }")
    out = rank(analyze("no WebSocket constructor can be found"), lexical((named, 6.0), (thrower, 5.0)),
               ratio=0.0, limit=10)
    # Case-exact names only inside a sentence: `webSocket` is not the `WebSocket` mentioned.
    assert ids(out)[0] == "t" and "phrase" in out[0].signals
    assert "definition" not in out[1].signals


def test_library_mock_and_testing_folders_are_product_code():
    mock = chunk("m", "MockAgent", "lib/mock/mock-agent.js")
    out = rank(analyze("mock agent intercepts requests"), lexical((mock, 5.0)), ratio=0.0, limit=10)
    assert "test_file" not in out[0].signals


def test_module_top_level_gives_way_unless_the_file_is_asked_for():
    module = chunk("m", "<module top level>", "src/immer.ts", kind=NodeKind.MODULE, lines=120)
    fn = chunk("f", "produce", "src/core/produce.ts", kind=NodeKind.METHOD, lines=50)
    cands = lexical((module, 5.0), (fn, 4.0))
    assert ids(rank(analyze("do not freeze drafts returned from produce"), cands, ratio=0.0, limit=10))[0] == "f"
    by_path = lexical((fn, 5.0)) + [Candidate(module, path_match=True)]
    assert ids(rank(analyze("src/immer.ts"), by_path, ratio=0.0, limit=10))[0] == "m"


def test_name_words_count_short_words_names_are_made_of():
    target = chunk("t", "elementAt", "src/operators/elementAt.ts")
    other = chunk("o", "ignoreElements", "src/operators/ignoreElements.ts")
    out = rank(analyze("element at function"), lexical((other, 6.0), (target, 5.0)), ratio=0.0, limit=10)
    assert ids(out)[0] == "t" and out[0].signals["name_words"] > 0


def test_an_exact_identifier_nothing_is_named_is_low_confidence_with_the_nearest_names():
    """`validateTokenz` finds `validateToken` by its parts and ranks it first; it must not read
    as found. Plain words are concepts, not names: they keep their confidence."""
    from codecompass.policy.confidence import (
    MISSING_NAME_CONFIDENCE,
    confidence,
    confidence_features,
    exact_identifiers,
    missing_names,
    nearest_names,
)

    shape = analyze("validateTokenz")
    assert exact_identifiers(shape) == ("validateTokenz",)
    assert exact_identifiers(analyze("retry")) == ()
    assert exact_identifiers(analyze("how are tokens validated")) == ()
    named = [chunk("a", "validateToken")]
    assert missing_names(exact_identifiers(shape), named) == ("validateTokenz",)
    assert missing_names(exact_identifiers(analyze("ValidateToken")), named) == ()  # case is ignored
    assert missing_names(exact_identifiers(analyze("TokenService.validateToken")), named) == (
        "TokenService.validateToken",)

    results = rank(shape, lexical((chunk("a", "validateToken", source="validateToken(token) {}"), 7.0)),
                   ratio=0.0, limit=10)
    full = confidence(confidence_features(shape, results))
    capped = confidence(confidence_features(shape, results, exact_missing=True))
    assert full > 2 * MISSING_NAME_CONFIDENCE and capped == pytest.approx(min(full, MISSING_NAME_CONFIDENCE))

    names = {"validateToken", "ValidationResult", "decodeJwt", "InvalidTokenError"}
    qualified = {"TokenService.validateToken", "TokenService.revoke"}
    assert nearest_names(["validateTokenz"], names, qualified)[0] == "validateToken"
    assert nearest_names(["TokenService.validateTokn"], names, qualified)[0] == "TokenService.validateToken"
    assert nearest_names(["zzqxBlorf"], names, qualified) == ()


def test_the_nearest_names_are_difflib_s_close_matches():
    import difflib

    from codecompass.policy.confidence import NEAREST_NAMES, nearest_names

    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    parts = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 7))) for _ in range(40)]
    names = {"".join(rng.choice(parts).title() for _ in range(rng.randint(1, 3))) for _ in range(800)}
    for _ in range(60):
        name = rng.choice(sorted(names))
        i = rng.randrange(len(name))
        typo = name[:i] + rng.choice(letters) + name[i + 1:]
        expected = difflib.get_close_matches(typo.lower(), {n.lower(): n for n in names}, n=NEAREST_NAMES, cutoff=0.6)
        assert [n.lower() for n in nearest_names([typo], frozenset(names), frozenset())] == expected
    # Any character a name can hold, an unpaired surrogate included, and no names at all.
    odd = frozenset({"validate", "x\ud800y", "\U0001F680rocket"})
    assert nearest_names(["valid\ud800ate"], odd, frozenset()) == ("validate",)
    assert nearest_names(["\U0001F680rockt"], odd, frozenset()) == ("\U0001F680rocket",)
    assert nearest_names(["validate"], frozenset(), frozenset()) == ()


def test_each_vector_channel_is_min_max_scaled_within_itself():
    """MiniLM's cosines and code-static's live on different scales: a static hit at 0.9 is not
    better than a primary hit at 0.6 because of the number. Each channel's best scores 1."""
    cands = [
        Candidate(chunk("p1", "first"), cosine=0.62, semantic_rank=1, vector_channel=PRIMARY_VECTORS),
        Candidate(chunk("p2", "second"), cosine=0.40, semantic_rank=2, vector_channel=PRIMARY_VECTORS),
        Candidate(chunk("s1", "third"), cosine=0.93, semantic_rank=1, vector_channel=STATIC_VECTORS),
        Candidate(chunk("s2", "fourth"), cosine=0.90, semantic_rank=2, vector_channel=STATIC_VECTORS),
    ]
    out = {r.chunk.id: r for r in rank(analyze("how are things done"), cands, ratio=1.0, limit=10,
                                       policy=FUSION_ONLY)}
    assert out["p1"].score == pytest.approx(1.0) and out["s1"].score == pytest.approx(1.0)
    assert out["p2"].score == pytest.approx(0.0) and out["s2"].score == pytest.approx(0.0)
    assert (out["s1"].vector_channel, out["p1"].vector_channel) == (STATIC_VECTORS, PRIMARY_VECTORS)
    # Scaled together, the static hits would have buried the primary channel's best.
    assert out["s1"].vector_similarity == pytest.approx(0.93)


def test_file_diversity_reorders_the_final_list_not_the_hand_set_input():
    # Three chunks of one file ahead of another file: with a decay of 0.5 the other file's chunk
    # passes the third (0.25 x its score) and the second (0.5 x).
    cands = lexical((chunk("a1", "alpha", "src/big.ts"), 10.0), (chunk("a2", "alpha two", "src/big.ts"), 9.0),
                    (chunk("a3", "alpha three", "src/big.ts"), 8.5), (chunk("b", "beta", "src/other.ts"), 6.0))
    plain = rank(analyze("anything at all here"), cands, ratio=0.0, limit=4, policy=RankingPolicy(saturation=1.0))
    assert ids(plain) == ["a1", "a2", "a3", "b"]
    diverse = rank(analyze("anything at all here"), cands, ratio=0.0, limit=4, policy=RankingPolicy(saturation=0.5))
    assert ids(diverse) == ["a1", "b", "a2", "a3"]
    assert diverse[2].signals["saturation"] == 0.5


def test_the_phrase_is_found_in_code_as_its_normalised_text_would_find_it():
    # The phrase signal matches a regex over the lowercased code instead of normalising every
    # candidate's code: both must agree, whatever whitespace and punctuation lie around the words.
    rng = random.Random(7)
    words = ["no", "WebSocket", "constructor", "can", "be", "found", "(x)", "a.b", "*", "ß", "İx"]
    spaces = [" ", "  ", "\t", "\n  ", "\u00a0", "\u2003"]
    found = 0
    for _ in range(400):
        chosen = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        code = "".join(word + rng.choice(spaces) for word in chosen)
        code = rng.choice(["", "!", ". "]) + code + rng.choice(["", ";", "!."])
        start = rng.randrange(len(chosen))
        # Half the time a run of the code's own words (found), else any words (mostly not).
        picked = chosen[start:start + rng.randint(1, 4)] if rng.random() < 0.5 else rng.sample(words, 3)
        phrase = _normalise(" ".join(picked))
        if not phrase:
            continue
        expected = phrase in _normalise(code)
        found += expected
        assert expected == bool(_phrase_pattern(phrase).search(code.lower())), (phrase, code)
    assert found > 100
