"""Value parsers: each takes the raw value (a str from the environment, anything from YAML) and
the source name (the env var, or `config key <key>`) that its error message names.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from codecompass.common import hosts
from codecompass.common.config.settings import LOG_LEVELS, ConfigError


def _parse_str(value: Any, source: str) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ConfigError(f"{source}: expected a string, got {type(value).__name__}")
    return str(value)


def parse_optional_str(value: Any, source: str) -> str | None:
    text = _parse_str(value, source).strip()
    return text or None


def parse_bool(value: Any, source: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{source}: expected true/false, got {value!r}")


def int_parser(minimum: int, maximum: int | None = None) -> Callable[[Any, str], int]:
    def parse(value: Any, source: str) -> int:
        if isinstance(value, bool):
            raise ConfigError(f"{source}: expected an integer, got {value!r}")
        try:
            number = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{source}: expected an integer, got {value!r}") from None
        if number < minimum or (maximum is not None and number > maximum):
            bound = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"
            raise ConfigError(f"{source}: must be {bound}, got {number}")
        return number

    return parse


def optional_int_parser(minimum: int, maximum: int | None = None) -> Callable[[Any, str], int | None]:
    parse_int = int_parser(minimum, maximum)

    def parse(value: Any, source: str) -> int | None:
        if value is None or str(value).strip() == "":
            return None
        return parse_int(value, source)

    return parse


def float_parser(minimum: float, maximum: float | None = None, *, exclusive_min: bool = False):
    def parse(value: Any, source: str) -> float:
        if isinstance(value, bool):
            raise ConfigError(f"{source}: expected a number, got {value!r}")
        try:
            number = float(str(value).strip())
        except ValueError:
            raise ConfigError(f"{source}: expected a number, got {value!r}") from None
        too_low = number <= minimum if exclusive_min else number < minimum
        if math.isnan(number) or too_low or (maximum is not None and number > maximum):
            low = f"> {minimum}" if exclusive_min else f">= {minimum}"
            bound = f"{low} and <= {maximum}" if maximum is not None else low
            raise ConfigError(f"{source}: must be {bound}, got {value!r}")
        return number

    return parse


def optional_float_parser(minimum: float) -> Callable[[Any, str], float | None]:
    parse_float = float_parser(minimum)

    def parse(value: Any, source: str) -> float | None:
        if value is None or str(value).strip() == "":
            return None
        return parse_float(value, source)

    return parse


def choice_parser(choices: tuple[str, ...]) -> Callable[[Any, str], str]:
    def parse(value: Any, source: str) -> str:
        text = _parse_str(value, source).strip().lower()
        if text not in choices:
            raise ConfigError(f"{source}: must be one of {', '.join(choices)}; got {value!r}")
        return text

    return parse


def parse_addr(value: Any, source: str) -> str:
    text = _parse_str(value, source).strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{source}: expected host:port, got {value!r}")
    return text


def parse_optional_addr(value: Any, source: str) -> str | None:
    return parse_addr(value, source) if _parse_str(value, source).strip() else None


def parse_bind_host(value: Any, source: str) -> str:
    try:
        return hosts.bind_host(_parse_str(value, source))
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _parse_path(value: Any, source: str) -> Path:
    text = _parse_str(value, source).strip()
    if not text:
        raise ConfigError(f"{source}: must not be empty")
    return Path(text).expanduser()


def parse_state_dir(value: Any, source: str) -> Path:
    # Resolved once, so every process (and `down`, matching its services by it) sees one path.
    path = _parse_path(value, source).resolve()
    try:
        existing = next(p for p in (path, *path.parents) if p.exists())
        is_dir = existing.is_dir()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot use {path} ({exc.strerror})") from None
    if not is_dir:
        where = "" if existing == path else f" ({existing} is a file)"
        raise ConfigError(f"{source}: {path} is not a folder{where}")
    return path


def parse_log_level(value: Any, source: str) -> str:
    name = _parse_str(value, source).strip().upper()
    name = "WARNING" if name == "WARN" else name
    if name not in LOG_LEVELS:
        raise ConfigError(f"{source}: must be one of {', '.join(LOG_LEVELS)}; got {value!r}")
    return name


def _parse_list(value: Any, source: str, separator: str) -> list[str]:
    """A list from YAML, or one string split on `separator` (env); blanks dropped."""
    items = value if isinstance(value, list) else _parse_str(value, source).split(separator)
    return [text for text in (_parse_str(item, source).strip() for item in items) if text]


def parse_names(value: Any, source: str) -> tuple[str, ...]:
    return tuple(_parse_list(value, source, ","))


def parse_folders(value: Any, source: str) -> tuple[Path, ...]:
    folders = []
    for text in _parse_list(value, source, os.pathsep):
        path = Path(text).expanduser()
        if not path.is_absolute():
            raise ConfigError(f"{source}: {text!r} is not an absolute path")
        folders.append(path.resolve())
    return tuple(folders)


def parse_optional_path(value: Any, source: str) -> Path | None:
    return _parse_path(value, source) if _parse_str(value, source).strip() else None


def parse_storage_options(value: Any, source: str) -> dict[str, str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{source}: expected a JSON object, {exc.msg}") from None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{source}: expected a mapping of option name to value")
    return {k: str(v) for k, v in value.items()}

