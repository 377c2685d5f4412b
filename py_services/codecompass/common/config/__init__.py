"""Settings for every CodeCompass Python process, parsed once into frozen objects.

Sources, strongest first: environment variables, the user settings file
(YAML: ``$CODECOMPASS_CONFIG``, else ``~/.config/codecompass/config.yaml``),
built-in defaults. Every setting is declared once in ``fields.FIELDS`` so parsing,
validation, error messages and the README table cannot drift apart.

Secrets (the embedding API key) come only from the environment: a key in a
config file is refused rather than ignored, because a silently ignored key
leads people to believe the file is the place for it.

The parts: ``settings`` (the frozen dataclasses, the values a setting may take,
``ConfigError``, ``redacted``), ``parsers`` (raw value to typed value, or an error
naming its source), ``fields`` (the table of every setting), ``loading`` (environment
and file to one ``Settings``). This package is the one config API: import from
``codecompass.common.config``.
"""

from __future__ import annotations

from codecompass.clients import transport as transports
from codecompass.common.config.fields import (
    API_KEY_ENV,
    BIND_HOST_ENV,
    GATEWAY_AUTH_TOKEN_ENV,
    GRPC_AUTH_TOKEN_ENV,
    GRPC_AUTH_TOKEN_FILE_ENV,
    GRPC_REFLECTION_ENV,
    RERANK_API_KEY_ENV,
    REWRITE_API_KEY_ENV,
    documented_settings,
)
from codecompass.common.config.loading import (
    CHECKOUT_ROOT,
    default_config_path,
    load_settings,
    load_settings_from_environ,
    read_config_file,
    settings_from,
)
from codecompass.common.config.parsers import parse_log_level
from codecompass.common.config.settings import (
    EMBEDDING_PROFILES,
    LOG_LEVELS,
    RERANK_PROVIDERS,
    RETRIEVAL_ROLES,
    SEMANTIC_MODES,
    SHARD_RUNNERS,
    ConfigError,
    EmbeddingSettings,
    GatewaySettings,
    GrpcSettings,
    RerankSettings,
    RetrievalSettings,
    SelectionSettings,
    Settings,
    redacted,
)

__all__ = [
    "API_KEY_ENV",
    "BIND_HOST_ENV",
    "GRPC_AUTH_TOKEN_ENV",
    "GRPC_AUTH_TOKEN_FILE_ENV",
    "GRPC_REFLECTION_ENV",
    "CHECKOUT_ROOT",
    "EMBEDDING_PROFILES",
    "GATEWAY_AUTH_TOKEN_ENV",
    "LOG_LEVELS",
    "RERANK_API_KEY_ENV",
    "RERANK_PROVIDERS",
    "RETRIEVAL_ROLES",
    "REWRITE_API_KEY_ENV",
    "SEMANTIC_MODES",
    "SHARD_RUNNERS",
    "ConfigError",
    "EmbeddingSettings",
    "GatewaySettings",
    "GrpcSettings",
    "RerankSettings",
    "RetrievalSettings",
    "SelectionSettings",
    "Settings",
    "default_config_path",
    "documented_settings",
    "load_settings",
    "load_settings_from_environ",
    "parse_log_level",
    "read_config_file",
    "redacted",
    "settings_from",
]


def _settings_transport():
    """How this process's clients dial: as its `grpc` settings say (token, TLS), read when a
    client is made. Imported late: common.transport reads these settings' types."""
    from codecompass.common.transport import client_transport

    return client_transport(load_settings().grpc)


# Every client a process of the services makes without a transport of its own (the gateway's, the
# CLI's, one service's of another) dials as the deployment says; this package is what each of
# those processes reads its settings with.
transports.set_default(_settings_transport)
