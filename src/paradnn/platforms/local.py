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
from paradnn.platforms import cores as microarch
from paradnn.platforms import datasheets
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

    core = microarch.identify(
        first.get("vendor_id"), first.get("cpu family"), first.get("model"), model, flags
    )
    return {
        "model": model,
        "vendor_id": first.get("vendor_id"),
        "family": first.get("cpu family"),
        "model_number": first.get("model"),
        "core": core.as_dict(),
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


def _core(cpu: dict[str, Any]) -> tuple[microarch.Core, set[str]]:
    """The core `cpu_info` identified (else identified now from the fields it holds) and the
    flags it was identified with."""
    flags = {f for f, on in (cpu.get("flags") or {}).items() if on}
    c = cpu.get("core")
    if isinstance(c, dict):
        return microarch.Core(**c), flags  # type: ignore[arg-type]
    core = microarch.identify(
        cpu.get("vendor_id"), cpu.get("family"), cpu.get("model_number"), cpu.get("model"), flags
    )
    return core, flags


def derive_cpu_peaks(cpu: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per precision: ``{value, source: "derived", derivation}`` or ``{value: None, reason}``.
    The FLOP/cycle of a core comes from the microarchitecture the cpuinfo names
    (platforms/cores.py); one it cannot name gives a null peak with the reason, never a guess."""
    cores_n, freq = cpu["physical_cores"], cpu["frequency_hz"]
    core, flags = _core(cpu)
    missing = None
    if freq is None:
        missing = "CPU frequency unknown"
    elif cores_n is None:
        missing = "physical core count unknown"
    elif core.fp32_per_cycle is None:
        missing = f"microarchitecture unknown: {core.why}"
    out: dict[str, dict[str, Any]] = {}
    for precision in PRECISIONS:
        if missing:
            out[precision] = {"value": None, "reason": missing}
            continue
        per_cycle, why = core.fp32_per_cycle, f"{core.name}: {core.why}"
        if precision == "tf32":
            out[precision] = {"value": None, "reason": "tf32 is a GPU tensor-core format"}
            continue
        if precision in ("bf16", "fp16"):
            reason = precisions.cpu_reason(precision, sorted(flags), caps=False)
            of = microarch.bf16_per_cycle if precision == "bf16" else microarch.fp16_per_cycle
            rate, how = of(core, flags)
            if reason or rate is None:
                out[precision] = {"value": None, "reason": reason or how}
                continue
            per_cycle, why = rate, (how if "AMX" in how else f"{why}; {how}")
        value = cores_n * freq * per_cycle
        out[precision] = {
            "value": value,
            "source": "derived",
            "core": core.name,
            "derivation": (
                f"{cores_n} cores × {freq / 1e9:.3g} GHz × {per_cycle} FLOP/cycle ({why}); "
                f"clock from {cpu['frequency_source']}; rule from {core.source}"
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
    platforms: tuple[datasheets.Platform, ...] | None = None,
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
    plat = datasheets.match(device_name, platforms) if device_name else None
    result["matched"] = plat.id if plat else "measured only"
    if plat:
        result["datasheet_peak"] = {p: plat.peak(p) for p in PRECISIONS}
        result["datasheet_source"] = dict(plat.sources)
    else:
        result["datasheet_peak"] = {p: None for p in PRECISIONS}
        nulls["datasheet_peak"] = "no datasheet entry"
    result["nulls"] = nulls
    return result
