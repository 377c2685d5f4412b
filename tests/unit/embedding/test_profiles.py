"""Privacy gates (seed 004 FR-719) and profile selection."""

from __future__ import annotations

import io
import logging

import pytest

from codecompass.common.config import ConfigError, redacted, settings_from
from codecompass.common.logging import JsonFormatter
from codecompass.embedding.e5 import E5Provider
from codecompass.embedding.minilm import MiniLMProvider
from codecompass.embedding.openai_compat import OpenAICompatibleProvider
from codecompass.embedding.profiles import choose_provider
from codecompass.embedding.voyage import VoyageProvider

SECRET = "vk-test-secret-4f8a1c"


def embedding_settings(**env: str):
    return settings_from({"HOME": "/nonexistent", **env}).embedding


def test_default_is_local_minilm_and_not_blocked():
    choice = choose_provider(embedding_settings())
    assert isinstance(choice.provider, MiniLMProvider)
    assert choice.external_provider_blocked is False


def test_e5_is_local_and_never_blocked():
    choice = choose_provider(embedding_settings(CODECOMPASS_EMBEDDING_PROFILE="e5-small"))
    assert isinstance(choice.provider, E5Provider) and not choice.external_provider_blocked


@pytest.mark.parametrize("profile", ["voyage", "openai-compatible"])
@pytest.mark.parametrize("enabled,allow_code", [("false", "false"), ("true", "false"), ("false", "true")])
def test_external_profiles_fall_back_to_minilm_unless_both_gates_are_open(profile, enabled, allow_code):
    choice = choose_provider(embedding_settings(
        CODECOMPASS_EMBEDDING_PROFILE=profile,
        CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED=enabled,
        CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL=allow_code,
        CODECOMPASS_EMBEDDING_BASE_URL="http://127.0.0.1:1/v1",
        CODECOMPASS_EMBEDDING_MODEL="nomic-embed-text",
        CODECOMPASS_EMBEDDING_API_KEY=SECRET,
    ))
    assert isinstance(choice.provider, MiniLMProvider)
    assert choice.external_provider_blocked is True
    assert choice.requested_profile == profile


OPEN_GATES = {"CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "true",
              "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "true"}


def test_voyage_runs_when_both_gates_are_open():
    choice = choose_provider(embedding_settings(CODECOMPASS_EMBEDDING_PROFILE="voyage",
                                                CODECOMPASS_EMBEDDING_API_KEY=SECRET, **OPEN_GATES))
    assert isinstance(choice.provider, VoyageProvider) and not choice.external_provider_blocked


def test_voyage_without_key_fails_at_start_naming_the_variable():
    with pytest.raises(ConfigError, match="CODECOMPASS_EMBEDDING_API_KEY"):
        choose_provider(embedding_settings(CODECOMPASS_EMBEDDING_PROFILE="voyage", **OPEN_GATES))


def test_openai_compatible_needs_a_model_and_no_key():
    with pytest.raises(ConfigError, match="CODECOMPASS_EMBEDDING_MODEL"):
        choose_provider(embedding_settings(CODECOMPASS_EMBEDDING_PROFILE="openai-compatible",
                                           CODECOMPASS_EMBEDDING_BASE_URL="http://127.0.0.1:11434/v1", **OPEN_GATES))
    choice = choose_provider(embedding_settings(CODECOMPASS_EMBEDDING_PROFILE="openai-compatible",
                                                CODECOMPASS_EMBEDDING_BASE_URL="http://127.0.0.1:11434/v1",
                                                CODECOMPASS_EMBEDDING_MODEL="nomic-embed-text", **OPEN_GATES))
    assert isinstance(choice.provider, OpenAICompatibleProvider)


def test_blocked_warning_and_config_dump_never_show_the_key():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter("test"))
    logger = logging.getLogger("codecompass.embedding.profiles")
    logger.addHandler(handler)
    try:
        settings = settings_from({"HOME": "/nonexistent", "CODECOMPASS_EMBEDDING_PROFILE": "voyage",
                                  "CODECOMPASS_EMBEDDING_API_KEY": SECRET})
        choose_provider(settings.embedding)
    finally:
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert "blocked by privacy gates" in logged
    assert "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED" in logged
    assert SECRET not in logged
    assert SECRET not in repr(settings) and SECRET not in str(redacted(settings))
