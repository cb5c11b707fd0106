"""A lazy registry of workload families: importing paradnn never imports every model (or torch)."""

from __future__ import annotations

import importlib

from paradnn.errors import ConfigError
from paradnn.families.base import Built, Family

_REGISTRY: dict[str, str] = {
    "fc": "paradnn.families.fc",
    "cnn": "paradnn.families.cnn",
    "rnn": "paradnn.families.rnn",
}


def register(name: str, module: str) -> None:
    """Add a family whose module defines `FAMILY` (tests use this for fault-injection families)."""
    _REGISTRY[name] = module


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Family:
    if name not in _REGISTRY:
        raise ConfigError("family", name, "must be one of " + ", ".join(_REGISTRY))
    return importlib.import_module(_REGISTRY[name]).FAMILY


__all__ = ["Built", "Family", "get", "names", "register"]
