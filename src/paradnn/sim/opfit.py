"""Fit a device's GEMM parameters from its op micro-benchmarks (`paradnn ops`, the accelerator
study's Table 4: matmul 2048/4096/8192 and conv2d I/II/III, forward and forward+backward).

Each stored op is lowered to GEMMs exactly as the step-time model lowers a layer
(`families.lowering`: a matmul is one GEMM forward, three with its backward; a convolution is its
im2col GEMM, with dgrad and wgrad for fwd+bwd, Winograd where the base parameters allow it) and
its time is predicted with `steptime.evaluate`: per GEMM ``max(compute, memory)`` plus one kernel
overhead each. No elementwise, optimizer, master-weight or host term: the op is alone.

Fitted, by `scipy.optimize.least_squares` on ``log(predicted) − log(measured)`` (soft-L1): the
efficiency ``E_prec`` of each precision measured, ``k_half``, ``kernel_overhead_s`` and
``bw_efficiency`` — but only those the ops constrain. After each fit the standard error of every
free parameter (log space; the residual scatter, at least `NOISE_FLOOR`, over the part of its
Jacobian column the other free parameters cannot explain) is computed; the worst one above
`MAX_SE` goes back to its base value and the fit is repeated. Table 4's ops are large and
compute-bound, so on most devices the bandwidth and the per-kernel overhead stay at their base
values, and the result says so (``kept``, and the chip file's ``source``).

Held out by op name: every row of an op in ``holdout`` (its name before any ``@scale``) is left
out of the fit and predicted with the result. Torch-free and store-free: the caller passes the
``ops`` rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from paradnn.errors import ABSENT, ConfigError
from paradnn.families.lowering import lower
from paradnn.families.shapes import Conv2d, Gemm, Shape
from paradnn.precisions import itemsize
from paradnn.records import Status
from paradnn.sim import traffic as mem
from paradnn.sim.chip import Chip
from paradnn.sim.stepparams import StepParams
from paradnn.sim.steptime import (
    WINOGRAD_TILE_EXPANSION,
    Plan,
    _fast_eligible,
    _op_peak,
    evaluate,
    params_of,
)

KIND = "prediction"
HOLDOUT_OPS = ("matmul-4096", "conv2d-II")  # the middle sizes: the fit interpolates to them
NOISE_FLOOR = 0.02  # a timing's relative scatter assumed at least this, even on a perfect fit
MAX_SE = math.log(1.5)  # a parameter is fitted when the ops pin it within ×1.5 (one sigma)
STATISTICS = ("median", "min")
PARAMS = ("kernel_overhead_s", "k_half", "bw_efficiency")  # then efficiency.<precision>


def base_name(name: str) -> str:
    return str(name).split("@", 1)[0]


def op_shape(row: Mapping[str, Any]) -> Shape:
    """The `families.shapes` shape of an ``ops`` row (its ``shape`` JSON, as `paradnn ops`
    stores it: matmul ``a``/``b``; conv2d NHWC input, HWIO kernel, stride, valid padding)."""
    shape = row.get("shape")
    shape = json.loads(shape) if isinstance(shape, str) else dict(shape or {})
    name = str(row.get("name"))
    try:
        if row.get("op") == "matmul":
            (m, k), (k2, n) = shape["a"], shape["b"]
            if k != k2:
                raise ValueError("inner dimensions differ")
            return Gemm(name, int(m), int(n), int(k))
        if row.get("op") == "conv2d":
            b, h, w, c = shape["input_nhwc"]
            kh, kw, cin, cout = shape["kernel_hwio"]
            sh, sw = shape.get("stride", [1, 1])
            if kh != kw or sh != sw or cin != c or shape.get("padding", "valid") != "valid":
                raise ValueError("square kernel, equal strides, valid padding only")
            return Conv2d(name, int(b), int(c), int(cout), int(h), int(w), int(kh), int(sh))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError("ops.shape", shape, f"not a Table 4 op shape ({e})") from None
    raise ConfigError("ops.op", row.get("op"), "must be matmul or conv2d")


def op_plan(shape: Shape, train: bool, chip: Chip, precision: str, sp: StepParams) -> Plan:
    """The GEMMs of one op as a `steptime.Plan` (as `steptime.build_plan` builds a layer's, with
    no elementwise, optimizer, master-weight or host work)."""
    size = itemsize(precision)
    fast = _fast_eligible(shape) and sp.fast_conv > 1.0
    cols: dict[str, list[Any]] = {k: [] for k in ("l", "ph", "sh", "t", "q", "fb", "k", "b", "n")}
    fpeak, fbytes = [], []
    flops = 0
    for op in lower(shape, train=train):
        t, q, off = _op_peak(op, chip, precision, sp)
        b = mem.op_bytes(op, size)
        vals = (op.layer, op.phase, (op.m, op.n, op.k), t, q, off, op.k, b, op.count)
        for key, v in zip(cols, vals, strict=True):
            cols[key].append(v)
        flops += op.flops
        if fast and isinstance(shape, Conv2d):
            maps = shape.batch * (shape.in_ch + shape.out_ch) * shape.out_h * shape.out_w
            fpeak.append(t / sp.fast_conv)
            fbytes.append(b + 2 * WINOGRAD_TILE_EXPANSION * maps * size)
        else:
            fpeak.append(math.nan)
            fbytes.append(math.nan)
    return Plan(
        layer=tuple(cols["l"]),
        phase=tuple(cols["ph"]),
        shape=tuple(cols["sh"]),
        peak_s=np.array(cols["t"], dtype=float),
        quant=np.array(cols["q"], dtype=float),
        fallback=np.array(cols["fb"], dtype=bool),
        k=np.array(cols["k"], dtype=float),
        bytes=np.array(cols["b"], dtype=float),
        kernels=np.array(cols["n"], dtype=float),
        fast_peak_s=np.array(fpeak, dtype=float),
        fast_bytes=np.array(fbytes, dtype=float),
        elementwise_bytes=0.0,
        elementwise_kernels=0.0,
        optimizer_bytes=0.0,
        optimizer_kernels=0.0,
        master_bytes=0.0,
        master_kernels=0.0,
        examples=0,
        flops=flops,
        precision=precision,
        tensors=1,
        conv=np.full(len(cols["t"]), isinstance(shape, Conv2d), dtype=bool),
    )


def op_time(plan: Plan, sp: StepParams, bandwidth: float) -> float:
    """Predicted seconds of one op (no host term: the op runs alone)."""
    return evaluate(
        plan, replace(sp, host_s_per_step=0.0, host_s_per_example=0.0), bandwidth
    ).total_s


@dataclass(frozen=True)
class OpSample:
    name: str
    op: str
    pass_: str
    precision: str
    threads: int | None
    device_name: str | None
    measured_s: float
    split: str
    plan: Plan


def ok_rows(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The ok, timed ``ops`` rows; of a unit measured several times, the newest; of a thread
    sweep, only the rows at the largest thread count of each device (the ceilings' setting)."""
    df = pd.DataFrame(list(rows))
    if df.empty or not {"status", "time_s", "name", "precision", "pass"} <= set(df.columns):
        return pd.DataFrame()
    df = df[(df["status"] == Status.OK) & df["time_s"].notna() & (df["time_s"] > 0)].copy()
    if df.empty:
        return df
    if "threads" not in df.columns:
        df["threads"] = None
    most = df.groupby("device_name")["threads"].transform(
        lambda s: s.max() if s.notna().any() else None
    )
    df = df[df["threads"].isna() | (df["threads"] == most)]
    if "measured_at" in df.columns:
        df = df.sort_values("measured_at", kind="stable")
    df = df.drop_duplicates(["device_name", "name", "precision", "pass", "threads"], keep="last")
    return df.sort_values(["name", "pass", "precision"], kind="stable").reset_index(drop=True)


def samples(
    rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
    chip: Chip,
    *,
    holdout: Sequence[str] = HOLDOUT_OPS,
    base: StepParams | None = None,
    statistic: str = "median",
) -> list[OpSample]:
    """One sample per ok op row the chip has a peak for. ``statistic``: the stored median time,
    or the fastest sample (closer to an unloaded machine's time when the machine is shared)."""
    if statistic not in STATISTICS:
        raise ConfigError("--statistic", statistic, "must be one of " + ", ".join(STATISTICS))
    sp = base or params_of(chip)
    df = rows if isinstance(rows, pd.DataFrame) else ok_rows(rows)
    held = {base_name(h) for h in holdout}
    out = []
    for r in df.to_dict("records"):
        p = r["precision"]
        if chip.platform.peak(p) is None:
            continue
        t = float(r["time_s"])
        if statistic == "min":
            got = r.get("samples")
            got = json.loads(got) if isinstance(got, str) else got
            if got:
                t = float(min(got))
        thr = r.get("threads")
        out.append(
            OpSample(
                name=str(r["name"]),
                op=str(r["op"]),
                pass_=str(r["pass"]),
                precision=p,
                threads=None if thr is None or pd.isna(thr) else int(thr),
                device_name=r.get("device_name"),
                measured_s=t,
                split="holdout" if base_name(r["name"]) in held else "fit",
                plan=op_plan(op_shape(r), r["pass"] == "fwd+bwd", chip, p, sp),
            )
        )
    return out


# x = log of: kernel_overhead_s, k_half + 1, bw_efficiency, then E per precision, then the
# convolutions' efficiency per precision with conv2d rows (their rate beside the matmuls').
_LO = [math.log(1e-9), 0.0, math.log(1e-3)]
_HI = [math.log(1e-1), math.log(1e5), 0.0]
CONV_LO = math.log(1e-2)


def _bounds(precisions: list[str], convs: list[str]) -> tuple[list[float], list[float]]:
    lo = _LO + [math.log(1e-3)] * len(precisions) + [CONV_LO] * len(convs)
    return lo, _HI + [0.0] * (len(precisions) + len(convs))


def _vector(sp: StepParams, precisions: list[str], convs: Sequence[str] = ()) -> list[float]:
    x = [math.log(max(sp.kernel_overhead_s, 1e-9)), math.log(sp.k_half + 1.0)]
    x += [math.log(sp.bw_efficiency)] + [math.log(sp.eff(p)) for p in precisions]
    x += [math.log(max(sp.conv_eff(p), 1e-2)) for p in convs]
    lo, hi = _bounds(precisions, list(convs))
    return [min(max(v, a + 1e-9), b - 1e-9) for v, a, b in zip(x, lo, hi, strict=True)]


def _params(
    x: Sequence[float], precisions: list[str], base: StepParams, convs: Sequence[str] = ()
) -> StepParams:
    n = 3 + len(precisions)
    eff = dict(base.efficiency)
    eff.update({p: float(math.exp(v)) for p, v in zip(precisions, x[3:n], strict=True)})
    conv = dict(base.conv_efficiency)
    conv.update({p: float(math.exp(v)) for p, v in zip(convs, x[n:], strict=True)})
    return replace(
        base,
        kernel_overhead_s=float(math.exp(x[0])),
        k_half=float(math.exp(x[1]) - 1.0),
        bw_efficiency=float(math.exp(x[2])),
        efficiency=eff,
        conv_efficiency=conv,
    )


def standard_errors(jac: np.ndarray, scatter: float) -> np.ndarray:
    """Per column: ``scatter`` ÷ the norm of the part of the column the other columns do not
    explain (least squares); infinite when nothing is left (the data do not see the parameter)."""
    out = np.full(jac.shape[1], math.inf)
    for j in range(jac.shape[1]):
        col = jac[:, j]
        rest = np.delete(jac, j, axis=1)
        if rest.shape[1]:
            coef = np.linalg.lstsq(rest, col, rcond=None)[0]
            col = col - rest @ coef
        norm = float(np.linalg.norm(col))
        if norm > 1e-9:
            out[j] = scatter / norm
    return out


@dataclass(frozen=True)
class OpFitResult:
    params: StepParams
    precisions: tuple[str, ...]
    fitted: dict[str, float]  # parameter → its standard error as a factor (×)
    kept: dict[str, str]  # parameter → why it stayed at its base value
    fitted_rows: int
    holdout_rows: int
    holdout_ops: tuple[str, ...]
    warnings: tuple[str, ...]  # e.g. ops faster than the peak the fit is given
    cost: float
    status: str
    rows: pd.DataFrame  # every sample: name, pass, precision, split, measured, predicted, ape


def fit(
    chip: Chip,
    data: list[OpSample],
    *,
    base: StepParams | None = None,
    source: str = "fitted from op micro-benchmarks",
    holdout: Sequence[str] = HOLDOUT_OPS,
) -> OpFitResult:
    """Least squares on the log op time of the ``fit`` samples, over the parameters they
    constrain (the others keep ``base``'s values); every sample is predicted with the result."""
    from scipy.optimize import least_squares

    sp = base or params_of(chip)
    train = [s for s in data if s.split == "fit"]
    if len(train) < 2:
        raise ConfigError(
            "--db",
            ABSENT,
            f"has {len(train)} op rows to fit; a fit needs at least 2 ok op rows outside the "
            "held-out ops: measure more "
            "(`paradnn ops --db ...`) or hold fewer out (--holdout-ops)",
        )
    precisions = sorted({s.precision for s in train})
    convs = sorted({s.precision for s in train if s.op == "conv2d"})
    names = [*PARAMS, *(f"efficiency.{p}" for p in precisions)]
    names += [f"conv_efficiency.{p}" for p in convs]
    x0 = np.array(_vector(sp, precisions, convs))
    lo_, hi_ = _bounds(precisions, convs)
    lo, hi = np.array(lo_), np.array(hi_)
    bw = chip.mem_bandwidth
    meas = np.log([s.measured_s for s in train])

    def resid_full(x: np.ndarray) -> np.ndarray:
        p = _params(x, precisions, sp, convs)
        return np.log([op_time(s.plan, p, bw) for s in train]) - meas

    free = list(range(len(names)))
    kept: dict[str, str] = {}
    x = x0.copy()
    while True:

        def resid(z: np.ndarray, free: list[int] = free) -> np.ndarray:
            full = x0.copy()
            full[free] = z
            return resid_full(full)

        res = least_squares(
            resid, x0[free], bounds=(lo[free], hi[free]), loss="soft_l1", f_scale=0.1
        )
        x = x0.copy()
        x[free] = res.x
        jac = np.empty((len(train), len(free)))
        for i, j in enumerate(free):
            h = 1e-4
            up, dn = x.copy(), x.copy()
            up[j] += h
            dn[j] -= h
            jac[:, i] = (resid_full(up) - resid_full(dn)) / (2 * h)
        dof = max(len(train) - len(free), 1)
        scatter = max(float(np.sqrt(np.sum(res.fun**2) / dof)), NOISE_FLOOR)
        se = standard_errors(jac, scatter)
        worst = int(np.argmax(se))
        if se[worst] <= MAX_SE:
            break
        j = free.pop(worst)
        kept[names[j]] = (
            "no op here depends on it"
            if se[worst] > math.log(1e6)
            else f"these ops pin it only within ×{math.exp(se[worst]):.3g}"
        )
        if not free:
            x = x0.copy()
            break
    fitted_se = (
        {names[j]: float(math.exp(s)) for j, s in zip(free, se, strict=True)} if free else {}
    )
    params = _params(x, precisions, sp, convs)
    held = sorted({base_name(s.name) for s in data if s.split == "holdout"})
    kept_note = "; ".join(f"{k} kept ({v})" for k, v in kept.items())
    text = (
        f"{source}; {len(train)} op rows fitted, held out by op name: "
        f"{', '.join(held) or 'none'}; fitted: {', '.join(fitted_se) or 'nothing'}"
        + (f"; {kept_note} at {sp.source.split(';')[0]}" if kept else "")
    )
    warns = tuple(above_peak(chip, data))
    if warns:
        text += "; WARNING: " + " ".join(warns)
    params = replace(params, source=text[:2000])
    rows = []
    for s in data:
        pred = op_time(s.plan, params, bw)
        rows.append(
            {
                "op": s.name,
                "pass": s.pass_,
                "precision": s.precision,
                "threads": s.threads,
                "device_name": s.device_name,
                "split": s.split,
                "measured_s": s.measured_s,
                "predicted_s": pred,
                "ape": abs(pred - s.measured_s) / s.measured_s,
                "kind": KIND,
            }
        )
    return OpFitResult(
        params=params,
        precisions=tuple(precisions),
        fitted=fitted_se,
        kept=kept,
        fitted_rows=len(train),
        holdout_rows=len(data) - len(train),
        holdout_ops=tuple(held),
        warnings=warns,
        cost=float(res.cost),
        status=str(res.message),
        rows=pd.DataFrame(rows),
    )


def above_peak(chip: Chip, data: list[OpSample]) -> list[str]:
    """One line per precision whose fastest op beats the peak the model is given: ``E`` is at
    most 1, so no fit can match it (a measured ceiling taken too small or under load)."""
    out = []
    for p in sorted({s.precision for s in data}):
        best = max((s for s in data if s.precision == p), key=lambda s: s.plan.flops / s.measured_s)
        rate, peak = best.plan.flops / best.measured_s, chip.peak(p)
        if rate > peak:
            out.append(
                f"{p}: {best.name} {best.pass_} ran at {rate / 1e9:.3g} GFLOP/s, above the "
                f"peak used ({peak / 1e9:.3g} GFLOP/s, {chip.origin}); E cannot exceed 1: "
                "measure the peak again (`paradnn calibrate --force`, a larger --budget) or "
                "pass --platform."
            )
    return out


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per op name and split: rows and MdAPE / MAPE."""
    out = []
    for (name, split), g in rows.groupby(["op", "split"], sort=True):
        out.append(
            {
                "op": name,
                "split": split,
                "rows": len(g),
                "mdape": float(g["ape"].median()),
                "mape": float(g["ape"].mean()),
                "kind": KIND,
            }
        )
    return pd.DataFrame(out)


def device_chip(
    rows: Sequence[Mapping[str, Any]],
    ceilings: list[dict[str, Any]],
    device: str | None,
    platform: str | None,
    db: str = "the database",
) -> tuple[Chip, str, pd.DataFrame]:
    """(chip, device name, that device's ok op rows): ``platform`` if given, else the device's
    measured ceilings, else its datasheet entry. ``device`` picks one of several devices."""
    from paradnn.sim import chip as chips
    from paradnn.sim.fidelity import device_chips

    ok = ok_rows(rows)
    if ok.empty:
        raise ConfigError(
            "--db", db, f"holds no ok op micro-benchmarks: run `paradnn ops --db {db}` first"
        )
    names = sorted(set(ok["device_name"].dropna()))
    if device is None:
        if len(names) != 1:
            raise ConfigError("--device", ABSENT, "required: the op rows hold " + ", ".join(names))
        device = names[0]
    if device not in names:
        raise ConfigError("--device", device, "must be one of " + ", ".join(names))
    mine = ok[ok["device_name"] == device].reset_index(drop=True)
    if platform:
        return chips.load(platform), device, mine
    found = device_chips(mine, ceilings).get(device)
    if found is None:
        raise ConfigError(
            "--db",
            device,
            f"no chip describes this device: run `paradnn calibrate --db {db}` on it, "
            "or pass --platform",
        )
    return found, device, mine
