"""The evaluation's query embedders: the configured model folders, and only the model an index was written with."""

from __future__ import annotations

import shutil

import pytest

from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.embedding.static import DEFAULT_MODEL_DIR, StaticProvider
from codecompass_dev.evaluation.store import query_embedder, static_embedder


def committed_static() -> EmbeddingModel:
    provider = StaticProvider()
    provider.warmup()
    info = provider.info()
    return EmbeddingModel("code-static", info.model_id, info.model_version, info.dimensions)


def test_queries_are_embedded_by_the_configured_folder_when_it_wrote_the_index(tmp_path, monkeypatch):
    # A retrained model under evaluation is a copy elsewhere: the index it wrote names its version.
    folder = tmp_path / "retrained"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    monkeypatch.setenv("CODECOMPASS_EMBEDDING_MODEL", str(folder))
    monkeypatch.setenv("CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR", str(folder))
    model = committed_static()
    assert query_embedder(model).embed(["parse the range"], "query").shape == (1, model.dimensions)
    assert static_embedder(model).info().model_version == model.model_version
    assert static_embedder(None).info().model_version == model.model_version


def test_an_index_of_another_model_is_refused_rather_than_searched_with_the_wrong_vectors(monkeypatch):
    monkeypatch.delenv("CODECOMPASS_EMBEDDING_MODEL", raising=False)
    monkeypatch.delenv("CODECOMPASS_RETRIEVAL_STATIC_MODEL_DIR", raising=False)
    other = EmbeddingModel("code-static", "code-static", "m2v-000000000000+split-v1+win256w", 256)
    with pytest.raises(SystemExit, match="the index was written by"):
        query_embedder(other)
    with pytest.raises(SystemExit, match="the index was written by"):
        static_embedder(other)
