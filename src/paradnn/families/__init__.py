"""A lazy registry of workload families: importing paradnn never imports every model (or torch)."""

from __future__ import annotations

import importlib
import os

from paradnn.errors import ConfigError
from paradnn.families.base import Built, Family
from paradnn.zoo import MODELS as ZOO_MODELS

_REGISTRY: dict[str, str] = {
    "fc": "paradnn.families.fc",
    "cnn": "paradnn.families.cnn",
    "rnn": "paradnn.families.rnn",
    "transformer": "paradnn.families.transformer",
    **ZOO_MODELS,  # the real-world models of seeds 000 and 002 (kind "real")
}
# Families of your own: PARADNN_FAMILIES="name=package.module,other=mod" (each module defines
# FAMILY). An environment variable, so sweep worker processes see them too.
for _item in filter(None, os.environ.get("PARADNN_FAMILIES", "").split(",")):
    _name, _, _module = _item.partition("=")
    if _name.strip() and _module.strip():
        _REGISTRY[_name.strip()] = _module.strip()


def register(name: str, module: str) -> None:
    """Add a family whose module defines `FAMILY` (tests use this for fault-injection families)."""
    _REGISTRY[name] = module


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> Family:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ConfigError("family", name, "must be one of " + ", ".join(_REGISTRY))
    return importlib.import_module(_REGISTRY[name]).FAMILY


__all__ = ["Built", "Family", "get", "names", "register"]
