"""Where the step time goes per op type (seed 000 Figures 3(b)/(d), 6(b)-(c), §4.2)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from paradnn import analysis as A
from paradnn import plots as P
from paradnn.report.section import Content, Inputs, Section
from paradnn.report.writer import Writer

BOUND_SHOWN = [
    "family", "platform", "precision", "config_key", "roof", "ridge", "memory_bound",
    "compute_bound", "no_flops", "unclassified", "untimed_ops", "seed_memory_bound", "reason",
]  # fmt: skip


def fill(inp: Inputs, w: Writer, s: Content) -> None:
    data = inp.kept
    bd = A.breakdown.breakdown(data)
    if not len(bd):
        s.empty = (
            "No per-op profiles: `paradnn run --profile` (or `paradnn bench FAMILY ... "
            "--profile`) stores one per run."
        )
        return
    shown = _representative(bd)
    sh = A.breakdown.shares(shown)
    s.figures.append(
        w.figure("op-breakdown", P.op_breakdown(sh), "Share of profiled time per op type")
    )
    if len(shown["run_uid"].unique()) < len(bd["run_uid"].unique()):
        s.notes.append(
            f"The figure shows {shown['run_uid'].nunique()} of {bd['run_uid'].nunique()} "
            "profiled runs (per family and platform: the smallest, median and largest batch "
            "of the most common configuration); tables/op-breakdown.csv has all."
        )
    wide = sh.reset_index().rename(columns={"run": "run"})
    s.tables.append(
        w.table(
            "op-breakdown-shares",
            wide,
            "Share of profiled time per op type (runs of the figure)",
            units={c: "pct" for c in sh.columns},
        )
    )
    w.table("op-breakdown", bd, "")  # every profiled run, long format
    _bound_shares(data, w, s)
    for by in ("platform", "precision", "torch_version", "threads", "mode"):
        vals = [v for v in A.speedup.values(data, by)]
        if len(vals) < 2:
            continue
        if by == "threads":
            vals = sorted(vals, key=lambda v: int(v) if v.isdigit() else 1 << 30)
        a, b = vals[0], vals[1]
        sp = A.breakdown.op_speedups(data, by, a, b)
        if not len(sp):
            continue
        s.figures.append(
            w.figure(
                f"op-speedups-{by}-{b}-over-{a}",
                P.op_speedups(sp, a, b, by),
                f"Per-op speedup of {b} over {a} ({by})",
            )
        )
        per_type = (
            sp.assign(log=np.log(sp["speedup"].astype(float)))
            .groupby("op_type")
            .agg(
                ops=("op", "size"),
                geomean=("log", "mean"),
                min=("speedup", "min"),
                max=("speedup", "max"),
            )
            .reset_index()
        )
        per_type["geomean"] = np.exp(per_type["geomean"])
        s.tables.append(
            w.table(
                f"op-speedups-{by}-{b}-over-{a}",
                per_type,
                f"Per-op speedup of {b} over {a} ({by}) by op type",
                units={"min": "times", "max": "times", "ops": "count"},
            )
        )
        w.table(f"op-speedups-{by}-{b}-over-{a}-ops", sp, "")
        break
    else:
        s.notes.append(
            "No per-op speedups: they need profiled runs of one configuration in two groups "
            "(two platforms, precisions, torch versions or thread counts)."
        )


def _bound_shares(data: A.Data, w: Writer, s: Content) -> None:
    """Per profiled run: the share of its profiled time in memory-bound and compute-bound ops
    (against the ridge of its platform's roof), with seed 000 §4.2's published shares."""
    bs = A.breakdown.bound_shares(data)
    if not len(bs):
        return
    names = {"resnet50": "ResNet-50", "transformer_base": "Transformer"}
    seed = ", ".join(
        f"{names.get(fam, fam)} ({fam}) {share:.1%}".replace(".0%", "%")
        for fam, share in A.breakdown.SEED_MEMORY_BOUND.items()
    )
    s.notes.append(
        "Memory-bound share (seed 000 §4.2): each profiled op is memory-bound when its counted "
        "intensity (FLOPs / bytes) is below the ridge of its platform's roof at the run's "
        "precision, compute-bound at or above it; the ridge is the measured roof's (`paradnn "
        "calibrate`: best matmul FLOP/s over best copy bandwidth) where both were measured, "
        "else the datasheet's ('ridge from' says which). Ops that move bytes with no counted "
        "FLOPs (copies and layout, and elementwise ops torch's FLOP counter does not count) "
        "and ops with no bytes or FLOPs counted have shares of their own; the four add to "
        "100% of the run's profiled time. The seed's published figures, measured on TPU v2 "
        f"(not here; memory-bound ops of compute-bound models, data formatting excluded): "
        f"{seed}."
    )
    why = bs[bs["reason"].notna()].drop_duplicates(["platform", "precision", "reason"])
    for r in why.itertuples():
        s.notes.append(f"{r.platform} {r.precision}: {r.reason}.")
    s.tables.append(
        w.table(
            "op-bound-shares",
            bs[BOUND_SHOWN],
            "Share of profiled time in memory-bound and compute-bound ops per profiled run, "
            "beside seed 000 §4.2's published share (TPU v2) for the models it measured",
        )
    )


def _representative(bd: pd.DataFrame, per: int = 3) -> pd.DataFrame:
    """At most `per` runs per (family, platform, precision) group, spread over batch sizes."""
    runs = bd.drop_duplicates("run_uid")
    if len(runs) <= 18:
        return bd
    keep = []
    for _, g in runs.groupby(["family", "platform", "precision"], sort=True):
        g = g.assign(_b=g["config_key"].map(lambda k: json.loads(k).get("batch", 0)))
        g = g.sort_values(["_b", "config_key", "run_uid"], kind="stable")  # ties by name
        idx = sorted({0, len(g) // 2, len(g) - 1})[:per]
        keep += list(g["run_uid"].iloc[idx])
    return bd[bd["run_uid"].isin(keep)]


SECTION = Section(
    "breakdown",
    "Where the step time goes, per op type (seed 000 Figures 3(b)/(d) and 6(b)-(c))",
    fill,
    intro=(
        "From the per-op profiles stored with runs (`--profile`): each op type's share of the "
        "run's profiled device time per step (the shares of a run add to 100%), and, where two "
        "groups of profiled runs share a configuration, each op's speedup (time in the first "
        "group over time in the second) against its counted arithmetic intensity."
    ),
    step="per-op breakdown",
)
