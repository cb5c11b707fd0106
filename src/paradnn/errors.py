"""Errors a user can act on; each renders as one line: the field, the value, what is allowed."""

from __future__ import annotations

import math
import reprlib

ABSENT = object()  # "this error has no value to show": the line is `field: allowed`
MAX_SHOWN = 200  # characters of a value quoted whole (a path, a word); longer: cut, with its length
MAX_FIELD = 200  # a field (a user's key, a file and key) longer than this is cut too
_SHORT = reprlib.Repr()  # containers inside a one-line message stay short
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlong, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 40, 6, 4, 3


def shown(value: object) -> str:
    """A value as one short line: its repr, or its first 40 characters and its length."""
    if isinstance(value, str) and len(value) > MAX_SHOWN:
        return f"{value[:40]!r}… ({len(value):,} characters)"
    if isinstance(value, str):  # a path or a word up to MAX_SHOWN: whole, so it can be found
        return repr(value)
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    return _SHORT.repr(value)


def line(field: str, value: object, allowed: str) -> str:
    """`field = value: allowed` (or `field: allowed` without a value) on one line."""
    name = field if field.isprintable() else repr(field)  # user text stays on one line
    name = name if len(name) <= MAX_FIELD else f"{name[:100]}… ({len(name):,} characters)"
    allowed = " ".join(allowed.split())
    return f"{name}: {allowed}" if value is ABSENT else f"{name} = {shown(value)}: {allowed}"


class ParadnnError(Exception):
    """Base for errors the CLI prints as a single line (no traceback)."""


class ConfigError(ParadnnError, ValueError):
    """A configuration value is out of range, of the wrong type, or unknown."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        super().__init__(line(field, value, allowed))


class OptionError(ParadnnError):
    """A command-line option's value is refused while the command line is read, before any
    work. Not a ValueError: the option parser must pass it on, not wrap it in its own words."""

    def __init__(self, option: str, value: object, allowed: str):
        self.field, self.value, self.allowed = option, value, allowed
        super().__init__(line(option, value, allowed))


class StoreError(ParadnnError):
    """The result database cannot be used (e.g. written by a newer paradnn)."""


class WorkFailed(ParadnnError):
    """The work failed part-way through (a full disk, a database made read-only): one line
    naming the file, the cause and what was kept, exit status 1 (a refusal before any work
    is 2)."""

    exit_code = 1


class Refused(ParadnnError):
    """The device cannot do what was asked (the run's memory exceeds what is free): said in one
    line before any work, with the option that asks for it anyway."""
