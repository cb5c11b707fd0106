"""What this host's CPU can do, read once, torch-free: ISA flags and the caps a user set on them.

Two environment variables let anyone see what an older CPU sees on a newer one:
* ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``) and ``ATEN_CPU_CAPABILITY`` are oneDNN's and
  ATen's own caps: the kernels stop using instructions above them, so paradnn does too;
* ``PARADNN_CPU_FLAGS`` replaces the flags paradnn reads from /proc/cpuinfo (comma or space
  separated, e.g. ``avx2,fma``), for tests and for rehearsing a user's machine.
"""

from __future__ import annotations

import os
import re

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
    """The CPU flags paradnn decides with: PARADNN_CPU_FLAGS when set, else /proc/cpuinfo."""
    override = os.environ.get(FLAGS_ENV)
    if override is not None:
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
