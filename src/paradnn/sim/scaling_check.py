"""The simulator's all-reduce model against measured data-parallel runs (docs/scaling.md).

For each measured run of N > 1 ranks, the link is fitted from the run's own isolated
all-reduces at the sizes other than the gradient's (the ladder's small and large buffers):
with the ring model of sim/interconnect.py, ``T(S) = 2(N−1)·α + 2(N−1)/N · S/B``, two sizes give
α (per step) and B (bytes/s one link drives). The model then predicts the all-reduce of the
gradient bytes (a size it was not fitted on) and, with the measured no_sync compute, the step
(`interconnect.step_time`, overlap 0: the model's serial bound) and so the scaling efficiency;
each prediction is set against the measurement. Torch-free; the caller passes the rows
(analysis.scaling.efficiency_table).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from paradnn import formatting as U
from paradnn import rounding
from paradnn.sim.interconnect import Link, Topology, allreduce, step_time


@dataclass(frozen=True)
class LinkFit:
    latency_s: float  # α, per ring step
    bandwidth: float  # B, bytes/s
    sizes: tuple[int, int]  # the two buffer sizes it was fitted on


def fit_link(ladder: Iterable[Mapping[str, Any]], n: int, exclude: int | None) -> LinkFit | str:
    """α and B of the ring model from the smallest and largest measured all-reduce other than
    the `exclude`d size (the one to predict); a reason string when they cannot be fitted."""
    pts = sorted(
        (int(p["bytes"]), float(p["time_s"]))
        for p in ladder
        if p.get("time_s") is not None and int(p["bytes"]) != exclude
    )
    if len(pts) < 2 or n < 2:
        return "needs all-reduce times at two sizes besides the gradient's"
    (s1, t1), (s2, t2) = pts[0], pts[-1]
    steps, share = 2 * (n - 1), 2 * (n - 1) / n
    slope = (t2 - t1) / (s2 - s1)  # seconds per byte of payload
    if slope <= 0:
        return f"the larger buffer was not slower ({t2:.3g} s ≤ {t1:.3g} s): no bandwidth"
    bandwidth = share / slope
    latency = max(0.0, (t1 - share * s1 / bandwidth) / steps)
    return LinkFit(latency, bandwidth, (s1, s2))


@dataclass
class Check:
    rows: list[dict[str, Any]] = field(default_factory=list)
    allreduce_error: float | None = None  # geometric mean of |pred/meas − 1| + 1, minus 1
    efficiency_error: float | None = None  # median |pred − meas| in efficiency points
    reason: str | None = None

    def summary(self) -> str:
        if self.reason:
            return f"simulator check: {self.reason}"
        return (
            f"simulator check over {len(self.rows)} run(s): all-reduce time error "
            f"{_pct(self.allreduce_error)} (geometric mean), scaling efficiency error "
            f"{_pts(self.efficiency_error)} (median, absolute)"
        )


def _pct(x: float | None) -> str:
    return U.error(x)  # a model's error: the one formatter (units.error)


def _pts(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} points"


def check(rows: Iterable[Mapping[str, Any]]) -> Check:
    """Predict each row's all-reduce and efficiency; rows need procs, allreduce_ladder,
    allreduce_bytes, allreduce_s, compute_nosync_s, step_time_s, base_step_time_s,
    examples_ratio and efficiency (analysis.scaling.efficiency_table's columns)."""
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    for r in rows:
        n = int(r["procs"])
        ladder = r.get("allreduce_ladder")
        if not isinstance(ladder, list) or r.get("allreduce_s") is None:
            skipped.append("no all-reduce ladder")
            continue
        fit = fit_link(ladder, n, r.get("allreduce_bytes"))
        if isinstance(fit, str):
            skipped.append(fit)
            continue
        ar = allreduce(
            float(r["allreduce_bytes"]), Topology("ring", (n,)), Link(fit.bandwidth, fit.latency_s)
        )
        pred_step, _ = step_time(float(r["compute_nosync_s"]), 0.0, ar)
        pred_eff = float(r["examples_ratio"]) * float(r["base_step_time_s"]) / pred_step / n
        meas_ar = float(r["allreduce_s"])
        out.append(
            {
                "family": r.get("family"),
                "config_key": r.get("config_key"),
                "procs": n,
                "allreduce_bytes": int(r["allreduce_bytes"]),
                "latency_s": fit.latency_s,
                "bandwidth": fit.bandwidth,
                "allreduce_measured_s": meas_ar,
                "allreduce_predicted_s": ar.time_s,
                # relative errors, read at scale 1: a residue of rounding is no error
                "allreduce_error": rounding.settle(ar.time_s / meas_ar - 1, 1.0),
                "efficiency_measured": float(r["efficiency"]),
                "efficiency_predicted": pred_eff,
                "efficiency_error": rounding.settle(pred_eff - float(r["efficiency"]), 1.0),
            }
        )
    if not out:
        why = skipped[0] if skipped else "no data-parallel run with an N = 1 run to match"
        return Check(reason=why)
    logs = [math.log(1 + abs(x["allreduce_error"])) for x in out]
    effs = sorted(abs(x["efficiency_error"]) for x in out)
    return Check(
        rows=out,
        allreduce_error=rounding.settle(math.exp(sum(logs) / len(logs)) - 1, 1.0),
        efficiency_error=effs[len(effs) // 2],
    )


def check_frame(table: Any) -> Check:
    """`check` over a DataFrame (analysis.scaling.efficiency_table)."""
    if table is None or not len(table):
        return Check(reason="no data-parallel run with an N = 1 run to match")
    return check(table.to_dict("records"))
