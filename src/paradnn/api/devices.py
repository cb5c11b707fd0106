"""The device a run would use, probed without torch: its memory and native precisions."""

from __future__ import annotations


def native_precisions(device_type: str, device: str = "auto") -> list[str]:
    """The precisions the device runs natively, torch-free (NVML for a GPU's capability): what
    a dry run expands `native` to. A run asks its worker, which knows for certain."""
    from paradnn import precisions as precs

    capability = None
    if device_type == "cuda":
        try:
            import pynvml

            pynvml.nvmlInit()
            try:
                index = int(device.split(":")[1]) if ":" in device else 0
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                capability = tuple(pynvml.nvmlDeviceGetCudaComputeCapability(handle))
            finally:
                pynvml.nvmlShutdown()
        except Exception:
            capability = None
    return precs.native_set(device_type, cuda_capability=capability)


def device_capacity(device: str) -> tuple[int | None, str]:
    """(memory, device type) of the device a run would use, torch-free: NVML for GPUs, the
    host otherwise. The memory is None for a GPU that NVML cannot see."""
    from paradnn.runner.worker import host_memory_bytes

    if device == "cpu":
        return host_memory_bytes(), "cpu"
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            index = int(device.split(":")[1]) if ":" in device else 0
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return int(pynvml.nvmlDeviceGetMemoryInfo(handle).total), "cuda"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVIDIA driver: `auto` means the CPU, `cuda` is unknown
        return (host_memory_bytes(), "cpu") if device == "auto" else (None, "cuda")
