"""The torch half of `user.py`: a factory's answer made into a `Built` (one-way: nothing here
imports the analytic half; it passes the factory and its name)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from paradnn.errors import ConfigError
from paradnn.families.base import Built

CONTRACT = (
    "the factory must return paradnn.families.user.Model(module, make_batch, loss=None) or a tuple "
    "(module, make_batch) or (module, make_batch, loss): module an nn.Module, make_batch() "
    "-> (inputs, targets)"
)


class _Spread(nn.Module):
    """A module whose batch inputs are a tuple: called with them as its arguments."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: tuple[Any, ...]) -> Any:
        return self.inner(*x)


def _parts(answer: Any, ref: str) -> tuple[Any, Any, Any]:
    """(module, make_batch, loss) from a Model (any object with those attributes), a mapping
    or a tuple."""
    if all(hasattr(answer, k) for k in ("module", "make_batch", "loss")):
        return answer.module, answer.make_batch, answer.loss
    if isinstance(answer, Mapping):
        unknown = set(answer) - {"module", "make_batch", "loss"}
        if unknown or not {"module", "make_batch"} <= set(answer):
            raise ConfigError("model", ref, CONTRACT)
        return answer["module"], answer["make_batch"], answer.get("loss")
    if isinstance(answer, tuple | list) and len(answer) in (2, 3):
        return answer[0], answer[1], answer[2] if len(answer) == 3 else None
    raise ConfigError("model", ref, f"{CONTRACT}; it returned {type(answer).__name__}")


def _to(value: Any, device: torch.device) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, tuple | list):
        return type(value)(_to(v, device) for v in value)
    return value


def _examples(targets: Any, inputs: Any) -> int | None:
    """The batch's size: the first dimension of the targets (else of the first input)."""
    for t in (targets, inputs[0] if isinstance(inputs, tuple | list) and inputs else inputs):
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            return int(t.shape[0])
    return None


def build(factory: Callable[[], Any], ref: str, device: torch.device) -> Built:
    """Call the factory and check its answer (one ConfigError line, the run `invalid`)."""
    module, make_batch, loss = _parts(factory(), ref)
    if not isinstance(module, nn.Module):
        raise ConfigError("model", ref, f"{CONTRACT}; module is {type(module).__name__}")
    if not callable(make_batch) or (loss is not None and not callable(loss)):
        raise ConfigError("model", ref, CONTRACT)
    batch = make_batch()
    if not isinstance(batch, tuple | list) or len(batch) != 2:
        raise ConfigError("model", ref, f"{CONTRACT}; make_batch() returned {type(batch).__name__}")
    inputs, targets = _to(batch[0], device), _to(batch[1], device)
    module = module.to(device)
    if isinstance(inputs, list):
        inputs = tuple(inputs)
    if isinstance(inputs, tuple):
        module = _Spread(module)
    return Built(
        module,
        lambda: (inputs, targets),
        loss or nn.functional.cross_entropy,
        examples=_examples(targets, inputs),
    )
