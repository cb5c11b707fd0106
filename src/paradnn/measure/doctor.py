"""`paradnn doctor`: what this machine is, and a few seconds of checks that its numbers can be
trusted — the first thing to run on a new machine and the thing a bug report attaches.

Facts are read, never guessed: what cannot be read is None with the reason in `nulls` (dotted
key → reason). They reuse the probes the runs use (`environment.collect`, `platforms.detect`,
`precisions`, the energy sources, the load probe); NVML queries go through the module object
passed in (`pynvml` by default), so tests drive them with a fake.

Checks, each `pass`, `warn`, `fail` or `skip` (could not check: the reason says why, and a skip
never counts as a pass), with what to do:
* `timer`: the device clock against a synchronised wall clock on the same matmul loop;
* `matmul:<precision>`: every native precision's large-matmul rate against the datasheet peak
  (a CPU without an entry: the derived peak, labelled so); below 50 % warns;
* `copy`: the memory copy against the datasheet bandwidth;
* `power`: one reading, plausible when above zero and not over the enforced limit;
* `others`: other processes on the GPU (NVML) and other processes' CPU time (/proc/stat).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
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
from paradnn.config import RunOptions, TimingPolicy
from paradnn.measure import calibrate as cal
from paradnn.measure import quality
from paradnn.measure.device import clock_for, synchronize
from paradnn.measure.energy import nvml as nvml_src
from paradnn.measure.energy import rapl
from paradnn.measure.energy.base import Unavailable
from paradnn.measure.timer import measure

SCHEMA_VERSION = 1
STATUSES = ("pass", "warn", "fail", "skip")
DEFAULT_BUDGET_S = 5.0
LOW_FRACTION = 0.5  # a matmul or copy below half its datasheet figure warns
TIMER_PASS = 0.05  # timer vs synchronised wall clock: within 5 % passes,
TIMER_WARN = 0.20  # within 20 % warns (a busy host), beyond it fails
POWER_MARGIN = 1.05  # a reading may overshoot the enforced limit by 5 % (transients)
# Short, not converged: a doctor matmul is a sanity check, not a ceiling (`calibrate` is).
DOCTOR_POLICY = TimingPolicy(
    min_samples=5,
    min_time_s=0.1,
    max_time_s=0.6,
    warmup_min_steps=2,
    warmup_min_time_s=0.05,
    warmup_max_time_s=0.5,
    target_ci_rel=0.05,
)
DOCTOR_SIZES = {"cpu": (256, 512, 1024), "cuda": (2048, 4096, 8192)}
STREAM_BYTES = {"cpu": 32 << 20, "cuda": 256 << 20}
TIMER_N = {"cpu": 256, "cuda": 4096}
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


def fraction_verdict(measured: float | None, reference: float | None) -> tuple[str, float | None]:
    """(status, measured/reference): below LOW_FRACTION warns; no reference or no measurement
    skips (a check with nothing to hold the figure against never passes)."""
    if measured is None or reference is None or reference <= 0:
        return "skip", None
    frac = measured / reference
    return ("pass" if frac >= LOW_FRACTION else "warn"), frac


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


def _meminfo_available(path: str = "/proc/meminfo") -> int | None:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_facts(env: dict[str, Any], nulls: dict[str, str]) -> dict[str, Any]:
    d = platforms.detect("cpu")
    cpu = d["cpu"]
    for k, v in d["nulls"].items():
        nulls[k] = v
    avail = _meminfo_available()
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


def check_timer(device: torch.device, budget_s: float) -> Check:
    """paradnn's timer (CUDA events on a GPU) against sync + perf_counter on one matmul loop,
    alternated three times so drift hits both; each clock's fastest round is compared."""
    n = TIMER_N[device.type]
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    c = torch.empty(n, n, device=device)

    def step() -> None:
        torch.mm(a, b, out=c)

    per_round = max(budget_s / 3, 0.05)
    policy = TimingPolicy(
        min_samples=5,
        min_time_s=per_round / 3,
        max_time_s=per_round / 2,
        warmup_min_steps=2,
        warmup_min_time_s=0.02,
        warmup_max_time_s=per_round / 4,
    )
    ours, wall = [], []
    with torch.no_grad():
        for _ in range(3):
            t = measure(step, clock_for(device), policy)
            ours.append(t.summary.median)
            k = max(1, round(0.02 / max(t.summary.median, 1e-9)))
            wall.append(_wall_per_step(step, device, k, blocks=5))
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
        {"timer_s": timer_s, "wall_s": wall_s, "ratio": ratio, "n": n, "clock": clock},
        {"source": "measured", "what": "torch sync + time.perf_counter around blocks of steps"},
    )


def check_ceilings(
    device: torch.device,
    native: list[str],
    reference: dict[str, Any] | None,
    derived: dict[str, dict[str, Any]],
    budget_s: float,
    say: Say,
) -> list[Check]:
    """A matmul at each native precision and the memory copy, through `calibrate`, against the
    datasheet (a CPU without an entry: its derived peak, labelled)."""
    per = max(1.0, budget_s / max(len(native), 1))
    rows = cal.calibrate(
        str(device),
        native,
        sizes=DOCTOR_SIZES[device.type],
        policy=DOCTOR_POLICY,
        stream_bytes=STREAM_BYTES[device.type],
        kinds=("matmul", "copy"),
        budget_s=per,
        progress=say,
    )
    checks = []
    by = {(r["kind"], r["precision"]): r for r in rows}
    skipped = next(iter(rows), {}).get("detail", {}).get("skipped", {})
    for p in native:
        row = by.get(("matmul", p))
        if row is None:
            why = skipped.get(p, "not measured")
            checks.append(Check(f"matmul:{p}", "fail", f"no matmul could be measured: {why}"))
            continue
        value, detail = row["value"], row["detail"]
        ref = _peak_reference(p, reference, derived)
        status, frac = fraction_verdict(value, ref and ref["value"])
        size = detail.get("best_size")
        msg = f"{value / 1e12:.3g} TFLOP/s at n={size}"
        advice = None
        if ref is None:
            msg += f"; no peak to compare with ({_no_peak_reason(p, reference, derived)})"
        else:
            msg += f" = {frac:.0%} of the {ref['source']} peak {ref['value'] / 1e12:.3g} TFLOP/s"
        if detail.get("too_small"):
            status = "warn" if status == "pass" else status
            msg += f"; {detail['too_small']}"
        if status == "warn":
            advice = (
                "below half the peak: check clocks (locked low? `nvidia-smi -q -d CLOCK`), "
                "thermals and power capping, and another process on the device"
            )
        checks.append(
            Check(
                f"matmul:{p}",
                status,
                msg,
                advice,
                {"flop_per_s": value, "best_size": size, "fraction": frac},
                ref,
            )
        )
    copy = by.get(("copy", None))
    if copy is not None:
        bw = reference["mem_bandwidth_bytes_per_s"] if reference else None
        status, frac = fraction_verdict(copy["value"], bw)
        msg = f"{copy['value'] / 1e9:.1f} GB/s"
        ref = None
        if bw is None:
            msg += "; no datasheet bandwidth for this device"
        else:
            msg += f" = {frac:.0%} of the datasheet {bw / 1e9:.0f} GB/s"
            ref = {"source": "datasheet", "value": bw, "platform": reference["platform"]}
        advice = (
            "below half the datasheet bandwidth: memory clocks, another process, or (CPU) "
            "threads spread over sockets"
            if status == "warn"
            else None
        )
        checks.append(
            Check(
                "copy", status, msg, advice, {"bytes_per_s": copy["value"], "fraction": frac}, ref
            )
        )
    return checks


def _peak_reference(
    p: str, reference: dict[str, Any] | None, derived: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    if reference and reference["peaks_flop_per_s"].get(p):
        return {
            "source": "datasheet",
            "value": reference["peaks_flop_per_s"][p],
            "platform": reference["platform"],
        }
    d = derived.get(p) or {}
    if d.get("value"):
        return {"source": "derived", "value": d["value"], "derivation": d["derivation"]}
    return None


def _no_peak_reason(
    p: str, reference: dict[str, Any] | None, derived: dict[str, dict[str, Any]]
) -> str:
    if reference:
        return f"the datasheet of {reference['platform']} gives no {p} peak"
    return (derived.get(p) or {}).get("reason") or "no datasheet entry and no derived peak"


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
    budget_s: float = DEFAULT_BUDGET_S,
    checks: bool = True,
    nvml: Any = None,
    progress: Say | None = None,
) -> dict[str, Any]:
    """Facts about this machine, then (with `checks`) the sanity checks in about `budget_s`
    seconds. Returns the report `paradnn doctor --json` prints (stable keys)."""
    from paradnn.measure.environment import prepare

    say = progress or (lambda msg: None)
    t0 = time.monotonic()
    saved = torch.get_num_threads()
    try:
        dev, env = prepare(RunOptions(device=device))
    finally:
        torch.set_num_threads(saved)
    nulls: dict[str, str] = {}
    gpus = gpu_facts(nvml, nulls)
    name = env.get("gpu_name") if dev.type == "cuda" else env.get("cpu_model")
    sheet, why = datasheet(name)
    if sheet is None:
        nulls["datasheet"] = why or "no datasheet entry"
    cpu = cpu_facts(env, nulls)
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
        report["checks"] = [
            asdict(c) for c in run_checks(dev, env, sheet, cpu, gpus, nvml, budget_s, say)
        ]
        counts = {s: sum(c["status"] == s for c in report["checks"]) for s in STATUSES}
        report["summary"] = counts
    else:
        nulls["checks"] = "not run (--no-checks)"
        nulls["summary"] = "not run (--no-checks)"
    report["seconds"] = round(time.monotonic() - t0, 2)
    return report


def run_checks(
    dev: torch.device,
    env: dict[str, Any],
    sheet: dict[str, Any] | None,
    cpu: dict[str, Any],
    gpus: list[dict[str, Any]],
    nvml: Any,
    budget_s: float,
    say: Say,
) -> list[Check]:
    """The checks in order, each in its share of the budget; one that raises is a `fail`
    carrying the error, and the others still run."""
    out: list[Check] = []
    native = list(env["native_precisions"])
    jobs: list[tuple[str, Callable[[], Check | list[Check]]]] = [
        ("timer", lambda: check_timer(dev, 0.15 * budget_s)),
        (
            "ceilings",
            lambda: check_ceilings(dev, native, sheet, cpu["derived_peaks"], 0.6 * budget_s, say),
        ),
        ("power", lambda: check_power(dev, nvml)),
        ("others", lambda: check_others(dev, _gpu_procs(gpus, dev, env.get("device_uuid")))),
    ]
    saved = torch.get_num_threads()
    for name, job in jobs:
        say(f"doctor: {name}")
        try:
            got = job()
            out += got if isinstance(got, list) else [got]
        except Exception as e:
            msg = f"{type(e).__name__}: {e}"[:300]
            out.append(Check(name, "fail", f"the check itself failed: {msg}", "report it"))
        finally:
            torch.set_num_threads(saved)
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
