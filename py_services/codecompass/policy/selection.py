"""Selection policy: which candidates an answer keeps (the gate), and when kept children merge into
their parent.

The selection service (`codecompass.selection.engine`) strings these decisions together with the
rendering and the budget; the decisions themselves, and every number they compare with, live here.
Pure functions of plain values (relevances, shares): no selection types, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codecompass.policy.confidence import Unmatched

# A low-confidence answer (its best candidate below min_relevance) is flagged, not cut: it keeps
# every candidate that matched at all, in the ranking's order, and says first that nothing is a
# confident match. Confidence is P(the first result is right), so "low" covers most questions in
# words whose first result is a guess (68% of the answerable dev questions at 0.5), and near
# misses are often where the answer is: such an answer gives the ranked list within its budget,
# the reader judges. The budget is the caller's, except for a question that likely has no answer
# here at all: the search's answerability (P(a right result among the first ten), a second model
# on the same evidence) below ANSWERABLE_MIN holds a low-confidence answer to
# LOW_CONFIDENCE_MAX_TOKENS, a reading budget (at most 1,000 by design), not a tuned one, so a
# question with no answer costs the agent little. Where the line goes trades recall on answerable
# questions for tokens on unanswerable ones; the answer must not hold less than its ranked list,
# so the dev split decides (bench-pipeline, recall within 8,000 tokens): at 0.5 the small budget
# held 22% of the answerable questions (151 of 690) and cost the answer 0.039 of recall against
# the list's 0.713. With the models fitted on the held-out repositories (bench-pipeline 11-30), 0.2
# held 1.9% (13 of 690; 2 had their answer in the list within 8,000 tokens, and kept it) and 17%
# of the questions asked of the wrong repository (both splits); 0.25 would have held 30 more dev
# questions, whose recall within 8,000 tokens sums to 12.0 and within 500-2,000 to 5.0-10.5: a
# loss above the answer's whole lead over its list (2.6). With the models of 12-03
# (bench-pipeline 12-03) 0.2 cost a dev concept question (answerability 0.184) the answer its list
# held within 8,000 tokens, which put the dev answer below its list on concept questions (0.5226
# against 0.5239); the rule (the highest line at which no dev query type holds less than its list)
# gives 0.18: 7 of 690 dev questions held, the two of them with an answer kept it, and about 10% of
# the wrong repository's questions held by answerability alone (16% at 0.2). A question whose
# evident reason the search can tell (a name no chunk has, words that occur nowhere, nothing to search by:
# `policy.confidence.unmatched`) is held to it whatever its answerability (a missing name only
# when the query is a name lookup): on dev that adds the rest of the missing names (100% held)
# and most nonsense (86%, against 56% by answerability alone).
LOW_CONFIDENCE_MAX_TOKENS = 1_000
ANSWERABLE_MIN = 0.18
# A confident answer keeps every candidate that matched, as a low-confidence one does: there is no
# noise floor below the gate. A floor can only lose recall within the reader's budget (the
# ranking's order is kept), and on the benchmark it did: at a floor of 0.2 x min_relevance (0.1 at
# the default gate) the dev split's answers held 0.7314 of their targets within 8,000 tokens, below
# their own ranked list on concept and natural-language questions (0.5235 vs 0.5253, 0.7562 vs
# 0.7579): 4 of the 5 dev questions that lost a target lost it to the floor, at ranks 17-30 behind
# short results, with scores 0.0001-0.001 of the best. Without it the answer holds 0.7356 (list
# 0.7301), at least its list on every query type at 500, 2,000 and 8,000 tokens, for 7,781 tokens
# on average instead of 7,186. What a confident answer shows beyond its first results is the
# budget's to decide (the caller's max_tokens), and `TailCut` is where a measured cut would go.
# A parent absorbs its kept children only when they cover at least this share of its lines. On the
# dev split of bench-pipeline a merge carried more gold lines per token than its children shown
# alone in only 36 of 215 merges that showed any gold (0.043 vs 0.053 gold lines per token
# overall: the parent's own lines were mostly what no ranking picked). No rank or relevance rule
# told the 36 apart (the parent ranked above its child: 24 better, 63 worse); coverage did: from
# 90% the merged results carried 0.089 gold lines per token against 0.087 for their children
# alone, and cost fewer tokens (0.98x: one header and signature instead of one per child).
MERGE_MIN_COVER = 0.9
# Only candidates an answer can reach are rendered: those of the files whose candidates the ranked
# list, drafted from the stored text (each symbol alone, children collapsed, as indexed), fits into
# this multiple of the budget. Rendering parses each file it reads (~44 files for 60 candidates on
# ws-300k, 2-10 ms each), while a median answer shows 14 results. The slack covers what drafting
# from stored text cannot know (the rendering is dedented: fewer tokens than the stored text); a
# merged parent or card needs its children, which are of its file.
REACH_BUDGET_SHARE = 1.5
# An answer is read from its start, and a reader may stop before its end: an agent that asked
# for 8,000 tokens reads the first results first. A merged parent or a card is charged whole where
# it stands, so one that holds its best child's place can push the list's next results past where
# such a reader stops (a 1,400-token file module first, where the list showed three of its
# symbols and another file's in 500). So the answer must beat its list read to the whole budget
# and to each quarter of the depth before, down to the smallest answer worth reading (500 tokens,
# half the low-confidence budget): composing is given up, for the list, when it loses at any of
# them.
READING_DEPTH_STEP = 4
READING_DEPTH_MIN = 500


@dataclass(frozen=True)
class ClearWinner:
    """Once the best candidate leads the next by at least `lead` relevance, an answer holds at most
    `results` results: the rest of its tail is padding when the answer is already found."""

    lead: float
    results: int


@dataclass(frozen=True)
class TailCut:
    """Where a confident answer's tail stops, before its budget does.

    Padding a confident answer with noise costs the reader tokens and holds no more recall once the
    answer is in; where that point is gets decided by measurement on the benchmark's dev split
    (bench-pipeline's recall and tokens per answer for a sweep of these values), not guessed. Until
    then the default cuts nothing: every candidate that matched is kept, and the budget ends the
    answer.
    """

    # A kept candidate's relevance must also reach this; 0: every candidate that matched.
    min_relevance: float = 0.0
    # None: no limit after a clear winner.
    clear_winner: ClearWinner | None = None


CONFIDENT_TAIL = TailCut()


@dataclass(frozen=True)
class Verdict:
    """How sure an answer is, as the gate judges it: what the tools and the CLI say to the reader."""

    # The best relevance (or, for a ranked list, the answer's confidence) is below the threshold.
    low_confidence: bool
    best: float
    threshold: float
    # The relevance a confident answer keeps candidates down to (compared with relevance, not with
    # score): the tail's cut, 0 by default. Either answer keeps only candidates that matched at all
    # (relevance above 0).
    floor: float


def judge(best: float, threshold: float, tail: TailCut = CONFIDENT_TAIL) -> Verdict:
    """The verdict on an answer whose best relevance (or confidence) is `best`: one rule for the
    selected answer (semantic_search) and the ranked list (search_code)."""
    low = best < threshold
    floor = 0.0 if low else tail.min_relevance
    return Verdict(low_confidence=low, best=best, threshold=threshold, floor=floor)


@dataclass(frozen=True)
class Gate:
    verdict: Verdict
    # Positions of the candidates kept, in the order sent.
    kept: tuple[int, ...]
    # The budget the answer is filled within.
    max_tokens: int


def relevance_as_sent(relevance: float | None, score: float) -> float:
    """The relevance a candidate is gated on: the one its caller's relevance policy sent, else its
    score as given, clamped to [0, 1] (a plain client that sends no relevance)."""
    return relevance if relevance is not None else min(max(score, 0.0), 1.0)


def answer_budget(max_tokens: int, verdict: Verdict, answerability: float | None,
                  unmatched: Unmatched | None = None, name_lookup: bool = False) -> int:
    """The budget an answer is asked for: the caller's (0: the selection service's default), or at
    most LOW_CONFIDENCE_MAX_TOKENS for a low-confidence answer whose question likely has no answer
    here: answerability below ANSWERABLE_MIN (None, not judged, caps nothing), or the search can
    tell why nothing matches (`unmatched`: words that occur nowhere, nothing to search by, or, for
    a query of names only (`QueryShape.name_lookup`), a name no chunk has). In a sentence a
    code-shaped word that names nothing (an option, a property: `opts.origin`) is one word among
    others: on dev, 16 answerable commit subjects had one (14 of them read as SYMBOL intent, short
    sentences around a name) and lost recall when held small."""
    evident = unmatched is not None and (unmatched is not Unmatched.MISSING_NAMES or name_lookup)
    unlikely = evident or (answerability is not None and answerability < ANSWERABLE_MIN)
    if verdict.low_confidence and unlikely:
        return min(max_tokens, LOW_CONFIDENCE_MAX_TOKENS) if max_tokens > 0 else LOW_CONFIDENCE_MAX_TOKENS
    return max_tokens


def gate(relevances: Sequence[float], min_relevance: float, max_tokens: int,
         tail: TailCut = CONFIDENT_TAIL) -> Gate:
    """What an answer keeps, in the order sent, and the budget it is filled within: every candidate
    that matched, within `max_tokens`; a confident answer down to `tail`'s cut (none by default), a
    low-confidence one whole (the caller's `answer_budget` holds a question likely without an answer
    to a small one). Never padded: a candidate with no relevance (nothing matched) never enters, so
    nothing stays nothing."""
    verdict = judge(max(relevances, default=0.0), min_relevance, tail)
    kept = [i for i, value in enumerate(relevances) if value > 0.0 and value >= verdict.floor]
    if verdict.low_confidence:
        return Gate(verdict, tuple(kept), max_tokens)
    winner = tail.clear_winner
    if winner is not None and len(kept) > winner.results:
        ordered = sorted((relevances[i] for i in kept), reverse=True)
        if ordered[0] - ordered[1] >= winner.lead:
            kept = kept[: winner.results]
    return Gate(verdict, tuple(kept), max_tokens)


def reading_depths(max_tokens: int) -> list[int]:
    """The depths an answer of `max_tokens` is compared with its list at: the whole budget, then a
    quarter of the one before, down to READING_DEPTH_MIN (8,000: 8,000, 2,000 and 500)."""
    depths = [max_tokens]
    while depths[-1] // READING_DEPTH_STEP >= READING_DEPTH_MIN:
        depths.append(depths[-1] // READING_DEPTH_STEP)
    return depths


def beats_list(answer: Sequence[tuple[int, float]], listed: Sequence[tuple[int, float]],
               max_tokens: int) -> bool:
    """Whether a composed answer (merged parents, cards with their symbols) is worth giving
    instead of the ranked list filled into the same budget: read from its start to any of
    `reading_depths`, it shows at least as much of what the ranking expects to be relevant.

    Each shown candidate comes as (the answer's tokens through the end of its result, its score).
    A candidate's score is the ranking's estimate that it is relevant, so the sum of the scores
    shown whole within a depth is the number of relevant results a reader who stops there is
    expected to get; a tie goes to the composed answer, which shows the same in its context."""
    for depth in reading_depths(max_tokens):
        composed = sum(score for end, score in answer if end <= depth)
        plain = sum(score for end, score in listed if end <= depth)
        if composed < plain - 1e-9:
            return False
    return True


def merge_earned(covered_share: float) -> bool:
    """Whether kept children covering `covered_share` of their parent's lines merge into it."""
    return covered_share >= MERGE_MIN_COVER
