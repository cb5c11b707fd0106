"""Errors a user can act on; each renders as one line: the field, the value, what is allowed."""

from __future__ import annotations


class ParadnnError(Exception):
    """Base for errors the CLI prints as a single line (no traceback)."""


class ConfigError(ParadnnError, ValueError):
    """A configuration value is out of range, of the wrong type, or unknown."""

    def __init__(self, field: str, value: object, allowed: str):
        self.field, self.value, self.allowed = field, value, allowed
        shown = field if field.isprintable() else repr(field)  # user text stays on one line
        super().__init__(f"{shown} = {value!r}: {allowed}")


class StoreError(ParadnnError):
    """The result database cannot be used (e.g. written by a newer paradnn)."""
