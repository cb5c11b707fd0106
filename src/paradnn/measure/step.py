"""One training step, exactly what is timed: zero_grad → forward → loss → backward → step.
No host synchronisation inside (no .item()); the last loss is kept for a NaN check afterwards.

It lives with the measurement code because the memory and profile instruments run it too; the
runner's `execute` times it."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from paradnn import optimizers
from paradnn.families.base import Built
from paradnn.measure import precision as prec


def make_optimizer(name: str, params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """The torch optimizer of `paradnn.optimizers`' spec (ParaDnn's constants)."""
    spec = optimizers.spec(name)
    return getattr(torch.optim, spec.torch_class)(params, **spec.hyperparameters)


class TrainStep:
    def __init__(self, built: Built, optimizer: str, precision: str, device: torch.device):
        self.module = built.module.train()
        self.loss_fn = built.loss
        self.x, self.y = built.make_batch()  # synthetic, on the device, generated once
        self.opt = make_optimizer(optimizer, self.module.parameters())
        self.scaler = prec.grad_scaler(precision, device)
        self.autocast: Callable = lambda: prec.autocast(precision, device)
        self.last_loss: torch.Tensor | None = None

    def __call__(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        with self.autocast():
            loss = self.forward_loss(self.x, self.y)
        if self.scaler is None:
            loss.backward()
            self.opt.step()
        else:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        self.last_loss = loss

    def forward_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Forward and loss: the part a compiled mode compiles (measure/compile.py)."""
        return self.loss_fn(self.module(x), y)

    def final_loss(self) -> float | None:
        return None if self.last_loss is None else float(self.last_loss.detach().float().item())
