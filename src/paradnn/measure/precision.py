"""Precision as a run axis: fp32 (TF32 off), tf32, bf16 and fp16 autocast (with loss scaling).

TF32 is never a silent default: every run sets the matmul and cuDNN TF32 flags explicitly and the
record stores them. Weights stay fp32 in every mode (mixed precision, as ParaDnn's custom getter
did), so the optimizer and the parameter count do not change with precision.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator

import torch

from paradnn import precisions
from paradnn.precisions import PRECISIONS, precision_flags

__all__ = [
    "PRECISIONS",
    "autocast",
    "autocast_maker",
    "grad_scaler",
    "tf32_flags",
    "unsupported_reason",
]


def unsupported_reason(precision: str, device: torch.device) -> str | None:
    """Why `precision` cannot run natively on `device`, or None when it can
    (the decision is paradnn.precisions'; this only asks torch for the GPU's capability)."""
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    return precisions.native_reason(precision, device.type, cuda_capability=capability)


def _autocast_dtype(precision: str) -> torch.dtype | None:
    name = precisions.get(precision).autocast_dtype
    return None if name is None else getattr(torch, name)


@contextlib.contextmanager
def tf32_flags(precision: str) -> Iterator[None]:
    """Set TF32 flags for the run and restore the previous values after it."""
    saved = (
        torch.backends.cuda.matmul.allow_tf32,
        torch.backends.cudnn.allow_tf32,
        torch.get_float32_matmul_precision(),
    )
    f = precision_flags(precision)
    torch.backends.cuda.matmul.allow_tf32 = bool(f["matmul_allow_tf32"])
    torch.backends.cudnn.allow_tf32 = bool(f["cudnn_allow_tf32"])
    torch.set_float32_matmul_precision(str(f["float32_matmul_precision"]))
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved[0]
        torch.backends.cudnn.allow_tf32 = saved[1]
        torch.set_float32_matmul_precision(saved[2])


def autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    dtype = _autocast_dtype(precision)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def autocast_maker(
    precision: str, device: torch.device
) -> Callable[[], contextlib.AbstractContextManager]:
    """What `autocast` returns, as a maker called once per step: the dtype looked up once, so
    a timed step enters its autocast region as a plain loop's `with torch.autocast(...)` does."""
    dtype = _autocast_dtype(precision)
    if dtype is None:
        return contextlib.nullcontext
    return functools.partial(torch.autocast, device_type=device.type, dtype=dtype)


def grad_scaler(precision: str, device: torch.device) -> torch.amp.GradScaler | None:
    return torch.amp.GradScaler(device.type) if precisions.get(precision).loss_scaling else None
