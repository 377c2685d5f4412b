"""An answer rendered from the index when the index is fresh is the answer the analysis service
renders (issue 27 §3): the same text, lines and token counts, with no round trip for a symbol
shown with no child expanded. Real services on the sample workspace: the analysis service renders,
and in the pipeline test the chunks come back through the retrieval service's store."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from codecompass_gateway.pipeline import Pipeline, PipelineRequest

from codecompass.clients.analysis import AnalysisClient
from codecompass.common.chunks import Chunk
from codecompass.common.config import SelectionSettings, load_settings
from codecompass.contracts.analysis.model import RenderedSymbol, RenderRequest
from codecompass.contracts.selection.model import Candidate, SelectOutcome, SelectQuery
from codecompass.selection.engine import SelectionEngine
from codecompass.selection.render_client import RenderClient

pytestmark = pytest.mark.slow

QUESTIONS = ("how are tokens validated", "revoke a token", "route a request to its handler", "load the config",
             "login form submit", "retry with backoff", "slugify a string", "user badge component",
             "auth middleware", "log a message")


class CountingRenderer:
    """The real analysis service's renderer, remembering every batch of specs it was asked for."""

    def __init__(self, inner: RenderClient) -> None:
        self.inner = inner
        self.calls: list[list[RenderRequest]] = []

    def render(self, workspace_root: str, specs: Sequence[RenderRequest]) -> list[RenderedSymbol | None]:
        self.calls.append(list(specs))
        return self.inner.render(workspace_root, specs)


def _same(outcome: SelectOutcome) -> SelectOutcome:
    return dataclasses.replace(outcome, duration_ms=0.0)


@pytest.fixture(scope="module")
def sample_chunks(analysis_server: str, sample_workspace: Path) -> list[Chunk]:
    """Every chunk of the sample workspace, as the analysis service makes them for the index."""
    files = sorted(str(p.relative_to(sample_workspace)) for p in sample_workspace.rglob("*")
                   if p.suffix in {".ts", ".tsx", ".js", ".jsx"})
    client = AnalysisClient(analysis_server, timeout_s=60)
    try:
        return [c for f in client.chunk_files(str(sample_workspace), files, include_references=False) for c in f.chunks]
    finally:
        client.close()


@pytest.fixture
def renderer(analysis_server: str) -> Iterator[CountingRenderer]:
    inner = RenderClient(analysis_server, timeout_s=10.0)
    yield CountingRenderer(inner)
    inner.close()


def test_every_symbol_alone_is_the_same_answer_without_a_round_trip(renderer, sample_chunks, sample_workspace) -> None:
    engine = SelectionEngine(SelectionSettings(), renderer)
    assert any(c.indent for c in sample_chunks) and any(c.parent_id for c in sample_chunks)
    for chunk in sample_chunks:
        query = SelectQuery(str(sample_workspace), (Candidate(chunk, 0.9, relevance=0.9),), max_tokens=8000)
        rendered = engine.select(query)
        calls = len(renderer.calls)
        stored = engine.select(dataclasses.replace(query, index_fresh=True))
        assert len(renderer.calls) == calls, chunk.qualified_name
        assert not rendered.render_fallback and rendered.results, chunk.qualified_name
        assert _same(stored) == _same(rendered), chunk.qualified_name


def test_only_merged_parents_go_to_the_analysis_service(renderer, sample_chunks, sample_workspace) -> None:
    engine = SelectionEngine(SelectionSettings(), renderer)
    merged = 0
    for path in sorted({c.relative_path for c in sample_chunks}):
        # A whole file's symbols, best first by size: parents with their children kept, cards too.
        in_file = sorted((c for c in sample_chunks if c.relative_path == path), key=lambda c: c.start_line)
        candidates = tuple(Candidate(c, 0.9 - i * 0.01, relevance=0.9 - i * 0.01) for i, c in enumerate(in_file))
        for budget in (400, 2000, 8000):
            query = SelectQuery(str(sample_workspace), candidates, max_tokens=budget)
            rendered = engine.select(query)
            renderer.calls.clear()
            stored = engine.select(dataclasses.replace(query, index_fresh=True))
            assert _same(stored) == _same(rendered), (path, budget)
            sent = [spec for call in renderer.calls for spec in call]
            assert all(spec.expand_child_ids for spec in sent), (path, budget)
            assert len(renderer.calls) <= 1 and bool(renderer.calls) == bool(sent)
            merged += stored.merged
    assert merged > 0, "the sample workspace has parents whose kept children earn a merge"


def test_a_fresh_index_without_the_analysis_service_answers_all_the_same(sample_chunks, sample_workspace,
                                                                        free_port) -> None:
    down = RenderClient(f"127.0.0.1:{free_port}", timeout_s=2.0)
    try:
        engine = SelectionEngine(SelectionSettings(), down)
        method = next(c for c in sample_chunks if c.qualified_name == "TokenService.validateToken")
        outcome = engine.select(SelectQuery(str(sample_workspace), (Candidate(method, 0.9, relevance=0.9),),
                                            index_fresh=True))
        stale = engine.select(SelectQuery(str(sample_workspace), (Candidate(method, 0.9, relevance=0.9),)))
    finally:
        down.close()
    assert not outcome.render_fallback and outcome.results[0].source.startswith("validateToken(token: string)")
    # A caller that cannot vouch for the index still learns the text may be stale.
    assert stale.render_fallback and stale.render_fallback_reason == "analysis_unavailable"
    assert [r.source for r in stale.results] == [r.source for r in outcome.results]


@pytest.fixture(scope="module")
def pipeline(indexed_stack: dict[str, str]) -> Iterator[Pipeline]:
    settings = dataclasses.replace(load_settings(), retrieval_addr=indexed_stack["RETRIEVAL_ADDR"],
                                   rerank_addr=indexed_stack["RERANK_ADDR"],
                                   selection_addr=indexed_stack["SELECTION_ADDR"])
    running = Pipeline(settings)
    yield running
    running.close()


def test_the_pipeline_answers_from_the_index_as_the_analysis_service_would(pipeline, indexed_stack,
                                                                          monkeypatch) -> None:
    """Chunks through the store (the indent column included): after a fresh sync the gateway
    vouches for the index, and each answer equals the one rendered from the files."""
    sent: list[SelectQuery] = []
    select = pipeline.selection.select

    def recording(query: SelectQuery, timeout_s: float) -> SelectOutcome:
        sent.append(query)
        return select(query, timeout_s)

    monkeypatch.setattr(pipeline.selection, "select", recording)
    compared = 0
    for question in QUESTIONS:
        for budget in (1000, 8000):
            answer = pipeline.run(PipelineRequest(workspace_root=indexed_stack["root"], query=question,
                                                  max_tokens=budget))
            assert answer.freshness_status == "fresh", question
            if answer.selection is None:
                continue  # nothing ranked: nothing selected either way
            query = sent[-1]
            assert query.index_fresh, question
            rendered = select(dataclasses.replace(query, index_fresh=False), 30)
            assert _same(answer.selection) == _same(rendered), (question, budget)
            assert not rendered.render_fallback and rendered.results
            compared += 1
    assert compared >= len(QUESTIONS)
    off = pipeline.run(PipelineRequest(workspace_root=indexed_stack["root"], query=QUESTIONS[0], sync=False))
    assert off.freshness_status == "unknown" and not sent[-1].index_fresh
