"""One training step, exactly what is timed: zero_grad → forward → loss → backward → step.
No host synchronisation inside (no .item()); the last loss is kept for a NaN check afterwards.

It lives with the measurement code because the memory and profile instruments run it too; the
runner's `execute` times it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

import torch

from paradnn import optimizers, precisions
from paradnn.families.base import Built
from paradnn.measure import precision as prec


def make_optimizer(
    name: str,
    params: Iterable[torch.nn.Parameter],
    implementation: str = "auto",
    device_type: str = "cpu",
) -> torch.optim.Optimizer:
    """The torch optimizer of `paradnn.optimizers`' spec (ParaDnn's constants), told its
    implementation explicitly: `auto` resolved to torch's own choice on `device_type` first, so
    what the record says ran is what torch was asked to run."""
    facts = optimizers.get(name)
    resolved = optimizers.resolve_implementation(implementation, device_type)
    flags = optimizers.torch_flags(resolved)
    return getattr(torch.optim, facts.torch_class)(params, **facts.hyperparameters, **flags)


def implementation_of(opt: torch.optim.Optimizer) -> str:
    """Which implementation `opt` runs, read back from the flags torch holds."""
    d = opt.defaults
    if d.get("fused"):
        return "fused"
    return "foreach" if d.get("foreach") else "loop"


def unsupported_implementation(name: str, implementation: str, device: torch.device) -> str | None:
    """Why this torch cannot run `implementation` of the optimizer on `device` (None: it can):
    torch.optim has none for the class, or refuses it for the device (asked with a one-element
    parameter, before any work)."""
    reason = optimizers.implementation_reason(name, implementation)
    if reason or implementation != "fused":
        return reason
    p = torch.nn.Parameter(torch.zeros(1, device=device))
    try:
        make_optimizer(name, [p], implementation, device.type)
    except (RuntimeError, ValueError) as e:
        return f"fused {optimizers.get(name).torch_class} on {device.type}: {e}"
    return None


class TrainStep:
    """`policy` mixed: fp32 weights, gradients and optimizer state, forward under autocast
    (fp16 with a GradScaler). pure: the module cast to the 16-bit type (`model.half()`), its
    gradients and optimizer state with it, no autocast and no loss scaling (docs/optimizers.md)."""

    def __init__(
        self,
        built: Built,
        optimizer: str,
        precision: str,
        device: torch.device,
        *,
        implementation: str = "auto",
        policy: str = "mixed",
    ):
        self.module = built.module.train()
        self.loss_fn = built.loss
        self.x, self.y = built.make_batch()  # synthetic, on the device, generated once
        self.policy = precisions.effective_policy(precision, policy)
        if self.policy == "pure":
            dtype = getattr(torch, precisions.get(precision).autocast_dtype or "float32")
            self.module.to(dtype)  # weights and buffers; the batch is already in it
            if self.x.is_floating_point():
                self.x = self.x.to(dtype)
        self.opt = make_optimizer(optimizer, self.module.parameters(), implementation, device.type)
        self.implementation = implementation_of(self.opt)
        pure = self.policy == "pure"
        self.scaler = None if pure else prec.grad_scaler(precision, device)
        # no autocast region at all where there is nothing to cast (fp32, tf32, pure): a plain
        # loop enters none, and on a host-bound step every microsecond is in the median
        self.autocast: Callable = (
            contextlib.nullcontext if pure else prec.autocast_maker(precision, device)
        )
        self.casts = self.autocast is not contextlib.nullcontext
        self.last_loss: torch.Tensor | None = None

    def __call__(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        if self.casts:
            with self.autocast():
                loss = self.forward_loss(self.x, self.y)
        else:
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
