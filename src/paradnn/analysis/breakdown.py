"""Where a training step's time goes, by op type, and per-op speedups between two groups of runs:
seed 000's operation breakdowns (Fig. 3(b)/(d): the share of execution time per operation) and
its per-operation speedups against arithmetic intensity (Fig. 6(b)-(c)), from the per-op
profiles `paradnn run --profile` / `bench --profile` store (`op_profile`). Torch-free.

An op type is a class of aten ops (matmul, convolution, recurrent, normalization, pooling,
elementwise, softmax and loss, reduction, embedding, layout and copy, other), decided from the op
name alone (`op_type`). A share is an op type's profiled device time over the run's profiled
time of counted ops (the composite wrappers' own overhead is not in the table), so the shares of
one run add to 1; the run's measured step time is beside it, for scale.

`bound_shares` splits the same profiled time by each op's counted arithmetic intensity against
the ridge of the platform's roofline (seed 000 §4.2: even compute-bound models spend 13 %
(ResNet-50) and 19.9 % (Transformer) of their time in memory-bound ops): below the ridge is
memory-bound, at or above it compute-bound, and an op the counter gave no FLOPs or no bytes is
counted in a share of its own, never dropped.
"""

from __future__ import annotations

import json
import re

import pandas as pd

from paradnn.analysis.frames import Data, chosen_ok
from paradnn.analysis.roofline import Roof, roofs
from paradnn.analysis.speedup import pair_key

# (type, patterns on the aten name without its namespace and trailing underscore); first wins.
OP_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("matmul", (r"^(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|addbmm|addmv|mv|dot)",)),
    ("convolution", (r"conv",)),
    ("recurrent", (r"lstm", r"gru", r"rnn")),
    ("normalization", (r"norm",)),
    ("pooling", (r"pool",)),
    ("embedding", (r"embedding",)),
    ("softmax & loss", (r"softmax", r"nll_loss", r"cross_entropy", r"mse_loss", r"ctc_loss")),
    (
        "layout & copy",
        (
            r"^(t|transpose|view|reshape|permute|copy|contiguous|clone|detach|ones_like|"
            r"zeros_like|empty.*|fill|cat|stack|expand.*|as_strided|to|_to_copy|unsqueeze|"
            r"squeeze|flatten|select|slice|split.*|index.*|narrow|zero|_unsafe_view|resize)$",
        ),
    ),
    ("reduction", (r"^(sum|mean|max|min|amax|amin|prod|norm|var|std|argmax|argmin)$",)),
    (
        "elementwise",
        (
            r"^(add|sub|mul|div|sqrt|rsqrt|addcdiv|addcmul|lerp|neg|exp|log|pow|relu|threshold|"
            r"sigmoid|tanh|gelu|silu|hardtanh|clamp|where|maximum|minimum|abs|sign|reciprocal|"
            r"dropout|native_dropout|bernoulli|masked_fill|_foreach_.*)",
        ),
    ),
)
TYPE_ORDER = [t for t, _ in OP_TYPES] + ["other"]
BREAKDOWN_COLUMNS = [
    "family", "platform", "precision", "config_key", "run_uid", "op_type", "device_time_s",
    "share", "calls", "step_time_s",
]  # fmt: skip
SPEEDUP_COLUMNS = [
    "family", "config_key", "op", "op_type", "shapes", "intensity", "time_a_s", "time_b_s",
    "speedup",
]  # fmt: skip


def op_type(name: str) -> str:
    """The class of an aten op: 'aten::addmm' -> matmul, 'aten::convolution_backward' ->
    convolution, 'aten::add_' -> elementwise, anything unknown -> other."""
    base = str(name).split("::")[-1].rstrip("_").lower()
    for kind, patterns in OP_TYPES:
        if any(re.search(p, base) for p in patterns):
            return kind
    return "other"


def _profiled(data: Data) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(profile rows with op_type, the chosen ok attempts that have a profile)."""
    prof = data.op_profile
    if not len(prof) or "run_uid" not in prof or "device_time_s" not in prof:
        return pd.DataFrame(), pd.DataFrame()
    prof = prof[pd.to_numeric(prof["device_time_s"], errors="coerce").notna()].copy()
    prof["device_time_s"] = prof["device_time_s"].astype(float)
    prof["op_type"] = prof["op"].map(op_type)
    runs = chosen_ok(data)
    runs = runs[runs["uid"].isin(set(prof["run_uid"]))] if len(runs) else runs
    return prof, runs


def breakdown(data: Data) -> pd.DataFrame:
    """One row per (profiled run, op type): its device time per step and its share of the
    run's profiled time (seed 000 Fig. 3(b)/(d))."""
    prof, runs = _profiled(data)
    if not len(runs):
        return pd.DataFrame(columns=BREAKDOWN_COLUMNS)
    prof = prof[prof["run_uid"].isin(set(runs["uid"]))]
    g = prof.groupby(["run_uid", "op_type"], as_index=False).agg(
        device_time_s=("device_time_s", "sum"), calls=("calls", "sum")
    )
    total = g.groupby("run_uid")["device_time_s"].transform("sum")
    g["share"] = g["device_time_s"] / total.where(total > 0)
    info = runs.set_index("uid")[["family", "platform", "precision", "config_key", "step_time_s"]]
    out = g.join(info, on="run_uid")
    out["_o"] = out["op_type"].map(TYPE_ORDER.index)
    out["_b"] = out["config_key"].map(lambda k: _batch(k))
    # every key named (the run last): two runs of one config keep one order on any machine
    out = out.sort_values(["family", "platform", "precision", "_b", "config_key", "run_uid", "_o"])
    return out[BREAKDOWN_COLUMNS].reset_index(drop=True)


def _batch(key: str) -> float:
    try:
        return float(json.loads(key).get("batch", 0))
    except (TypeError, ValueError, AttributeError):
        return 0.0


def shares(bd: pd.DataFrame) -> pd.DataFrame:
    """Runs as rows, op types as columns (shares adding to 1 per run), labelled for a figure."""
    if not len(bd):
        return pd.DataFrame()
    label = bd.apply(_label, axis=1)
    wide = bd.assign(run=label).pivot_table(
        index="run", columns="op_type", values="share", aggfunc="sum", sort=False
    )
    return wide[[t for t in TYPE_ORDER if t in wide.columns]].fillna(0.0)


def _label(r) -> str:
    try:
        cfg = json.loads(r["config_key"])
    except (TypeError, ValueError):
        cfg = {}
    keys = (["batch"] if "batch" in cfg else []) + [k for k in cfg if k != "batch"][:3]
    hp = " ".join(f"{k}={cfg[k]}" for k in keys)
    return f"{r['family']} {hp} ({r['platform']}, {r['precision']})"[:90]


def op_speedups(data: Data, by: str, a: str, b: str) -> pd.DataFrame:
    """Per-op speedup of group `b` over group `a` (time in a over time in b) for every op with
    the same name and input shapes in two profiled runs of one configuration (paired as
    `analysis.speedup` pairs runs), with the op's arithmetic intensity (seed 000 Fig. 6(b)-(c))."""
    prof, runs = _profiled(data)
    if not len(runs) or by not in runs:
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    label = runs[by].astype(str)
    ga, gb = runs[label == str(a)], runs[label == str(b)]
    if not len(ga) or not len(gb):
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    key = pair_key(by, ga, gb)
    m = ga[[*key, "uid"]].merge(gb[[*key, "uid"]], on=key, suffixes=("_a", "_b"))
    if not len(m):
        return pd.DataFrame(columns=SPEEDUP_COLUMNS)
    prof = prof.assign(shapes=prof["shapes"].map(_shape_text) if "shapes" in prof else "")
    per_op = prof.groupby(["run_uid", "op", "shapes"], as_index=False).agg(
        time=("device_time_s", "sum"),
        op_type=("op_type", "first"),
        flops=("flops", "sum"),
        nbytes=("bytes", "sum"),
    )
    rows = []
    for r in m.itertuples(index=False):
        pa = per_op[per_op["run_uid"] == r.uid_a]
        pb = per_op[per_op["run_uid"] == r.uid_b]
        j = pa.merge(pb, on=["op", "shapes"], suffixes=("_a", "_b"))
        j = j[(j["time_a"] > 0) & (j["time_b"] > 0)]
        for o in j.itertuples(index=False):
            inten = o.flops_a / o.nbytes_a if o.nbytes_a and o.flops_a else None
            rows.append(
                {
                    "family": r.family,
                    "config_key": r.config_key,
                    "op": o.op,
                    "op_type": o.op_type_a,
                    "shapes": o.shapes,
                    "intensity": inten,
                    "time_a_s": o.time_a,
                    "time_b_s": o.time_b,
                    "speedup": o.time_a / o.time_b,
                }
            )
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)


# Seed 000 §4.2 (TPU v2, TensorFlow): share of step time in memory-bound ops of two
# compute-bound real models, as published (not measured here); keyed by our zoo's family name.
SEED_MEMORY_BOUND = {"resnet50": 0.13, "transformer_base": 0.199}
SEED_MEMORY_BOUND_SOURCE = "seed 000 §4.2, TPU v2 (published figure, not measured here)"
BOUND_COLUMNS = [
    "family", "platform", "precision", "config_key", "run_uid", "roof", "ridge",
    "memory_bound", "compute_bound", "no_flops", "unclassified", "profiled_s", "ops",
    "untimed_ops", "reason", "seed_memory_bound",
]  # fmt: skip


def ridge_roof(data: Data, platform: str, precision: str) -> Roof | None:
    """The roof whose ridge splits memory- from compute-bound ops: the measured one (`paradnn
    calibrate`) where it has both a peak and a bandwidth, else the datasheet one, else None."""
    found = {r.kind: r for r in roofs(data, platform, precision) if r.ridge}
    return found.get("measured") or found.get("datasheet")


def bound_class(flops, nbytes, ridge: float | None) -> str:
    """'memory' (intensity below the ridge), 'compute' (at or above it: the op can reach the
    peak), 'no_flops' (bytes moved, no FLOPs counted: data movement, and elementwise ops
    torch's FLOP counter does not count), 'unclassified' (no bytes or no FLOP count, or no
    ridge to compare with)."""
    f, b = _num(flops), _num(nbytes)
    if f is None or b is None or b <= 0:
        return "unclassified"
    if f <= 0:
        return "no_flops"
    if ridge is None:
        return "unclassified"
    return "memory" if f / b < ridge else "compute"


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if x == x else None  # NaN: not counted


def bound_shares(data: Data) -> pd.DataFrame:
    """One row per profiled run: the shares of its profiled time in memory-bound ops (counted
    intensity below the ridge), compute-bound ops (at or above it), ops that move bytes with
    no counted FLOPs, and unclassified ops (no bytes or FLOPs counted); they add to 1 over the
    ops with a time. The ridge is the measured roof's where present, else the datasheet's
    (`roof` says which); with neither, memory_bound and compute_bound are null with a reason.
    Ops without a time are counted in `untimed_ops`. The seed's published share sits beside
    the models it measured (resnet50, transformer_base)."""
    prof = data.op_profile
    if not len(prof) or "run_uid" not in prof or "device_time_s" not in prof:
        return pd.DataFrame(columns=BOUND_COLUMNS)
    runs = chosen_ok(data)
    runs = runs[runs["uid"].isin(set(prof["run_uid"]))] if len(runs) else runs
    if not len(runs):
        return pd.DataFrame(columns=BOUND_COLUMNS)
    rows, cache = [], {}
    by_run = {uid: g for uid, g in prof.groupby("run_uid", sort=False)}
    for r in runs.itertuples(index=False):
        key = (str(r.platform), str(r.precision))
        if key not in cache:
            cache[key] = ridge_roof(data, *key)
        roof = cache[key]
        ridge = roof.ridge if roof else None
        ops = by_run[r.uid]
        t = pd.to_numeric(ops["device_time_s"], errors="coerce")
        timed = ops[t.notna()]
        t = t[t.notna()].astype(float)
        flops = timed["flops"] if "flops" in timed else pd.Series(None, index=timed.index)
        nbytes = timed["bytes"] if "bytes" in timed else pd.Series(None, index=timed.index)
        kind = [bound_class(f, b, ridge) for f, b in zip(flops, nbytes, strict=True)]
        per = t.groupby(pd.Series(kind, index=t.index, dtype=object)).sum()
        total = float(t.sum())
        share = {k: (float(per.get(k, 0.0)) / total if total > 0 else None) for k in
                 ("memory", "compute", "no_flops", "unclassified")}  # fmt: skip
        reason = None
        if roof is None:
            reason = "no roof: no datasheet entry matches and no `paradnn calibrate` ceilings"
            share["memory"] = share["compute"] = None
        elif total <= 0:
            reason = "no profiled time"
        rows.append(
            {
                "family": r.family,
                "platform": r.platform,
                "precision": r.precision,
                "config_key": r.config_key,
                "run_uid": r.uid,
                "roof": roof.kind if roof else None,
                "ridge": ridge,
                "memory_bound": share["memory"],
                "compute_bound": share["compute"],
                "no_flops": share["no_flops"],
                "unclassified": share["unclassified"],
                "profiled_s": total,
                "ops": len(ops),
                "untimed_ops": int(len(ops) - len(timed)),
                "reason": reason,
                "seed_memory_bound": SEED_MEMORY_BOUND.get(str(r.family)),
            }
        )
    out = pd.DataFrame(rows, columns=BOUND_COLUMNS)
    out["_b"] = out["config_key"].map(_batch)
    out = out.sort_values(["family", "platform", "precision", "_b", "config_key", "run_uid"])
    return out[BOUND_COLUMNS].reset_index(drop=True)


def _shape_text(v) -> str:
    if isinstance(v, str):
        return v
    return json.dumps(v, separators=(",", ":")) if v is not None else ""


__all__ = [
    "BOUND_COLUMNS",
    "BREAKDOWN_COLUMNS",
    "SEED_MEMORY_BOUND",
    "bound_class",
    "bound_shares",
    "breakdown",
    "op_speedups",
    "op_type",
    "ridge_roof",
    "shares",
]
