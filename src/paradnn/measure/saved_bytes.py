"""Measuring the memory of a training step where the allocator keeps no statistics (CPU).

Two instruments, used to validate the memory model (`paradnn.memory`):
- `saved_tensor_bytes`: what autograd keeps for backward at the end of forward (unique
  storages, parameters and buffers excluded), plus weights, gradients and optimizer state;
- `profiler_peak_bytes`: the largest sum of live tensor bytes over one step, from
  torch.profiler's memory timeline (the CPU counterpart of `max_memory_allocated`).
"""

from __future__ import annotations

import gc
import json
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import Any

import torch

from paradnn.measure.step import TrainStep


def _nbytes(t: torch.Tensor) -> int:
    return t.untyped_storage().nbytes()


def saved_tensor_bytes(step: TrainStep) -> dict[str, int]:
    """Run one step and measure, part by part, what `MemoryEstimate.resident` predicts."""
    module = step.module
    resident = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}
    saved: dict[int, tuple[int, list[weakref.ref]]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in resident:
            refs = saved.setdefault(storage.data_ptr(), (storage.nbytes(), []))[1]
            refs.append(weakref.ref(t))
        return t

    at_end_of_forward: list[int] = []
    loss_fn = step.loss_fn

    def loss_then_count(out: Any, target: Any) -> torch.Tensor:
        loss = loss_fn(out, target)  # a storage counts while any tensor saved on it lives
        at_end_of_forward.append(
            sum(n for n, refs in saved.values() if any(r() is not None for r in refs))
        )
        return loss

    step.loss_fn = loss_then_count
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            step()
    finally:
        step.loss_fn = loss_fn
    gc.collect()  # hooks that return the saved output itself leave reference cycles
    params = list(module.parameters())
    # per-element state; the scalar per-parameter `step` counters (bytes, not MiB) are left out
    state = [v for s in step.opt.state.values() for k, v in s.items() if k != "step"]
    return {
        "weights": sum(_nbytes(t) for t in [*params, *module.buffers()]),
        "grads": sum(_nbytes(p.grad) for p in params if p.grad is not None),
        "optimizer_state": sum(_nbytes(t) for t in state if t.device == params[0].device),
        "activations": at_end_of_forward[0],
    }


def profiler_peak_bytes(step: TrainStep) -> int | None:
    """Peak live tensor bytes over one step on CPU, or None where this torch lacks the
    (deprecated, but still the only CPU) memory timeline."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU]
    with profile(activities=acts, profile_memory=True, record_shapes=True, with_stack=True) as p:
        step()
    if not hasattr(p, "export_memory_timeline"):
        return None
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        path = Path(tmp) / "timeline.json"
        p.export_memory_timeline(str(path), device="cpu")
        _, sizes = json.loads(path.read_text())
    return max(sum(s) for s in sizes)
