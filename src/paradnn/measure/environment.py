"""What the numbers were measured on: software versions, CPU, GPU, threads and flags.

The fingerprint hashes the fields that change performance (device model, software versions,
thread count) and leaves out volatile ones (hostname, clocks), so results from identical
platforms share run keys and a different driver or torch version does not.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from functools import cache
from typing import Any

import torch

import paradnn
from paradnn import host, precisions

FINGERPRINT_FIELDS = (
    "python",
    "torch",
    "cuda",
    "cudnn",
    "driver",
    "cpu_model",
    "threads",
    "device_type",
    "gpu_name",
    "paradnn",
    "flush_denormal",
    "malloc_env",
    "isa",
    "native_precisions",
)


@cache
def cpu_model() -> str:
    return host.cpu_model()


def nvidia_driver() -> tuple[str | None, str | None]:
    """(driver version, reason when unknown) via NVML."""
    try:
        with host.nvml() as nv:
            return host.text(nv.nvmlSystemGetDriverVersion()), None
    except host.NvmlUnavailable as e:
        return None, str(e)


def collect(device: torch.device, threads: int) -> dict[str, Any]:
    env: dict[str, Any] = {
        "paradnn": paradnn.__version__,
        "python": platform.python_version(),
        # a plain str: torch's TorchVersion would make whoever unpickles this (the supervisor,
        # which never needs torch) import torch, ~1 s, before it can read the worker's hello
        "torch": str(torch.__version__),
        "numpy": _version("numpy"),
        "cuda": torch.version.cuda,
        "cudnn": None,
        "driver": None,
        "os": f"{platform.system()} {platform.release()}",
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "interop_threads": torch.get_num_interop_threads(),
        "device": str(device),
        "device_type": device.type,
        "gpu_name": None,
        "gpu_memory_bytes": None,
        "gpu_sm_count": None,
        "gpu_capability": None,
        "device_uuid": None,  # which physical GPU (a sweep across machines names each one)
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "flush_denormal": True,  # set by the torch backend (runner/execute.py) around every run
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        "executable": sys.executable,
    }
    nulls: dict[str, str] = {}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(
            gpu_name=props.name,
            gpu_memory_bytes=props.total_memory,
            gpu_sm_count=props.multi_processor_count,
            gpu_capability=f"{props.major}.{props.minor}",
            device_uuid=_gpu_uuid(props),
            cudnn=str(torch.backends.cudnn.version())
            if torch.backends.cudnn.is_available()
            else None,
        )
        env["driver"], reason = nvidia_driver()
        if reason:
            nulls["driver"] = reason
    else:
        for k in ("gpu_name", "driver", "cudnn", "gpu_memory_bytes", "gpu_sm_count"):
            nulls[k] = "cpu run"
        nulls["device_uuid"] = "cpu run: a CPU has no device UUID (the hostname names the machine)"
    # What the CPU computes with: torch's dispatch level and the caps a user set (an AVX2-capped
    # run on an AVX-512 machine is another environment, with its own run keys).
    env["isa"] = {"cpu_capability": _cpu_capability(), **host.caps()}
    capability = None
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        capability = (props.major, props.minor)
    reasons = {
        p: precisions.native_reason(p, device.type, cuda_capability=capability)
        for p in precisions.PRECISIONS
    }
    env["native_precisions"] = [p for p, r in reasons.items() if r is None]
    env["precision_reasons"] = {p: r for p, r in reasons.items() if r is not None}
    env["nulls"] = nulls
    env["fingerprint"] = fingerprint(env)
    return env


def _gpu_uuid(props: Any) -> str | None:
    """`GPU-…` as nvidia-smi prints it; torch's device properties carry it (CUDA ≥ 11.4)."""
    uuid = getattr(props, "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith("GPU-") else f"GPU-{text}"


def _cpu_capability() -> str | None:
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # pragma: no cover - older torch
        return None


def fingerprint(env: dict[str, Any]) -> str:
    stable = {k: env.get(k) for k in FINGERPRINT_FIELDS}
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:
        return None


_chosen: dict[str, Any] | None = None  # the supervisor's threads choice for this process


def note_threads_choice(choice: dict[str, Any] | None) -> None:
    """Adopt the supervisor's thread choice (host.ThreadsChoice.as_dict()): its count is this
    process's default, and every run's environment records it with its reason."""
    global _chosen
    _chosen = dict(choice) if choice else None
    run_environment.cache_clear()


def default_threads() -> int:
    """The supervisor's choice from the machine's load, else every core this process may use."""
    if _chosen is not None and _chosen.get("requested") is None:
        return int(_chosen["threads"])
    return len(host.usable_cpus())


def threads_choice(threads: int, requested: bool) -> dict[str, Any]:
    """Why a run uses `threads` threads: the supervisor's choice when it made this one, else
    what the caller asked for or every usable core (the load then was not measured)."""
    if _chosen is not None and _chosen.get("threads") == threads:
        return dict(_chosen)
    usable = len(host.usable_cpus())
    why = "set by the caller" if requested else f"every usable CPU ({usable})"
    return {
        "threads": threads,
        "requested": threads if requested else None,
        "usable": usable,
        "reason": f"{why}; the load was not measured",
    }


@cache
def run_environment(device: str, threads: int, requested: bool = True) -> dict[str, Any]:
    """The environment of runs on `device` with `threads` CPU threads (collected once)."""
    env = collect(torch.device(device), threads)
    env["threads_choice"] = threads_choice(threads, requested)
    return env


def prepare(device: str, threads: int | None) -> tuple[torch.device, dict[str, Any]]:
    """Resolve the device (`auto`, `cpu`, `cuda:N`), set the CPU thread count (None: the
    default, default_threads), and describe the environment."""
    from paradnn.measure.device import resolve

    resolved = resolve(device)
    count = threads or default_threads()
    torch.set_num_threads(count)
    return resolved, run_environment(str(resolved), count, threads is not None)
