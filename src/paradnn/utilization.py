"""Utilization of a measurement against what its device can do. Torch-free.

Two denominators, both kept: the datasheet peak of the platform entry that matches the device
(dense, for the precision actually used) and the measured ceiling (`paradnn calibrate`: the best
large-matmul throughput on this device and precision). When one is unknown the utilization is
null and the reason says which command or entry would provide it.
"""

from __future__ import annotations

from typing import Any

from paradnn.records import RunRecord, Status, Utilization
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
        "SELECT MAX(value) FROM ceilings WHERE kind = 'matmul' AND status = ? "
        "AND device_name = ? "
        "AND precision = ?",
        (Status.OK, device_name, precision),
    ).fetchone()
    return rows[0] if rows and rows[0] else None


def part(
    achieved: float | None,
    device_name: str | None,
    precision: str,
    status: str,
    store: Store,
) -> Utilization:
    """Achieved FLOP/s against the datasheet peak and the measured ceiling, each null with the
    reason when it cannot be known."""
    nulls: dict[str, str] = {}
    if achieved is None:
        why = f"no achieved FLOP/s ({status} run)"
        return Utilization(nulls={"utilization_datasheet": why, "utilization_measured": why})
    peak, why = datasheet_peak(device_name, precision)
    ceiling = measured_ceiling(store, device_name, precision)
    if not peak:
        nulls["utilization_datasheet"] = why
    if not ceiling:
        nulls["utilization_measured"] = NO_CEILING.format(device=device_name, precision=precision)
    return Utilization(
        utilization_datasheet=achieved / peak if peak else None,
        utilization_measured=achieved / ceiling if ceiling else None,
        nulls=nulls,
    )


def of_record(rec: RunRecord, store: Store) -> RunRecord:
    """The run record with its utilization part."""
    return rec.with_part(
        part(rec.achieved_flops, rec.device_name, rec.precision, rec.status, store)
    )


def fill(row: dict[str, Any], store: Store, *, flops_field: str = "achieved_flops") -> None:
    """Set utilization_datasheet / utilization_measured (and their null reasons) on an ops row."""
    u = part(row.get(flops_field), row.get("device_name"), row["precision"], row["status"], store)
    nulls = dict(row.get("nulls") or {})
    for key in ("utilization_datasheet", "utilization_measured"):
        row[key] = getattr(u, key)
        nulls.pop(key, None)
    nulls.update(u.nulls)
    row["nulls"] = nulls
