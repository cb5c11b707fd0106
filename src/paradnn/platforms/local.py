"""Local platform detection without torch: CPU model, cores, ISA flags, clocks, a derived CPU
peak, and (optionally, via NVML) the GPU's name and memory, matched against the database.

A derived CPU peak is arithmetic on assumptions (FMA units, clocks), never a datasheet figure:
it is returned with ``source = "derived"`` and the derivation spelled out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from paradnn import host, precisions
from paradnn.errors import ConfigError
from paradnn.platforms import specs
from paradnn.precisions import PRECISIONS

ISA_FLAGS = (
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "amx_bf16",
    "amx_fp16",
    "amx_tile",
)
CPUINFO = "/proc/cpuinfo"
SYSFS_CPU = "/sys/devices/system/cpu"


read_cpuinfo = host.read_cpuinfo  # one reader of /proc/cpuinfo (paradnn.host)


def _read_khz(path: Path) -> float | None:
    try:
        return int(path.read_text().strip()) * 1e3
    except (OSError, ValueError):
        return None


def cpu_info(cpuinfo: str | Path = CPUINFO, sysfs: str | Path = SYSFS_CPU) -> dict[str, Any]:
    """What the kernel says about the CPU; unknown fields are None with a reason in ``nulls``."""
    blocks = read_cpuinfo(cpuinfo)
    procs = [b for b in blocks if "processor" in b] or blocks
    first = procs[0] if procs else {}
    nulls: dict[str, str] = {}
    flags = set(host.cpu_flags(str(cpuinfo)))
    model = first.get("model name") or None
    if model is None:
        nulls["model"] = f"no 'model name' in {cpuinfo}"

    cores = {(b.get("physical id", "0"), b["core id"]) for b in procs if "core id" in b}
    if cores:
        physical = len(cores)
    elif "cpu cores" in first:
        sockets = len({b.get("physical id", "0") for b in procs}) or 1
        physical = int(first["cpu cores"]) * sockets
    else:
        physical = None
        nulls["physical_cores"] = f"no 'core id' or 'cpu cores' in {cpuinfo}"
    logical = len(procs) or None
    if logical is None:
        nulls["logical_cpus"] = f"{cpuinfo} unreadable or empty"

    freq_dir = Path(sysfs) / "cpu0" / "cpufreq"
    max_hz = _read_khz(freq_dir / "cpuinfo_max_freq")
    base_hz = _read_khz(freq_dir / "base_frequency")
    if max_hz is not None:
        freq, freq_source = max_hz, f"{freq_dir / 'cpuinfo_max_freq'} (maximum clock)"
    elif base_hz is not None:
        freq, freq_source = base_hz, f"{freq_dir / 'base_frequency'} (base clock)"
    elif "cpu MHz" in first:
        freq = float(first["cpu MHz"]) * 1e6
        freq_source = f"'cpu MHz' in {cpuinfo} (current clock when read; may be below max)"
    elif model and (m := re.search(r"@\s*([\d.]+)\s*GHz", model)):
        freq, freq_source = float(m.group(1)) * 1e9, "nominal clock in the CPU model name"
    else:
        freq, freq_source = None, None
        nulls["frequency_hz"] = f"no cpufreq in {sysfs} and no 'cpu MHz' in {cpuinfo}"
    if max_hz is None:
        nulls["max_frequency_hz"] = f"{freq_dir / 'cpuinfo_max_freq'} not readable"
    if base_hz is None:
        nulls["base_frequency_hz"] = f"{freq_dir / 'base_frequency'} not readable"

    return {
        "model": model,
        "vendor_id": first.get("vendor_id"),
        "physical_cores": physical,
        "logical_cpus": logical,
        "usable_cpus": len(host.usable_cpus()),
        "flags": {f: f in flags for f in ISA_FLAGS},
        "max_frequency_hz": max_hz,
        "base_frequency_hz": base_hz,
        "frequency_hz": freq,
        "frequency_source": freq_source,
        "nulls": nulls,
    }


def _fp32_per_cycle(flags: dict[str, bool], vendor_id: str | None) -> tuple[int, str] | None:
    """fp32 FLOP/cycle/core of the widest FMA the flags advertise, with the assumption named."""
    if flags.get("avx512f"):
        if vendor_id == "AuthenticAMD":
            return 32, (
                "AVX-512 on AMD Zen 4, executed as 2 × 256-bit FMA pipes: 2 units × 8 fp32 lanes "
                "× 2 (FMA); assumption — Zen 5 server parts with full 512-bit pipes reach 64"
            )
        return 64, (
            "AVX-512 FMA: 2 units × 16 fp32 lanes × 2; assumption — 2 FMA units as on Xeon "
            "Scalable Gold 6xxx/Platinum; 1-unit parts (Silver, Bronze, some Gold 5xxx) reach 32"
        )
    if flags.get("avx2") and flags.get("fma"):
        return 32, "AVX2 FMA: 2 units × 8 fp32 lanes × 2"
    if flags.get("avx"):
        return 16, "AVX without FMA: 1 add + 1 multiply unit × 8 fp32 lanes"
    return None


def derive_cpu_peaks(cpu: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per precision: ``{value, source: "derived", derivation}`` or ``{value: None, reason}``."""
    cores, freq, flags = cpu["physical_cores"], cpu["frequency_hz"], cpu["flags"]
    fma = _fp32_per_cycle(flags, cpu.get("vendor_id"))
    missing = None
    if freq is None:
        missing = "CPU frequency unknown"
    elif cores is None:
        missing = "physical core count unknown"
    elif fma is None:
        missing = "no AVX/AVX2/AVX-512 flags: vector width unknown"
    out: dict[str, dict[str, Any]] = {}
    for precision in PRECISIONS:
        if missing:
            out[precision] = {"value": None, "reason": missing}
            continue
        per_cycle, why = fma
        if precision == "tf32":
            out[precision] = {"value": None, "reason": "tf32 is a GPU tensor-core format"}
            continue
        if precision == "bf16":
            reason = precisions.cpu_reason("bf16", [f for f, on in flags.items() if on], caps=False)
            if reason or not flags.get("avx512_bf16"):
                out[precision] = {
                    "value": None,
                    "reason": reason
                    or "bf16 only through AMX tiles, whose throughput is not derived here",
                }
                continue
            per_cycle, why = per_cycle * 2, f"{why}; ×2 for bf16 pairs via VDPBF16PS"
            if flags.get("amx_bf16"):
                why += "; AMX tiles (amx_bf16) not counted: their throughput is not derived here"
        if precision == "fp16":
            reason = precisions.cpu_reason("fp16", [f for f, on in flags.items() if on], caps=False)
            if reason or not flags.get("avx512_fp16"):
                out[precision] = {
                    "value": None,
                    "reason": reason
                    or "fp16 only through AMX tiles, whose throughput is not derived here",
                }
                continue
            per_cycle, why = per_cycle * 2, f"{why}; ×2 for 32 fp16 lanes (AVX512-FP16)"
            if flags.get("amx_fp16"):
                why += "; AMX tiles (amx_fp16) not counted"
        value = cores * freq * per_cycle
        out[precision] = {
            "value": value,
            "source": "derived",
            "derivation": (
                f"{cores} cores × {freq / 1e9:.3g} GHz × {per_cycle} FLOP/cycle ({why}); "
                f"clock from {cpu['frequency_source']}"
            ),
        }
    return out


def gpu_info(index: int = 0) -> tuple[dict[str, Any] | None, str | None]:
    """(``{name, memory_bytes, driver}``, None) via NVML, or (None, reason) when unavailable."""
    try:
        with host.nvml() as nv:
            try:
                handle = nv.nvmlDeviceGetHandleByIndex(index)
                info = {
                    "name": host.text(nv.nvmlDeviceGetName(handle)),
                    "memory_bytes": int(nv.nvmlDeviceGetMemoryInfo(handle).total),
                    "driver": host.text(nv.nvmlSystemGetDriverVersion()),
                }
            except nv.NVMLError as e:
                return None, f"NVML query for device {index} failed: {e}"
    except host.NvmlUnavailable as e:
        return None, str(e)
    return info, None


def detect(
    device_type: str = "cpu",
    *,
    cpuinfo: str | Path = CPUINFO,
    sysfs: str | Path = SYSFS_CPU,
    platforms: tuple[specs.Platform, ...] | None = None,
) -> dict[str, Any]:
    """The local platform: CPU facts, derived CPU peaks, the GPU (for ``cuda[:N]``) and the
    database entry it matches (``matched`` is the entry id, or ``"measured only"``)."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device_type):
        raise ConfigError("device_type", device_type, "must be cpu, cuda or cuda:N")
    cpu = cpu_info(cpuinfo, sysfs)
    nulls = {f"cpu.{k}": v for k, v in cpu.pop("nulls").items()}
    result: dict[str, Any] = {
        "device_type": device_type,
        "cpu": cpu,
        "cpu_peak_derived": derive_cpu_peaks(cpu),
        "gpu": None,
    }
    if device_type == "cpu":
        device_name = cpu["model"] or ""
    else:
        index = int(device_type.partition(":")[2] or 0)
        result["gpu"], reason = gpu_info(index)
        if reason:
            nulls["gpu"] = reason
        device_name = (result["gpu"] or {}).get("name", "")
    plat = specs.match(device_name, platforms) if device_name else None
    result["matched"] = plat.id if plat else "measured only"
    if plat:
        result["datasheet_peak"] = {p: plat.peak(p) for p in PRECISIONS}
        result["datasheet_source"] = dict(plat.sources)
    else:
        result["datasheet_peak"] = {p: None for p in PRECISIONS}
        nulls["datasheet_peak"] = "no datasheet entry"
    result["nulls"] = nulls
    return result
