"""Utilization of a measurement against what its device can do. Torch-free.

Two denominators, both kept: the datasheet peak of the platform entry that matches the device
(dense, for the precision actually used) and the measured ceiling (`paradnn calibrate`: the best
rate on this device and precision over the math-library paths the workloads use). When one is
unknown the utilization is null and the reason says which command or entry would provide it.

A run faster than its measured ceiling beats it: that is a finding about the ceiling (a path or
shape calibrate did not time, or a calibration on a loaded machine), not a utilization above
100 %. Its utilization is stored as it is — never clipped, the value is the evidence — and
flagged (`ceiling_beaten`); every reader (`results`, the report's key results and tables) marks
it with `BEATEN_MARK`, explains it with `BEATEN_LEGEND`, keeps it out of headlines and suggests
measuring the ceiling again (`RECALIBRATE`). `beaten_ceilings` lists, per device and precision,
the ok runs faster than the best ceiling stored now; after a calibration `restate` puts every
stored run and op of the device against the best ceiling stored now, so a re-measured ceiling
clears (or sets) the flags of the runs measured before it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from paradnn.formatting import missing
from paradnn.records import RunRecord, Status, Utilization
from paradnn.store import Store

NO_CEILING = "no measured ceiling for {device} at {precision}: run `paradnn calibrate`"
RECALIBRATE = "paradnn calibrate --force"
BEATEN_MARK = "†"
BEATEN_LEGEND = (
    f"{BEATEN_MARK} above 100% of the measured ceiling: the run beat the ceiling stored when it "
    "ran, so that ceiling is not the device's best (a math path or shape calibrate did not "
    "time, or a calibration on a loaded machine) and the figure is no utilization; kept out of "
    f"headlines — re-measure the ceiling with `{RECALIBRATE}`"
)


# The stored rows a compute ceiling is the best of (its status the one parameter): ok matmul
# rows whose value is a number (a damaged file's text would sort above every number in MAX).
COMPUTE_CEILINGS = "kind = 'matmul' AND status = ? AND typeof(value) IN ('integer', 'real')"


def beaten(utilization: Any) -> bool | None:
    """Whether a measured utilization says its ceiling was beaten (strictly above 1); None
    when there is no utilization to say it."""
    if missing(utilization) or isinstance(utilization, bool):
        return None
    try:
        u = float(utilization)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(u) else u > 1.0


def flagged(row: Mapping[str, Any]) -> bool:
    """A stored run (or ops row) whose measured utilization beat its ceiling: the stored flag,
    else (a row from before the flag) its utilization above 1."""
    if not missing(row.get("ceiling_beaten")):
        return bool(row["ceiling_beaten"])
    return bool(beaten(row.get("utilization_measured")))


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
        f"SELECT MAX(value) FROM ceilings WHERE {COMPUTE_CEILINGS} "
        "AND device_name = ? AND precision = ?",
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
    measured = achieved / ceiling if ceiling else None
    return Utilization(
        utilization_datasheet=achieved / peak if peak else None,
        utilization_measured=measured,
        ceiling_beaten=beaten(measured),
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


@dataclass(frozen=True)
class BeatenCeiling:
    """The ok runs of one device and precision faster than its best stored ceiling."""

    device_name: str
    precision: str
    ceiling: float  # FLOP/s, the best ok compute ceiling stored now
    path: str | None  # the path and shape that set it (None: a ceiling from before paths)
    shape: str | None
    runs: int  # ok runs faster than it
    fastest: float  # FLOP/s of the fastest of them
    fastest_id: int
    fastest_family: str

    @property
    def ratio(self) -> float:
        return self.fastest / self.ceiling

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio}


def beaten_words(b: Any) -> str:
    """One line from a `BeatenCeiling` (or its `as_dict()`): what beat which ceiling, and
    what to do about it."""
    d = b.as_dict() if isinstance(b, BeatenCeiling) else dict(b)
    won = f" ({d['path']}, {d['shape']})" if d.get("path") else " (torch.mm alone)"
    runs = d["runs"]
    return (
        f"ceiling beaten: {runs} ok run{'s' if runs != 1 else ''} on {d['device_name']} "
        f"{d['precision']} went faster than its measured ceiling "
        f"{d['ceiling'] / 1e9:.4g} GFLOP/s{won}; the fastest, run {d['fastest_id']} "
        f"({d['fastest_family']}), at {d['fastest'] / 1e9:.4g} GFLOP/s = {d['ratio']:.3g}× it. "
        f"Re-measure the ceiling with `{RECALIBRATE}` (a larger --budget reaches larger "
        "shapes; a quiet machine helps)"
    )


def beaten_ceilings(store: Store, device_name: str | None = None) -> list[BeatenCeiling]:
    """Per device and precision (sorted by name), the ok runs faster than the best ok compute
    ceiling stored now; empty when every run is below its ceiling."""
    import json

    best: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}
    for name, precision, value, detail in store.conn.execute(
        f"SELECT device_name, precision, value, detail FROM ceilings WHERE {COMPUTE_CEILINGS}",
        (Status.OK,),
    ):
        if device_name is not None and name != device_name:
            continue
        key = (name, precision)
        if key not in best or value > best[key][0]:
            try:
                d = json.loads(detail) if isinstance(detail, str) else {}
            except ValueError:
                d = {}
            best[key] = (float(value), d if isinstance(d, dict) else {})
    out = []
    for (name, precision), (ceiling, detail) in sorted(best.items()):
        rows = store.conn.execute(
            "SELECT id, family, achieved_flops FROM runs WHERE status = ? AND device_name = ? "
            "AND precision = ? AND achieved_flops > ? ORDER BY achieved_flops DESC, id",
            (Status.OK, name, precision, ceiling),
        ).fetchall()
        if not rows:
            continue
        run_id, family, fastest = rows[0]
        out.append(
            BeatenCeiling(
                name,
                precision,
                ceiling,
                detail.get("path"),
                detail.get("shape_label"),
                len(rows),
                float(fastest),
                int(run_id),
                str(family),
            )
        )
    return out


@dataclass(frozen=True)
class Restated:
    """What `restate` changed for one device and precision."""

    device_name: str
    precision: str
    ceiling: float  # FLOP/s, the best ok compute ceiling stored now
    runs: int  # stored runs whose measured utilization changed
    ops: int  # op rows whose measured utilization changed
    beaten: int  # ok runs above the ceiling now

    def words(self) -> str:
        what = f"{self.runs} stored run{'s' if self.runs != 1 else ''}" + (
            f" and {self.ops} op row{'s' if self.ops != 1 else ''}" if self.ops else ""
        )
        left = f"; {self.beaten} still above it" if self.beaten else ""
        return (
            f"utilization of {what} on {self.device_name} {self.precision} restated against "
            f"the best measured ceiling, {self.ceiling / 1e9:.4g} GFLOP/s{left}"
        )


def restate(store: Store) -> list[Restated]:
    """Every stored run and op row with an achieved rate, against the best ok compute ceiling
    of its device and precision stored now (what `part` gives a run measured now): a ceiling
    measured again higher clears the † of the runs that beat the old one. One transaction;
    per device and precision (sorted), what changed (none: nothing was out of date)."""
    best = store.conn.execute(
        f"SELECT device_name, precision, MAX(value) FROM ceilings WHERE {COMPUTE_CEILINGS} "
        "AND value > 0 "
        "GROUP BY device_name, precision "
        "ORDER BY device_name, precision",
        (Status.OK,),
    ).fetchall()
    # the reason a utilization was null goes with it (nulls that are not JSON are left as they
    # are: readers already treat them as absent)
    drop = (
        "nulls = CASE WHEN json_valid(nulls) THEN json_remove(nulls, '$.utilization_measured') "
        "ELSE nulls END"
    )
    stale = (
        "device_name = ? AND precision = ? AND achieved_flops IS NOT NULL "
        "AND (utilization_measured IS NULL OR utilization_measured != achieved_flops / ?)"
    )
    statements = []
    for name, precision, ceiling in best:
        key = (name, precision, ceiling)
        statements += [
            (
                "UPDATE runs SET utilization_measured = achieved_flops / ?, "
                f"ceiling_beaten = (achieved_flops > ?), {drop} WHERE {stale}",
                (ceiling, ceiling, *key),
            ),
            (
                f"UPDATE ops SET utilization_measured = achieved_flops / ?, {drop} WHERE {stale}",
                (ceiling, *key),
            ),
        ]
    if not statements:
        return []
    changed = store.update(statements, "the runs' utilization against the new ceilings")
    out = []
    for i, (name, precision, ceiling) in enumerate(best):
        runs, ops = changed[2 * i], changed[2 * i + 1]
        if runs or ops:
            beaten_now = store.conn.execute(
                "SELECT COUNT(*) FROM runs WHERE status = ? AND device_name = ? "
                "AND precision = ? AND achieved_flops > ?",
                (Status.OK, name, precision, ceiling),
            ).fetchone()[0]
            out.append(Restated(name, precision, float(ceiling), runs, ops, int(beaten_now)))
    return out
