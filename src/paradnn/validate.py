"""Small validators shared by every config dataclass, so all messages read the same.

Every number a user can give has an upper bound as well as a lower one (docs/limits.md): a
value past it fails here, in one line naming the field, the value and what is allowed, before
any work starts. The bounds keep every analytic count (parameters, FLOPs, bytes) of a valid
config inside a signed 64-bit integer, which is what SQLite stores.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from paradnn.errors import ConfigError

T = TypeVar("T")

INT64_MAX = 2**63 - 1  # SQLite's INTEGER: every stored count must fit
SEED_MAX = 2**32 - 1  # what every RNG we seed (Python, NumPy, torch) accepts
MAX_TEXT = 200  # characters of one name or key=value word
MAX_NUMERAL = 40  # characters of a number written as text (a 64-bit integer has 19 digits)
# What a number typed on a command line or in key=value may look like: ASCII digits, a leading
# minus, no `+`, spaces or `_` (Python's int() and float() also take '١٢', '1_000' and ' 3').
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|-?(inf|nan)", re.I)


def int_at_least(field: str, value: object, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field, value, _int_range(low, high))
    if value < low or (high is not None and value > high):
        raise ConfigError(field, value, _int_range(low, high))


def int_in(field: str, value: object, low: int, high: int) -> None:
    """An integer in [low, high]; bools and floats (even 2.0) are refused."""
    int_at_least(field, value, low, high)


def _int_range(low: int, high: int | None) -> str:
    return (
        f"must be an integer ≥ {low}" if high is None else f"must be an integer in [{low}, {high}]"
    )


def parse_int(field: str, value: object, low: int, high: int) -> int:
    """An integer option as typed (or its default): plain ASCII digits, in [low, high]; the
    message names `field` and the range."""
    if isinstance(value, str):
        if not _INTEGER.fullmatch(value) or len(value) > MAX_NUMERAL:
            raise ConfigError(field, value, _int_range(low, high))
        value = int(value)
    int_in(field, value, low, high)
    return value  # type: ignore[return-value]


def parse_number(
    field: str, value: object, low: float, high: float, *, strict: bool = False
) -> float:
    """A number option as typed (or its default): a finite decimal in [low, high] ((low, high]
    with `strict`); the message names `field` and the range."""
    typed = value
    if isinstance(value, str):
        ok = _NUMBER.fullmatch(value) and len(value) <= MAX_NUMERAL
        value = float(value) if ok else None
    try:
        number_in(field, value, low, high, strict=strict)
    except ConfigError as e:
        finite = value is not None and math.isfinite(value)  # type: ignore[arg-type]
        raise ConfigError(field, value if finite else typed, e.allowed) from None
    return float(value)  # type: ignore[arg-type]


def one_of(field: str, value: object, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ConfigError(field, value, "must be one of " + ", ".join(choices))


def _finite(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def number_at_least(
    field: str, value: object, low: float, *, strict: bool = False, high: float | None = None
) -> None:
    """A finite number ≥ low (> low with `strict`), and ≤ high when given; NaN, ±inf and bools
    are refused."""
    ok = _finite(value)
    if ok:
        ok = value > low if strict else value >= low  # type: ignore[operator]
        ok = ok and (high is None or value <= high)  # type: ignore[operator]
    if not ok:
        if high is None:
            allowed = f"must be a finite number {'>' if strict else '≥'} {low:g}"
        else:
            allowed = f"must be a number in {'(' if strict else '['}{low:g}, {high:g}]"
        raise ConfigError(field, value, allowed)


def number_in(field: str, value: object, low: float, high: float, *, strict: bool = False) -> None:
    """A finite number in [low, high] (in (low, high] with `strict`)."""
    number_at_least(field, value, low, strict=strict, high=high)


def limits(prefix: str, obj: object, bounds: Mapping[str, tuple[int, int]]) -> None:
    """Check each integer field of `obj` against its (low, high) bounds, in order."""
    for name, (low, high) in bounds.items():
        int_at_least(f"{prefix}.{name}", getattr(obj, name), low, high)


def plain_text(value: object, max_len: int = MAX_TEXT) -> bool:
    """Non-empty printable ASCII of at most `max_len` characters: what names, keys and values
    typed on a command line or written in a sweep file may be."""
    return (
        isinstance(value, str)
        and 0 < len(value) <= max_len
        and value.isascii()
        and value.isprintable()
    )


def text(field: str, value: object, max_len: int = MAX_TEXT) -> str:
    if not plain_text(value, max_len):
        raise ConfigError(
            field, value, f"must be non-empty printable ASCII of at most {max_len} characters"
        )
    return value  # type: ignore[return-value]


def from_mapping(cls: type[T], data: Mapping[str, Any], *, prefix: str = "") -> T:
    """Build a frozen dataclass from a mapping, rejecting unknown keys (torchtitan's lesson:
    a typo must never silently become a default) and coercing CLI strings to the field types."""
    if not isinstance(data, Mapping):
        raise ConfigError(prefix.rstrip(".") or "config", data, "must be a mapping of key = value")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted((k for k in data if k not in fields), key=repr)
    if unknown:
        raise ConfigError(
            f"{prefix}{unknown[0]}", data[unknown[0]], "unknown key; allowed: " + ", ".join(fields)
        )
    hints, bounds = _hints(cls), getattr(cls, "LIMITS", {})
    kwargs = {k: coerce(f"{prefix}{k}", v, hints[k], bounds.get(k)) for k, v in data.items()}
    return cls(**kwargs)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def coerce(field: str, value: Any, typ: Any, bounds: tuple[int, int] | None = None) -> Any:
    """Turn a string from the command line into the field's declared type. Only plain ASCII
    numerals become numbers (Python's int() would also take '١٢' and '1_000'); an integer
    field's message gives its `bounds` (low, high) when it has them."""
    if not isinstance(value, str):
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise ConfigError(field, value, "must be a finite number") from None
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
        if not _INTEGER.fullmatch(value) or len(value) > MAX_NUMERAL:
            allowed = _int_range(*bounds) if bounds else "must be an integer (ASCII digits)"
            raise ConfigError(field, value, allowed)
        return int(value)
    if typ is float:
        if not _NUMBER.fullmatch(value) or len(value) > MAX_NUMERAL:
            raise ConfigError(field, value, "must be a number")
        return float(value)
    return value


_KEY_EQ = re.compile(r"""([A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=""")
_TABLE = re.compile(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def huge_integer(text: str) -> str | None:
    """Where a TOML text holds an integer too long for Python to read (its 4,300-digit limit,
    whose own message would suggest `sys.set_int_max_str_digits()`): `key (line N) = an
    integer of D digits`, or None. Far past every bound paradnn has (docs/limits.md)."""
    import sys

    limit = sys.get_int_max_str_digits()
    if not limit:
        return None
    numeral = re.compile(rf"[0-9][0-9_]{{{limit - 1},}}")
    table = ""
    for n, raw in enumerate(text.splitlines(), 1):
        if head := _TABLE.match(raw):
            table = head[1]
            continue
        found = numeral.search(raw)
        if not found:
            continue
        *outer, inner = raw[: found.start()].split("{")  # inline tables: a key per level
        keys = [_KEY_EQ.findall(part)[-1:] for part in [*outer, inner]]
        where = ".".join([table, *(k[0] for k in keys if k)]).strip(".") or "a value"
        digits = len(found[0].replace("_", ""))
        return f"{where} (line {n}) = an integer of {digits:,} digits"
    return None


def parse_assignments(items: Iterable[str], *, what: str = "argument") -> dict[str, str]:
    """Parse `key=value` words from the command line: printable ASCII, neither side empty,
    each key once (a second `layers=` would silently win)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ConfigError(what, item, "must be written key=value, e.g. nodes=1024")
        if not plain_text(item, MAX_TEXT):
            raise ConfigError(
                what,
                item,
                f"must be key=value in printable ASCII, at most {MAX_TEXT} characters",
            )
        if key in out:
            raise ConfigError(
                what, item, f"{key} is given twice ({key}={out[key]} before): give it once"
            )
        out[key] = value
    return out
