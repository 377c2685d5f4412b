"""Copying the fields a message and its domain type share by name and hold as the same scalar value.

A converter lists such fields once, in a tuple both of its directions read, instead of spelling
each out twice; what needs converting (enums, repeated, optional, nested) it still spells out."""

from __future__ import annotations

from typing import Any


def same_named(source: object, names: tuple[str, ...]) -> dict[str, Any]:
    """`{name: source.name}` for each of `names`: keyword arguments for the other side's constructor."""
    return {name: getattr(source, name) for name in names}
