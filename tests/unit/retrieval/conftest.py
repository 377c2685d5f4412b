"""The `harness` fixture of test_sync*.py and test_static_channel.py: a RetrievalEngine over the fake
analysis and embedding services of sync_harness.py, in a fresh workspace and state folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.retrieval.sync_harness import FakeAnalysis, FakeEmbedding, Harness, _serve

from codecompass.common.config import RetrievalSettings, Settings
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.v1 import analysis_pb2_grpc, embedding_pb2_grpc


@pytest.fixture
def harness(tmp_path: Path, request) -> Iterator[Harness]:
    # A test's parameter is its SyncTuning, or (SyncTuning, RetrievalSettings overrides).
    param = getattr(request, "param", SyncTuning())
    tuning, overrides = (param, {}) if isinstance(param, SyncTuning) else param
    fake_analysis, fake_embedding = FakeAnalysis(), FakeEmbedding()
    analysis_server, analysis_addr = _serve(analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server, fake_analysis)
    embedding_server, embedding_addr = _serve(embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server, fake_embedding)
    root = tmp_path / "ws"
    root.mkdir()
    settings = Settings(state_dir=tmp_path / "state", retrieval=RetrievalSettings(compact_every_n_syncs=3, **overrides))
    h = Harness(root, fake_analysis, fake_embedding, None, embedding_server, settings, analysis_addr, embedding_addr)  # type: ignore[arg-type]
    h.engine = h.new_engine(tuning)
    yield h
    h.engine.close()
    analysis_server.stop(None)
    embedding_server.stop(None)
