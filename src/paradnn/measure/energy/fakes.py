"""Sensor models for tests: a fake NVML on a virtual clock and a fake powercap tree.

The NVML model follows the published sensor behaviour (reference/energy.md §1.3, §3.7): the
energy counter is ∫P quantised to mJ and updated every `counter_period_s`; INSTANT power is the
mean of P over the last `instant_window_s` of each `instant_period_s` (A100/H100: 25 ms of every
100 ms, so periodic loads alias); AVERAGE is a 1 s boxcar. Profiles switch the counter off
(Pascal), and faults inject a counter reset, NotSupported bursts or an init failure.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_ids = itertools.count()


class VirtualClock:
    """Seconds that only move when told to; `sleep` advances them."""

    def __init__(self, t: float = 100.0):
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt

    sleep = advance


class NVMLError(Exception):
    def __init__(self, value: int):
        self.value = value
        super().__init__(f"NVML error {value}")


@dataclass
class _Value:
    uiVal: int


@dataclass
class _Field:
    fieldId: int
    nvmlReturn: int
    timestamp: int
    value: _Value


class FakeNvml:
    """The slice of `pynvml` paradnn uses, for one GPU whose power is `power(t)` watts."""

    NVMLError = NVMLError
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_FI_DEV_POWER_AVERAGE = 185
    NVML_ERROR_NOT_SUPPORTED = 3

    def __init__(
        self,
        clock: VirtualClock,
        power: Callable[[float], float] = lambda t: 300.0,
        *,
        counter: bool = True,
        instant: bool = True,
        counter_period_s: float = 0.1,
        instant_period_s: float = 0.1,
        instant_window_s: float = 0.025,
        average_window_s: float = 1.0,
        reset_at: float | None = None,
        not_supported: Callable[[float], bool] = lambda t: False,
        init_error: int | None = None,
        name: str = "Fake H100",
        dt: float = 0.0005,
    ):
        self.clock, self.power = clock, power
        self.counter, self.instant = counter, instant
        self.counter_period_s, self.instant_period_s = counter_period_s, instant_period_s
        self.instant_window_s, self.average_window_s = instant_window_s, average_window_s
        self.reset_at, self.not_supported, self.init_error = reset_at, not_supported, init_error
        self.name, self.uuid = name, f"GPU-fake-{next(_ids)}"
        self.dt = dt
        self._cum = [0.0]  # ∫P on a grid of dt from t=0
        self.calls = 0

    # ∫P from 0 to t, extended lazily on a fine grid
    def energy(self, t: float) -> float:
        n = int(t / self.dt)
        while len(self._cum) <= n + 1:
            i = len(self._cum) - 1
            self._cum.append(self._cum[-1] + self.power((i + 0.5) * self.dt) * self.dt)
        frac = t / self.dt - n
        return self._cum[n] + frac * (self._cum[n + 1] - self._cum[n])

    def mean_power(self, a: float, b: float) -> float:
        return (self.energy(b) - self.energy(a)) / (b - a)

    # -- pynvml API ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        return None

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        if i != 0:
            raise NVMLError(2)
        return "h0"

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        return "h0"

    def nvmlDeviceGetName(self, h: str) -> str:
        return self.name

    def nvmlDeviceGetUUID(self, h: str) -> str:
        return self.uuid

    def nvmlDeviceGetArchitecture(self, h: str) -> int:
        return 7 if self.counter else 4

    def nvmlDeviceGetTotalEnergyConsumption(self, h: str) -> int:
        self.calls += 1
        t = self.clock()
        if not self.counter or self.not_supported(t):
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        tu = math.floor(t / self.counter_period_s) * self.counter_period_s
        e = self.energy(tu)
        if self.reset_at is not None and t >= self.reset_at:
            e -= self.energy(
                math.floor(self.reset_at / self.counter_period_s) * self.counter_period_s
            )
        return int(e * 1000)

    def _instant_w(self, t: float) -> float:
        tu = math.floor(t / self.instant_period_s) * self.instant_period_s
        return self.mean_power(max(tu - self.instant_window_s, 0.0), max(tu, 1e-9))

    def _average_w(self, t: float) -> float:
        tu = math.floor(t / self.instant_period_s) * self.instant_period_s
        return self.mean_power(max(tu - self.average_window_s, 0.0), max(tu, 1e-9))

    def nvmlDeviceGetFieldValues(self, h: str, fields: list[Any]) -> list[_Field]:
        self.calls += 1
        t = self.clock()
        out = []
        for f in fields:
            fid = f[0] if isinstance(f, tuple) else f
            ok = not self.not_supported(t) and (fid == 185 or (fid == 186 and self.instant))
            if not ok:
                out.append(_Field(fid, self.NVML_ERROR_NOT_SUPPORTED, 0, _Value(0)))
                continue
            w = self._instant_w(t) if fid == 186 else self._average_w(t)
            out.append(_Field(fid, 0, int(t * 1e6), _Value(round(w * 1000))))
        return out

    def nvmlDeviceGetPowerUsage(self, h: str) -> int:
        return round(self._average_w(self.clock()) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: str) -> int:
        return 700_000

    def nvmlDeviceGetTemperature(self, h: str, sensor: int) -> int:
        return 40

    def nvmlDeviceGetComputeRunningProcesses(self, h: str) -> list[Any]:
        return list(self.processes)

    # -- what `paradnn doctor` reads besides power (fixed H100-like values) --------------------
    processes: tuple[Any, ...] = ()
    unsupported: tuple[str, ...] = ()  # names of queries that raise NotSupported

    def _maybe(self, query: str, value: Any) -> Any:
        if query in self.unsupported:
            raise NVMLError(self.NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlSystemGetDriverVersion(self) -> str:
        return "560.35.03"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12060

    def nvmlDeviceGetMemoryInfo(self, h: str) -> Any:
        return self._maybe("memory", _Memory(total=80 << 30, free=79 << 30, used=1 << 30))

    def nvmlDeviceGetCudaComputeCapability(self, h: str) -> tuple[int, int]:
        return self._maybe("capability", (9, 0))

    def nvmlDeviceGetClockInfo(self, h: str, kind: int) -> int:
        return self._maybe("clock", {1: 1980, 2: 2619}[kind])

    def nvmlDeviceGetMaxClockInfo(self, h: str, kind: int) -> int:
        return self._maybe("max_clock", {1: 1980, 2: 2619}[kind])

    def nvmlDeviceGetPersistenceMode(self, h: str) -> int:
        return self._maybe("persistence", 1)

    def nvmlDeviceGetMigMode(self, h: str) -> tuple[int, int]:
        return self._maybe("mig", (0, 0))

    def nvmlDeviceGetEccMode(self, h: str) -> tuple[int, int]:
        return self._maybe("ecc", (1, 1))

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: str) -> list[Any]:
        return []


@dataclass
class _Memory:
    total: int
    free: int
    used: int


@dataclass
class FakeProcess:
    pid: int
    usedGpuMemory: int | None = None


class FakeRaplZone:
    """A powercap zone whose energy_uj follows `power(t)` on a virtual clock and wraps."""

    def __init__(self, clock: VirtualClock, power: float, range_uj: int, start_uj: int = 0):
        self.clock, self.power, self.range_uj, self.start_uj = clock, power, range_uj, start_uj
        self.t0 = clock()

    def value(self) -> int:
        return int(self.start_uj + (self.clock() - self.t0) * self.power * 1e6) % self.range_uj


def build_powercap(root: Path, zones: dict[str, dict[str, Any]]) -> Path:
    """Write a powercap tree: zones maps a directory path relative to root (e.g.
    "intel-rapl:0", "intel-rapl:0/intel-rapl:0:2") to {"name", "energy_uj",
    "max_energy_range_uj"}; a missing key leaves the file out."""
    for rel, files in zones.items():
        d = root / rel
        d.mkdir(parents=True, exist_ok=True)
        for k, v in files.items():
            (d / k).write_text(f"{v}\n")
    return root


def reader(
    live: dict[str, FakeRaplZone] | None = None, denied: tuple[str, ...] = ()
) -> Callable[[Path], str]:
    """A file reader for a fake tree: `energy_uj` of zones named in `live` comes from their
    model; paths ending in any of `denied` raise PermissionError (tests run as root)."""

    def read(path: Path) -> str:
        s = str(path)
        if any(s.endswith(d) for d in denied):
            raise PermissionError(13, "Permission denied", s)
        if live and path.name == "energy_uj" and path.parent.name in live:
            return str(live[path.parent.name].value())
        return path.read_text().strip()

    return read
