"""A model of your own: `paradnn bench --model pkg.module:factory` (docs/own-model.md).

The family "user" has one config field, `model`, the import path of a factory; the run key
names it, so two factories are two runs. The factory (called in the worker, with no arguments)
returns the model, a maker of one batch and optionally the loss, as `Model` or a tuple
`(model, make_batch[, loss])`. Nothing about the model is known before it is built: its
parameters and FLOPs are counted in the worker (torch's flop counter, `flops_per_step`, never
presented as analytic), its memory is not predicted, and its analytic counts stay null with
`NO_ANALYTIC` as their reason.

Torch-free: the factory is imported only by `ready` (before any work) and by `build`.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import ActivationMemory, Built, Family
from paradnn.families.shapes import Shape

NAME = "user"
REF = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")
REF_ALLOWED = "must be 'package.module:factory' (an importable module and a function in it)"
NO_ANALYTIC = "no analytic count: a model of your own is known only once built (counted instead)"
NO_PREDICTION = "unknown: a model of your own has no memory model"


@dataclass(frozen=True)
class UserConfig:
    """The factory's import path, `package.module:function` (a dotted attribute allowed)."""

    model: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not REF.fullmatch(self.model):
            raise ConfigError("model", self.model, REF_ALLOWED)


def load_factory(ref: str) -> Callable[..., Any]:
    """The callable `ref` names, imported from the working directory too (as a user who runs
    `paradnn bench --model mymodels:small` beside mymodels.py expects). One ConfigError line
    when it cannot be imported, is missing, is not callable or needs arguments."""
    UserConfig(ref)  # the syntax first
    module_name, _, attr = ref.partition(":")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as e:  # any import failure is the user's to read, on one line
        why = f"cannot import {module_name}: {type(e).__name__}: {e}"
        raise ConfigError("model", ref, why) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError("model", ref, f"{module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError("model", ref, f"{attr} is not callable (a factory function is)")
    try:
        inspect.signature(obj).bind()
    except TypeError as e:
        why = f"the factory must take no required arguments ({e})"
        raise ConfigError("model", ref, why) from None
    except ValueError:  # a builtin without a signature: let the call decide
        pass
    return obj


@dataclass(frozen=True)
class Model:
    """What a factory of your own may return (a tuple `(module, make_batch[, loss])` or a dict
    with those keys does as well).

    module:     the torch.nn.Module to train (moved to the run's device);
    make_batch: () -> (inputs, targets); inputs a tensor (the module's one argument) or a
                tuple of tensors (its arguments); moved to the device, made once per run;
    loss:       (outputs, targets) -> a scalar tensor; None: cross-entropy.
    """

    module: Any
    make_batch: Callable[[], tuple[Any, Any]]
    loss: Callable[[Any, Any], Any] | None = None


class User(Family):
    name = NAME
    title = "A model of your own (--model package.module:factory)"
    config_cls = UserConfig
    kind = "generated"
    analytic = False
    paper_space: ClassVar[dict[str, list[Any]]] = {}
    space_label = "your factory's one model"

    def default_config(self) -> UserConfig:
        raise ConfigError("model", "", REF_ALLOWED)

    def ready(self, cfg: UserConfig) -> None:
        load_factory(cfg.model)

    def examples_per_step(self, cfg: UserConfig) -> int | None:  # type: ignore[override]
        return None  # the batch's size, read in the worker (Built.examples)

    def params(self, cfg: UserConfig) -> int:
        raise ConfigError("model", cfg.model, NO_ANALYTIC)

    def shapes(self, cfg: UserConfig) -> list[Shape]:
        return []

    def train_flops(self, cfg: UserConfig) -> int:
        raise ConfigError("model", cfg.model, NO_ANALYTIC)

    def activation_memory(
        self, cfg: UserConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        raise ConfigError("model", cfg.model, NO_PREDICTION)

    def build(self, cfg: UserConfig, device: Any, precision: str = "fp32") -> Built:
        from paradnn.families._user_torch import build

        return build(load_factory(cfg.model), cfg.model, device)


FAMILY = User()
