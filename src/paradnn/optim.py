"""Optimizers with ParaDnn's constants (reference/suites.md a.2): lr 0.1; RMSProp with decay 0.9,
momentum 0.9 and epsilon 1.0. (TensorFlow adds ε inside the square root, PyTorch outside; the
arithmetic cost per parameter is the same, which is what a throughput benchmark measures.)"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def make(name: str, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=0.1, alpha=0.9, momentum=0.9, eps=1.0)
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1)
    if name == "momentum":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9)
    raise ValueError(f"optimizer = {name!r}: must be one of rmsprop, sgd, momentum")
