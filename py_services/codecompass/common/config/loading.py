"""From an environment and the user settings file to one Settings: the file read and
checked key by key, every value parsed by its field, the process's settings cached once.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from codecompass.common import names
from codecompass.common.bearer import TokenRefused, long_enough, read_token_file
from codecompass.common.config.fields import (
    FIELDS,
    GRPC_AUTH_TOKEN_ENV,
    REMOVED,
    RENAMED,
    SECRET_YAML_KEYS,
    Field,
)
from codecompass.common.config.settings import (
    ConfigError,
    EmbeddingSettings,
    GatewaySettings,
    GrpcSettings,
    RerankSettings,
    RetrievalSettings,
    SelectionSettings,
    Settings,
)

# The checkout (or installed copy) of the tool this code runs from: its services, its state
# (this file is <checkout>/py_services/codecompass/common/config/loading.py).
CHECKOUT_ROOT = Path(__file__).resolve().parents[4]

_YAML_KEYS = {f.yaml_key: f for f in FIELDS if f.yaml_key is not None}
_RENAMED_YAML_KEYS = frozenset(old_key for _, old_key in RENAMED.values())

# Not common.logging's get_logger: that module imports this package. The record reaches whatever
# handler the process has set up (services configure logging before loading their settings).
log = logging.getLogger("codecompass.config")


def default_config_path(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME", str(Path.home()))) / ".config" / "codecompass" / "config.yaml"


def _default_state_dir(env: Mapping[str, str]) -> Path:
    # Per checkout as well as per user: two checkouts sharing one folder would each drive the
    # other's services. The folder name keeps the checkout's name readable; the hash tells
    # two checkouts of the same name apart.
    xdg = Path(env.get("XDG_STATE_HOME") or "relative")
    # The XDG spec says a relative XDG_STATE_HOME is invalid and to be ignored.
    base = xdg if xdg.is_absolute() else Path(env.get("HOME", str(Path.home()))) / ".local" / "state"
    digest = hashlib.sha256(str(CHECKOUT_ROOT).encode("utf-8")).hexdigest()[:8]
    return (base / "codecompass" / f"{CHECKOUT_ROOT.name}-{digest}").resolve()


_SECTIONS = frozenset(key.rpartition(".")[0] for key in _YAML_KEYS if "." in key)


def _flatten(data: Mapping[str, Any], path: Path, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        # storage_options is itself a mapping value, not a section to descend into.
        if isinstance(value, Mapping) and dotted not in _YAML_KEYS:
            flat.update(_flatten(value, path, f"{dotted}."))
        elif dotted in _SECTIONS:
            if value is None:  # an empty section, e.g. `embedding:` with its settings commented out
                continue
            raise ConfigError(f"config file {path}: {dotted} must be a mapping of settings, "
                              f"got {_yaml_type(value)}")
        else:
            flat[dotted] = value
    return flat


_YAML_TYPES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list"}


def _yaml_type(value: Any) -> str:
    return _YAML_TYPES.get(type(value), f"a {type(value).__name__}")


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error (its str() spans several lines and quotes the file)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    if isinstance(exc, yaml.reader.ReaderError) and isinstance(exc.character, int):
        return f"{exc.reason} (U+{exc.character:04X} at offset {exc.position})"
    return " ".join(str(exc).split())


def read_config_file(path: Path) -> dict[str, Any]:
    """Flattened ``{"embedding.profile": value}`` view of a YAML settings file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config file {path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} "
                          f"at offset {exc.start}); expected YAML") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path}: invalid YAML: {_yaml_problem(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"config file {path}: top level must be a mapping of settings, got {_yaml_type(data)}")
    flat = _flatten(data, path)
    for key in flat:
        if key in SECRET_YAML_KEYS:
            raise ConfigError(
                f"config file {path}: {key} is not read from files; set {SECRET_YAML_KEYS[key]} instead"
            )
        removed = next((why for (_, yaml_key), why in REMOVED.items() if yaml_key == key), None)
        if removed is not None:
            raise ConfigError(f"config file {path}: {key} was removed: {removed}")
        if key not in _YAML_KEYS and key not in _RENAMED_YAML_KEYS:
            raise ConfigError(f"config file {path}: unknown key {key!r}")
    return flat


def _raw_value(spec: Field, env: Mapping[str, str], file_values: Mapping[str, Any]) -> tuple[Any, str] | None:
    """A field's raw value and the name it was set under (env before file; a renamed setting's new
    name before its old one), or None when it is not set. Each old name that is set gets one warning
    naming both: read in place of the new name, or ignored because a stronger source is set."""
    renamed = RENAMED.get(spec.target)
    # (where, key, the name a message gives it, the new name when the key is an old one)
    sources: list[tuple[Mapping[str, Any], str, str, str | None]] = [(env, spec.env, spec.env, None)]
    if renamed:
        sources.append((env, renamed[0], renamed[0], spec.env))
    if spec.yaml_key is not None:
        sources.append((file_values, spec.yaml_key, f"config key {spec.yaml_key}", None))
        if renamed:
            sources.append((file_values, renamed[1], f"config key {renamed[1]}", spec.yaml_key))
    chosen: tuple[Any, str] | None = None
    for values, key, name, renamed_to in sources:
        if key not in values:
            continue
        if chosen is None:
            chosen = (values[key], name)
            if renamed_to is not None:
                log.warning("%s was renamed %s; its value is read for now, set %s instead", name, renamed_to,
                            renamed_to)
        elif renamed_to is not None:
            log.warning("%s was renamed %s and is ignored: %s is set; remove %s", name, renamed_to, chosen[1], name)
    return chosen


def settings_from(env: Mapping[str, str], file_values: Mapping[str, Any] | None = None) -> Settings:
    """Build Settings from an environment and a flattened config file (pure but for the warning a
    renamed setting's old name gets, logged here because the settings are parsed once; tests use it)."""
    file_values = file_values or {}
    for (variable, _), why in REMOVED.items():
        if variable in env:
            raise ConfigError(f"{variable} was removed: {why}")
    top: dict[str, Any] = {"state_dir": _default_state_dir(env)}
    sections: dict[str, dict[str, Any]] = {"embedding": {}, "retrieval": {}, "rerank": {}, "selection": {},
                                           "gateway": {}, "grpc": {}}
    for spec in FIELDS:
        raw = _raw_value(spec, env, file_values)
        if raw is None:
            continue
        value = spec.parse(*raw)
        section, _, name = spec.target.rpartition(".")
        (sections[section] if section else top)[name] = value
    top["configured_addrs"] = frozenset(service for service in names.BACKENDS if f"{service}_addr" in top)
    embedding = EmbeddingSettings(**sections["embedding"])
    retrieval = RetrievalSettings(**sections["retrieval"])
    if embedding.profile == "openai-compatible" and embedding.external_allowed and not embedding.base_url:
        raise ConfigError(
            "CODECOMPASS_EMBEDDING_BASE_URL: required when CODECOMPASS_EMBEDDING_PROFILE=openai-compatible"
        )
    rerank = RerankSettings(**sections["rerank"])
    transport = GrpcSettings(**sections["grpc"])
    _check_transport(transport)
    return Settings(**top, embedding=embedding, retrieval=retrieval, rerank=rerank,
                    selection=SelectionSettings(**sections["selection"]),
                    gateway=GatewaySettings(**sections["gateway"]), grpc=transport)


# Settings that mean nothing alone: a certificate without its key (or the reverse), a client CA
# with no server certificate to do TLS with, a client certificate with no TLS to present it over.
_NEEDS = (
    ("tls_cert_file", "tls_key_file"), ("tls_key_file", "tls_cert_file"), ("tls_client_ca_file", "tls_cert_file"),
    ("tls_client_cert_file", "tls_client_key_file"), ("tls_client_key_file", "tls_client_cert_file"),
    ("tls_client_cert_file", "tls_ca_file"), ("tls_server_name", "tls_ca_file"),
)


def _check_transport(transport: GrpcSettings) -> None:
    for setting, needed in _NEEDS:
        if getattr(transport, setting) is not None and getattr(transport, needed) is None:
            raise ConfigError(f"{_env_of(setting)}: needs {_env_of(needed)} too")
    if transport.auth_token:
        try:
            long_enough((transport.auth_token,), GRPC_AUTH_TOKEN_ENV)
        except TokenRefused as exc:
            raise ConfigError(str(exc)) from None


def _check_transport_files(transport: GrpcSettings) -> None:
    """The files the grpc settings name, read once at start so that a missing or wrong one stops the
    process in one line naming its setting, before any server or client uses it."""
    if transport.auth_token_file is not None and not transport.auth_token:
        try:
            read_token_file(transport.auth_token_file, _env_of("auth_token_file"))
        except TokenRefused as exc:
            raise ConfigError(str(exc)) from None
    for setting in ("tls_cert_file", "tls_key_file", "tls_client_ca_file", "tls_ca_file", "tls_client_cert_file",
                    "tls_client_key_file"):
        path = getattr(transport, setting)
        if path is None:
            continue
        try:
            pem = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"{_env_of(setting)} {path}: cannot read it ({exc.strerror})") from None
        if b"-----BEGIN " not in pem:
            raise ConfigError(f"{_env_of(setting)} {path}: not PEM (no -----BEGIN line)")


def _env_of(setting: str) -> str:
    spec = next(spec for spec in FIELDS if spec.target == f"grpc.{setting}")
    return f"{spec.env} ({spec.yaml_key})"


def load_settings_from_environ(env: Mapping[str, str]) -> Settings:
    explicit = env.get("CODECOMPASS_CONFIG")
    if explicit:
        path = Path(explicit).expanduser()
        if not _exists(path):
            raise ConfigError(f"CODECOMPASS_CONFIG: no such file {path}")
        settings = settings_from(env, read_config_file(path))
    else:
        path = default_config_path(env)
        settings = settings_from(env, read_config_file(path) if _exists(path) else None)
    _check_transport_files(settings.grpc)
    return settings


def _exists(path: Path) -> bool:
    # A path that cannot even be looked at counts as there, so reading it names the real problem.
    try:
        return path.exists()
    except OSError:
        return True


@functools.cache
def load_settings() -> Settings:
    """Settings of this process, parsed once from os.environ and the settings file."""
    return load_settings_from_environ(os.environ)
