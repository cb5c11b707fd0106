"""The one local-host prober, torch-free: the CPU (cpuinfo, ISA flags and the caps a user set
on them), the cores this process may use, the load other processes put on them and the cgroup's
CPU quota (hence how many threads a run can use without fighting them), its memory, and an NVML
session for the GPUs.

Two environment variables let anyone see what an older CPU sees on a newer one:
* ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``) and ``ATEN_CPU_CAPABILITY`` are oneDNN's and
  ATen's own caps: the kernels stop using instructions above them, so paradnn does too;
* ``PARADNN_CPU_FLAGS`` replaces the flags paradnn reads from /proc/cpuinfo (comma or space
  separated, e.g. ``avx2,fma``), for tests and for rehearsing a user's machine.
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CPUINFO = "/proc/cpuinfo"
FLAGS_ENV = "PARADNN_CPU_FLAGS"
ONEDNN_ENVS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")
ATEN_ENV = "ATEN_CPU_CAPABILITY"

# oneDNN's ISA ladder (x64), lowest first: a cap admits its own level and every one below it.
ONEDNN_ISAS = (
    "SSE41",
    "AVX",
    "AVX2",
    "AVX2_VNNI",
    "AVX2_VNNI_2",
    "AVX512_CORE",
    "AVX512_CORE_VNNI",
    "AVX512_CORE_BF16",
    "AVX512_CORE_FP16",
    "AVX10_1_512",
    "AVX512_CORE_AMX",
    "AVX10_1_512_AMX",
    "AVX512_CORE_AMX_FP16",
    "AVX10_1_512_AMX_FP16",
    "AVX10_2_512",
    "AVX10_2_512_AMX_2",
    "ALL",
)
# ATen's dispatch levels on x86, lowest first.
ATEN_LEVELS = ("DEFAULT", "AVX2", "AVX512")


def _read_flags(path: str) -> frozenset[str]:
    """The first CPU's flags (x86 `flags`, Arm `Features`); empty when unreadable."""
    try:
        with open(path) as f:
            for line in f:
                key = line.split(":", 1)[0].strip()
                if key in ("flags", "Features"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_flags(path: str = CPUINFO) -> frozenset[str]:
    """The CPU flags paradnn decides with: PARADNN_CPU_FLAGS when set, else /proc/cpuinfo.
    A file named explicitly (another machine's cpuinfo, a test's) is read as it is."""
    override = os.environ.get(FLAGS_ENV)
    if override is not None and str(path) == CPUINFO:
        return frozenset(f for f in re.split(r"[\s,]+", override.strip().lower()) if f)
    return _read_flags(path)


def onednn_cap() -> str | None:
    """oneDNN's ISA cap from the environment (upper-case), or None when uncapped."""
    for var in ONEDNN_ENVS:
        value = os.environ.get(var, "").strip().upper()
        if value:
            return value
    return None


def aten_cap() -> str | None:
    value = os.environ.get(ATEN_ENV, "").strip().upper()
    return value or None


def onednn_allows(level: str) -> bool:
    """Whether oneDNN's cap (if any) admits `level`; an unknown cap name admits everything,
    as oneDNN ignores values it does not know."""
    cap = onednn_cap()
    if cap is None or cap not in ONEDNN_ISAS:
        return True
    return ONEDNN_ISAS.index(level) <= ONEDNN_ISAS.index(cap)


def aten_allows(level: str) -> bool:
    cap = aten_cap()
    if cap is None or cap not in ATEN_LEVELS:
        return True
    return ATEN_LEVELS.index(level) <= ATEN_LEVELS.index(cap)


def caps() -> dict[str, str | None]:
    """The ISA caps in force (recorded with every run: they change what a CPU computes with)."""
    return {
        "onednn_max_cpu_isa": onednn_cap(),
        "aten_cpu_capability": aten_cap(),
        "cpu_flags_override": os.environ.get(FLAGS_ENV),
    }


def read_cpuinfo(path: str | Path = CPUINFO) -> list[dict[str, str]]:
    """/proc/cpuinfo as one dict per logical CPU (empty list when unreadable)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return []
    blocks = []
    for chunk in re.split(r"\n\s*\n", text):
        entry = {}
        for line in chunk.splitlines():
            if ":" in line:
                k, v = line.split(":", 1)
                entry[k.strip()] = v.strip()
        if entry:
            blocks.append(entry)
    return blocks


def cpu_model(path: str | Path = CPUINFO) -> str:
    """The CPU's model name (else what the platform module says)."""
    for block in read_cpuinfo(path)[:1]:
        if block.get("model name"):
            return block["model name"]
    return platform.processor() or platform.machine()


def is_vm_guest(path: str | Path = CPUINFO) -> bool:
    """The CPU's `hypervisor` flag: set by every mainstream hypervisor for its guests."""
    return "hypervisor" in _read_flags(str(path))


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


PROC = "/proc"
CGROUP = "/sys/fs/cgroup"
# A process counts as "using the cores" when it took at least this share of one core in the
# window (a daemon waking up now and then stays far below; a busy loop is 1.0).
BUSY_PROCESS_CORES = 0.1


def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 100.0


def read_text(path: str | Path) -> str | None:
    """A small kernel file's text, or None when it cannot be read."""
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def cpu_stat(proc: str = PROC) -> dict[int, tuple[float, float]] | None:
    """Busy and stolen seconds of each CPU since boot, from <proc>/stat, or None when unreadable."""
    return cpu_stat_file(f"{proc}/stat")


def cpu_stat_file(path: str | Path) -> dict[int, tuple[float, float]] | None:
    """(busy, steal) seconds of each CPU in a /proc/stat file; busy is user + nice + system +
    irq + softirq (guest time is already inside user, so it is not added again)."""
    text = read_text(path)
    if text is None:
        return None
    hz = _ticks_per_s()
    out: dict[int, tuple[float, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu") or not parts[0][3:].isdigit():
            continue
        try:
            v = [int(x) for x in parts[1:]] + [0] * 10
        except ValueError:
            return None
        out[int(parts[0][3:])] = ((v[0] + v[1] + v[2] + v[5] + v[6]) / hz, v[7] / hz)
    return out or None


def _cpu_list(text: str) -> set[int]:
    """A kernel CPU list (`0-3,8`) as a set."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def process_times(proc: str = PROC) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system, all threads) and command name of every process."""
    hz = _ticks_per_s()
    out: dict[int, tuple[str, float]] = {}
    try:
        pids = [int(n) for n in os.listdir(proc) if n.isdigit()]
    except OSError:
        return out
    for pid in pids:
        text = read_text(f"{proc}/{pid}/stat")
        if not text or ")" not in text:
            continue
        name = text[text.find("(") + 1 : text.rfind(")")]
        fields = text[text.rfind(")") + 2 :].split()
        try:  # fields after the name start at field 3 (state); utime, stime are fields 14, 15
            out[pid] = (name, (int(fields[11]) + int(fields[12])) / hz)
        except (IndexError, ValueError):
            continue
    return out


def _allowed_cpus(pid: int, proc: str) -> set[int] | None:
    text = read_text(f"{proc}/{pid}/status") or ""
    for line in text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return _cpu_list(line.split(":", 1)[1])
    return None


def cpu_quota(proc: str = PROC, cgroup: str = CGROUP) -> float | None:
    """The cgroup's CPU quota in cores (v2 `cpu.max`, v1 `cpu.cfs_quota_us / cfs_period_us`),
    the smallest along this process's cgroup path; None when there is none."""
    quotas: list[float] = []
    for line in (read_text(f"{proc}/self/cgroup") or "0::/\n").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        names = set(controllers.split(","))
        if controllers == "":  # v2 unified hierarchy
            dirs, files = [cgroup, f"{cgroup}/unified"], ("cpu.max",)
        elif "cpu" in names:
            dirs = [f"{cgroup}/{controllers}", f"{cgroup}/cpu", f"{cgroup}/cpu,cpuacct"]
            files = ("cpu.cfs_quota_us", "cpu.cfs_period_us")
        else:
            continue
        steps = [p for p in path.strip().split("/") if p]
        for base in dict.fromkeys(dirs):
            for depth in range(len(steps) + 1):
                where = "/".join([base, *steps[:depth]])
                q = _quota_at(where, files)
                if q is not None:
                    quotas.append(q)
    return min(quotas) if quotas else None


def _quota_at(where: str, files: tuple[str, ...]) -> float | None:
    if files == ("cpu.max",):
        text = read_text(f"{where}/cpu.max")
        parts = text.split() if text else []
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit() and int(parts[1]) > 0:
            return int(parts[0]) / int(parts[1])
        return None
    quota, period = (read_text(f"{where}/{f}") for f in files)
    try:
        q, p = int((quota or "").strip()), int((period or "").strip())
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


@dataclass(frozen=True)
class BusyProcess:
    pid: int
    name: str
    cores: float  # cores it kept busy over the window (CPU seconds / window seconds)


@dataclass(frozen=True)
class LoadSample:
    """What other processes did with this process's CPUs over a short window."""

    cpus: tuple[int, ...]  # the CPUs this process may use (its affinity)
    window_s: float
    others_cores: float | None  # CPU seconds others took on those CPUs / window (None: unknown)
    per_cpu: dict[int, float]  # busy share of each CPU, every process's
    processes: tuple[BusyProcess, ...]  # others using >= BUSY_PROCESS_CORES, busiest first
    quota_cores: float | None  # cgroup CPU quota, None when unlimited
    loadavg: float | None
    reason: str | None = None  # why others_cores is None

    @property
    def others_frac(self) -> float | None:
        """Share of the CPUs' time others took, as the quality rule counts it."""
        if self.others_cores is None or not self.cpus:
            return None
        return min(1.0, self.others_cores / len(self.cpus))

    def words(self) -> str:
        """`2 other processes use 1.8 of 2 cores (python3 1.0, python3 0.8)`."""
        if self.others_cores is None:
            return f"load unknown: {self.reason}"
        n = len(self.processes)
        count = {0: "other processes use", 1: "1 other process uses"}.get(
            n, f"{n} other processes use"
        )
        top = ", ".join(f"{p.name} {p.cores:.1f}" for p in self.processes[:3])
        return f"{count} {self.others_cores:.1f} of {len(self.cpus)} cores" + (
            f" ({top}{', …' if n > 3 else ''})" if top else ""
        )

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["cpus"] = list(self.cpus)
        d["per_cpu"] = {str(k): round(v, 3) for k, v in self.per_cpu.items()}
        d["processes"] = [asdict(p) for p in self.processes[:5]]
        return d


def sample_load(
    window_s: float = 0.5,
    *,
    cpus: Sequence[int] | None = None,
    proc: str = PROC,
    cgroup: str = CGROUP,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    own_cpu: Callable[[], float] | None = None,
) -> LoadSample:
    """The load on this process's CPUs over `window_s` (this process's own time left out).
    Every reader is injectable: a test points `proc`/`cgroup` at fake files and lets `sleep`
    rewrite them, so no real load or waiting is needed."""
    mine = tuple(sorted(cpus if cpus is not None else usable_cpus()))
    own = own_cpu or (lambda: sum(os.times()[:2]))
    me = os.getpid()
    t0, stat0, procs0, own0 = clock(), cpu_stat(proc), process_times(proc), own()
    sleep(window_s)
    t1, stat1, procs1, own1 = clock(), cpu_stat(proc), process_times(proc), own()
    wall = t1 - t0
    quota = cpu_quota(proc, cgroup)
    load = read_text(f"{proc}/loadavg")
    try:
        loadavg = float(load.split()[0]) if load else None
    except ValueError:
        loadavg = None
    base = dict(cpus=mine, window_s=wall, quota_cores=quota, loadavg=loadavg)
    if stat0 is None or stat1 is None or not all(c in stat0 and c in stat1 for c in mine):
        why = f"{proc}/stat unreadable or without these CPUs"
        return LoadSample(others_cores=None, per_cpu={}, processes=(), reason=why, **base)
    if wall <= 0:
        return LoadSample(
            others_cores=None, per_cpu={}, processes=(), reason="no time passed", **base
        )
    per_cpu = {c: min(1.0, max(0.0, (stat1[c][0] - stat0[c][0]) / wall)) for c in mine}
    others = max(0.0, sum(stat1[c][0] - stat0[c][0] for c in mine) - (own1 - own0)) / wall
    busy = []
    for pid, (name, cpu_s) in procs1.items():
        before = procs0.get(pid)
        if pid == me or before is None:
            continue
        cores = (cpu_s - before[1]) / wall
        if cores < BUSY_PROCESS_CORES:
            continue
        allowed = _allowed_cpus(pid, proc)
        if allowed is not None and not allowed & set(mine):
            continue  # it runs elsewhere: none of its time was on our CPUs
        busy.append(BusyProcess(pid, name, round(cores, 2)))
    busy.sort(key=lambda p: -p.cores)
    return LoadSample(
        others_cores=round(min(others, float(len(mine))), 3),
        per_cpu=per_cpu,
        processes=tuple(busy),
        **base,
    )


@dataclass(frozen=True)
class ThreadsChoice:
    """How many threads a run uses, and why (stored with every run: env.threads_choice)."""

    threads: int
    requested: int | None  # --threads, None when paradnn chose
    usable: int  # CPUs in this process's affinity
    free: int  # of those, the ones other processes left free (at least 1)
    quota_cores: float | None
    others_cores: float | None
    reason: str

    @property
    def warning(self) -> str | None:
        """One line when the requested threads exceed the free cores (else None)."""
        if self.requested is None or self.requested <= self.free:
            return None
        return (
            f"--threads {self.requested} exceeds the {self.free} free core(s) of {self.usable} "
            f"({self.reason}): torch's threads will wait on each other; --threads {self.free} "
            "or a quieter machine measures the model, not the contention"
        )

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def choose_threads(
    requested: int | None, load: LoadSample | None, usable: int | None = None
) -> ThreadsChoice:
    """The thread count of a run: `requested` when given, else the cores free of other work —
    the usable CPUs minus those others keep busy (rounded), capped by the cgroup quota, at
    least 1. One thread per core that another process holds makes torch's threads wait for a
    descheduled one at every barrier: the issue's CNN took 1,795 ms/step instead of 6."""
    n = usable if usable is not None else len(load.cpus) if load else len(usable_cpus())
    n = max(1, n)
    quota = load.quota_cores if load else None
    others = load.others_cores if load else None
    free, why = n, [f"{n} usable CPU" + ("s" if n != 1 else "")]
    if quota is not None and quota < n:
        free = max(1, math.floor(quota + 1e-9))
        why.append(f"cgroup quota {quota:.2g} cores")
    if others is not None:
        held = math.floor(others + 0.5)
        free = max(1, min(free, n - held))
        why.append(f"other processes use {others:.1f} cores")
    elif load is not None:
        why.append(f"load unknown ({load.reason})")
    else:
        why.append("load not measured")
    reason = ", ".join(why)
    if requested is not None:
        return ThreadsChoice(requested, requested, n, free, quota, others, reason)
    return ThreadsChoice(free, None, n, free, quota, others, reason)


def memory_bytes() -> int:
    """Physical memory, or the cgroup limit when one is set and smaller."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def process_age_s(proc: str = PROC) -> float | None:
    """Seconds since this process started (its start-up, imports included), from the kernel's
    start time of the process and the system's uptime; None where /proc cannot say."""
    stat, uptime = read_text(f"{proc}/self/stat"), read_text(f"{proc}/uptime")
    try:
        # the command name (field 2) may hold spaces: the fields after its ')' are plain
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # type: ignore[union-attr]
        return max(0.0, float(uptime.split()[0]) - start_ticks / _ticks_per_s())  # type: ignore[union-attr]
    except (AttributeError, IndexError, ValueError):
        return None


MEMINFO = "/proc/meminfo"
CGROUP_MEMORY = (  # (limit, usage, stat) of cgroup v2, then v1
    ("memory.max", "memory.current", "memory.stat", "inactive_file"),
    ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "memory/memory.stat",
     "total_inactive_file"),
)  # fmt: skip


def available_memory_bytes(meminfo: str = MEMINFO, cgroup: str = CGROUP) -> int | None:
    """Host memory a new process can take without pushing other programs out (into swap, or
    to the OOM killer): the kernel's MemAvailable (free memory plus the cache it can drop), or
    what the cgroup's limit leaves when that is less (its usage less its inactive file cache).
    None when /proc/meminfo has no MemAvailable (kernels before 3.14)."""
    avail = None
    with contextlib.suppress(OSError, ValueError, IndexError), open(meminfo) as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                avail = int(line.split()[1]) * 1024
                break
    if avail is None:
        return None
    for limit_file, usage_file, stat_file, cache_key in CGROUP_MEMORY:
        limit = read_text(Path(cgroup) / limit_file)
        usage = read_text(Path(cgroup) / usage_file)
        if not (limit and usage and limit.strip().isdigit() and usage.strip().isdigit()):
            continue
        cache = 0
        for line in (read_text(Path(cgroup) / stat_file) or "").splitlines():
            key, _, value = line.partition(" ")
            if key == cache_key and value.strip().isdigit():
                cache = int(value)
        left = int(limit) - max(0, int(usage) - cache)
        return max(0, min(avail, left))
    return avail


class NvmlUnavailable(Exception):
    """NVML cannot be used here; the message is the reason."""


@contextlib.contextmanager
def nvml() -> Iterator[Any]:
    """An NVML session (the `pynvml` module, initialised; shut down after), or NvmlUnavailable
    with the reason: the library absent, or no driver."""
    try:
        import pynvml
    except ImportError:
        raise NvmlUnavailable("nvidia-ml-py (pynvml) not installed") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as e:
        raise NvmlUnavailable(f"NVML unavailable: {e}") from None
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def text(value: Any) -> str:
    """NVML returns bytes on older bindings, str on newer ones."""
    return value.decode() if isinstance(value, bytes) else value
