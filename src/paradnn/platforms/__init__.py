"""Platform specifications (a datasheet database) and local platform detection; torch-free.

>>> from paradnn import platforms
>>> platforms.get("h100-sxm").ridge_point("bf16")   # FLOP/byte
>>> platforms.resolve("v100").id                      # an id or a unique prefix: v100-sxm2
>>> platforms.resolve("v100").native_precision()      # fp16: what it trains in
>>> platforms.match("NVIDIA A100-SXM4-40GB").id
>>> platforms.describe_local("cpu")
"""

from __future__ import annotations

from typing import Any

from paradnn import host, precisions
from paradnn.platforms.datasheets import (
    PEAK_PRECISIONS,
    Mxu,
    Platform,
    all_platforms,
    get,
    load_file,
    match,
    resolve,
)
from paradnn.platforms.local import detect
from paradnn.precisions import PRECISIONS

__all__ = [
    "PEAK_PRECISIONS",
    "Mxu",
    "Platform",
    "all_platforms",
    "describe_local",
    "detect",
    "get",
    "load_file",
    "match",
    "platform_table_rows",
    "resolve",
]


def _t(v: float | None) -> float | None:
    return None if v is None else round(v / 1e12, 3)


def platform_table_rows(platforms: tuple[Platform, ...] | None = None) -> list[dict[str, Any]]:
    """One row per entry for ``paradnn platforms``: peaks in TFLOP/s (dense; sparse where
    published), memory in GB, bandwidth in GB/s, and the ridge point of the highest dense peak."""
    rows = []
    for p in all_platforms() if platforms is None else platforms:
        ridge_prec, best = p.best_dense()
        row: dict[str, Any] = {"id": p.id, "name": p.name, "kind": p.kind, "vendor": p.vendor}
        for prec in (*PRECISIONS, "fp8"):
            row[f"{prec}_tflops"] = _t(p.peak(prec))
        row["bf16_sparse_tflops"] = _t(p.peak("bf16", sparse=True))
        row["memory_gb"] = None if p.memory_bytes is None else round(p.memory_bytes / 1e9, 1)
        row["bandwidth_gbs"] = round(p.mem_bandwidth / 1e9, 1)
        row["ridge_flop_per_byte"] = round(best / p.mem_bandwidth, 1)
        row["ridge_precision"] = ridge_prec
        row["tdp_w"] = p.tdp_w
        row["sources"] = ", ".join(p.sources)
        rows.append(row)
    return rows


def _fmt_flops(v: float) -> str:
    return f"{v / 1e12:.3g} TFLOP/s" if v >= 1e12 else f"{v / 1e9:.3g} GFLOP/s"


def describe_local(device_type: str = "cpu", **detect_kwargs: Any) -> dict[str, Any]:
    """``detect`` flattened into label → printable value, for ``paradnn platforms --local``."""
    d = detect(device_type, **detect_kwargs)
    cpu, nulls = d["cpu"], d["nulls"]
    out: dict[str, Any] = {
        "device type": d["device_type"],
        "cpu model": cpu["model"] or f"unknown ({nulls.get('cpu.model')})",
        "cpu vendor": cpu["vendor_id"],
        "cpu core": cpu["core"]["name"] or f"unknown ({cpu['core']['why']})",
        "physical cores": cpu["physical_cores"],
        "logical cpus": cpu["logical_cpus"],
        "usable cpus (affinity)": cpu["usable_cpus"],
        "isa flags": " ".join(f for f, on in cpu["flags"].items() if on) or "none of interest",
        "frequency": (
            f"{cpu['frequency_hz'] / 1e9:.3g} GHz from {cpu['frequency_source']}"
            if cpu["frequency_hz"]
            else f"unknown ({nulls.get('cpu.frequency_hz')})"
        ),
    }
    caps = {k: v for k, v in host.caps().items() if v}
    if caps:
        out["isa caps (environment)"] = " ".join(f"{k}={v}" for k, v in caps.items())
    if d["device_type"] == "cpu":
        for prec in PRECISIONS:
            reason = precisions.cpu_reason(prec)
            out[f"{prec} on this cpu"] = "native" if reason is None else f"not native: {reason}"
    for prec, peak in d["cpu_peak_derived"].items():
        out[f"cpu {prec} peak (derived)"] = (
            f"{_fmt_flops(peak['value'])} = {peak['derivation']}"
            if peak["value"] is not None
            else f"None ({peak['reason']})"
        )
    if d["device_type"] != "cpu":
        gpu = d["gpu"]
        out["gpu"] = (
            f"{gpu['name']}, {gpu['memory_bytes'] / 1e9:.1f} GB, driver {gpu['driver']}"
            if gpu
            else f"unknown ({nulls.get('gpu')})"
        )
    out["matched"] = d["matched"]
    for prec, v in d["datasheet_peak"].items():
        out[f"datasheet {prec} peak"] = (
            _fmt_flops(v) if v is not None else f"None ({nulls.get('datasheet_peak', 'n/p')})"
        )
    return out
