"""The code-small profile: the MiniLM provider serving the committed ONNX model (models/code_small/model)."""

from __future__ import annotations

import hashlib
import shutil
import sys
import threading
import time

import numpy as np
import pytest
from tests.fixtures.embedding import CSS_CHUNK, JWT_CHUNK, QUERY

from codecompass.common.config import settings_from
from codecompass.embedding.base import ProviderStartError
from codecompass.embedding.minilm import CODE_SMALL_MODEL_DIR, MINILM, MiniLMProvider, code_small
from codecompass.embedding.profiles import choose_provider


@pytest.fixture(scope="module")
def provider() -> MiniLMProvider:
    provider = MiniLMProvider(spec=code_small())
    provider.warmup()
    return provider


def profile(env: dict[str, str]):
    return choose_provider(settings_from({"HOME": "/nonexistent", "CODECOMPASS_EMBEDDING_PROFILE": "code-small",
                                          **env}).embedding)


def test_the_identity_is_the_committed_files_hash_so_a_retrained_model_is_a_new_channel(provider):
    info = provider.info()
    digest = hashlib.sha256((CODE_SMALL_MODEL_DIR / "model.onnx").read_bytes()).hexdigest()[:12]
    assert (info.provider, info.model_id, info.dimensions, info.max_input_tokens) == ("code-small", "code-small",
                                                                                      384, 256)
    assert info.model_version == f"cs-{digest}+split-v1+win256"


def test_a_query_finds_the_chunk_that_answers_it(provider):
    documents = provider.embed([CSS_CHUNK, JWT_CHUNK], "document")
    (query,) = provider.embed([QUERY], "query")
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, rtol=1e-5)
    css, jwt = documents @ query
    assert jwt > css + 0.1, (jwt, css)


def test_a_query_runs_beside_a_document_batch_not_behind_it(provider):
    deadline = time.monotonic() + 10
    while provider._query_session is None and time.monotonic() < deadline:  # opened behind the warmup
        time.sleep(0.01)
    # A text embeds the same as a query or a document: a document goes to the batch session.
    (on_batch_session,) = provider.embed([QUERY], "document")
    in_flight, done = threading.Event(), threading.Event()

    def batch() -> None:  # a document batch holding the model
        with provider._lock.hold(urgent=False):
            in_flight.set()
            done.wait(10)

    holder = threading.Thread(target=batch)
    holder.start()
    try:
        in_flight.wait(5)
        started = time.monotonic()
        (beside,) = provider.embed([QUERY], "query")
        assert time.monotonic() - started < 2 and holder.is_alive()
    finally:
        done.set()
        holder.join(10)
    np.testing.assert_allclose(beside, on_batch_session, atol=1e-6)


def test_token_ids_given_directly_embed_as_the_text_they_come_from(provider):
    # Distillation (models/code_static) feeds single tokens this way; a text's ids must embed the same.
    ids = provider.token_ids(JWT_CHUNK)
    (from_ids,) = provider.embed_token_ids([ids], "document")
    (from_text,) = provider.embed([JWT_CHUNK], "document")
    np.testing.assert_allclose(from_ids, from_text, atol=1e-6)
    single = provider.embed_token_ids([[ids[0], ids[1], ids[-1]], [ids[0], ids[2], ids[-1]]], "document")
    assert single.shape == (2, 384) and not np.allclose(single[0], single[1])
    assert provider.embed_token_ids([], "document").shape == (0, 384)


def test_the_profile_serves_the_committed_model_or_the_configured_folder(tmp_path):
    default = profile({}).provider
    assert isinstance(default, MiniLMProvider) and not profile({}).external_provider_blocked
    assert default._spec.files().onnx == CODE_SMALL_MODEL_DIR / "model.onnx"
    shutil.copytree(CODE_SMALL_MODEL_DIR, tmp_path / "retrained")
    chosen = profile({"CODECOMPASS_EMBEDDING_MODEL": str(tmp_path / "retrained")}).provider
    assert chosen._spec.files().onnx == tmp_path / "retrained" / "model.onnx"
    # code-small is the default profile; MiniLM stays one setting away, from its package, under its own name.
    assert choose_provider(settings_from({"HOME": "/nonexistent"}).embedding).provider._spec.provider == "code-small"
    assert profile({"CODECOMPASS_EMBEDDING_PROFILE": "minilm"}).provider._spec is MINILM


@pytest.mark.badinput(case="code-small profile without its model folder",
                      behaviour="the service never serves; warmup fails with one line naming the folder and the fix")
def test_a_missing_model_is_one_line_naming_the_fix(tmp_path):
    with pytest.raises(ProviderStartError) as error:
        MiniLMProvider(spec=code_small(tmp_path / "absent")).warmup()
    assert str(error.value) == (f"code-small: no model at {tmp_path / 'absent'} (expected model.onnx); "
                                "run `make code-small` or set CODECOMPASS_EMBEDDING_MODEL")


@pytest.mark.badinput(case="code-small model folder with a corrupt model.onnx",
                      behaviour="warmup fails with one line: cannot load FILE, rebuild it with make code-small")
def test_a_corrupt_model_is_one_line(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.onnx").write_bytes(b"\x00garbage")
    with pytest.raises(ProviderStartError, match=r"^code-small: cannot load .*broken/model.onnx \(.*\); "
                                                  r"rebuild it with `make code-small`$") as error:
        MiniLMProvider(spec=code_small(broken)).warmup()
    assert "\n" not in str(error.value)


def test_the_minilm_export_without_the_export_extra_says_what_to_install(tmp_path, monkeypatch):
    # torch and onnx are not run-time dependencies: a first start of the minilm profile without
    # them (and without an export on disk) is refused with the one line that says what to install.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ProviderStartError, match=r"needs the export extra \(pip install 'codecompass\[export\]'"):
        MINILM.files()
    assert not list(tmp_path.rglob("*.onnx"))
