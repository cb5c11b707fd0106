"""The device a run would use, probed without torch: its memory and native precisions."""

from __future__ import annotations

import os
from typing import Any


def native_precisions(device_type: str, device: str = "auto") -> list[str]:
    """The precisions the device runs natively, torch-free (NVML for a GPU's capability): what
    a dry run expands `native` to. A run asks its worker, which knows for certain."""
    from paradnn import host
    from paradnn import precisions as precs

    capability = None
    if device_type == "cuda":
        try:
            with host.nvml() as nv:
                handle = _handle(nv, device)
                capability = tuple(nv.nvmlDeviceGetCudaComputeCapability(handle))
        except Exception:  # unknown: no low precision is called native
            capability = None
    return precs.native_set(device_type, cuda_capability=capability)


def _index(device: str) -> int:
    return int(device.split(":")[1]) if ":" in device else 0


def _handle(nv: Any, device: str) -> Any:
    """NVML's handle of the GPU torch calls `device`: CUDA_VISIBLE_DEVICES renumbers the GPUs
    torch sees (by NVML index or UUID), NVML does not. A MIG slice or an entry that names no
    GPU raises (its memory is then unknown here)."""
    index = _index(device)
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return nv.nvmlDeviceGetHandleByIndex(index)
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    entry = entries[index]  # IndexError: torch sees no such GPU
    if entry.isdigit():
        return nv.nvmlDeviceGetHandleByIndex(int(entry))
    if entry.startswith("GPU-"):
        return nv.nvmlDeviceGetHandleByUUID(entry)
    raise LookupError(f"CUDA_VISIBLE_DEVICES entry {entry!r}: not a GPU index or UUID")


def device_capacity(device: str) -> tuple[int | None, str]:
    """(memory, device type) of the device a run would use, torch-free: NVML for GPUs, the
    host otherwise. The memory is None for a GPU that NVML cannot see."""
    from paradnn import host

    if device == "cpu":
        return host.memory_bytes(), "cpu"
    try:
        with host.nvml() as nv:
            handle = _handle(nv, device)
            return int(nv.nvmlDeviceGetMemoryInfo(handle).total), "cuda"
    except Exception:  # no NVIDIA driver: `auto` means the CPU, `cuda` is unknown
        return (host.memory_bytes(), "cpu") if device == "auto" else (None, "cuda")


def free_memory(device: str) -> tuple[int | None, str]:
    """(bytes free now, whose memory) of the device a run would use, torch-free, before any
    worker starts: the host's available memory (host.available_memory_bytes) for a CPU run,
    NVML's free memory for a GPU. None when it cannot be read (a GPU NVML cannot see: the
    worker's own check then decides, docs/memory.md)."""
    from paradnn import host

    if device == "cpu":
        return host.available_memory_bytes(), "host memory"
    try:
        with host.nvml() as nv:
            handle = _handle(nv, device)
            return int(nv.nvmlDeviceGetMemoryInfo(handle).free), "GPU memory"
    except Exception:  # no NVIDIA driver: `auto` means the CPU, `cuda` is unknown
        if device == "auto":
            return host.available_memory_bytes(), "host memory"
        return None, "GPU memory"


def unsupported_precision(
    precision: str, device: str = "auto", *, allow_emulated: bool = False
) -> str | None:
    """Why a run at `precision` would measure nothing on this device, torch-free, before any
    work: the reason it is not native, what the device runs natively and whether emulation
    can be asked for; None when it runs natively, when `allow_emulated` asks for an emulation
    that exists, or when the device's precisions are unknown (a GPU NVML cannot see: the
    worker decides, and stores `unsupported`)."""
    from paradnn import precisions as precs
    from paradnn.config import check_device
    from paradnn.validate import one_of

    one_of("precision", precision, precs.PRECISIONS)
    check_device(device)
    _, device_type = device_capacity(device)
    capability = None
    if device_type == "cuda":
        try:
            capability = _capability(device)
        except Exception:  # unknown: the worker knows for certain
            return None
    why = precs.native_reason(precision, device_type, cuda_capability=capability)
    if why is None:
        return None
    emulable = precs.can_emulate(precision, device_type)
    if emulable and allow_emulated:
        return None
    native = ", ".join(precs.native_set(device_type, cuda_capability=capability))
    what = "this CPU" if device_type == "cpu" else "this GPU"
    why = why.split(" (--allow-emulated")[0]  # said once, below
    how = (
        "--allow-emulated runs it emulated (stored and shown as emulated)"
        if emulable
        else "paradnn has no emulation of it"
    )
    return f"{why}; {what} runs {native} natively; {how}"


def _capability(device: str) -> tuple[int, int]:
    from paradnn import host

    with host.nvml() as nv:
        handle = _handle(nv, device)
        return tuple(nv.nvmlDeviceGetCudaComputeCapability(handle))  # type: ignore[return-value]
