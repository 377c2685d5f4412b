"""Selection: the gate, parent-child merging, rendering, the budget.

Every step but rendering is a pure function of the request; `SelectionEngine.select` strings
them together around at most one RenderSymbols call made through an injected `Renderer`. When the
caller vouches that the index is fresh (`SelectQuery.index_fresh`), a symbol shown with no child
expanded is rendered from its chunk (`stored_rendering`), and only merged parents are asked for.

The order of steps matters:
1. each candidate's relevance is the one the caller sent: the ranking policy's
   (`codecompass.policy.relevance`: confidence, score relative to the best, focus), judged where
   the query's shape is; a candidate sent without one is gated on its score as given;
2. the gate: every candidate that matched is kept (relevance above 0; a confident answer's
   tail can be cut by `policy.selection.TailCut`, which cuts nothing by default); an answer whose
   best candidate does not reach min_relevance is a low-confidence answer, filled within the
   request's budget (the gateway asks for a small one, `policy.selection.answer_budget`, when
   the question likely has no answer here), and the caller says it is not a confident match;
3. kept candidates whose kept parent chain leads to another kept candidate are merged into the
   highest one when the kept children cover most of it (MERGE_MIN_COVER) and the merged result
   is no larger than one result may be;
4. the results are rendered, headed and counted, then
5. filled into the token budget (the gate's) in the ranking's order, clipping only what is over its
   per-result cap;
6. the answer must beat the ranked list or give it: the same kept candidates, each alone, filled
   into the same budget, are the answer instead when they show more of what the ranking expects
   to be relevant, read to the whole budget or to any shallower depth a reader may stop at
   (`policy.beats_list`), e.g. when a large merged parent or card would cost the budget, or its
   first 500 tokens, more results than its expansion shows.

The rules of steps 1 to 3 and the numbers they compare with are the selection policy's
(`codecompass.policy.selection`); this module applies them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from codecompass.common.chunks import MODULE_QUALIFIED_NAME, Chunk, NodeKind
from codecompass.common.config import SelectionSettings
from codecompass.common.logging import get_logger
from codecompass.common.readcache import ReadCache
from codecompass.common.tokens import count_tokens
from codecompass.contracts.analysis.model import RenderedSymbol, RenderRequest
from codecompass.contracts.selection.model import (
    FALLBACK_MISSING,
    Candidate,
    Reason,
    SelectedResult,
    SelectOutcome,
    SelectQuery,
)
from codecompass.policy import selection as policy
from codecompass.selection.render_client import RenderFailed

log = get_logger("codecompass.selection.engine")

# Below this many tokens a clipped result is a signature and a marker: not worth a slot.
CLIP_MIN_TOKENS = 150
# A collapsed child in rendered source: `signature { /* N lines collapsed */ }` stands for the
# child's N lines and ends on the child's last line.
_COLLAPSED = re.compile(r"/\* (\d+) lines collapsed \*/")


class Renderer(Protocol):
    def render(self, workspace_root: str, specs: Sequence[RenderRequest]) -> list[RenderedSymbol | None]:
        """One answer per spec, in order; None for a symbol the workspace no longer has.
        Raises RenderFailed when the analysis service cannot answer at all."""
        ...


# --- 1. relevance, as sent ----------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """A candidate with its relevance; `index` is its place in the request (ties keep it)."""

    candidate: Candidate
    index: int
    relevance: float

    @property
    def id(self) -> str:
        return self.candidate.chunk.id

    @property
    def score(self) -> float:
        return self.candidate.score


def as_sent(candidates: Sequence[Candidate]) -> list[Scored]:
    """Each candidate with the relevance it was sent with, else its score (clamped to [0, 1]).

    Selection judges nothing about the query: the gateway's relevance policy already folded the
    search's confidence and the query's focus into the relevance. A plain client that sends no
    relevance has its scores gated as given, in the order it sent them.
    """
    return [Scored(c, index, policy.relevance_as_sent(c.relevance, c.score)) for index, c in enumerate(candidates)]


# --- 2. the gate ----------------------------------------------------------------------------------


def gate(scored: Sequence[Scored], min_relevance: float, max_tokens: int) -> tuple[list[Scored], int, int]:
    """The candidates an answer keeps, in the order sent, how many were dropped, and the budget the
    answer is filled within: the selection policy's gate (`codecompass.policy.selection.gate`)."""
    decided = policy.gate([s.relevance for s in scored], min_relevance, max_tokens)
    kept = [scored[i] for i in decided.kept]
    return kept, len(scored) - len(kept), decided.max_tokens


# --- 3. parent-child merging ----------------------------------------------------------------------


def is_module_chunk(chunk: Chunk) -> bool:
    return chunk.node_kind is NodeKind.MODULE and chunk.qualified_name == MODULE_QUALIFIED_NAME


@dataclass
class Node:
    """A kept candidate in the forest of kept parent chains."""

    scored: Scored
    children: list[Node] = field(default_factory=list)

    def descendants(self) -> list[Scored]:
        out: list[Scored] = []
        for child in self.children:
            out.append(child.scored)
            out.extend(child.descendants())
        return out


def merge_forest(kept: Sequence[Scored]) -> list[Node]:
    """Kept candidates as trees: a candidate hangs under its parent when the parent is kept too,
    and a top-level symbol under its file's card (the module chunk) when the card is kept and
    ranks above the symbol and everything kept inside it.

    Walking up parent_id through kept candidates makes a grandchild reach its grandparent through a
    kept parent; a chain broken by a parent that is not kept stops there. A card lists no children
    (top-level symbols keep no parent), so it is found by file. The ranking decides what answers:
    a card ranked first means the file answers, and it shows its outline with its matching symbols
    expanded in place; a symbol ranked above its card answers by itself, under its own name.
    """
    by_id = {s.id: Node(s) for s in kept}
    cards = {s.candidate.chunk.relative_path: by_id[s.id] for s in kept if is_module_chunk(s.candidate.chunk)}
    roots: list[Node] = []
    for s in kept:
        chunk = s.candidate.chunk
        parent = by_id.get(chunk.parent_id) if chunk.parent_id else None
        if parent is not None and (is_module_chunk(parent.scored.candidate.chunk) or _is_ancestor(by_id[s.id], parent)):
            parent = None  # a card named as a parent, or a parent cycle in malformed input
        if parent is None:
            roots.append(by_id[s.id])
        else:
            parent.children.append(by_id[s.id])
    forest: list[Node] = []
    for root in roots:
        chunk = root.scored.candidate.chunk
        # Only a top-level symbol belongs to the card; one whose parent is not kept stays apart.
        card = None if is_module_chunk(chunk) or chunk.parent_id else cards.get(chunk.relative_path)
        if (card is not None and not _is_ancestor(root, card)
                and card.scored.index < min(s.index for s in (root.scored, *root.descendants()))):
            card.children.append(root)
        else:
            forest.append(root)
    return forest


def _is_ancestor(node: Node, other: Node) -> bool:
    """Whether `other` lies in the subtree of `node` (hanging `node` under it would make a cycle)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current is other:
            return True
        stack.extend(current.children)
    return False


def covered_share(node: Node) -> float:
    """Share of the node's lines its kept children span (their own spans, never past the node's)."""
    chunk = node.scored.candidate.chunk
    lines = chunk.end_line - chunk.start_line + 1
    spans = sum(c.scored.candidate.chunk.end_line - c.scored.candidate.chunk.start_line + 1 for c in node.children)
    return min(spans / lines, 1.0) if lines > 0 else 0.0


def earns_merge(node: Node) -> bool:
    """A parent shows its kept children when they cover enough of it (the policy's rule); a file's
    card always does: its own lines are the outline that places them (imports, neighbours'
    signatures), and `compose` still refuses a merged card larger than one result may be."""
    if not node.children:
        return False
    return is_module_chunk(node.scored.candidate.chunk) or policy.merge_earned(covered_share(node))


def render_specs(forest: Sequence[Node]) -> list[RenderRequest]:
    """Every spec the composition may need: each kept symbol bare, and each one whose kept
    children earn a merge also expanded, so a merge that turns out too large can be split without
    a second round trip."""
    specs: list[RenderRequest] = []

    def visit(node: Node) -> None:
        chunk = node.scored.candidate.chunk
        specs.append(RenderRequest(chunk.id, (), chunk.relative_path))
        if earns_merge(node):
            specs.append(RenderRequest(chunk.id, _expand_ids(node), chunk.relative_path))
        for child in node.children:
            visit(child)

    for root in forest:
        visit(root)
    return specs


def _expand_ids(node: Node) -> tuple[str, ...]:
    return tuple(s.id for s in node.descendants())


# --- 4 and 5. rendering, header, tokens -----------------------------------------------------------


def header_for(chunk: Chunk) -> str:
    if is_module_chunk(chunk):
        return f"// {chunk.relative_path}"
    return f"// {chunk.relative_path} > {chunk.qualified_name}"


def tokens_of(header: str, source: str) -> int:
    return count_tokens(f"{header}\n{source}")


@lru_cache(maxsize=4096)
def _header_tokens(header: str) -> int:
    return count_tokens(f"{header}\n")


# Stored renderings' token counts, by what is counted (the text's hash and length). Counting every
# kept candidate's stored rendering for `within_reach` was half of selection's own time, and an
# agent's questions keep returning the same symbols.
_STORED_TOKENS: ReadCache[int] = ReadCache("selection.tokens", 65_536)


def _stored_tokens(source: str) -> int:
    key = f"{hash(source):x}:{len(source)}"
    return _STORED_TOKENS.get_many([key], lambda _missing: {key: count_tokens(source)})[key]


def stored_rendering(chunk: Chunk) -> RenderedSymbol:
    """The symbol with no child expanded, made from the index: what RenderSymbols answers for it
    while its file is as indexed. The same text (the collapsed source without the symbol's
    indent, `Chunk.rendered_collapsed`), the same lines, and the same count (both sides count
    cl100k_base exactly); tests/integration/test_stored_render.py compares the two."""
    source = chunk.rendered_collapsed()
    return RenderedSymbol(symbol_id=chunk.id, relative_path=chunk.relative_path, qualified_name=chunk.qualified_name,
                          source=source, token_count=_stored_tokens(source), start_line=chunk.start_line,
                          end_line=chunk.end_line)


@dataclass(frozen=True)
class Draft:
    """A result rendered and counted, before the budget decides whether and how it fits."""

    root: Scored
    merged: tuple[Scored, ...]  # descendants shown expanded inside root, best first
    header: str
    source: str
    start_line: int
    end_line: int
    token_count: int
    fallback: bool = False

    @property
    def members(self) -> tuple[Scored, ...]:
        return (self.root, *self.merged)

    @property
    def score(self) -> float:
        return max(s.score for s in self.members)

    @property
    def first_index(self) -> int:
        return min(s.index for s in self.members)


def _draft(root: Scored, merged: Sequence[Scored], rendered: RenderedSymbol | None) -> Draft:
    """`rendered` None: no rendering came, and the stored one stands in (as indexed, possibly stale)."""
    chunk = root.candidate.chunk
    header = header_for(chunk)
    fallback = rendered is None
    if rendered is None:
        rendered = stored_rendering(chunk)
    # The rendering was counted (same encoding) and a count splits at the header's line break
    # exactly (cl100k never merges across the start of a non-blank line; 0 differences in 6,000
    # ws-300k symbols): counting the whole text again was half of selection's own time.
    tokens = _header_tokens(header) + rendered.token_count
    ordered = tuple(sorted(merged, key=lambda s: (-s.score, s.index)))
    return Draft(root, ordered, header, rendered.source, rendered.start_line, rendered.end_line, tokens, fallback)


def compose(forest: Sequence[Node], renders: Mapping[RenderRequest, RenderedSymbol | None],
            merge_cap: int) -> list[Draft]:
    """Drafts in the ranking's order (a merged draft at its best member's place). A node whose kept
    children earn a merge becomes one merged draft when its expanded rendering exists, knows every
    child, and fits merge_cap; otherwise the node stands alone (children collapsed) and each kept
    child is composed the same way on its own."""
    drafts: list[Draft] = []

    def visit(node: Node) -> None:
        chunk = node.scored.candidate.chunk
        if earns_merge(node):
            full = renders.get(RenderRequest(chunk.id, _expand_ids(node), chunk.relative_path))
            if full is not None and not full.unknown_child_ids:
                draft = _draft(node.scored, node.descendants(), full)
                if draft.token_count <= merge_cap:
                    drafts.append(draft)
                    return
        drafts.append(_draft(node.scored, (), renders.get(RenderRequest(chunk.id, (), chunk.relative_path))))
        for child in node.children:
            visit(child)

    for root in forest:
        visit(root)
    # The order sent is the ranking's (hubs included): an answer is filled in it, so whatever the
    # budget cuts, it cuts from the end of the ranking, as a reader of the ranked list would.
    drafts.sort(key=lambda d: d.first_index)
    return drafts


# --- 6. the budget --------------------------------------------------------------------------------


def file_line_numbers(lines: Sequence[str], end_line: int) -> list[int]:
    """The last file line each rendered line stands for, counted back from the symbol's end line.

    Backwards because the end is exact: a collapsed child's line ends on the child's last line, so
    only lines above it can be off, by the extra lines of a multi-line signature; a JSDoc above
    the symbol's first line never disturbs the count either.
    """
    numbers = [0] * len(lines)
    line = end_line
    for i in range(len(lines) - 1, -1, -1):
        numbers[i] = line
        collapsed = _COLLAPSED.search(lines[i])
        line -= int(collapsed.group(1)) if collapsed else 1
    return numbers


def clip_marker(omitted: int, first: int, last: int) -> str:
    return f"// … {omitted} more lines (L{first}–L{last}); read the symbol to see them"


@dataclass(frozen=True)
class Clipped:
    source: str
    token_count: int
    lines_omitted: int


def clip(header: str, source: str, end_line: int, limit: int) -> Clipped | None:
    """The first lines of `source` that fit `limit` tokens with the header and one marker line
    naming what was left out; None when not even one line fits."""
    lines = source.split("\n")
    numbers = file_line_numbers(lines, end_line)

    def assemble(keep: int) -> str:
        first_omitted = numbers[keep - 1] + 1
        return "\n".join([*lines[:keep], clip_marker(end_line - first_omitted + 1, first_omitted, end_line)])

    # Estimate from per-line counts (only as many lines as can fit are counted, so a 40,000-line
    # function costs no more than a small one), then correct with exact counts of the whole text.
    used = count_tokens(header) + count_tokens(clip_marker(end_line, end_line, end_line)) + 2
    keep = 0
    while keep < len(lines) - 1:
        used += count_tokens(lines[keep]) + 1
        if used > limit:
            break
        keep += 1
    while keep > 0 and tokens_of(header, assemble(keep)) > limit:
        keep -= 1
    if keep == 0:
        return None
    text = assemble(keep)
    return Clipped(text, tokens_of(header, text), end_line - numbers[keep - 1])


@dataclass(frozen=True)
class Placed:
    draft: Draft
    source: str
    token_count: int
    clipped: bool = False
    lines_omitted: int = 0


def fill_budget(drafts: Sequence[Draft], max_tokens: int) -> tuple[list[Placed], int]:
    """Results that fit, in order, and how many candidates did not fit.

    A draft that fits what is left is placed whole, as the ranked list would show it: a clipped
    result is not an answer, so clipping one that fits to make room for weaker ones could only hold
    less than the list. A draft that does not fit what is left is clipped to its cap (half the
    budget while others wait, else all of it) or to what is left, if less, so a 40,000-line
    function is never returned whole and never takes a small context alone; a clip with under
    CLIP_MIN_TOKENS to work with is skipped instead, and smaller drafts after it may still fit.
    """
    placed: list[Placed] = []
    over_budget = 0
    remaining = max_tokens
    for position, draft in enumerate(drafts):
        if draft.token_count <= remaining:
            placed.append(Placed(draft, draft.source, draft.token_count))
            remaining -= draft.token_count
            continue
        cap = max_tokens // 2 if position < len(drafts) - 1 else max_tokens
        if draft.token_count <= cap:
            over_budget += len(draft.members)
            continue
        limit = min(cap, remaining)
        clipped = clip(draft.header, draft.source, draft.end_line, limit) if limit >= CLIP_MIN_TOKENS else None
        if clipped is None:
            over_budget += len(draft.members)
            continue
        placed.append(Placed(draft, clipped.source, clipped.token_count, True, clipped.lines_omitted))
        remaining -= clipped.token_count
    return placed, over_budget


def as_list(kept: Sequence[Scored], renders: Mapping[RenderRequest, RenderedSymbol | None],
            composed: Sequence[Draft] = ()) -> list[Draft]:
    """The ranked list's drafts: each kept candidate alone (its children collapsed), in order. A
    candidate the composed answer already shows alone is that same draft (counted once)."""
    alone = {d.root.id: d for d in composed if not d.merged}
    return [alone.get(s.id) or _draft(s, (), renders.get(RenderRequest(s.id, (), s.candidate.chunk.relative_path)))
            for s in kept]


def shown_scores(placed: Sequence[Placed]) -> list[tuple[int, float]]:
    """Each candidate an answer shows whole (a clipped result shows its start only): the answer's
    tokens through the end of its result, and its score."""
    shown: list[tuple[int, float]] = []
    end = 0
    for p in placed:
        end += p.token_count
        if not p.clipped:
            shown.extend((end, s.score) for s in p.draft.members)
    return shown


# --- 7. the result ---------------------------------------------------------------------------------


def _count_of(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def why(draft: Draft) -> str:
    """One line an agent reads: "match (score 0.91)", "hub: connects 3 results",
    "match (score 0.62); expands 2 matching children (best 0.91)"."""
    own = draft.root.candidate
    if own.reason is Reason.HUB:
        text = f"hub: connects {_count_of(len(own.connected_ids), 'result', 'results')}"
    else:
        text = f"match (score {own.score:.2f})"
    if draft.merged:
        text += f"; expands {_count_of(len(draft.merged), 'matching child', 'matching children')}"
        if draft.score > own.score:
            text += f" (best {draft.score:.2f})"
    return text


def to_result(placed: Placed) -> SelectedResult:
    draft = placed.draft
    chunk = draft.root.candidate.chunk
    best = min(draft.members, key=lambda s: (-s.score, s.index))
    reasons = [draft.root.candidate.reason]
    if draft.merged:
        reasons.append(Reason.MERGED_PARENT)
    connected: dict[str, None] = {}
    for member in draft.members:
        if member.candidate.reason is Reason.HUB:
            connected.update(dict.fromkeys(member.candidate.connected_ids))
    return SelectedResult(
        chunk_id=chunk.id,
        relative_path=chunk.relative_path,
        start_line=draft.start_line,
        end_line=draft.end_line,
        qualified_name=chunk.qualified_name,
        node_kind=chunk.node_kind,
        language=chunk.language,
        score=draft.score,
        relevance=max(s.relevance for s in draft.members),
        provenance=best.candidate.provenance,
        reasons=tuple(reasons),
        why=why(draft),
        header=draft.header,
        source=placed.source,
        token_count=placed.token_count,
        expanded_child_ids=tuple(s.id for s in draft.merged),
        clipped=placed.clipped,
        lines_omitted=placed.lines_omitted,
        connected_ids=tuple(connected),
    )


# --- the whole selection ---------------------------------------------------------------------------


def within_reach(kept: Sequence[Scored], max_tokens: int) -> list[Scored]:
    """The kept candidates an answer of `max_tokens` can reach: those the ranked list, drafted from
    the stored text, fits into REACH_BUDGET_SHARE times the budget, and every other kept candidate
    of their files (a file is parsed once however many of its symbols render, and a merged parent
    or card shows its kept children from the same file). The rest are never rendered."""
    stored = fill_budget([_draft(s, (), None) for s in kept], int(max_tokens * policy.REACH_BUDGET_SHARE))[0]
    files = {p.draft.root.candidate.chunk.relative_path for p in stored}
    return [s for s in kept if s.candidate.chunk.relative_path in files]


def merge_cap(forest: Sequence[Node], max_tokens: int, merge_max_tokens: int) -> int:
    """The cap a merged result has: half the budget when other results wait (else all of it), and
    never more than merge_max_tokens: a merged result takes its best child's place in the
    answer, so a large parent would push every later result out of a small context."""
    return min(max_tokens // 2 if len(forest) > 1 else max_tokens, merge_max_tokens)


class SelectionEngine:
    def __init__(self, settings: SelectionSettings, renderer: Renderer) -> None:
        self._settings = settings
        self._renderer = renderer

    def select(self, query: SelectQuery) -> SelectOutcome:
        started = time.monotonic()
        settings = self._settings
        min_relevance = settings.min_relevance if query.min_relevance is None else query.min_relevance
        kept, below, max_tokens = gate(as_sent(query.candidates), min_relevance,
                                       query.max_tokens or settings.max_tokens)
        reached = within_reach(kept, max_tokens)
        unreached = len(kept) - len(reached)
        kept = reached
        forest = merge_forest(kept)
        specs = render_specs(forest)
        fallback_reason = ""
        renders: dict[RenderRequest, RenderedSymbol | None] = {}
        if query.index_fresh:
            # The caller's sync found every file as indexed, so the stored rendering is the one the
            # analysis service would make from the file: no round trip for it. A merged parent's
            # expansion is not stored (which children expand is the query's), so it still goes.
            chunks = {s.id: s.candidate.chunk for s in kept}
            renders = {spec: stored_rendering(chunks[spec.symbol_id]) for spec in specs if not spec.expand_child_ids}
        remote = [spec for spec in specs if spec not in renders]
        if remote:
            try:
                renders.update(zip(remote, self._renderer.render(query.workspace_root, remote), strict=True))
            except RenderFailed as exc:
                log.warning("rendering fell back to stored source",
                            extra={"reason": exc.reason, "detail": exc.detail, "symbols": len(remote)})
                fallback_reason = exc.reason
        drafts = compose(forest, renders, merge_cap(forest, max_tokens, settings.merge_max_tokens))
        placed, over_budget = fill_budget(drafts, max_tokens)
        listed, listed_over = fill_budget(as_list(kept, renders, drafts), max_tokens)
        if not policy.beats_list(shown_scores(placed), shown_scores(listed), max_tokens):
            placed, over_budget = listed, listed_over
        over_budget += unreached
        results = tuple(to_result(p) for p in placed)
        fell_back = any(p.draft.fallback for p in placed)
        if fell_back and not fallback_reason:
            fallback_reason = FALLBACK_MISSING
        return SelectOutcome(
            results=results,
            total_tokens=sum(r.token_count for r in results),
            max_tokens=max_tokens,
            min_relevance=min_relevance,
            below_relevance=below,
            over_budget=over_budget,
            merged=sum(len(p.draft.merged) for p in placed),
            render_fallback=fell_back,
            render_fallback_reason=fallback_reason if fell_back else "",
            duration_ms=(time.monotonic() - started) * 1000,
        )
