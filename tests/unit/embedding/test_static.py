"""The code-static provider against a tiny model2vec model built here (a real StaticModel folder)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from model2vec import StaticModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from codecompass.common.config import settings_from
from codecompass.embedding.base import ProviderNotReady, ProviderStartError
from codecompass.embedding.profiles import choose_provider
from codecompass.embedding.static import DEFAULT_MODEL_DIR, StaticProvider, prepare

# The words of the index's text preparation ("validateJwtToken" -> validate, jwt, token), plus
# word pieces so that a word outside the vocabulary still has tokens, as in a distilled model.
WORDS = ["validate", "jwt", "token", "render", "sidebar", "menu", "parse", "http", "header", "button",
         "style", "src", "auth", "ts", "a", "s", "##s", "##er", "##ing"]
DIMENSIONS = 8
JWT_CHUNK = """[TypeScript] src/auth.ts > validateJwtToken
Signature: validateJwtToken(token: string): boolean
---
return parseHttpHeader(token) !== null;"""


def build_model(folder: Path, seed: int = 0) -> Path:
    vocab = {"[PAD]": 0, "[UNK]": 1, **{word: index + 2 for index, word in enumerate(WORDS)}}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    vectors = np.random.default_rng(seed).normal(size=(len(vocab), DIMENSIONS)).astype(np.float16)
    StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_model(tmp_path_factory.mktemp("code-static"))


@pytest.fixture(scope="module")
def provider(model_dir: Path) -> StaticProvider:
    provider = StaticProvider(model_dir=model_dir)
    provider.warmup()
    return provider


def test_info_names_the_model_its_weights_and_its_text_preparation(provider, model_dir, tmp_path):
    info = provider.info()
    assert (info.provider, info.model_id, info.dimensions, info.max_input_tokens) == (
        "code-static", "code-static", DIMENSIONS, 256)
    assert (info.model_version.startswith("m2v-") and "split-v1" in info.model_version
            and "win256w" in info.model_version)
    other = StaticProvider(model_dir=build_model(tmp_path / "retrained", seed=1))
    other.warmup()
    # Other weights are another index channel: their vectors must never mix with these.
    assert other.info().model_version != info.model_version


def test_nothing_answers_before_the_model_is_loaded(model_dir):
    provider = StaticProvider(model_dir=model_dir)
    with pytest.raises(ProviderNotReady):
        provider.info()
    with pytest.raises(ProviderNotReady):
        provider.embed(["x"], "query")


def test_vectors_are_unit_length_deterministic_and_in_input_order(provider):
    texts = [JWT_CHUNK, "render the sidebar menu", "button style", "renderSidebarMenu"]
    batched = provider.embed(texts, "document")
    assert batched.shape == (4, DIMENSIONS) and batched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(provider.embed(texts, "document"), batched)
    for index, text in enumerate(texts):
        np.testing.assert_array_equal(provider.embed([text], "document")[0], batched[index])


def test_identical_text_gives_identical_vectors_as_query_and_as_document(provider):
    query, document = (provider.embed(["validate a jwt token"], "query"),
                       provider.embed(["validate a jwt token"], "document"))
    np.testing.assert_array_equal(query, document)


def test_identifiers_are_embedded_as_their_words(provider):
    split, joined, other = provider.embed(["validateJwtToken", "validate jwt token", "renderSidebarMenu"], "query")
    assert float(split @ joined) > 0.9999
    assert float(split @ other) < 0.9


def test_vectors_are_model2vecs_own_mean_of_the_prepared_words(provider, model_dir):
    texts = [JWT_CHUNK, "renderers parsing headers", "jwt héader ünknown"]
    expected = StaticModel.from_pretrained(model_dir).encode([" ".join(prepare(t, 256)) for t in texts],
                                                             max_length=None)
    np.testing.assert_allclose(provider.embed(texts, "document"), expected, atol=2e-3)


def test_the_window_keeps_the_chunk_header_and_cuts_the_body_tail():
    words = prepare("src/a.ts > validateJwtToken\n---\n" + "render sidebar menu " * 50, 8)
    assert words[:5] == ["src", "a", "ts", "validate", "jwt"] and len(words) == 8


@pytest.mark.parametrize("text", ["", "  ", "{ } ( ) ;", "zzqx"])
def test_a_text_without_known_words_still_has_a_unit_vector(provider, text):
    vector = provider.embed([text], "document")[0]
    assert np.all(np.isfinite(vector)) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


@pytest.mark.badinput(case="code-static profile without its model folder",
                      behaviour="the service never serves; warmup fails with one line naming the folder and the fix")
def test_a_missing_model_is_one_line_naming_the_fix(tmp_path):
    with pytest.raises(ProviderStartError) as error:
        StaticProvider(model_dir=tmp_path / "absent").warmup()
    message = str(error.value)
    assert "\n" not in message and str(tmp_path / "absent") in message and "make code-static" in message


@pytest.mark.badinput(case="code-static model folder with corrupt weights",
                      behaviour="warmup fails with one line: cannot load the model in FOLDER")
def test_corrupt_weights_are_one_line(model_dir, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((model_dir / name).read_bytes())
    (broken / "model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ProviderStartError, match=r"^code-static: cannot load the model in .*broken") as error:
        StaticProvider(model_dir=broken).warmup()
    assert "\n" not in str(error.value)


def test_the_profile_selects_the_committed_model_or_the_configured_folder(model_dir):
    default = choose_provider(settings_from({"HOME": "/nonexistent",
                                             "CODECOMPASS_EMBEDDING_PROFILE": "code-static"}).embedding)
    assert isinstance(default.provider, StaticProvider) and not default.external_provider_blocked
    assert default.provider._model_dir == DEFAULT_MODEL_DIR
    chosen = choose_provider(settings_from({"HOME": "/nonexistent", "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
                                            "CODECOMPASS_EMBEDDING_MODEL": str(model_dir)}).embedding)
    chosen.provider.warmup()
    assert chosen.provider.info().dimensions == DIMENSIONS


def test_serving_imports_neither_torch_nor_onnxruntime(model_dir):
    script = (
        "import json, sys, time\n"
        "started = time.perf_counter()\n"
        "from codecompass.embedding.static import StaticProvider\n"
        f"provider = StaticProvider(model_dir={str(model_dir)!r})\n"
        "provider.warmup()\n"
        "provider.embed(['validate a jwt token'], 'query')\n"
        "print(json.dumps({name: name in sys.modules for name in ('torch', 'onnxruntime', 'transformers')}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"torch": False, "onnxruntime": False,
                                                               "transformers": False}
