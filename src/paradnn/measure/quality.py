"""Whether a measurement can be trusted: its own spread, and the machine's load around it.

A run stays `ok` when it is noisy, but it says so: `quality = "noisy"` with the reasons, and
`compare`/`report` leave it out by default. Two kinds of evidence (reference/timing.md §4):
* the samples: the median's final CI is wider than its target (whatever stopped the timer),
  and IQR/median (shown, not a verdict);
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

from paradnn import host
from paradnn.records import Quality

# Flag a run when other processes took more than this share of its CPUs' time: a 2-core run
# beside one busy process loses ~50%; an idle VM's daemons stay near 1%.
OTHERS_CPU_LIMIT = 0.10
STEAL_LIMIT = 0.05  # a hypervisor taking 5% of the CPUs' time makes step times wander
IQR_NOTE = 0.10  # torch.utils.benchmark warns above 10% IQR/median; shown, not a verdict alone
MIN_WINDOW_S = 0.05  # below this /proc/stat's 10 ms ticks say nothing about load

PROC_STAT = "/proc/stat"


def read_cpu_times(cpus: Sequence[int], path: str = PROC_STAT) -> tuple[float, float] | None:
    """(busy, steal) seconds summed over `cpus` since boot, or None when unreadable."""
    per_cpu = host.cpu_stat_file(path)
    if per_cpu is None or not any(c in per_cpu for c in cpus):
        return None
    found = [per_cpu[c] for c in cpus if c in per_cpu]
    return sum(b for b, _ in found), sum(s for _, s in found)


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _usable_cpus() -> list[int]:
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
    """Half the width of the median's CI, relative to the median (stored as `ci_half_rel`; not
    what `±` prints: a median's CI is lopsided, `ci_gap_rel` is the figure)."""
    if ci_low is None or ci_high is None or not median or median <= 0:
        return None
    return (ci_high - ci_low) / 2 / median


def ci_gap_rel(median: float, ci_low: float | None, ci_high: float | None) -> float | None:
    """The CI's larger one-sided gap relative to the median: what the timer compares with its
    target (stats.Summary.ci_rel), so the verdict and the timer never disagree."""
    if ci_low is None or ci_high is None or not median or median <= 0:
        return None
    return max(median - ci_low, ci_high - median) / median


def step_ci(row: dict[str, Any]) -> float | None:
    """The one CI figure of a run's step time, everywhere it is printed (tables, `bench`, the
    noisy verdict and its summary, the live view): the larger one-sided gap of the median's 95%
    CI over the median (`ci_gap_rel`), the figure the timer stops on and the verdict judges. A
    median's CI is lopsided: its half-width (`ci_half_rel`) would print ±4.6% for a run whose
    verdict says its CI reaches ±6.8%."""
    med = row.get("step_time_s")
    return ci_gap_rel(med or 0.0, row.get("step_time_ci_low_s"), row.get("step_time_ci_high_s"))


def ci_words(rel: float | None) -> str:
    """How `step_ci` is printed: `±6.8%`; empty when there is no interval."""
    if rel is None or rel != rel or rel in (float("inf"), float("-inf")):
        return ""
    return f"±{rel * 100:.1f}%"


def judge(
    *,
    median: float,
    ci_low: float | None,
    ci_high: float | None,
    q1: float,
    q3: float,
    stop_reason: str,
    target_ci_rel: float,
    load: dict[str, Any] | None,
) -> Verdict:
    """The quality verdict of one timed run, with every reason it is not `good`. Each reason is
    a measured fact beside its threshold; at a threshold the run is still good. Whether the
    timer stopped at its CI target or at a cap does not matter: the final CI does (a run that
    hit max_samples with its CI inside the target is good)."""
    reasons: list[str] = []
    half = ci_half_rel(median, ci_low, ci_high)
    iqr = (q3 - q1) / median if median > 0 else None
    gap = ci_gap_rel(median, ci_low, ci_high)
    if gap is None:
        reasons.append(
            f"no CI (too few samples for ±{target_ci_rel:.0%}; stopped at {stop_reason})"
        )
    elif gap > target_ci_rel:
        reasons.append(
            f"CI reaches {ci_words(gap)} > ±{target_ci_rel:.0%} target (stopped at {stop_reason})"
        )
    load = load or {}
    others = load.get("others_cpu_frac")
    if others is not None and others > OTHERS_CPU_LIMIT:
        reasons.append(
            f"other processes used {others:.0%} of the run's CPUs (> {OTHERS_CPU_LIMIT:.0%})"
        )
    steal = load.get("steal_frac")
    if steal is not None and steal > STEAL_LIMIT:
        reasons.append(
            f"the hypervisor stole {steal:.0%} of the run's CPU time (> {STEAL_LIMIT:.0%})"
        )
    gpu = load.get("gpu_other_processes")
    if gpu:
        pids = ", ".join(str(p["pid"]) for p in gpu[:5])
        reasons.append(f"{len(gpu)} other process(es) on the GPU (pid {pids}; > 0)")
    return Verdict("noisy" if reasons else "good", reasons, half, iqr)


def advice(row: dict[str, Any]) -> list[str]:
    """What would help a noisy run, from what was measured: the cause decides the fix."""
    load = row.get("load") or {}
    others = row.get("others_cpu_frac", load.get("others_cpu_frac"))
    cpus = load.get("cpus")
    threads = row.get("threads")
    tips: list[str] = []
    if others is not None and others > OTHERS_CPU_LIMIT:
        held = round(others * cpus) if cpus else None
        free = max(1, cpus - held) if cpus and held is not None else None
        fewer = []
        if threads is None or threads > 1:  # one thread cannot be fewer
            fewer = [
                f"--threads {free} (other processes held {held} of {cpus} cores)"
                if free is not None and threads is not None and free < threads
                else "fewer threads"
            ]
        ways = [*fewer, "a quieter time (`paradnn run --wait-for-idle`)"]
        tips.append(
            ", ".join(ways) + ", or pinning this run and the other jobs to separate cores "
            "(taskset -c)"
        )
    steal = load.get("steal_frac")
    if steal is not None and steal > STEAL_LIMIT:
        tips.append("a quieter time on this VM's host, or a dedicated machine (CPU time stolen)")
    if load.get("gpu_other_processes"):
        tips.append("the GPU to itself (nvidia-smi names the other processes)")
    target = load.get("target_ci_rel")
    gap = ci_gap_rel(
        row.get("step_time_s") or 0.0, row.get("step_time_ci_low_s"), row.get("step_time_ci_high_s")
    )
    spread = gap is None or (target is not None and gap > target)
    if spread and not tips:  # the samples alone were too spread: more of them narrow the CI
        tips.append("a longer --max-time (more samples narrow the CI)")
    return tips


def warning_line(
    label: str,
    quality: str | None,
    reasons: Sequence[str] | None,
    row: dict[str, Any] | None = None,
) -> str | None:
    """The one-line warning `bench` and `run` print for a noisy run (None for a good one),
    with the fix that fits its cause (`row`: the run's flat record, for the measured facts)."""
    if quality != "noisy":
        return None
    tips = advice(row or {})
    fix = "; ".join(tips) if tips else "re-run it: the cause was not measured"
    return (
        f"noisy: {label}: {'; '.join(reasons or ())}. It is stored, flagged, and left out of "
        f"compare/report; what would help: {fix}."
    )


def _label(row: dict[str, Any]) -> str:
    cfg = row.get("config") or {}
    return " ".join(
        [str(row.get("family")), str(row.get("precision"))] + [f"{k}={v}" for k, v in cfg.items()]
    )


def _cause(reason: str) -> str:
    """The kind of a verdict's reason, for counting them."""
    if reason.startswith(("CI reaches", "no CI")):
        return "CI wider than its target"
    if reason.startswith("other processes used"):
        return "other processes on its CPUs"
    if reason.startswith("the hypervisor stole"):
        return "CPU time stolen"
    return "other processes on the GPU" if "on the GPU" in reason else reason


def noisy_summary(
    rows: Sequence[dict[str, Any]], label: Callable[[dict[str, Any]], str] = _label
) -> str | None:
    """One warning for the noisy attempts among `rows` (a command's flat records, every
    attempt), instead of one per attempt: how many configs kept no good attempt, how many were
    good once measured again, the worst CI (`step_ci`) and whose, the load the noisy attempts
    saw, why they were noisy, and what would help. None when no attempt was noisy; a single
    noisy attempt gets its own `warning_line`."""
    noisy = [r for r in rows if r.get("status") == "ok" and r.get("quality") == "noisy"]
    if not noisy:
        return None
    if len(noisy) == 1 and len(rows) == 1:
        r = noisy[0]
        return warning_line(label(r), r.get("quality"), r.get("quality_reasons"), r)
    key = lambda r: r.get("run_key") or id(r)  # noqa: E731
    good = {key(r) for r in rows if r.get("status") == "ok" and r.get("quality") == "good"}
    configs = {key(r) for r in noisy}
    kept, recovered = len(configs - good), len(configs & good)
    head = f"{kept} of {len(configs)} config{'s' if len(configs) != 1 else ''} kept noisy"
    if recovered:
        head += f", {recovered} good once measured again"
    head += f" ({len(noisy)} noisy attempt{'s' if len(noisy) != 1 else ''})"
    parts = [head]
    cis = [(c, label(r)) for r in noisy if (c := step_ci(r)) is not None]
    if cis:
        worst = max(cis, key=lambda c: (c[0], c[1]))  # a tie goes by name, not by order
        parts.append(f"worst CI {ci_words(worst[0])} ({worst[1]})")
    fracs = [f for r in noisy if (f := r.get("others_cpu_frac")) is not None]
    if fracs:
        lo, hi = min(fracs), max(fracs)
        span = f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}–{hi:.0%}"
        parts.append(f"other processes used {span} of their CPUs")
    else:
        parts.append("the load on their CPUs was not measured")
    causes: dict[str, int] = {}
    for r in noisy:
        for c in {_cause(x) for x in r.get("quality_reasons") or ["rated noisy"]}:
            causes[c] = causes.get(c, 0) + 1
    why = ", ".join(f"{c} ({n})" for c, n in sorted(causes.items(), key=lambda i: (-i[1], i[0])))
    tips: list[str] = []
    for r in noisy:
        tips += [t for t in advice(r) if t not in tips]
    fix = "; ".join(tips[:3]) if tips else "re-run them: the cause was not measured"
    if not kept:
        return (
            f"noisy: {'; '.join(parts)}; why: {why}. Each config has a good attempt now, the "
            "one compare/report use; the noisy ones are stored and flagged."
        )
    return (
        f"noisy: {'; '.join(parts)}; why: {why}. They are stored, flagged, and left out of "
        f"compare/report; what would help: {fix}."
    )


def kept_noisy(rows: Sequence[dict[str, Any]]) -> int:
    """Configs (run keys) among `rows` with a noisy ok attempt and no good one."""
    ok = [r for r in rows if r.get("status") == "ok"]
    good = {r.get("run_key") for r in ok if r.get("quality") == "good"}
    return len({r.get("run_key") for r in ok if r.get("quality") == "noisy"} - good)


def machine_busy(sample: host.LoadSample) -> bool:
    """Busy by the rule that flags a run noisy: other processes took more than OTHERS_CPU_LIMIT
    of this process's CPUs. An unknown load is not called busy (it is said so instead)."""
    frac = sample.others_frac
    return frac is not None and frac > OTHERS_CPU_LIMIT


def busy_line(sample: host.LoadSample) -> str | None:
    """The line `paradnn run` prints before a sweep on a busy machine (None when quiet)."""
    if sample.others_cores is None:
        return f"machine load unknown ({sample.reason}): runs are judged by their own windows"
    if not machine_busy(sample):
        return None
    return (
        f"busy machine: {sample.words()} (measured over {sample.window_s:.1f} s; runs are "
        f"flagged noisy above {OTHERS_CPU_LIMIT:.0%}); --wait-for-idle holds the sweep until "
        "it is quiet"
    )


def wait_for_quiet(
    sample: Callable[[], host.LoadSample],
    max_wait_s: float,
    on_busy: Callable[[host.LoadSample, float], None] = lambda s, waited: None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[host.LoadSample, bool]:
    """Sample the load (each sample takes its own window) until the machine is quiet or
    `max_wait_s` has passed: (the last sample, whether it was quiet). `on_busy(sample, waited)`
    hears every busy sample; Ctrl-C goes on up to the caller, nothing is held."""
    t0 = clock()
    s = sample()
    while machine_busy(s):
        waited = clock() - t0
        if waited >= max_wait_s:
            return s, False
        on_busy(s, waited)
        s = sample()
    return s, True


def quality_part(
    timing: dict[str, Any], load: dict[str, Any], target: float, scope: str | None = None
) -> Quality:
    """The verdict on a timing (`Timing.as_dict()`: one process's, or the slowest rank's) as a
    record part; `scope` says whose cores `load` describes when it is not this process's."""
    v = judge(
        median=timing["median"],
        ci_low=timing["ci_low"],
        ci_high=timing["ci_high"],
        q1=timing["q1"],
        q3=timing["q3"],
        stop_reason=timing["stop_reason"],
        target_ci_rel=target,
        load=load,
    )
    others = load.get("others_cpu_frac")
    shown = {**load, "target_ci_rel": target}  # the target the verdict was judged against
    if scope is not None:
        shown["scope"] = scope
    return Quality(
        quality=v.quality,
        quality_reasons=v.reasons,
        ci_half_rel=v.ci_half_rel,
        iqr_rel=v.iqr_rel,
        others_cpu_frac=others,
        load=shown,
        nulls={} if others is not None else {"others_cpu_frac": load.get("reason", "unknown")},
    )
