"""Utilization of a measurement against what its device can do. Torch-free.

Two denominators, both kept: the datasheet peak of the platform entry that matches the device
(dense, for the precision actually used) and the measured ceiling (`paradnn calibrate`: the best
large-matmul throughput on this device and precision). When one is unknown the utilization is
null and the reason says which command or entry would provide it.
"""

from __future__ import annotations

from typing import Any

from paradnn.store import Store

NO_CEILING = "no measured ceiling for {device} at {precision}: run `paradnn calibrate`"


def datasheet_peak(device_name: str | None, precision: str) -> tuple[float | None, str]:
    """(peak FLOP/s, source or reason). Only a datasheet figure counts, never a derived one."""
    from paradnn import platforms

    plat = platforms.match(device_name or "")
    if plat is None:
        return None, f"no datasheet entry matches {device_name!r} (see `paradnn platforms`)"
    peak = plat.peak(precision)
    if peak is None:
        return None, f"{plat.id} publishes no dense {precision} peak"
    return peak, f"{plat.id} dense {precision}"


def measured_ceiling(store: Store, device_name: str | None, precision: str) -> float | None:
    """The best calibrated matmul throughput for this device and precision, if any."""
    rows = store.conn.execute(
        "SELECT MAX(value) FROM ceilings WHERE kind = 'matmul' AND status = 'ok' "
        "AND device_name = ? "
        "AND precision = ?",
        (device_name, precision),
    ).fetchone()
    return rows[0] if rows and rows[0] else None


def fill(row: Any, store: Store, *, flops_field: str = "achieved_flops") -> None:
    """Set utilization_datasheet / utilization_measured on a run record or an ops row (an
    object with attributes, or a dict), with reasons for whatever stays null."""
    get = row.get if isinstance(row, dict) else lambda k: getattr(row, k)
    achieved, name, precision = get(flops_field), get("device_name"), get("precision")
    nulls: dict[str, str] = dict(get("nulls") or {})
    values: dict[str, float | None] = {}
    if achieved is None:
        for key in ("utilization_datasheet", "utilization_measured"):
            values[key] = None
            nulls[key] = f"no achieved FLOP/s ({get('status')} run)"
    else:
        peak, why = datasheet_peak(name, precision)
        values["utilization_datasheet"] = achieved / peak if peak else None
        ceiling = measured_ceiling(store, name, precision)
        values["utilization_measured"] = achieved / ceiling if ceiling else None
        if peak:
            nulls.pop("utilization_datasheet", None)
        else:
            nulls["utilization_datasheet"] = why
        if ceiling:
            nulls.pop("utilization_measured", None)
        else:
            nulls["utilization_measured"] = NO_CEILING.format(device=name, precision=precision)
    values["nulls"] = nulls
    for key, value in values.items():
        if isinstance(row, dict):
            row[key] = value
        else:
            setattr(row, key, value)
