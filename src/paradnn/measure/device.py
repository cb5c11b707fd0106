"""Device resolution, synchronisation and the right clock for a device."""

from __future__ import annotations

import torch

from paradnn.errors import ConfigError
from paradnn.measure.timer import BlockClock, HostClock


def resolve(spec: str) -> torch.device:
    """`auto` → the first CUDA device when there is one, else the CPU."""
    if spec == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(spec)
    except (RuntimeError, ValueError):
        raise ConfigError("device", spec, "must be auto, cpu, cuda or cuda:N") from None
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError("device", spec, "must be auto, cpu, cuda or cuda:N")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError("device", spec, "no CUDA device is visible; use cpu or auto")
        index = dev.index or 0
        if index >= torch.cuda.device_count():
            raise ConfigError(
                "device", spec, f"only {torch.cuda.device_count()} CUDA device(s) are visible"
            )
        dev = torch.device("cuda", index)
    return dev


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class CudaEventClock:
    """CUDA events around each block: device time without a host sync inside the block.
    Events also capture host-bound gaps between kernels, which is what a training loop sees.

    Events are made ahead and reused: a mark only records one, so a block holds no
    `cudaEventCreate` (nor the destruction of an old event), which on a host-bound step of a
    millisecond would be part of the time measured."""

    def __init__(self, device: torch.device):
        self.device = device
        self.free: list[torch.cuda.Event] = []

    def now(self) -> float:
        import time

        return time.perf_counter()

    def sync(self) -> None:
        torch.cuda.synchronize(self.device)
        # the warm-up's marks come from here; the timed phase stocks a whole chunk's (timer.py)
        self.stock(2 * 64)

    def stock(self, n: int) -> None:
        """At least `n` events ready for marks."""
        while len(self.free) < n:
            self.free.append(torch.cuda.Event(enable_timing=True))

    def mark(self) -> torch.cuda.Event:
        ev = self.free.pop() if self.free else torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def elapsed(self, pairs: list[tuple[torch.cuda.Event, torch.cuda.Event]]) -> list[float]:
        pairs[-1][1].synchronize()
        out = [a.elapsed_time(b) / 1e3 for a, b in pairs]
        for a, b in pairs:  # read: free to be recorded again
            self.free += (a, b)
        return out


def clock_for(device: torch.device) -> BlockClock:
    return CudaEventClock(device) if device.type == "cuda" else HostClock()
