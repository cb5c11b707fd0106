"""NVIDIA GPU energy through NVML: the energy counter, else instant power, else the 1 s average.

All NVML access goes through the module object passed in (`pynvml` from nvidia-ml-py by
default, imported lazily), so tests substitute a fake with a virtual clock (fakes.py). Units are
converted here: the counter is mJ, power mW. Facts and their sources: reference/energy.md §1.3.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from paradnn.measure.energy.base import Reading, Unavailable

FI_POWER_INSTANT = 186  # NVML_FI_DEV_POWER_INSTANT
FI_POWER_AVERAGE = 185  # NVML_FI_DEV_POWER_AVERAGE
SCOPE_GPU = 0  # NVML_POWER_SCOPE_GPU
ERR_NOT_SUPPORTED = 3
ERR_NO_PERMISSION = 4
ERR_DRIVER_NOT_LOADED = 9
ERR_LIBRARY_NOT_FOUND = 12
INSTANT_REFRESH_S = 0.1  # A100/H100: refreshed every 100 ms (Yang et al.; reference §1.3)
AVERAGE_WINDOW_S = 1.0
# Power integration: ≥ 10 s (1% of the 100 ms refresh; ≥ 5 s against aliasing, reference §3.4).
POWER_MIN_WINDOW_S = 10.0
PROBE_MAX_S = 1.5


def load_nvml() -> Any:
    """The official bindings (nvidia-ml-py); the deprecated `pynvml` package is refused."""
    try:
        import pynvml
    except ImportError:
        raise Unavailable("library_absent") from None
    if not hasattr(pynvml, "_nvmlGetFunctionPointer"):
        raise Unavailable("library_absent", "the old `pynvml` package: install nvidia-ml-py")
    return pynvml


def nvml_index(cuda_index: int, visible: str | None = None) -> int | str:
    """The NVML index (or UUID) of CUDA device `cuda_index`, honouring CUDA_VISIBLE_DEVICES."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    if not visible:
        return cuda_index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if cuda_index >= len(entries):
        raise Unavailable("no_gpu", f"CUDA device {cuda_index} is not in CUDA_VISIBLE_DEVICES")
    entry = entries[cuda_index]
    return int(entry) if entry.isdigit() else entry


def _code(e: Exception) -> int | None:
    return getattr(e, "value", None)


class NvmlSource:
    """One GPU. Energy method by preference: `nvml_energy_counter` (Volta+, accepted after a
    self-test that measures its update period and checks it rises), `nvml_power_instant`
    (integrated), `nvml_power_average` (1 s boxcar, flagged smoothed)."""

    kind = "gpu"
    scope = "gpu"

    def __init__(
        self,
        nvml: Any,
        handle: Any,
        index: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        probe_s: float = PROBE_MAX_S,
    ):
        self.nvml, self.handle, self.index = nvml, handle, index
        self.clock, self.sleep = clock, sleep
        self.id = f"gpu:{index}"
        self.name = _text(nvml.nvmlDeviceGetName(handle))
        self.uuid = _text(nvml.nvmlDeviceGetUUID(handle))
        self.notes: dict[str, str] = {}
        self.has_counter = self._counter_works()
        self.update_period_s: float | None = None
        if self.has_counter:
            self.update_period_s = _probe_period(self, probe_s)
            if self.update_period_s is None:
                self.has_counter = False
                self.notes["counter"] = "counter_invalid: flat or backwards during the self-test"
        self.power_field = self._power_kind()
        self.has_power = self.power_field is not None
        if not self.has_counter and not self.has_power:
            raise Unavailable("unsupported_gpu", f"{self.name}: {self.notes}")
        if self.has_counter:
            self.method = "nvml_energy_counter"
            self.min_window_s = 100 * self.update_period_s  # ≤1% edge quantisation
        elif self.power_field == "instant":
            self.method = "nvml_power_instant"
            self.min_window_s = POWER_MIN_WINDOW_S
        else:
            self.method = "nvml_power_average"
            self.min_window_s = POWER_MIN_WINDOW_S
        self.smoothed = self.method == "nvml_power_average"

    # -- capabilities ------------------------------------------------------------------------
    def _counter_works(self) -> bool:
        try:
            self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
            return True
        except self.nvml.NVMLError as e:
            why = "not_supported" if _code(e) == ERR_NOT_SUPPORTED else f"error {_code(e)}"
            self.notes["counter"] = f"nvmlDeviceGetTotalEnergyConsumption: {why}"
            return False

    def _power_kind(self) -> str | None:
        try:
            (v,) = self.nvml.nvmlDeviceGetFieldValues(self.handle, [(FI_POWER_INSTANT, SCOPE_GPU)])
            if v.nvmlReturn == 0:
                return "instant"
            self.notes["instant"] = f"field {FI_POWER_INSTANT}: return {v.nvmlReturn}"
        except self.nvml.NVMLError as e:
            self.notes["instant"] = f"nvmlDeviceGetFieldValues: error {_code(e)}"
        try:
            self.nvml.nvmlDeviceGetPowerUsage(self.handle)
            return "average"
        except self.nvml.NVMLError as e:
            self.notes["average"] = f"nvmlDeviceGetPowerUsage: error {_code(e)}"
        return None

    # -- reads -------------------------------------------------------------------------------
    def counter_j(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3

    def power_w(self) -> float | None:
        if self.power_field == "instant":
            (v,) = self.nvml.nvmlDeviceGetFieldValues(self.handle, [(FI_POWER_INSTANT, SCOPE_GPU)])
            if v.nvmlReturn != 0:
                return None  # a NotSupported burst: a missing sample, never a zero
            return v.value.uiVal / 1e3
        if self.power_field == "average":
            return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3
        return None

    def read(self) -> Reading:
        try:
            t = self.clock()
            counter = self.counter_j() if self.has_counter else None
            power = self.power_w() if self.has_power else None
        except self.nvml.NVMLError as e:
            code = "permission_denied" if _code(e) == ERR_NO_PERMISSION else "read_failed"
            raise Unavailable(code, f"NVML error {_code(e)}") from None
        return Reading(t, counter_j=counter, power_w=power)

    def info(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "uuid": self.uuid,
            "nvml_index": self.index,
            "counter_update_period_s": self.update_period_s,
            "power_field": self.power_field,
            "notes": dict(self.notes),
        }
        for key, fn in (
            ("power_limit_w", lambda: self.nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3),
            ("temp_c", lambda: self.nvml.nvmlDeviceGetTemperature(self.handle, 0)),
        ):
            try:
                out[key] = fn()
            except Exception:  # context only: absent is fine
                out[key] = None
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def _probe_period(src: NvmlSource, max_s: float) -> float | None:
    """Median interval between changes of the energy counter, read in a tight loop (§3.2);
    None when it never rises or goes backwards. Cached per GPU: the period is the driver's."""
    return _cached_period(src.uuid, src, max_s)


_PERIODS: dict[str, float | None] = {}


def _cached_period(uuid: str, src: NvmlSource, max_s: float) -> float | None:
    if uuid in _PERIODS:
        return _PERIODS[uuid]
    t0 = src.clock()
    last, changes = src.counter_j(), []
    while src.clock() - t0 < max_s and len(changes) < 6:
        src.sleep(0.001)
        value = src.counter_j()
        if value < last:
            _PERIODS[uuid] = None
            return None
        if value > last:
            changes.append(src.clock())
            last = value
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    period = statistics.median(gaps) if gaps else None
    _PERIODS[uuid] = period
    return period


def open_nvml(
    cuda_index: int,
    nvml: Any = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> NvmlSource:
    """The source for CUDA device `cuda_index`, or Unavailable with the reason."""
    nvml = nvml if nvml is not None else load_nvml()
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        code = _code(e)
        if code in (ERR_LIBRARY_NOT_FOUND, ERR_DRIVER_NOT_LOADED):
            raise Unavailable("no_gpu", str(e)) from None
        if code == ERR_NO_PERMISSION:
            raise Unavailable("permission_denied", f"nvmlInit: {e}") from None
        raise Unavailable("nvml_init_failed", str(e)) from None
    try:
        which = nvml_index(cuda_index)
        if isinstance(which, str):
            handle = nvml.nvmlDeviceGetHandleByUUID(which)
            index = cuda_index
        else:
            if which >= nvml.nvmlDeviceGetCount():
                raise Unavailable("no_gpu", f"NVML sees no GPU {which}")
            handle, index = nvml.nvmlDeviceGetHandleByIndex(which), which
        return NvmlSource(nvml, handle, index, clock=clock, sleep=sleep)
    except Unavailable:
        nvml.nvmlShutdown()
        raise
    except nvml.NVMLError as e:
        nvml.nvmlShutdown()
        raise Unavailable("nvml_init_failed", str(e)) from None
