"""Profile selection and the privacy gates (seed 004 FR-719).

External providers (voyage, openai-compatible) receive source code, so they
run only when both `external_provider_enabled` and
`allow_code_payload_to_external` are true; both default to false. Otherwise
the local default profile (`code-small`) answers and every response says
external_provider_blocked=true, so callers can tell the user why.

An openai-compatible endpoint on a loopback address (Ollama on localhost) is
gated too: the code still leaves this process for another program whose
logging, caching and forwarding we cannot see, and "localhost" may be a
tunnel. Users who run a local server open both gates deliberately.

The API key comes only from CODECOMPASS_EMBEDDING_API_KEY (config refuses it in
files); providers keep it out of every message they produce.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codecompass.common.config import ConfigError, EmbeddingSettings
from codecompass.common.logging import get_logger
from codecompass.embedding.base import Provider

log = get_logger("codecompass.embedding.profiles")

LOCAL_DEFAULT = "code-small"
EXTERNAL_PROFILES = frozenset({"voyage", "openai-compatible"})


@dataclass(frozen=True)
class ProviderChoice:
    provider: Provider
    requested_profile: str
    external_provider_blocked: bool


def choose_provider(settings: EmbeddingSettings) -> ProviderChoice:
    """The provider this process serves with; raises ConfigError for an unusable combination."""
    profile = settings.profile
    blocked = profile in EXTERNAL_PROFILES and not settings.external_allowed
    if blocked:
        closed = [name for name, is_open in (
            ("CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED", settings.external_provider_enabled),
            ("CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL", settings.allow_code_payload_to_external),
        ) if not is_open]
        log.warning("external embedding provider blocked by privacy gates; using the local profile",
                    extra={"requested_profile": profile, "local_profile": LOCAL_DEFAULT, "closed_gates": closed})
        profile = LOCAL_DEFAULT
    return ProviderChoice(_build(profile, settings), settings.profile, blocked)


def _build(profile: str, settings: EmbeddingSettings) -> Provider:
    if profile == "minilm":
        from codecompass.embedding.minilm import MiniLMProvider

        return MiniLMProvider(max_tokens=settings.max_tokens, batch_size=settings.batch_size)
    if profile == "code-small":
        from codecompass.embedding.minilm import MiniLMProvider, code_small

        # CODECOMPASS_EMBEDDING_MODEL may name another folder with model.onnx + tokenizer.json.
        return MiniLMProvider(spec=code_small(Path(settings.model) if settings.model else None),
                              max_tokens=settings.max_tokens, batch_size=settings.batch_size)
    if profile == "e5-small":
        from codecompass.embedding.e5 import E5Provider

        return E5Provider(max_tokens=settings.max_tokens, batch_size=settings.batch_size)
    if profile == "code-static":
        from codecompass.embedding.static import StaticProvider

        # CODECOMPASS_EMBEDDING_MODEL may name another model2vec folder (a retrained model).
        return StaticProvider(model_dir=Path(settings.model) if settings.model else None,
                              max_tokens=settings.max_tokens)
    if profile == "voyage":
        if not settings.api_key:
            raise ConfigError("CODECOMPASS_EMBEDDING_API_KEY: required for CODECOMPASS_EMBEDDING_PROFILE=voyage")
        from codecompass.embedding.voyage import VoyageProvider

        return VoyageProvider(api_key=settings.api_key, base_url=settings.base_url, model=settings.model,
                              dimensions=settings.dimensions, timeout_s=settings.timeout_s,
                              max_retries=settings.max_retries)
    if profile == "openai-compatible":
        if not settings.base_url:
            raise ConfigError(
                "CODECOMPASS_EMBEDDING_BASE_URL: required for CODECOMPASS_EMBEDDING_PROFILE=openai-compatible"
            )
        if not settings.model:
            raise ConfigError(
                "CODECOMPASS_EMBEDDING_MODEL: required for CODECOMPASS_EMBEDDING_PROFILE=openai-compatible"
            )
        from codecompass.embedding.openai_compat import OpenAICompatibleProvider

        return OpenAICompatibleProvider(base_url=settings.base_url, api_key=settings.api_key, model=settings.model,
                                        dimensions=settings.dimensions, timeout_s=settings.timeout_s,
                                        max_retries=settings.max_retries, batch_size=settings.batch_size)
    raise ConfigError(f"CODECOMPASS_EMBEDDING_PROFILE: unknown profile {profile!r}")
