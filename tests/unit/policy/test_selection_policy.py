"""Selection policy (policy.selection): the verdict on an answer, what the gate keeps within which
budget, the confident tail's cut, and when children merge. Pure values, no selection types."""

from __future__ import annotations

from codecompass.policy.confidence import Unmatched, unmatched
from codecompass.policy.selection import (
    ANSWERABLE_MIN,
    CONFIDENT_TAIL,
    LOW_CONFIDENCE_MAX_TOKENS,
    MERGE_MIN_COVER,
    ClearWinner,
    TailCut,
    answer_budget,
    beats_list,
    gate,
    judge,
    merge_earned,
    reading_depths,
    relevance_as_sent,
)


def test_a_candidate_without_relevance_is_gated_on_its_score_clamped() -> None:
    assert relevance_as_sent(0.3, 0.9) == 0.3
    assert [relevance_as_sent(None, s) for s in (-0.5, 0.42, 3.0)] == [0.0, 0.42, 1.0]


def test_the_verdict_compares_the_best_with_the_threshold_and_names_the_floor() -> None:
    sure = judge(0.8, 0.5)
    assert not sure.low_confidence and sure.floor == 0.0  # no tail cut: every match is kept
    assert judge(0.8, 0.5, TailCut(min_relevance=0.3)).floor == 0.3
    assert judge(0.5, 0.5).low_confidence is False  # reaching the threshold is confident
    unsure = judge(0.49, 0.5)
    assert unsure.low_confidence and unsure.floor == 0.0 and (unsure.best, unsure.threshold) == (0.49, 0.5)


def test_a_confident_answer_keeps_every_candidate_that_matched_in_the_order_sent() -> None:
    # No noise floor: a far tail (0.01) is kept, for the budget to reach or not; nothing (0) is not.
    decided = gate([0.3, 0.8, 0.01, 0.0, 0.6], 0.5, 8000)
    assert decided.kept == (0, 1, 2, 4) and decided.max_tokens == 8000 and not decided.verdict.low_confidence


def test_a_low_confidence_answer_keeps_all_that_matched_within_the_request_budget() -> None:
    decided = gate([0.4, 0.0, 0.3, 0.2, 0.1], 0.5, 8000)
    assert decided.verdict.low_confidence and decided.kept == (0, 2, 3, 4) and decided.max_tokens == 8000
    nothing = gate([0.0, 0.0], 0.5, 8000)
    assert nothing.kept == () and nothing.verdict.low_confidence and gate([], 0.5, 8000).kept == ()


def test_an_unsure_answer_to_a_question_likely_without_one_is_asked_for_the_small_budget() -> None:
    unsure, sure = judge(0.3, 0.5), judge(0.8, 0.5)
    below = ANSWERABLE_MIN - 0.01
    assert answer_budget(8000, unsure, below) == LOW_CONFIDENCE_MAX_TOKENS <= 1000
    assert answer_budget(0, unsure, below) == LOW_CONFIDENCE_MAX_TOKENS  # 0: the service's default
    assert answer_budget(300, unsure, below) == 300  # a smaller request budget stands
    assert answer_budget(8000, unsure, ANSWERABLE_MIN) == 8000  # likely answered, only unsure of the first
    assert answer_budget(8000, sure, 0.1) == 8000  # a confident answer keeps its budget
    assert answer_budget(0, unsure, None) == 0  # not judged: nothing is capped


def test_an_unsure_answer_whose_question_evidently_matches_nothing_is_asked_for_the_small_budget() -> None:
    unsure, sure = judge(0.3, 0.5), judge(0.8, 0.5)
    # Words that occur nowhere, a name lookup of a name no chunk has: small whatever the answerability says.
    assert answer_budget(8000, unsure, 0.9, Unmatched.NO_WORDS) == LOW_CONFIDENCE_MAX_TOKENS
    assert answer_budget(8000, unsure, None, Unmatched.NOTHING_TO_SEARCH) == LOW_CONFIDENCE_MAX_TOKENS
    assert answer_budget(8000, unsure, 0.9, Unmatched.MISSING_NAMES, name_lookup=True) == LOW_CONFIDENCE_MAX_TOKENS
    # In a sentence, a code-shaped word that names nothing is one word among others.
    assert answer_budget(8000, unsure, 0.9, Unmatched.MISSING_NAMES) == 8000
    assert answer_budget(8000, sure, 0.1, Unmatched.NO_WORDS) == 8000  # a confident answer keeps its budget


def test_why_a_query_evidently_matches_nothing() -> None:
    assert unmatched("\u200b\u200b", (), True, True) is Unmatched.NOTHING_TO_SEARCH
    assert unmatched("🙂🙂", (), True, True) is Unmatched.NOTHING_TO_SEARCH
    # Words in any script are searched (names too: `рассчитатьСкидку`): matched, they are evidence;
    # unmatched, they are words no code has, as in English.
    assert unmatched("كيف يعمل", (), True, True) is None
    assert unmatched("كيف يعمل", (), False, True) is Unmatched.NO_WORDS
    assert unmatched("validateTokenz", ("validateTokenz",), True, True) is Unmatched.MISSING_NAMES
    assert unmatched("quantum banana", (), False, True) is Unmatched.NO_WORDS
    assert unmatched("quantum banana", (), False, False) is None  # no results: nothing to judge
    assert unmatched("how are tokens validated", (), True, True) is None


def test_a_composed_answer_must_show_as_much_as_the_list_or_give_it() -> None:
    assert beats_list([(100, 0.9), (200, 0.5)], [(100, 0.9), (200, 0.5)], 8000)  # a tie keeps it
    assert beats_list([(100, 0.9), (200, 0.5), (300, 0.4)], [(100, 0.9), (200, 0.5)], 8000)
    assert not beats_list([(100, 0.9), (200, 0.3)], [(100, 0.9), (200, 0.5)], 8000)


def test_a_composed_answer_must_not_show_less_to_a_reader_who_stops_early() -> None:
    assert reading_depths(8000) == [8000, 2000, 500]
    assert reading_depths(1000) == [1000]
    assert reading_depths(300) == [300]
    # A 1,400-token merged parent holding three candidates, where the list shows two of them in
    # 300 tokens: more in the whole budget, less in its first 500 tokens.
    merged = [(1400, 0.9), (1400, 0.8), (1400, 0.7)]
    listed = [(150, 0.9), (300, 0.8), (1500, 0.7)]
    assert not beats_list(merged, listed, 8000)
    assert beats_list(merged, listed, 1500)  # an answer of 1,500 tokens is read whole: a tie
    # Read to 500 it shows as much (the first result is the merged parent at 450 tokens).
    assert beats_list([(450, 0.9), (450, 0.8), (1200, 0.7)], listed, 8000)


def test_the_confident_tail_cuts_nothing_by_default() -> None:
    assert TailCut() == CONFIDENT_TAIL
    relevances = [0.9, 0.35, 0.3, 0.25, 0.02, 0.0]
    assert gate(relevances, 0.5, 8000).kept == gate(relevances, 0.5, 8000, TailCut()).kept == (0, 1, 2, 3, 4)


def test_the_tail_knobs_cut_a_confident_answer_when_set() -> None:
    relevances = [0.9, 0.35, 0.3, 0.25, 0.21]
    floor = TailCut(min_relevance=0.28)
    assert gate(relevances, 0.5, 8000, floor).kept == (0, 1, 2)
    assert gate(relevances, 0.5, 8000, floor).verdict.floor == 0.28
    clear = TailCut(clear_winner=ClearWinner(lead=0.3, results=2))
    assert gate(relevances, 0.5, 8000, clear).kept == (0, 1)  # 0.9 leads 0.35 by 0.55
    close = [0.9, 0.8, 0.3, 0.25]
    assert gate(close, 0.5, 8000, clear).kept == (0, 1, 2, 3)  # no clear winner: nothing cut
    # The tail is a confident answer's: a low-confidence one is unchanged by it.
    assert gate([0.4, 0.3, 0.2], 0.5, 8000, clear).kept == (0, 1, 2)


def test_children_merge_when_they_cover_enough_of_their_parent() -> None:
    assert merge_earned(MERGE_MIN_COVER) and merge_earned(1.0)
    assert not merge_earned(MERGE_MIN_COVER - 0.01)
