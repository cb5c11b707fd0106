"""A CUDA device that is the CPU, for tests of GPU code paths on CPU-only machines (issue 42:
the next GPU loan must not find a crash the CPU could have found).

`install()` makes torch answer like one idle H100 (``is_available``, the device's properties,
bf16 support, ``synchronize``) and runs what is asked of "cuda" on the CPU: a TorchFunctionMode
rewrites every ``cuda`` device in a torch call (factories, ``.to()``, ``Module.to``) to ``cpu``,
and ``torch.autocast("cuda", …)`` autocasts on the CPU. `uninstall()` puts everything back.
A spawned worker installs it at start-up through ``tests/fake_cuda_site/sitecustomize.py`` when
``PARADNN_FAKE_CUDA=1`` (`worker_env` gives the environment), so a whole CLI command runs on it;
with ``PARADNN_FAKE_CLOCK=1`` the worker's timer is `fake_measure`, whose medians are a known
line in the work a step dispatches (every figure positive, the same on every machine).

What the fake cannot show: anything about real kernels (launch costs, cuDNN's choices, what
the device's counters see). It finds crashes and wiring, not numbers."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

SITE = Path(__file__).resolve().parent / "fake_cuda_site"
FIXED_S = 50e-6  # the fake clock's fixed cost a step
PER_OP_S = 1e-6  # and its cost per aten op the step dispatches
PROPS = SimpleNamespace(
    name="Fake H100 (the CPU)",
    total_memory=80 * 2**30,
    multi_processor_count=132,
    major=9,
    minor=0,
    uuid="00000000-0000-0000-0000-000000000000",
)


def _cpu(v: Any) -> Any:
    if isinstance(v, torch.device) and v.type == "cuda":
        return torch.device("cpu")
    if isinstance(v, str) and v.startswith("cuda"):
        return "cpu"
    if isinstance(v, list | tuple):
        return type(v)(_cpu(x) for x in v)
    return v


class OnCpu(TorchFunctionMode):
    """Every ``cuda`` device in a torch call's arguments becomes ``cpu``."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.device:  # naming a device is not placing a tensor on it
            return func(*args, **(kwargs or {}))
        kwargs = {k: _cpu(v) for k, v in (kwargs or {}).items()}
        if func is torch.Tensor.cuda:  # already on the CPU, which is the device
            return args[0]
        return func(*_cpu(tuple(args)), **kwargs)


class _Autocast(torch.autocast):
    def __init__(self, device_type: str, *args: Any, **kwargs: Any) -> None:
        super().__init__("cpu" if device_type == "cuda" else device_type, *args, **kwargs)


_saved: dict[tuple[Any, str], Any] = {}
_mode: list[OnCpu] = []


def _patch(owner: Any, name: str, value: Any) -> None:
    _saved.setdefault((owner, name), getattr(owner, name))
    setattr(owner, name, value)


def install() -> None:
    """Make this process see one fake CUDA device (idempotent)."""
    if _mode:
        return
    cuda = torch.cuda
    _patch(cuda, "is_available", lambda: True)
    _patch(cuda, "device_count", lambda: 1)
    _patch(cuda, "current_device", lambda: 0)
    _patch(cuda, "set_device", lambda device: None)
    _patch(cuda, "get_device_name", lambda device=None: PROPS.name)
    _patch(cuda, "get_device_properties", lambda device=None: PROPS)
    _patch(cuda, "get_device_capability", lambda device=None: (PROPS.major, PROPS.minor))
    _patch(cuda, "is_bf16_supported", lambda including_emulation=True: True)
    _patch(cuda, "synchronize", lambda device=None: None)
    _patch(cuda, "empty_cache", lambda: None)
    _patch(cuda, "mem_get_info", lambda device=None: (PROPS.total_memory, PROPS.total_memory))
    _patch(torch, "autocast", _Autocast)
    mode = OnCpu()
    mode.__enter__()
    _mode.append(mode)


def uninstall() -> None:
    """Undo `install`."""
    while _mode:
        _mode.pop().__exit__(None, None, None)
    for (owner, name), value in _saved.items():
        setattr(owner, name, value)
    _saved.clear()


def fake_measure(step, clock, policy, **kw):
    """A timer whose median is FIXED_S + PER_OP_S × the work one step does (aten ops it
    dispatches, a tenth for each Python or C call it makes): a line with a large intercept,
    the same on every machine whatever its load."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    calls = [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            calls[0] += 1

    clock.sync()
    with Count():
        sys.setprofile(profile)
        try:
            step()
        finally:
            sys.setprofile(None)
    m = FIXED_S + PER_OP_S * (Count.ops + calls[0] / 10)
    return SimpleNamespace(
        summary=SimpleNamespace(median=m, ci_low=m * 0.999, ci_high=m * 1.001, n=9)
    )


def install_fake_clock() -> None:
    """The timer every paradnn measurement in this process uses becomes `fake_measure`."""
    from paradnn.measure import timer

    _patch(timer, "measure", fake_measure)


def worker_env(clock: bool = True) -> dict[str, str]:
    """The environment a spawned worker needs to start on the fake (and its clock)."""
    here = str(Path(__file__).resolve().parent)
    path = os.pathsep.join(p for p in (str(SITE), here, os.environ.get("PYTHONPATH")) if p)
    env = {"PYTHONPATH": path, "PARADNN_FAKE_CUDA": "1"}
    if clock:
        env["PARADNN_FAKE_CLOCK"] = "1"
    return env
