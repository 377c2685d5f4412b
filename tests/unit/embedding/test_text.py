"""Text preparation: identifier splitting and the header-preserving window."""

from __future__ import annotations

import pytest

from codecompass.embedding.minilm import WindowedTokenizer
from codecompass.embedding.text import Sections, fit_window, split_sections, to_words

CHUNK = """[TypeScript] src/auth/tokenService.ts > TokenService > validateToken
Purpose: Validates a JWT token and returns the decoded payload
Signature: async validateToken(token: string): Promise<JwtPayload | null>
Dependencies: jsonwebtoken, ../models/auth

Referenced symbols:
- JwtPayload: interface { userId: string; exp: number; iat: number; }
---
async validateToken(token: string): Promise<JwtPayload | null> {
""" + "  const decodedPayloadValue = verifySignature(token, this.secretKey);\n" * 80 + "  return lastLineMarker;\n}"


def test_identifiers_become_words_and_punctuation_is_dropped():
    assert to_words("validateJwtToken(parse_http_url, HTTPServer2);") == [
        "validate", "jwt", "token", "parse", "http", "url", "http", "server", "2"]


def test_non_ascii_words_are_kept_lowercased():
    assert to_words("größe Überblick") == ["größe", "überblick"]


def test_sections_split_header_context_and_body():
    sections = split_sections(CHUNK)
    assert sections.core[:6] == ("type", "script", "src", "auth", "token", "service")
    assert "purpose" in sections.core and "signature" in sections.core and "promise" in sections.core
    assert sections.context[:2] == ("dependencies", "jsonwebtoken")
    assert "referenced" in sections.context
    assert sections.body[:3] == ("async", "validate", "token")


def test_a_query_is_all_body():
    assert split_sections("where is the JWT checked") == Sections((), (), ("where", "is", "the", "jwt", "checked"))


def test_window_keeps_header_then_body_then_context():
    sections = Sections(core=("h1", "h2"), context=("c1", "c2"), body=tuple(f"b{i}" for i in range(10)))
    lengths = [1] * len(sections.words)
    kept = [sections.words[i] for i in fit_window(sections, lengths, budget=8)]
    assert kept == ["h1", "h2", "b0", "b1", "b2", "b3", "b4", "b5"]
    kept = [sections.words[i] for i in fit_window(sections, lengths, budget=13)]
    assert kept == ["h1", "h2", "c1", *(f"b{i}" for i in range(10))]


def test_window_caps_a_huge_header_so_code_still_fits():
    sections = Sections(core=tuple(f"h{i}" for i in range(100)), context=(), body=tuple(f"b{i}" for i in range(10)))
    kept = [sections.words[i] for i in fit_window(sections, [1] * 110, budget=20)]
    assert kept == [f"h{i}" for i in range(15)] + [f"b{i}" for i in range(5)]


def test_window_gives_a_short_body_room_and_the_rest_to_the_header():
    sections = Sections(core=tuple(f"h{i}" for i in range(100)), context=(), body=("b0",))
    kept = fit_window(sections, [1] * 101, budget=20)
    assert len(kept) == 20 and kept[-1] == 100


def test_window_never_exceeds_budget_with_multi_token_words():
    sections = split_sections(CHUNK)
    lengths = [len(w) % 3 + 1 for w in sections.words]
    kept = fit_window(sections, lengths, budget=50)
    assert sum(lengths[i] for i in kept) <= 50


@pytest.fixture(scope="module")
def minilm_tokenizer() -> WindowedTokenizer:
    return WindowedTokenizer.from_package(256)


def test_real_tokenizer_window_keeps_path_name_purpose_and_signature(minilm_tokenizer):
    ids = minilm_tokenizer.ids(CHUNK)
    assert len(ids) <= 256
    text = minilm_tokenizer.decode(ids)
    assert text.startswith("type script src auth token service ts token service validate token purpose validates")
    assert "signature async validate token token string promise jwt payload null" in text
    assert "decoded payload value" in text, "the body fills the rest of the window"
    assert "last line marker" not in text, "the tail of the body is what gets truncated"


def test_real_tokenizer_short_text_is_whole(minilm_tokenizer):
    ids = minilm_tokenizer.ids("getUserById")
    assert minilm_tokenizer.decode(ids) == "get user by id"
    assert minilm_tokenizer.ids("") == ids[:1] + ids[-1:]
