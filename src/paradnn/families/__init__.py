"""A lazy registry of workload families: importing paradnn never imports every model (or torch).

The registry names modules by their dotted path and imports one when it is asked for, so it
depends on no family, and the zoo's models (which build on `families.base`) can register here
without an import cycle.
"""

from __future__ import annotations

import importlib
import os

from paradnn.errors import ConfigError
from paradnn.families.base import Built, Family

_REGISTRY: dict[str, str] = {
    "fc": "paradnn.families.fc",
    "cnn": "paradnn.families.cnn",
    "rnn": "paradnn.families.rnn",
    "transformer": "paradnn.families.transformer",
    # the real-world models of seeds 000 and 002 (kind "real"; docs/models.md)
    "resnet50": "paradnn.zoo.resnet",
    "densenet121": "paradnn.zoo.densenet",
    "mobilenet_v2": "paradnn.zoo.mobilenet",
    "squeezenet1_1": "paradnn.zoo.squeezenet",
    "retinanet": "paradnn.zoo.retinanet",
    "transformer_base": "paradnn.zoo.translation",
    "vgg16": "paradnn.zoo.vgg",
    "inception_v3": "paradnn.zoo.inception",
    "lstm_ptb": "paradnn.zoo.lstm_lm",
    "deepspeech2": "paradnn.zoo.deepspeech",
}
BUILTIN = tuple(_REGISTRY)
# A model of your own (`--model pkg.module:factory`, families/user.py): resolvable by name, so
# its stored runs read back, but not listed among the families a sweep or `paradnn families`
# spans (it has no space, no analytic counts and no default config).
USER = "user"
_HIDDEN = {USER: "paradnn.families.user"}
# Families of your own: PARADNN_FAMILIES="name=package.module,other=mod" (each module defines
# FAMILY). An environment variable, so sweep worker processes see them too.


def register(name: str, module: str) -> None:
    """Add a family whose module defines `FAMILY`. A name already taken raises ConfigError,
    unless it names the same module (registering twice, as a test or a re-imported plugin
    does, is harmless); a name must never silently change meaning."""
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("family", name, "must be a non-empty name")
    if name in _HIDDEN:
        raise ConfigError("family", name, "is reserved for --model package.module:factory")
    if name in _REGISTRY and _REGISTRY[name] != module:
        raise ConfigError(
            "family", name, f"is already registered (to {_REGISTRY[name]}); pick another name"
        )
    _REGISTRY[name] = module


for _item in filter(None, os.environ.get("PARADNN_FAMILIES", "").split(",")):
    _name, _, _module = _item.partition("=")
    if _name.strip() and _module.strip():
        register(_name.strip(), _module.strip())


def names() -> list[str]:
    return list(_REGISTRY)


def analytic(name: object) -> bool:
    """Whether the family `name` has an analytic description (params, shapes, FLOPs, memory)
    the simulator and the analysis can use: False for a model of your own and for a name this
    installation does not know."""
    try:
        return bool(get(name).analytic)  # type: ignore[arg-type]
    except (ConfigError, ImportError, AttributeError):
        return False


def get(name: str) -> Family:
    if isinstance(name, str) and name in _HIDDEN:
        return importlib.import_module(_HIDDEN[name]).FAMILY
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ConfigError("family", name, "must be one of " + ", ".join(_REGISTRY))
    return importlib.import_module(_REGISTRY[name]).FAMILY


__all__ = ["USER", "Built", "Family", "analytic", "get", "names", "register"]
