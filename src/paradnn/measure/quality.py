"""Whether a measurement can be trusted: its own spread, and the machine's load around it.

A run stays `ok` when it is noisy, but it says so: `quality = "noisy"` with the reasons, and
`compare`/`report` leave it out by default. Two kinds of evidence (reference/timing.md §4):
* the samples: the median's CI missed its target (the timer stopped at a cap), and IQR/median;
* the machine during the timed window: CPU time other processes took on the run's own CPUs
  (from /proc/stat, minus this process's own time), time the hypervisor stole, the load average
  before and after, and on a GPU the other processes NVML sees on the device.
Torch-free: it reads the kernel and NVML only, so it can be tested with fake /proc files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Flag a run when other processes took more than this share of its CPUs' time: a 2-core run
# beside one busy process loses ~50%; an idle VM's daemons stay near 1%.
OTHERS_CPU_LIMIT = 0.10
STEAL_LIMIT = 0.05  # a hypervisor taking 5% of the CPUs' time makes step times wander
IQR_NOTE = 0.10  # torch.utils.benchmark warns above 10% IQR/median; shown, not a verdict alone
MIN_WINDOW_S = 0.05  # below this /proc/stat's 10 ms ticks say nothing about load

PROC_STAT = "/proc/stat"


def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 100.0


def read_cpu_times(cpus: Sequence[int], path: str = PROC_STAT) -> tuple[float, float] | None:
    """(busy, steal) seconds summed over `cpus` since boot, or None when unreadable."""
    wanted = {f"cpu{i}" for i in cpus}
    busy = steal = 0.0
    found = 0
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if not parts or parts[0] not in wanted:
                    continue
                v = [int(x) for x in parts[1:]] + [0] * 10
                # user nice system idle iowait irq softirq steal guest guest_nice;
                # guest time is already inside user, so it is not added again.
                busy += v[0] + v[1] + v[2] + v[5] + v[6]
                steal += v[7]
                found += 1
    except (OSError, ValueError):
        return None
    if not found:
        return None
    hz = _ticks_per_s()
    return busy / hz, steal / hz


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _usable_cpus() -> list[int]:
    from paradnn import host

    return host.usable_cpus()


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:  # pragma: no cover
        return None


@dataclass
class LoadProbe:
    """A timer window (begin/end at the timed phase's edges) that measures the machine's load.

    `cpu_times`, `own_cpu` and `clock` are injectable so tests can play any machine."""

    cpus: list[int] = field(default_factory=_usable_cpus)
    cpu_times: Callable[[Sequence[int]], tuple[float, float] | None] = read_cpu_times
    own_cpu: Callable[[], float] = _own_cpu_s
    clock: Callable[[], float] = time.monotonic
    loadavg: Callable[[], float | None] = _loadavg
    gpu_others: Callable[[], list[dict[str, Any]] | None] | None = None
    _start: tuple[Any, ...] | None = None
    result: dict[str, Any] = field(default_factory=dict)

    def begin(self) -> None:
        self.result = {"loadavg_before": self.loadavg(), "cpus": len(self.cpus)}
        self._start = (self.clock(), self.cpu_times(self.cpus), self.own_cpu())

    def end(self) -> None:
        if self._start is None:
            return
        t0, times0, own0 = self._start
        wall = self.clock() - t0
        times1, own1 = self.cpu_times(self.cpus), self.own_cpu()
        r = self.result
        r["window_s"] = wall
        r["loadavg_after"] = self.loadavg()
        if times0 is None or times1 is None:
            r["others_cpu_frac"] = None
            r["reason"] = "/proc/stat unreadable: other processes' CPU time unknown"
        elif wall < MIN_WINDOW_S:
            r["others_cpu_frac"] = None
            r["reason"] = f"window {wall * 1e3:.0f} ms is below /proc/stat's resolution"
        else:
            capacity = wall * len(self.cpus)
            others = (times1[0] - times0[0]) - (own1 - own0)
            r["others_cpu_frac"] = round(min(1.0, max(0.0, others / capacity)), 4)
            r["steal_frac"] = round(max(0.0, (times1[1] - times0[1]) / capacity), 4)
        if self.gpu_others is not None:
            try:
                r["gpu_other_processes"] = self.gpu_others()
            except Exception as e:  # context only: never the reason a run fails
                r["gpu_other_processes"] = None
                r["gpu_reason"] = f"{type(e).__name__}: {e}"[:200]


def nvml_other_processes(index: int) -> Callable[[], list[dict[str, Any]] | None]:
    """A reader of the compute processes on GPU `index` other than this one (NVML)."""

    def read() -> list[dict[str, Any]] | None:
        from paradnn import host

        with host.nvml() as nv:
            procs = nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(index))
        me = os.getpid()
        return [
            {"pid": int(p.pid), "used_memory_bytes": getattr(p, "usedGpuMemory", None)}
            for p in procs
            if int(p.pid) != me
        ]

    return read


@dataclass(frozen=True)
class Verdict:
    quality: str  # good | noisy
    reasons: list[str]
    ci_half_rel: float | None
    iqr_rel: float | None


def ci_half_rel(median: float, ci_low: float | None, ci_high: float | None) -> float | None:
    """Half the width of the median's CI, relative to the median: what `±` prints."""
    if ci_low is None or ci_high is None or not median or median <= 0:
        return None
    return (ci_high - ci_low) / 2 / median


def judge(
    *,
    median: float,
    ci_low: float | None,
    ci_high: float | None,
    q1: float,
    q3: float,
    converged: bool,
    stop_reason: str,
    target_ci_rel: float,
    load: dict[str, Any] | None,
) -> Verdict:
    """The quality verdict of one timed run, with every reason it is not `good`."""
    reasons: list[str] = []
    half = ci_half_rel(median, ci_low, ci_high)
    iqr = (q3 - q1) / median if median > 0 else None
    if not converged:
        gap = (
            max(median - ci_low, ci_high - median) / median
            if ci_low is not None and ci_high is not None and median > 0
            else None
        )
        shown = "no CI (too few samples)" if gap is None else f"CI reaches ±{gap:.1%}"
        reasons.append(f"{shown} > ±{target_ci_rel:.0%} target (stopped at {stop_reason})")
    load = load or {}
    others = load.get("others_cpu_frac")
    if others is not None and others > OTHERS_CPU_LIMIT:
        reasons.append(f"other processes used {others:.0%} of the run's CPUs")
    steal = load.get("steal_frac")
    if steal is not None and steal > STEAL_LIMIT:
        reasons.append(f"the hypervisor stole {steal:.0%} of the run's CPU time")
    gpu = load.get("gpu_other_processes")
    if gpu:
        pids = ", ".join(str(p["pid"]) for p in gpu[:5])
        reasons.append(f"{len(gpu)} other process(es) on the GPU (pid {pids})")
    return Verdict("noisy" if reasons else "good", reasons, half, iqr)


def warning_line(label: str, quality: str | None, reasons: Sequence[str] | None) -> str | None:
    """The one-line warning `bench` and `run` print for a noisy run (None for a good one)."""
    if quality != "noisy":
        return None
    return (
        f"noisy: {label}: {'; '.join(reasons or ())}. It is stored, flagged, and left out of "
        "compare/report; re-run on an idle machine or with a longer --max-time."
    )
