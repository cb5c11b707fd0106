"""The device a run would use, probed without torch: its memory and native precisions."""

from __future__ import annotations


def native_precisions(device_type: str, device: str = "auto") -> list[str]:
    """The precisions the device runs natively, torch-free (NVML for a GPU's capability): what
    a dry run expands `native` to. A run asks its worker, which knows for certain."""
    from paradnn import host
    from paradnn import precisions as precs

    capability = None
    if device_type == "cuda":
        try:
            with host.nvml() as nv:
                handle = nv.nvmlDeviceGetHandleByIndex(_index(device))
                capability = tuple(nv.nvmlDeviceGetCudaComputeCapability(handle))
        except Exception:  # unknown: no low precision is called native
            capability = None
    return precs.native_set(device_type, cuda_capability=capability)


def _index(device: str) -> int:
    return int(device.split(":")[1]) if ":" in device else 0


def device_capacity(device: str) -> tuple[int | None, str]:
    """(memory, device type) of the device a run would use, torch-free: NVML for GPUs, the
    host otherwise. The memory is None for a GPU that NVML cannot see."""
    from paradnn import host

    if device == "cpu":
        return host.memory_bytes(), "cpu"
    try:
        with host.nvml() as nv:
            handle = nv.nvmlDeviceGetHandleByIndex(_index(device))
            return int(nv.nvmlDeviceGetMemoryInfo(handle).total), "cuda"
    except Exception:  # no NVIDIA driver: `auto` means the CPU, `cuda` is unknown
        return (host.memory_bytes(), "cpu") if device == "auto" else (None, "cuda")
