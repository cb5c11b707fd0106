"""`paradnn doctor`: what this machine is, and a few seconds of checks that its numbers can be
trusted — the first thing to run on a new machine and the thing a bug report attaches.

Facts are read, never guessed: what cannot be read is None with the reason in `nulls` (dotted
key → reason). They reuse the probes the runs use (`environment.collect`, `platforms.detect`,
`precisions`, the energy sources, the load probe); NVML queries go through the module object
passed in (`pynvml` by default), so tests drive them with a fake.

Checks, each `pass`, `warn`, `fail` or `skip` (could not check: the reason says why, and a skip
never counts as a pass), with what to do — advice that matches the finding and the device
(measure/sanity.py decides on intervals, never on a point):
* `timer`: the device clock against a synchronised wall clock on the same matmul loop;
* `matmul:<precision>`: every native precision's matmul rate, after warm calls, at the largest
  size that fits its share of the budget, against the datasheet peak (a CPU without an entry:
  the derived peak, labelled so): wholly above it blames the peak, wholly below half warns;
* `copy`: the memory copy, at calibrate's array size, against the datasheet bandwidth;
* `stored`: the matmuls and copy against the ceilings `calibrate` stored for this device;
* `power`: one reading, plausible when above zero and not over the enforced limit;
* `others`: other processes on the GPU (NVML) and other processes' CPU time (/proc/stat).
The whole report keeps to its budget, its start-up included (sanity.Budget): each check is
planned from what is left, and a timing stops at its deadline; what no longer fits is skipped.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

import paradnn
from paradnn import host, platforms
from paradnn.config import TimingPolicy
from paradnn.measure import calibrate as cal
from paradnn.measure import precision as prec
from paradnn.measure import quality
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.energy import nvml as nvml_src
from paradnn.measure.energy import rapl
from paradnn.measure.energy.base import Unavailable
from paradnn.measure.sanity import (
    Budget,
    Rate,
    against_peak,
    against_stored,
    show,
    stored_ceiling,
)
from paradnn.measure.timer import measure

SCHEMA_VERSION = 2  # 2: budget_s, startup_s, the `stored` check, matmul/copy `rate` intervals
STATUSES = ("pass", "warn", "fail", "skip")
# Seconds of the whole command, its start-up included; a GPU's CUDA start takes seconds of it.
DEFAULT_BUDGET_S = {"cpu": 5.0, "cuda": 10.0}
TIMER_PASS = 0.05  # timer vs synchronised wall clock: within 5 % passes,
TIMER_WARN = 0.20  # within 20 % warns (a busy host), beyond it fails
POWER_MARGIN = 1.05  # a reading may overshoot the enforced limit by 5 % (transients)
MIN_SAMPLES = 10  # the 95 % CI of a median of 5 samples is their whole range: ±10,000 % on a
MIN_BLOCK_S = 0.01  # busy machine; a sample of ≥ 10 ms makes one preemption a fraction of it
# The matmul sizes a doctor picks from (the largest whose timing fits its share of the budget);
# below MIN_SIZE (calibrate's smallest ceiling) a rate is judged only when it beats its peak.
DOCTOR_SIZES = {"cpu": (512, 1024, 2048), "cuda": (2048, 4096, 8192)}
MIN_SIZE = cal.MIN_CEILING_SIZE
TIMER_N = {"cpu": 512, "cuda": 4096}
TARGET_CI_REL = 0.02  # the matmul and copy timings stop at ±2 % (or their deadline)
# Planning: the least each check needs; `power` and `others` watch a window of WINDOW_S each.
TIMER_MIN_S, MATMUL_MIN_S, COPY_MIN_S, WINDOW_S = 0.3, 0.3, 0.15, 0.3
TIMER_MAX_S, MATMUL_MAX_S, COPY_MAX_S = 1.5, 3.0, 1.0  # a larger budget is not spent for show
RESERVE_S = 2 * WINDOW_S + 0.1  # kept for power and others while the rest is planned
SLACK_S = 0.05  # on top of what a later check is kept: a plan never rests on a float's last bit
NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

Say = Callable[[str], None]


@dataclass(frozen=True)
class Check:
    """One sanity check: its verdict, what it saw, what it was held against, what to do."""

    name: str
    status: str
    message: str
    advice: str | None = None
    measured: dict[str, Any] = field(default_factory=dict)
    reference: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status = {self.status!r}: must be one of {', '.join(STATUSES)}")


# -- verdicts (pure, so their thresholds are tested on numbers) ---------------------------------


def timer_verdict(ratio: float | None) -> str:
    """timer median / synchronised wall median → pass, warn or fail (None: skip)."""
    if ratio is None or ratio <= 0:
        return "skip"
    off = abs(ratio - 1.0)
    return "pass" if off <= TIMER_PASS else "warn" if off <= TIMER_WARN else "fail"


def power_verdict(watts: float | None, limit_w: float | None, max_w: float | None = None) -> str:
    """A power reading is plausible when above zero and at most the limit (with a margin)."""
    if watts is None:
        return "skip"
    if watts <= 0:
        return "fail"
    cap = limit_w if limit_w is not None else max_w
    if cap is not None and watts > cap * POWER_MARGIN:
        return "warn"
    return "pass"


# -- facts ----------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def software(device: torch.device, nulls: dict[str, str]) -> dict[str, Any]:
    """torch and its CUDA stack; JAX by its installed version (not imported: seconds)."""
    out: dict[str, Any] = {
        "paradnn": paradnn.__version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": None,
        "nccl": None,
        "jax": _version("jax"),
        "jaxlib": _version("jaxlib"),
        "nvidia_ml_py": _version("nvidia-ml-py"),
        "numpy": _version("numpy"),
    }
    cpu_build = torch.version.cuda is None
    if cpu_build:
        nulls["software.cuda"] = "a CPU build of torch (torch.version.cuda is None)"
    if torch.backends.cudnn.is_available():
        out["cudnn"] = str(torch.backends.cudnn.version())
    else:
        nulls["software.cudnn"] = "cuDNN is not available to torch"
    if not cpu_build and torch.cuda.is_available():
        try:
            v = torch.cuda.nccl.version()
            out["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as e:  # a build without NCCL
            nulls["software.nccl"] = f"{type(e).__name__}: {e}"[:200]
    else:
        nulls["software.nccl"] = "no CUDA device visible to torch" + (
            " (a CPU build of torch)" if cpu_build else ""
        )
    for key, dist in (("jax", "jax"), ("jaxlib", "jaxlib"), ("nvidia_ml_py", "nvidia-ml-py")):
        if out[key] is None:
            nulls[f"software.{key}"] = f"not installed ({dist})"
    return out


def cpu_facts(env: dict[str, Any], nulls: dict[str, str]) -> dict[str, Any]:
    d = platforms.detect("cpu")
    cpu = d["cpu"]
    for k, v in d["nulls"].items():
        nulls[k] = v
    avail = host.available_memory_bytes()
    if avail is None:
        nulls["cpu.memory_available_bytes"] = "/proc/meminfo has no MemAvailable"
    try:
        load = round(os.getloadavg()[0], 2)
    except OSError:
        load = None
        nulls["cpu.loadavg"] = "os.getloadavg() failed"
    return {
        "model": cpu["model"],
        "vendor": cpu["vendor_id"],
        "physical_cores": cpu["physical_cores"],
        "logical_cpus": cpu["logical_cpus"],
        "usable_cpus": cpu["usable_cpus"],
        "isa": (env.get("isa") or {}).get("cpu_capability"),
        "isa_caps": {k: v for k, v in host.caps().items() if v},
        "flags": cpu["flags"],
        "frequency_hz": cpu["frequency_hz"],
        "frequency_source": cpu["frequency_source"],
        "memory_bytes": host.memory_bytes(),
        "memory_available_bytes": avail,
        "loadavg_1m": load,
        "derived_peaks": d["cpu_peak_derived"],
    }


def _q(nulls: dict[str, str], key: str, fn: Callable[[], Any]) -> Any:
    """One NVML query: its value, or None with the reason."""
    try:
        return fn()
    except Exception as e:
        nulls[key] = f"NVML: {type(e).__name__}: {e}"[:200]
        return None


def nvml_facts(index: int, nv: Any, nulls: dict[str, str]) -> dict[str, Any]:
    """What NVML says about GPU `index` (an initialised NVML module or fake)."""
    p = f"gpus.{index}"
    h = nv.nvmlDeviceGetHandleByIndex(index)
    mem = _q(nulls, f"{p}.memory", lambda: nv.nvmlDeviceGetMemoryInfo(h))
    cc = _q(nulls, f"{p}.capability", lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    pair = _q(nulls, f"{p}.mig_mode", lambda: nv.nvmlDeviceGetMigMode(h))
    ecc = _q(nulls, f"{p}.ecc_mode", lambda: nv.nvmlDeviceGetEccMode(h))
    limit = _q(nulls, f"{p}.power_limit_w", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3)
    draw = _q(nulls, f"{p}.power_draw_w", lambda: nv.nvmlDeviceGetPowerUsage(h) / 1e3)
    out = {
        "index": index,
        "name": host.text(_q(nulls, f"{p}.name", lambda: nv.nvmlDeviceGetName(h))),
        "uuid": host.text(_q(nulls, f"{p}.uuid", lambda: nv.nvmlDeviceGetUUID(h))),
        "capability": None if cc is None else f"{cc[0]}.{cc[1]}",
        "memory_total_bytes": None if mem is None else int(mem.total),
        "memory_free_bytes": None if mem is None else int(mem.free),
        "sm_clock_mhz": _q(nulls, f"{p}.sm_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, 1)),
        "mem_clock_mhz": _q(nulls, f"{p}.mem_clock_mhz", lambda: nv.nvmlDeviceGetClockInfo(h, 2)),
        "sm_clock_max_mhz": _q(
            nulls, f"{p}.sm_clock_max_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, 1)
        ),
        "mem_clock_max_mhz": _q(
            nulls, f"{p}.mem_clock_max_mhz", lambda: nv.nvmlDeviceGetMaxClockInfo(h, 2)
        ),
        "power_limit_w": limit,
        "power_draw_w": draw,
        "temperature_c": _q(nulls, f"{p}.temperature_c", lambda: nv.nvmlDeviceGetTemperature(h, 0)),
        "persistence_mode": _flag(
            _q(nulls, f"{p}.persistence_mode", lambda: nv.nvmlDeviceGetPersistenceMode(h))
        ),
        "mig_mode": None if pair is None else _flag(pair[0]),
        "ecc_mode": None if ecc is None else _flag(ecc[0]),
    }
    return out


def _flag(v: Any) -> bool | None:
    return None if v is None else bool(int(v))


def other_gpu_processes(nv: Any, index: int, me: int | None = None) -> list[dict[str, Any]]:
    """Compute and graphics processes on GPU `index` other than this one."""
    me = os.getpid() if me is None else me
    h = nv.nvmlDeviceGetHandleByIndex(index)
    seen: dict[int, dict[str, Any]] = {}
    for kind, fn in (
        ("compute", "nvmlDeviceGetComputeRunningProcesses"),
        ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
    ):
        reader = getattr(nv, fn, None)
        for p in reader(h) if reader else []:
            pid = int(p.pid)
            if pid != me and pid not in seen:
                mem = getattr(p, "usedGpuMemory", None)
                seen[pid] = {"pid": pid, "kind": kind, "used_memory_bytes": mem}
    return list(seen.values())


@contextlib.contextmanager
def nvml_session(nvml: Any = None):
    """(initialised NVML module or None, reason): never raises."""
    try:
        nv = nvml if nvml is not None else nvml_src.load_nvml()
    except Unavailable as e:
        yield None, f"{e.reason}: {e.detail}"
        return
    try:
        nv.nvmlInit()
    except Exception as e:
        yield None, f"NVML unavailable: {e}"
        return
    try:
        yield nv, None
    finally:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()


def gpu_facts(nvml: Any, nulls: dict[str, str]) -> list[dict[str, Any]]:
    """Every GPU NVML sees (an empty list with the reason when it sees none)."""
    with nvml_session(nvml) as (nv, reason):
        if nv is None:
            nulls["gpus"] = reason or "NVML unavailable"
            return []
        driver = _q(nulls, "software.driver", lambda: host.text(nv.nvmlSystemGetDriverVersion()))
        cuda_drv = _q(nulls, "software.cuda_driver", lambda: nv.nvmlSystemGetCudaDriverVersion())
        count = _q(nulls, "gpus", lambda: nv.nvmlDeviceGetCount()) or 0
        gpus = []
        for i in range(int(count)):
            g = nvml_facts(i, nv, nulls)
            g["driver"] = driver
            g["cuda_driver"] = (
                None if cuda_drv is None else f"{cuda_drv // 1000}.{cuda_drv % 1000 // 10}"
            )
            g["other_processes"] = _q(
                nulls, f"gpus.{i}.other_processes", lambda i=i: other_gpu_processes(nv, i)
            )
            gpus.append(g)
        if not gpus and "gpus" not in nulls:
            nulls["gpus"] = "NVML sees no GPU"
        return gpus


def power_facts(device: torch.device, nvml: Any, powercap: Any = None) -> dict[str, Any]:
    """Whether NVML (for a GPU run) and RAPL power can be read, and the method each would use."""
    out: dict[str, Any] = {}
    if device.type == "cuda":
        try:
            src = nvml_src.open_nvml(device.index or 0, nvml)
            out["nvml"] = {"readable": True, "method": src.method, "reason": None}
            src.close()
        except Unavailable as e:
            out["nvml"] = {"readable": False, "method": None, "reason": f"{e.reason}: {e.detail}"}
    else:
        out["nvml"] = {"readable": False, "method": None, "reason": "a CPU run: no GPU to read"}
    try:
        zones, _ = rapl.discover(powercap or rapl.POWERCAP)
        out["rapl"] = {"readable": True, "zones": [z.id for z in zones], "reason": None}
    except Unavailable as e:
        out["rapl"] = {"readable": False, "zones": [], "reason": f"{e.reason}: {e.detail}"}
    return out


def datasheet(name: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The datasheet entry matching the device name: peaks and bandwidth, labelled."""
    plat = platforms.match(name) if name else None
    if plat is None:
        return None, f"no datasheet entry matches {name!r} (`paradnn platforms` lists them)"
    return {
        "source": "datasheet",
        "platform": plat.id,
        "name": plat.name,
        "peaks_flop_per_s": {p: plat.peak(p) for p in ("fp32", "tf32", "bf16", "fp16")},
        "mem_bandwidth_bytes_per_s": plat.mem_bandwidth,
        "tdp_w": plat.tdp_w,
        "sources": dict(plat.sources),
    }, None


# -- checks ---------------------------------------------------------------------------------


def _wall_per_step(step: Callable[[], None], device: torch.device, k: int, blocks: int) -> float:
    """Median seconds per step of `blocks` blocks of k steps, synchronised on both sides."""
    per = []
    for _ in range(blocks):
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(k):
            step()
        synchronize(device)
        per.append((time.perf_counter() - t0) / k)
    return statistics.median(per)


def timing_policy(slot_s: float) -> TimingPolicy:
    """A short policy that fits `slot_s`: at least MIN_SAMPLES samples of at least MIN_BLOCK_S
    each (fewer samples make the median's CI their whole range; shorter ones let one
    preemption decide it), after a few warm-up steps; ±2 % or the cap, whichever comes first."""
    low = min(0.1, slot_s / 4)
    return TimingPolicy(
        min_samples=MIN_SAMPLES,
        target_ci_rel=0.02,
        min_time_s=low,
        max_time_s=max(low, slot_s / 2),
        warmup_min_steps=3,
        warmup_min_time_s=0.02,
        warmup_max_time_s=max(0.02, slot_s / 5),
        min_block_s=MIN_BLOCK_S,
    )


def timing_cost_s(step_s: float) -> float:
    """Seconds a timing of a `step_s` step takes at least under `timing_policy`: the first
    step, three warm-up steps and MIN_SAMPLES samples of at least MIN_BLOCK_S."""
    return 4 * step_s + MIN_SAMPLES * max(step_s, MIN_BLOCK_S) + 0.05


def pick_size(sizes: tuple[int, ...], n0: int, step0_s: float, slot_s: float) -> int | None:
    """The largest matmul size whose timing fits in 80 % of `slot_s`, its step time
    extrapolated as n³ from `step0_s` at `n0` (small sizes run below the peak, so this
    overestimates: a safe side); None when none fits."""
    fits = [n for n in sizes if timing_cost_s(step0_s * (n / n0) ** 3) <= 0.8 * slot_s]
    return max(fits, default=None)


def timed_until(
    step: Callable[[], None],
    device: torch.device,
    seconds: float,
    work: float,
    size: int | None,
    clock: Any = None,
    now: Callable[[], float] = time.monotonic,
) -> Rate:
    """The rate of `work` per `step`, timed as runs are (blocks of k steps bounded by the
    device clock's marks, no sync inside a block, the median's CI from stats.summarize) but
    within a hard deadline of `seconds`: warm-up steps (3 and 20 ms at least, a fifth of the
    time at most), then blocks of at least MIN_BLOCK_S until MIN_SAMPLES samples meet ±2 %
    or the time is up. Fewer than MIN_SAMPLES samples by then is a failed measurement (their
    CI is their range), said as such."""
    from paradnn.measure.stats import summarize

    clock = clock or clock_for(device)
    t0 = now()
    end = t0 + seconds
    warm: list[float] = []
    with torch.no_grad():
        while len(warm) < 3 or (sum(warm) < 0.02 and now() < t0 + seconds / 5):
            warm.append(_once_s(step, device, now))
        est = max(statistics.median(warm[-3:]), 1e-6)
        k = max(1, math.ceil(MIN_BLOCK_S / est))
        chunk = max(1, int(0.05 / (k * est)))  # about 50 ms of blocks between two reads
        samples: list[float] = []
        while now() < end:
            pairs = []
            while len(pairs) < chunk and (not pairs or now() < end):  # a busy machine's
                a = clock.mark()  # steps can take many times the estimate: the deadline
                for _ in range(k):  # is checked between blocks too
                    step()
                pairs.append((a, clock.mark()))
            samples += [d / k for d in clock.elapsed(pairs)]
            if len(samples) >= MIN_SAMPLES and summarize(samples).ci_rel <= TARGET_CI_REL:
                break
    if len(samples) < MIN_SAMPLES:
        why = (
            f"a failed measurement: {len(samples)} samples of {k} step(s) in the "
            f"{seconds:.1f} s it had (at least {MIN_SAMPLES} make a confidence interval)"
        )
        return Rate(None, None, None, None, len(samples), size, why)
    s = summarize(samples)
    return Rate.from_times(work, s.median, s.ci_low, s.ci_high, s.n, size)


def _once_s(
    step: Callable[[], None], device: torch.device, now: Callable[[], float] = time.perf_counter
) -> float:
    """One step's seconds, synchronised on both sides."""
    synchronize(device)
    t0 = now()
    step()
    synchronize(device)
    return now() - t0


def timer_round_s(step_s: float) -> float:
    """Seconds one round of the timer check takes at least: a timing and 5 wall blocks."""
    return timing_cost_s(step_s) + 5 * max(step_s, 0.02)


def timer_rounds(step_s: float, slot_s: float) -> int:
    """Rounds of the timer check that fit in 80 % of `slot_s`: 3, fewer on a slow or busy
    device, 0 (skip) when not even one does."""
    return max((r for r in (3, 2, 1) if r * timer_round_s(step_s) <= 0.8 * slot_s), default=0)


def check_timer(device: torch.device, slot_s: float) -> Check:
    """paradnn's timer (CUDA events on a GPU) against sync + perf_counter on one matmul loop,
    alternated up to three times so drift hits both; each clock's fastest round is compared.
    The rounds are as many as fit in `slot_s`, from one step's time after a warm call."""
    n = TIMER_N[device.type]
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    c = torch.empty(n, n, device=device)

    def step() -> None:
        torch.mm(a, b, out=c)

    t0 = time.monotonic()
    with torch.no_grad():
        step()  # a warm call: the first carries the kernel's set-up
        step0 = _once_s(step, device)
    left = slot_s - (time.monotonic() - t0)
    rounds = timer_rounds(step0, left)
    if not rounds:
        need = timer_round_s(step0) / 0.8
        return Check("timer", "skip", f"skipped: one round needs about {need:.1f} s and "
                     f"{max(left, 0):.1f} s were left (raise --budget)")  # fmt: skip
    per_round = left / rounds
    policy = timing_policy(0.6 * per_round)
    block_s = min(0.02, per_round / 10)
    ours, wall = [], []
    with torch.no_grad():
        for _ in range(rounds):
            t = measure(step, clock_for(device), policy)
            ours.append(t.summary.median)
            k = max(1, round(block_s / max(t.summary.median, 1e-9)))
            wall.append(_wall_per_step(step, device, k, blocks=5))
            if time.monotonic() - t0 > slot_s:  # a busy machine: what it has is compared
                break
    # the least of the rounds: another process only ever adds time, to either clock
    timer_s, wall_s = min(ours), min(wall)
    ratio = timer_s / wall_s if wall_s > 0 else None
    status = timer_verdict(ratio)
    clock = type(clock_for(device)).__name__
    msg = f"{clock} {timer_s * 1e3:.3f} ms vs synchronised wall clock {wall_s * 1e3:.3f} ms"
    advice = None
    if status != "pass":
        msg += f" ({(ratio or 0) - 1:+.1%})"
        advice = (
            "another process or frequency scaling moved the two apart: re-run on an idle "
            "machine; if it persists, report it with this output"
        )
    return Check(
        "timer",
        status,
        msg,
        advice,
        {"timer_s": timer_s, "wall_s": wall_s, "ratio": ratio, "n": n, "clock": clock}
        | {"rounds": len(ours)},
        {"source": "measured", "what": "torch sync + time.perf_counter around blocks of steps"},
    )


def check_matmul(
    device: torch.device,
    precision: str,
    peak: dict[str, Any] | None,
    slot_s: float,
    no_peak: str | None = None,
) -> tuple[Check, Rate | None]:
    """One matmul rate at `precision` against its peak: a warm call at the smallest size, the
    largest size whose timing fits `slot_s`, a warm call there, then the timing. Below
    MIN_SIZE the rate is judged only when it beats its peak (a small matmul runs below it)."""
    name, t0 = f"matmul:{precision}", time.monotonic()
    sizes = DOCTOR_SIZES[device.type]
    dtype = cal.DTYPES[precision]
    gen = torch.Generator(device=device).manual_seed(0)

    def operands(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
        b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
        return a, b, torch.empty(n, n, device=device, dtype=dtype)

    with prec.tf32_flags(precision), torch.no_grad():
        a, b, c = operands(sizes[0])
        torch.mm(a, b, out=c)  # warm call: kernel choice, JIT, a matrix unit's set-up
        step0 = _once_s(lambda: torch.mm(a, b, out=c), device)
        left = slot_s - (time.monotonic() - t0)
        n = pick_size(sizes, sizes[0], step0, left)
        if n is None:
            need = timing_cost_s(step0) / 0.8
            why = f"n={sizes[0]} alone needs about {need:.1f} s and {max(left, 0):.1f} s were left"
            return Check(name, "skip", f"skipped: {why} (raise --budget)"), None
        if n != sizes[0]:
            del a, b, c
            a, b, c = operands(n)
            torch.mm(a, b, out=c)  # warm call at the size timed
        left = slot_s - (time.monotonic() - t0)
        rate = timed_until(lambda: torch.mm(a, b, out=c), device, left, cal.matmul_flops(n), n)
    verdict = against_peak(rate, peak, device.type)
    status, advice = verdict.status, verdict.advice
    head = f"n={n}: "
    if rate.value is not None:
        head = f"{show(rate.value, 'FLOP/s')} ±{rate.ci_rel:.1%} at n={n}: "
    message = head + verdict.finding
    if verdict.kind == "no_peak" and no_peak:
        message += f" ({no_peak})"
    small = n < MIN_SIZE[device.type]
    if small and verdict.kind != "above" and rate.value is not None:
        status = "skip"
        message += (
            f"; n={n} is below the n={MIN_SIZE[device.type]} a peak needs, too small to judge "
            "(raise --budget)"
        )
        advice = None
    ref_value = (peak or {}).get("value")
    measured = {
        "flop_per_s": rate.value,
        "best_size": n,
        "fraction": rate.value / ref_value if rate.value and ref_value else None,
        "threads": torch.get_num_threads(),
        "rate": rate.as_dict(),
    }
    return Check(name, status, message, advice, measured, peak), rate


def check_copy(
    device: torch.device, reference: dict[str, Any] | None, slot_s: float
) -> tuple[Check, Rate | None]:
    """dst.copy_(src) over `calibrate`'s array size (so it compares with the stored copy
    ceiling), after a warm call that touches every page, against the datasheet bandwidth."""
    t0 = time.monotonic()
    nbytes = cal.DEFAULT_STREAM_BYTES[device.type]
    n = nbytes // 4
    src = torch.ones(n, device=device)
    dst = torch.zeros(n, device=device)
    moved = cal.copy_bytes(n, 4)

    def step() -> None:
        dst.copy_(src)

    step()  # warm call: the first touch of dst's pages
    step0 = _once_s(step, device)
    if timing_cost_s(step0) > 0.8 * slot_s:
        need = timing_cost_s(step0) / 0.8
        return Check("copy", "skip", f"skipped: it needs about {need:.1f} s (raise --budget)"), None
    left = slot_s - (time.monotonic() - t0)
    rate = timed_until(step, device, left, moved, n * 4)
    bw = (reference or {}).get("mem_bandwidth_bytes_per_s")
    peak = None
    if bw:
        peak = {"source": "datasheet", "value": bw, "platform": reference["platform"]}
    verdict = against_peak(rate, peak, device.type, unit="B/s")
    head = "" if rate.value is None else f"{show(rate.value, 'B/s')} ±{rate.ci_rel:.1%}: "
    message = head + verdict.finding
    if peak is None and rate.value is not None:
        message = head + "no datasheet bandwidth for this device to hold it against"
    measured = {
        "bytes_per_s": rate.value,
        "fraction": rate.value / bw if rate.value and bw else None,
        "bytes_per_array": n * 4,
        "rate": rate.as_dict(),
    }
    return Check("copy", verdict.status, message, verdict.advice, measured, peak), rate


def check_stored(
    rates: dict[str, Rate | None],
    stored: list[dict[str, Any]] | None,
    device_name: str | None,
    threads: int | None,
    where: str | None,
) -> Check:
    """What the doctor measured against the ceilings `calibrate` stored for this device (the
    ones runs' utilization divides by): each agrees within both intervals, or is above (the
    stored ceiling is no ceiling) or below (this device is slower now; same size only)."""
    if stored is None:
        return Check("stored", "skip", f"no stored ceilings to compare: {where}")
    found: dict[str, Any] = {}
    parts, calls = [], []
    for key, rate in rates.items():
        if rate is None:
            continue
        kind, _, precision = key.partition(":")
        unit = "FLOP/s" if kind == "matmul" else "B/s"
        ceiling = stored_ceiling(stored, device_name, kind, precision or None, rate.size)
        call, words = against_stored(rate, ceiling, unit, threads)
        calls.append(call)
        parts.append(f"{key} {words}")
        found[key] = {
            "verdict": call,
            "now": rate.as_dict(),
            "stored": None if ceiling is None else asdict(ceiling),
        }
    db = where or "the database"
    if not calls or all(c == "unknown" for c in calls):
        why = "; ".join(parts) or "nothing was measured to compare"
        return Check("stored", "skip", f"{db}: {why}", None, found)
    advice = None
    if "above" in calls:
        advice = (
            "a stored ceiling is below what this device reaches now, so runs' utilization "
            f"against it reads too high: `paradnn calibrate --force --db {db}` measures it again"
        )
    elif "below" in calls:
        advice = (
            "this device is slower now than when it was calibrated: load, threads or clocks "
            f"(see `others`); if it stays so on an idle machine, `paradnn calibrate --force "
            f"--db {db}` measures the ceilings again"
        )
    status = "warn" if advice else "pass"
    return Check(
        "stored",
        status,
        f"{db}: " + "; ".join(parts),
        advice,
        found,
        {"source": "measured", "what": "paradnn calibrate's ceilings", "db": db},
    )


def peak_reference(
    p: str, reference: dict[str, Any] | None, derived: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    """The peak a matmul of precision `p` is held against: the datasheet's, else the derived
    CPU peak (labelled so, with its derivation), else None."""
    if reference and reference["peaks_flop_per_s"].get(p):
        return {
            "source": "datasheet",
            "value": reference["peaks_flop_per_s"][p],
            "platform": reference["platform"],
        }
    d = derived.get(p) or {}
    if d.get("value"):
        return {"source": "derived", "value": d["value"], "derivation": d.get("derivation")}
    return None


def check_power(
    device: torch.device,
    nvml: Any = None,
    *,
    powercap: Any = None,
    read: Callable[..., str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    window_s: float = 0.3,
) -> Check:
    """One power reading of the run's device: NVML on a GPU, RAPL packages on a CPU."""
    if device.type == "cuda":
        try:
            src = nvml_src.open_nvml(device.index or 0, nvml, clock=clock, sleep=sleep)
        except Unavailable as e:
            return Check("power", "skip", f"NVML power unreadable: {e.reason}: {e.detail}")
        try:
            watts = src.power_w()
            limit = src.info().get("power_limit_w")
        finally:
            src.close()
        status = power_verdict(watts, limit)
        msg = f"{watts} W ({src.power_field} power, {src.method})"
        if limit is not None:
            msg += f"; enforced limit {limit:g} W"
        advice = {
            "fail": "NVML reads 0 W: energy figures would be wrong; check the driver and "
            "nvidia-ml-py versions",
            "warn": "power above the enforced limit: a transient, or a sensor to distrust",
            "skip": "NVML gave no power reading",
        }.get(status)
        return Check(
            "power",
            status,
            msg,
            advice,
            {"power_w": watts, "method": src.method},
            {"source": "nvml", "power_limit_w": limit},
        )
    kw: dict[str, Any] = {} if read is None else {"read": read}
    try:
        srcs, _ = rapl.open_rapl(powercap or rapl.POWERCAP, clock=clock, **kw)
    except Unavailable as e:
        return Check(
            "power", "skip", f"RAPL unreadable: {e.reason}", e.detail, {}, {"source": "rapl"}
        )
    pkgs = [s for s in srcs if s.kind == "cpu"]
    first = [s.read() for s in pkgs]
    sleep(window_s)
    second = [s.read() for s in pkgs]
    joules = 0.0
    for a, b in zip(first, second, strict=True):
        d = b.counter_j - a.counter_j
        if d < 0 and a.range_j:
            d += a.range_j  # one wrap
        joules += d
    dt = second[0].t - first[0].t if pkgs else 0.0
    watts = joules / dt if dt > 0 else None
    status = power_verdict(watts, None, rapl.RAPL_MAX_POWER_W * len(pkgs))
    msg = "no time passed between reads" if watts is None else f"{watts:.1f} W over {dt:.2f} s"
    advice = None
    if status == "fail":
        advice = "RAPL counters did not move: energy figures would be wrong"
    return Check(
        "power",
        status,
        f"CPU packages {msg} ({', '.join(s.id for s in pkgs)})",
        advice,
        {"power_w": watts, "method": "rapl_powercap"},
        {"source": "rapl", "max_power_w": rapl.RAPL_MAX_POWER_W * len(pkgs)},
    )


def check_others(
    device: torch.device,
    gpu_procs: list[dict[str, Any]] | None,
    probe: quality.LoadProbe | None = None,
    sleep: Callable[[float], None] = time.sleep,
    window_s: float = 0.3,
) -> Check:
    """Other processes: on the GPU (NVML), and their share of this process's CPUs."""
    probe = probe or quality.LoadProbe()
    probe.begin()
    sleep(window_s)
    probe.end()
    frac = probe.result.get("others_cpu_frac")
    parts, status = [], "pass"
    if frac is None:
        parts.append(f"other processes' CPU time unknown ({probe.result.get('reason')})")
        status = "skip"
    else:
        parts.append(f"other processes used {frac:.0%} of this process's {len(probe.cpus)} CPUs")
        if frac > quality.OTHERS_CPU_LIMIT:
            status = "warn"
    steal = probe.result.get("steal_frac")
    if steal is not None and steal > quality.STEAL_LIMIT:
        parts.append(f"the hypervisor stole {steal:.0%} of their time")
        status = "warn"
    if device.type == "cuda":
        if gpu_procs is None:
            parts.append("GPU processes unknown (NVML)")
        elif gpu_procs:
            pids = ", ".join(str(p["pid"]) for p in gpu_procs[:5])
            parts.append(f"{len(gpu_procs)} other process(es) on the GPU (pid {pids})")
            status = "warn"
        else:
            parts.append("no other process on the GPU")
    advice = (
        "measurements beside other work are flagged noisy: stop the other processes or wait"
        if status == "warn"
        else None
    )
    measured = {"others_cpu_frac": frac, "gpu_other_processes": gpu_procs, **probe.result}
    return Check(
        "others",
        status,
        "; ".join(parts),
        advice,
        measured,
        {"source": "measured", "others_cpu_limit": quality.OTHERS_CPU_LIMIT},
    )


# -- the whole report -----------------------------------------------------------------------


def doctor(
    device: str = "auto",
    *,
    budget_s: float | None = None,
    checks: bool = True,
    nvml: Any = None,
    progress: Say | None = None,
    stored: list[dict[str, Any]] | None = None,
    stored_where: str | None = None,
    started: float | None = None,
) -> dict[str, Any]:
    """Facts about this machine, then (with `checks`) the sanity checks, all within `budget_s`
    seconds (default DEFAULT_BUDGET_S for the device type) counted from `started` (a
    time.monotonic() value: the command's own start, which the CLI knows; default now).
    `stored`: the `ceilings` rows to compare with (None: `stored_where` says why there are
    none). Returns the report `paradnn doctor --json` prints (stable keys)."""
    from paradnn.measure.environment import prepare

    say = progress or (lambda msg: None)
    now = time.monotonic()
    started = now if started is None else min(started, now)
    startup_s = now - started
    saved = torch.get_num_threads()
    try:
        dev, env = prepare(device, None)
    finally:
        torch.set_num_threads(saved)
    budget = Budget(budget_s or DEFAULT_BUDGET_S[dev.type], started, startup_s=startup_s)
    nulls: dict[str, str] = {}
    gpus = gpu_facts(nvml, nulls)
    name = env.get("gpu_name") if dev.type == "cuda" else env.get("cpu_model")
    sheet, why = datasheet(name)
    if sheet is None:
        nulls["datasheet"] = why or "no datasheet entry"
    cpu = cpu_facts(env, nulls)
    budget.load = (cpu.get("loadavg_1m"), cpu.get("usable_cpus"))
    if dev.type == "cuda":
        with contextlib.suppress(Exception):
            free, _ = torch.cuda.mem_get_info(dev)
            for g in gpus:
                if g.get("uuid") and g["uuid"] == env.get("device_uuid"):
                    g["memory_free_bytes_torch"] = int(free)
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "device": str(dev),
        "device_type": dev.type,
        "device_name": name,
        "software": {**software(dev, nulls), "driver": env.get("driver")},
        "cpu": cpu,
        "precisions": {
            "native": env["native_precisions"],
            "not_native": env["precision_reasons"],
        },
        "gpus": gpus,
        "power": power_facts(dev, nvml),
        "datasheet": sheet,
        "checks": [],
        "summary": None,
        "nulls": nulls,
    }
    if report["software"]["driver"] is None:
        nulls.setdefault("software.driver", (env.get("nulls") or {}).get("driver", "unknown"))
    if checks:
        found = run_checks(
            dev, env, sheet, cpu, gpus, nvml, budget, say, stored, stored_where or "no --db"
        )
        report["checks"] = [asdict(c) for c in found]
        counts = {s: sum(c["status"] == s for c in report["checks"]) for s in STATUSES}
        report["summary"] = counts
    else:
        nulls["checks"] = "not run (--no-checks)"
        nulls["summary"] = "not run (--no-checks)"
    report["budget_s"] = budget.total_s
    report["startup_s"] = round(startup_s, 2)
    report["seconds"] = round(budget.spent(), 2)
    return report


def run_checks(
    dev: torch.device,
    env: dict[str, Any],
    sheet: dict[str, Any] | None,
    cpu: dict[str, Any],
    gpus: list[dict[str, Any]],
    nvml: Any,
    budget: Budget | float,
    say: Say,
    stored: list[dict[str, Any]] | None = None,
    stored_where: str = "no --db",
) -> list[Check]:
    """The checks in order, each planned from what is left of `budget` (a check that would
    not fit is a `skip` that says so); one that raises is a `fail` carrying the error, and
    the others still run. The matmuls and copy run on the environment's threads (calibrate's
    default), so they compare with the stored ceilings."""
    if not isinstance(budget, Budget):
        budget = Budget(float(budget), time.monotonic())
    out: list[Check] = []
    native = list(env["native_precisions"])
    derived = cpu["derived_peaks"]
    rates: dict[str, Rate | None] = {}
    saved = torch.get_num_threads()
    threads = int(env.get("threads") or saved)

    def guarded(name: str, job: Callable[[], Check]) -> None:
        say(f"doctor: {name} ({max(budget.left(), 0):.1f} s of the budget left)")
        try:
            out.append(job())
        except Exception as e:
            msg = f"{type(e).__name__}: {e}"[:300]
            out.append(Check(name, "fail", f"the check itself failed: {msg}", "report it"))
        finally:
            torch.set_num_threads(saved)

    def timer() -> Check:
        later = len(native) * MATMUL_MIN_S + COPY_MIN_S + RESERVE_S + SLACK_S
        fair = min(max(0.15 * budget.total_s, TIMER_MIN_S), TIMER_MAX_S)
        slot = min(fair, budget.left() - later)
        if slot < TIMER_MIN_S:
            return Check("timer", "skip", budget.skip_words(TIMER_MIN_S))
        return check_timer(dev, slot)

    def matmul(p: str, i: int) -> Check:
        rates[f"matmul:{p}"] = None
        slot = min(MATMUL_MAX_S, budget.share(len(native) - i, COPY_MIN_S + RESERVE_S + SLACK_S))
        if slot < MATMUL_MIN_S:
            return Check(f"matmul:{p}", "skip", budget.skip_words(MATMUL_MIN_S))
        torch.set_num_threads(threads)
        why = (derived.get(p) or {}).get("reason") or "no datasheet entry and no derived peak"
        if sheet:
            why = f"the datasheet of {sheet['platform']} gives no {p} peak"
        check, rate = check_matmul(dev, p, peak_reference(p, sheet, derived), slot, why)
        rates[f"matmul:{p}"] = rate
        return check

    def copy() -> Check:
        rates["copy"] = None
        slot = min(COPY_MAX_S, budget.left() - RESERVE_S - SLACK_S)
        if slot < COPY_MIN_S:
            return Check("copy", "skip", budget.skip_words(COPY_MIN_S))
        torch.set_num_threads(threads)
        check, rates["copy"] = check_copy(dev, sheet, slot)
        return check

    def power() -> Check:
        window = min(WINDOW_S, (budget.left() - 0.05) / 2)
        if window < 0.05:
            return Check("power", "skip", budget.skip_words(0.1))
        return check_power(dev, nvml, window_s=window)

    def others() -> Check:
        window = min(WINDOW_S, budget.left() - 0.02)
        if window < 0.05:
            return Check("others", "skip", budget.skip_words(0.1))
        procs = _gpu_procs(gpus, dev, env.get("device_uuid"))
        return check_others(dev, procs, window_s=window)

    guarded("timer", timer)
    for i, p in enumerate(native):
        guarded(f"matmul:{p}", lambda p=p, i=i: matmul(p, i))
    guarded("copy", copy)
    guarded(
        "stored",
        lambda: check_stored(rates, stored, env.get("gpu_name") or env.get("cpu_model"),
                             threads, stored_where),
    )  # fmt: skip
    guarded("power", power)
    guarded("others", others)
    return out


def _gpu_procs(
    gpus: list[dict[str, Any]], dev: torch.device, uuid: str | None = None
) -> list[dict[str, Any]] | None:
    """The other processes on the run's GPU: matched by UUID (CUDA_VISIBLE_DEVICES renumbers
    devices), else by index."""
    match = [g for g in gpus if uuid and g.get("uuid") == uuid] or [
        g for g in gpus if g.get("index") == (dev.index or 0)
    ]
    return match[0].get("other_processes") if match else None
