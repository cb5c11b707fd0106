"""Small validators shared by every config dataclass, so all messages read the same."""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from paradnn.errors import ConfigError

T = TypeVar("T")


def int_at_least(field: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field, value, _int_range(low, high))
    if value < low or (high is not None and value > high):
        raise ConfigError(field, value, _int_range(low, high))


def _int_range(low: int, high: int | None) -> str:
    return (
        f"must be an integer ≥ {low}" if high is None else f"must be an integer in [{low}, {high}]"
    )


def one_of(field: str, value: object, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ConfigError(field, value, "must be one of " + ", ".join(choices))


def number_at_least(field: str, value: object, low: float, *, strict: bool = False) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        ok = value > low if strict else value >= low
    if not ok:
        raise ConfigError(field, value, f"must be a number {'>' if strict else '≥'} {low}")


def from_mapping(cls: type[T], data: Mapping[str, Any], *, prefix: str = "") -> T:
    """Build a frozen dataclass from a mapping, rejecting unknown keys (torchtitan's lesson:
    a typo must never silently become a default) and coercing CLI strings to the field types."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{prefix}{unknown[0]}", data[unknown[0]], "unknown key; allowed: " + ", ".join(fields)
        )
    hints = _hints(cls)
    kwargs = {k: coerce(f"{prefix}{k}", v, hints[k]) for k, v in data.items()}
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def coerce(field: str, value: Any, typ: Any) -> Any:
    """Turn a string from the command line into the field's declared type."""
    if not isinstance(value, str):
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    origin = typing.get_origin(typ)
    if origin is typing.Literal or typ is str:
        return value
    if typ is bool:
        low = value.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ConfigError(field, value, "must be true or false")
    if typ is int:
        try:
            return int(value)
        except ValueError:
            raise ConfigError(field, value, "must be an integer") from None
    if typ is float:
        try:
            return float(value)
        except ValueError:
            raise ConfigError(field, value, "must be a number") from None
    return value


def parse_assignments(items: Iterable[str], *, what: str = "argument") -> dict[str, str]:
    """Parse `key=value` words from the command line."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(what, item, "must be written key=value, e.g. nodes=1024")
        out[key.strip()] = value.strip()
    return out
