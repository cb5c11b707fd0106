"""The one local-host prober, torch-free: the CPU (cpuinfo, ISA flags and the caps a user set
on them), the cores this process may use, its memory, and an NVML session for the GPUs.

Two environment variables let anyone see what an older CPU sees on a newer one:
* ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``) and ``ATEN_CPU_CAPABILITY`` are oneDNN's and
  ATen's own caps: the kernels stop using instructions above them, so paradnn does too;
* ``PARADNN_CPU_FLAGS`` replaces the flags paradnn reads from /proc/cpuinfo (comma or space
  separated, e.g. ``avx2,fma``), for tests and for rehearsing a user's machine.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
from collections.abc import Iterator
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
