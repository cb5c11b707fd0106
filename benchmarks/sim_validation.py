"""How well does the step-time model (`paradnn.sim.steptime`) predict measured step times?

Per dataset, the error of the predicted step time (APE = |predicted − measured| ÷ measured;
MdAPE, p90 and n) four ways (issue 35, item 5):

* **datasheet-only** — the device's datasheet peaks and bandwidth (for our own CPU, which has
  no datasheet: its `paradnn calibrate` ceilings), the step model's default parameters by device
  kind and whatever host profile `steptime.predict_step` uses by default. Nothing fitted.
* **fitted, held out** — the step parameters `stepparams.FITTED` (per-kernel overhead, E per
  precision, k_half, bandwidth efficiency) fitted per device on 70 % of its rows, the error
  taken on the other 30 %. The split: rows sorted by (family, precision, config), then
  ``numpy.random.default_rng(SEED).permutation``; the first round(0.3 n) are held out, per
  device (and per family where a dataset says so). The fit is `sim.fit`'s objective (least
  squares on log predicted − log measured, soft-L1, f_scale 0.1, same bounds) evaluated through
  `steptime.predict_step`, so a multi-chip board keeps its all-reduce term.
* **cross-device** — fitted on every row of device A, predicted on device B at the same
  precision (B's datasheet and defaults with A's fitted values), every ordered pair.
* **roofline** — `sim.model.predict` (`--model roofline`), for contrast.

Datasets (all committed under benchmarks/data/, so CI needs only the repo):

* seed 002 Table 8 (PERF, samples/s; Titan X, P100, V100 fp32, V100 mixed precision, Radeon VII,
  TPU v2-8/v3-8, Xeon 8163), mapped as ../shared/reference/sim-vs-papers/ did (DeepSpeech2 at
  400 frames, the Transformer at length 512 with batch = tokens ÷ 512, TPU batches global over
  4 chips); step time = examples per step ÷ the paper's throughput;
* our CPU sweep (benchmarks/data/sim_validation_cpu_runs.csv: 78 configs FC/CNN/RNN, fp32,
  RMSprop, 1 thread, fastest sample of two passes, AMD EPYC, torch 2.13.0+cpu, 2026-11-25);
* our first GPU run (benchmarks/data/sim_validation_h100_runs.csv, exported from
  benchmarks/results/gpu/nvidia-h100-80gb-hbm3/work/runs.sqlite: 19 runs on an H100 80GB HBM3,
  torch 2.11.0+cu130).

No other public GPU measurements are used; the FC results of cissieAB/pytorch-paradnn are held
out for an independent check and must not be used here.

    python benchmarks/sim_validation.py [--write-bands] [--datasets NAME ...]

Writes benchmarks/results/sim_validation.{json,md}; with --write-bands also
src/paradnn/sim/error_bands.json (the datasheet-only error per device kind, for what-if rows).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paradnn import families
from paradnn.sim import chip as sim_chip
from paradnn.sim import model as sim_model
from paradnn.sim import steptime
from paradnn.sim.chip import Chip
from paradnn.sim.stepparams import FITTED, StepParams

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CHIPS = HERE / "chips"
DATA = HERE / "data"
TABLE8_CSV = DATA / "sim_validation_table8.csv"
RUNS_CSV = DATA / "sim_validation_cpu_runs.csv"
CEILINGS_JSON = DATA / "sim_validation_cpu_ceilings.json"
H100_CSV = DATA / "sim_validation_h100_runs.csv"
H100_CEILINGS = DATA / "sim_validation_h100_ceilings.json"
H100_DB = HERE / "results" / "gpu" / "nvidia-h100-80gb-hbm3" / "work" / "runs.sqlite"
OUT_JSON = HERE / "results" / "sim_validation.json"
OUT_MD = HERE / "results" / "sim_validation.md"
BANDS_JSON = ROOT / "src" / "paradnn" / "sim" / "error_bands.json"

SEED = 35
HOLDOUT = 0.30
MIN_FIT = 5  # as sim.fit: a fit needs at least 5 rows
METHODS = ("datasheet", "fitted_holdout", "cross_device", "roofline")
METHOD_LABEL = {
    "datasheet": "datasheet-only",
    "fitted_holdout": "fitted 70 %, held-out 30 %",
    "cross_device": "cross-device",
    "roofline": "roofline",
}

# Issue 35's targets. The GPU ones are set on the held-out public GPU set (A100/T4, checked
# independently); beside our GPU datasets they are shown for reference with the distance.
GPU_TARGETS = {"datasheet": 0.25, "fitted_holdout": 0.10, "cross_device": 0.12}
CPU_FAMILY_TARGET = 0.15  # every family, held out
TPU_TARGET = 0.40  # seed 002 Table 8 TPUs, datasheet-only, on throughput as the seed reports it
TRANSFER_FP16_TARGET = 0.30  # fp32 → fp16 transfer (MAPE on throughput, as issue 35's 127 %)

# Seed 002 Table 8 device → (platform id or chip file, precision, chips).
T8_PLATFORMS = {
    "Titan X": (str(CHIPS / "titan-x-pascal-2019.toml"), "fp32", 1),
    "Radeon VII": ("radeon-vii", "fp32", 1),
    "P100": (str(CHIPS / "p100-pcie.toml"), "fp32", 1),
    "V100": (str(CHIPS / "v100-pcie.toml"), "fp32", 1),
    "V100(MP)": (str(CHIPS / "v100-pcie.toml"), "fp16", 1),
    "TPU V2": ("tpu-v2", "bf16", 4),
    "TPU V3": ("tpu-v3", "bf16", 4),
    "CPU": (str(CHIPS / "xeon-8163-12c.toml"), "fp32", 1),
}
T8_SOURCE = (
    "seed 002 Table 8 'End-to-end Experimental Results', PERF samples/s "
    "(benchmarks/data/sim_validation_table8.csv); chips: benchmarks/chips/ and the platform "
    "database"
)
T8_DATASETS = {
    "seed002-t8-nvidia-fp32": ("gpu", ("Titan X", "P100", "V100")),
    "seed002-t8-v100-fp16": ("gpu", ("V100(MP)",)),
    "seed002-t8-radeon-vii-fp32": ("gpu", ("Radeon VII",)),
    "seed002-t8-tpu-bf16": ("tpu", ("TPU V2", "TPU V3")),
    "seed002-t8-xeon-fp32": ("cpu", ("CPU",)),
}
OUR_DATASETS = ("cpu-sweep-epyc", "h100-run")
DATASETS = (*T8_DATASETS, *OUR_DATASETS)


# ---------------------------------------------------------------------------------------------
# Cases: one measured step each, with what it takes to predict it.


@dataclass(frozen=True)
class Case:
    dataset: str
    device: str
    kind: str  # cpu | gpu | tpu
    family: str
    config: Mapping[str, Any]
    precision: str
    measured_s: float
    chip: Chip = field(repr=False)
    optimizer: str = "rmsprop"
    chips: int = 1
    topology: str | None = None
    group: str = ""  # the split is drawn per device and group
    paper: float | None = None  # seed 002's throughput (samples/s), Table 8 only

    @property
    def key(self) -> str:
        return json.dumps([self.family, self.precision, dict(sorted(self.config.items()))])


def _topo(case: Case) -> Any:
    if case.topology is None:
        return None
    from paradnn.sim.interconnect import parse_topology

    return parse_topology(case.topology)


def predict(case: Case, params: StepParams | None = None, chip: Chip | None = None) -> float:
    """The step model's step time (seconds) for ``case``, on its own chip unless ``chip``."""
    p = steptime.predict_step(
        case.family,
        dict(case.config),
        chip or case.chip,
        case.precision,
        optimizer=case.optimizer,
        chips=case.chips,
        topology=_topo(case),
        params=params,
    )
    return float(p.predicted_step_s)


def roofline(case: Case) -> float:
    p = sim_model.predict(
        case.family,
        dict(case.config),
        case.chip,
        case.precision,
        optimizer=case.optimizer,
        chips=case.chips,
        topology=_topo(case),
    )
    return float(p.predicted_step_s)


SKIPPED: list[dict[str, Any]] = []  # rows the model refused, with its reason (run() reports them)


def _try(fn: Callable[..., float], *args: Any) -> tuple[float | None, str | None]:
    """(value, None), or (None, the error) when the model refuses a case: a row the model
    cannot predict is reported with its reason, never counted as an error of 0 or dropped
    silently."""
    try:
        return fn(*args), None
    except Exception as e:  # any refusal of the model is reported per row
        return None, f"{type(e).__name__}: {e}"


def _t8_config(model: str, batch: int, chips: int) -> tuple[dict[str, Any], int]:
    """(per-chip config, samples per example), as the audit mapped Table 8."""
    if model == "transformer_base":
        per_chip = batch // chips
        length = 512 if per_chip >= 512 else per_chip
        return {"batch": per_chip // length, "length": length}, length
    if model == "deepspeech2":
        return {"batch": batch // chips, "frames": 400}, 1
    return {"batch": batch // chips}, 1


def table8_cases(name: str) -> list[Case]:
    kind, devices = T8_DATASETS[name]
    table = pd.read_csv(TABLE8_CSV)
    out = []
    for device in devices:
        plat, precision, chips = T8_PLATFORMS[device]
        chip = sim_chip.load(plat)
        for r in table[table["device"] == device].to_dict("records"):
            cfg, mult = _t8_config(r["model"], int(r["batch"]), chips)
            c = Case(
                dataset=name,
                device=device,
                kind=kind,
                family=r["model"],
                config=cfg,
                precision=precision,
                measured_s=math.nan,
                chip=chip,
                chips=chips,
                topology="torus2d:2x2" if chips == 4 else None,
                paper=float(r["samples_per_s"]),
            )
            # a step runs examples × chips × samples-per-example; the paper gives samples/s
            try:
                fam = families.get(c.family)
                per_step = fam.examples_per_step(fam.config(dict(cfg))) * chips * mult
            except Exception as e:  # reported, see SKIPPED
                SKIPPED.append(
                    {
                        "dataset": name,
                        "device": device,
                        "model": c.family,
                        "reason": f"{type(e).__name__}: {e}",
                    }
                )
                continue
            out.append(replace(c, measured_s=per_step / c.paper))
    return out


def _runs_frame(csv: Path) -> pd.DataFrame:
    f = pd.read_csv(csv)
    f["config"] = f["config"].map(json.loads)
    return f


def _best_of_passes(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """One row per config: of several passes of a sweep, the fastest (the least disturbed)."""
    ok = frame[(frame["status"] == "ok") & frame[column].notna()].copy()
    if "procs" in ok:
        ok = ok[ok["procs"].fillna(1).astype(int) == 1]
    ok[column] = ok.groupby("run_key")[column].transform("min")
    return ok.drop_duplicates("run_key", keep="first")


def sweep_cases(
    name: str, frame: pd.DataFrame, chip: Chip, kind: str, column: str, *, by_family: bool
) -> list[Case]:
    out = []
    for r in _best_of_passes(frame, column).to_dict("records"):
        if chip.platform.peak(r["precision"]) is None:
            continue
        cfg = r["config"] if isinstance(r["config"], Mapping) else json.loads(r["config"])
        out.append(
            Case(
                dataset=name,
                device=str(r["device_name"]),
                kind=kind,
                family=r["family"],
                config=dict(cfg),
                precision=r["precision"],
                measured_s=float(r[column]),
                chip=chip,
                optimizer=r.get("optimizer") or "rmsprop",
                group=r["family"] if by_family else "",
            )
        )
    return out


def cpu_cases() -> list[Case]:
    from paradnn.sim.fidelity import device_chips

    frame = _runs_frame(RUNS_CSV)
    ceilings = json.loads(CEILINGS_JSON.read_text())
    chip = device_chips(frame, ceilings)["AMD EPYC"]
    # fastest sample: the closest to an unshared machine's step (issue 19's choice)
    return sweep_cases("cpu-sweep-epyc", frame, chip, "cpu", "step_time_min_s", by_family=True)


def h100_cases() -> list[Case]:
    from paradnn import platforms

    frame = _runs_frame(H100_CSV)
    name = str(frame["device_name"].dropna().iloc[0])
    plat = platforms.match(name)
    chip = sim_chip.from_platform(plat)  # the datasheet: h100-sxm
    return sweep_cases("h100-run", frame, chip, "gpu", "step_time_s", by_family=False)


def cases_of(name: str) -> list[Case]:
    if name in T8_DATASETS:
        return table8_cases(name)
    if name == "cpu-sweep-epyc":
        return cpu_cases()
    if name == "h100-run":
        return h100_cases()
    raise ValueError(name)


# ---------------------------------------------------------------------------------------------
# The split, the fit and the errors.


def split(cases: Sequence[Case], seed: int = SEED, holdout: float = HOLDOUT) -> list[str]:
    """ "fit" or "holdout" per case: per (device, group), the cases in key order, permuted by
    ``default_rng(seed)``; the first round(holdout × n) are held out. Same input, same split."""
    out = ["fit"] * len(cases)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, c in enumerate(cases):
        groups.setdefault((c.device, c.group), []).append(i)
    for _, idx in sorted(groups.items()):
        idx = sorted(idx, key=lambda i: cases[i].key)
        perm = np.random.default_rng(seed).permutation(len(idx))
        for j in perm[: round(holdout * len(idx))]:
            out[idx[j]] = "holdout"
    return out


# log-space bounds of the scalar fitted parameters (sim.fit's); k_half is fitted as k_half + 1
_BOUNDS = {
    "kernel_overhead_s": (1e-8, 1e-1),
    "k_half": (1.0, 1e5 + 1.0),
    "bw_efficiency": (1e-3, 1.0),
}
_EFF_BOUNDS = (1e-3, 1.0)


def _layout(base: StepParams, precisions: Iterable[str]) -> list[tuple[str, str | None]]:
    """The free parameters: (name, None) for a scalar of `FITTED`, (name, precision) for a
    per-precision mapping such as ``efficiency``. Keys added to FITTED later are picked up."""
    out: list[tuple[str, str | None]] = []
    for name in FITTED:
        v = getattr(base, name, None)
        if isinstance(v, Mapping):
            out += [(name, p) for p in sorted(precisions)]
        elif isinstance(v, (int, float)) and (name in _BOUNDS or v > 0):
            out.append((name, None))
    return out


def _bounds(base: StepParams, name: str, sub: str | None) -> tuple[float, float]:
    if sub is not None:
        return _EFF_BOUNDS
    if name in _BOUNDS:
        return _BOUNDS[name]
    v = float(getattr(base, name))
    return v / 1e3, v * 1e3


def _value(base: StepParams, name: str, sub: str | None) -> float:
    if sub is not None:
        return base.eff(sub) if name == "efficiency" else float(getattr(base, name).get(sub, 1.0))
    v = float(getattr(base, name))
    return v + 1.0 if name == "k_half" else v


def _apply(base: StepParams, layout: list[tuple[str, str | None]], x: np.ndarray) -> StepParams:
    new: dict[str, Any] = {}
    for (name, sub), v in zip(layout, np.exp(x), strict=True):
        if sub is not None:
            d = dict(new.get(name, getattr(base, name)))
            d[sub] = float(v)
            new[name] = d
        else:
            new[name] = float(v) - 1.0 if name == "k_half" else float(v)
    return replace(base, **new)


def fit_params(
    cases: Sequence[Case],
    base: StepParams,
    predictor: Callable[[Case, StepParams], float] = predict,
) -> StepParams:
    """Least squares on log(predicted) − log(measured) over ``cases`` (soft-L1, f_scale 0.1),
    as `sim.fit` does, with ``predictor`` giving the step time under candidate parameters."""
    from scipy.optimize import least_squares

    layout = _layout(base, {c.precision for c in cases})
    lo = np.log([_bounds(base, n, s)[0] for n, s in layout])
    hi = np.log([_bounds(base, n, s)[1] for n, s in layout])
    x0 = np.log([max(_value(base, n, s), 1e-12) for n, s in layout])
    x0 = np.clip(x0, lo + 1e-9, hi - 1e-9)
    meas = np.log([c.measured_s for c in cases])

    def residuals(x: np.ndarray) -> np.ndarray:
        p = _apply(base, layout, x)
        return np.log([predictor(c, p) for c in cases]) - meas

    res = least_squares(residuals, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1)
    fitted = _apply(base, layout, res.x)
    return replace(fitted, source=f"fitted on {len(cases)} rows by benchmarks/sim_validation.py")


def transplant(fitted: StepParams, onto: StepParams) -> StepParams:
    """``onto`` (device B's defaults: its tile, unit count, …) with A's fitted values."""
    return replace(onto, **{k: getattr(fitted, k) for k in FITTED if hasattr(fitted, k)})


def stats(apes: Sequence[float]) -> dict[str, Any]:
    """MdAPE, p90 and n of a list of APEs (fractions); None figures when there are none."""
    a = [x for x in apes if x is not None and math.isfinite(x)]
    if not a:
        return {"mdape": None, "p90": None, "mape": None, "n": 0}
    return {
        "mdape": float(np.median(a)),
        "p90": float(np.percentile(a, 90)),
        "mape": float(np.mean(a)),
        "n": len(a),
    }


def _ape(pred: float | None, meas: float) -> float | None:
    return None if pred is None else abs(pred - meas) / meas


def _ape_thr(pred: float | None, meas: float) -> float | None:
    """The same error on throughput (1/step), as seed 002 reports and issue 35 quotes it."""
    return None if pred is None else abs(meas / pred - 1.0)


def evaluate_dataset(
    cases: Sequence[Case],
    *,
    seed: int = SEED,
    holdout: float = HOLDOUT,
    cross_pairs: Sequence[tuple[str, str]] | None = None,
    predictor: Callable[[Case, StepParams | None], float] = predict,
    roof: Callable[[Case], float] | None = roofline,
) -> dict[str, Any]:
    """Every method's per-row predictions and its summary for one dataset's cases."""
    splits = split(cases, seed, holdout)
    rows = []
    for c, s in zip(cases, splits, strict=True):
        sheet, err = _try(predictor, c, None)
        roof_s, roof_err = _try(roof, c) if roof else (None, None)
        rows.append(
            {
                "device": c.device,
                "family": c.family,
                "config": json.dumps(dict(c.config), sort_keys=True),
                "precision": c.precision,
                "split": s,
                "measured_s": c.measured_s,
                "paper_samples_per_s": c.paper,
                "datasheet_s": sheet,
                "fitted_s": None,
                "roofline_s": roof_s,
                "refused": err or roof_err,
            }
        )
    fits: dict[str, Any] = {}
    devices = sorted({c.device for c in cases})
    for dev in devices:
        idx = [i for i, c in enumerate(cases) if c.device == dev]
        train = [cases[i] for i in idx if splits[i] == "fit" and rows[i]["datasheet_s"]]
        base = steptime.params_of(cases[idx[0]].chip)
        if len(train) < MIN_FIT:
            fits[dev] = {"fitted": None, "reason": f"{len(train)} rows to fit, need {MIN_FIT}"}
            continue
        try:
            p = fit_params(train, base, predictor)
        except Exception as e:  # a failed fit is reported, not a crash
            fits[dev] = {"fitted": None, "reason": f"{type(e).__name__}: {e}"}
            continue
        fits[dev] = {"fitted": _param_summary(p), "fit_rows": len(train)}
        for i in idx:
            if splits[i] == "holdout":
                rows[i]["fitted_s"] = _try(predictor, cases[i], p)[0]
    cross = []
    for a, b in cross_pairs or []:
        ok = [r["datasheet_s"] is not None for r in rows]
        ca = [c for c, good in zip(cases, ok, strict=True) if c.device == a and good]
        cb = [c for c in cases if c.device == b]
        if len(ca) < MIN_FIT or not cb:
            continue
        try:
            pa = fit_params(ca, steptime.params_of(ca[0].chip), predictor)
        except Exception:  # the pair is left out; its device's fit says why
            continue
        pb = transplant(pa, steptime.params_of(cb[0].chip))
        for c in cb:
            pred = _try(predictor, c, pb)[0]
            if pred is None:
                continue
            cross.append(
                {
                    "from": a,
                    "to": b,
                    "family": c.family,
                    "config": json.dumps(dict(c.config)),
                    "measured_s": c.measured_s,
                    "predicted_s": pred,
                    "ape": _ape(pred, c.measured_s),
                }
            )
    for r in rows:
        r["ape_datasheet"] = _ape(r["datasheet_s"], r["measured_s"])
        r["ape_fitted"] = _ape(r["fitted_s"], r["measured_s"])
        r["ape_roofline"] = _ape(r["roofline_s"], r["measured_s"])
    held = [r for r in rows if r["split"] == "holdout"]
    methods = {
        "datasheet": stats([r["ape_datasheet"] for r in rows]),
        "fitted_holdout": stats([r["ape_fitted"] for r in held]),
        "cross_device": stats([r["ape"] for r in cross]) if cross_pairs else None,
        "roofline": stats([r["ape_roofline"] for r in rows]) if roof else None,
    }
    by_family = {}
    for fam in sorted({r["family"] for r in rows}):
        mine = [r for r in rows if r["family"] == fam]
        by_family[fam] = {
            "datasheet": stats([r["ape_datasheet"] for r in mine]),
            "fitted_holdout": stats([r["ape_fitted"] for r in mine if r["split"] == "holdout"]),
            "roofline": stats([r["ape_roofline"] for r in mine]) if roof else None,
        }
    by_device = {
        dev: {
            "datasheet": stats([r["ape_datasheet"] for r in rows if r["device"] == dev]),
            "fitted_holdout": stats([r["ape_fitted"] for r in held if r["device"] == dev]),
        }
        for dev in devices
    }
    out = {
        "n": len(rows),
        "split": {
            "seed": seed,
            "holdout_fraction": holdout,
            "fit_rows": splits.count("fit"),
            "holdout_rows": splits.count("holdout"),
        },
        "methods": methods,
        "by_family": by_family,
        "by_device": by_device,
        "fits": fits,
        "cross_pairs": [list(p) for p in cross_pairs or []],
        "refused": [r for r in rows if r["refused"]],
        "rows": rows,
        "cross_rows": cross,
    }
    if any(c.paper is not None for c in cases):
        out["throughput"] = {
            "datasheet": stats([_ape_thr(r["datasheet_s"], r["measured_s"]) for r in rows]),
            "fitted_holdout": stats(
                [_ape_thr(r["fitted_s"], r["measured_s"]) for r in held if r["fitted_s"]]
            ),
            "cross_device": stats([_ape_thr(r["predicted_s"], r["measured_s"]) for r in cross])
            if cross_pairs
            else None,
            "roofline": stats([_ape_thr(r["roofline_s"], r["measured_s"]) for r in rows])
            if roof
            else None,
        }
    return out


def _param_summary(p: StepParams) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in FITTED:
        v = getattr(p, k, None)
        out[k] = dict(v) if isinstance(v, Mapping) else v
    return out


def transfer(cases: Sequence[Case], pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Habitat's setting on datasheet + defaults: measured on A × predicted(B) ÷ predicted(A),
    errors on throughput (as issue 35 quotes the fp32 → fp16 figure) and on step time."""
    idx = {(c.device, c.family, json.dumps(dict(c.config), sort_keys=True)): c for c in cases}
    thr, step = [], []
    for a, b in pairs:
        for (d, fam, cfg), ca in idx.items():
            cb = idx.get((b, fam, cfg))
            if d != a or cb is None:
                continue
            pa, pb = _try(predict, ca)[0], _try(predict, cb)[0]
            if not pa or not pb:
                continue
            est = ca.measured_s * pb / pa
            step.append(_ape(est, cb.measured_s))
            thr.append(_ape_thr(est, cb.measured_s))
    return {"pairs": [list(p) for p in pairs], "throughput": stats(thr), "step": stats(step)}


# ---------------------------------------------------------------------------------------------
# Seed 000's multi-chip figures (issue 19's checks, kept): not step-time datasets, no split.

SEED000_OVERHEAD = 0.13  # §4: "up to 13 % for CNNs with sizes similar to ResNet-50"


def multichip() -> dict[str, Any]:
    """The all-reduce's share of a ResNet-50 step on a TPU v2-8 (4 chips, 2×2), per-chip batch
    16–256 (seed 000's CNN batch range taken as global); "up to" read as the most."""
    from paradnn.sim.interconnect import parse_topology

    chip = sim_chip.load("tpu-v2")
    topo = parse_topology("torus2d:2x2")
    shares = {}
    for b in (16, 32, 64, 128, 256):
        p = steptime.predict_step("resnet50", {"batch": b}, chip, "bf16", chips=4, topology=topo)
        shares[b] = p.comm_s / p.predicted_step_s
    most = max(shares.values())
    return {
        "paper": SEED000_OVERHEAD,
        "predicted_max": most,
        "ratio_max": most / SEED000_OVERHEAD,
        "share_by_batch_per_chip": shares,
    }


def small_fc() -> dict[str, Any]:
    """Seed 000 §4.3 (qualitative): small FCs (≥ 256 nodes, batch ≤ 512) run faster on one TPU
    v2 core than on the 8-core board. Same global batch: one core (benchmarks/chips/
    tpu-v2-1core.toml) against 4 chips × 2 cores at a quarter of it per chip."""
    from paradnn.sim.interconnect import parse_topology

    one = sim_chip.load(str(CHIPS / "tpu-v2-1core.toml"))
    board = sim_chip.load("tpu-v2")
    topo = parse_topology("torus2d:2x2")
    faster = total = 0
    for nodes in (256, 512, 1024, 2048, 4096, 8192):
        for layers in (4, 8, 16, 32):
            for batch in (64, 128, 256, 512):
                cfg = {"layers": layers, "nodes": nodes, "batch": batch}
                a = steptime.predict_step("fc", cfg, one, "bf16").predicted_step_s
                per_chip = {**cfg, "batch": batch // 4}
                b = steptime.predict_step(
                    "fc", per_chip, board, "bf16", chips=4, topology=topo
                ).predicted_step_s
                total += 1
                faster += a < b
    return {"configs": total, "faster_on_one_core": faster, "paper": "they are (seed 000 §4.3)"}


# ---------------------------------------------------------------------------------------------
# Whole run, bands, output.

CROSS = {
    "seed002-t8-nvidia-fp32": [
        (a, b) for a in ("Titan X", "P100", "V100") for b in ("Titan X", "P100", "V100") if a != b
    ],
    "seed002-t8-tpu-bf16": [("TPU V2", "TPU V3"), ("TPU V3", "TPU V2")],
}
SOURCES = {
    **{k: T8_SOURCE for k in T8_DATASETS},
    "cpu-sweep-epyc": (
        "our CPU sweep: benchmarks/data/sim_validation_cpu_runs.csv (78 configs: FC 36, CNN 18, "
        "RNN 24; fp32, RMSprop, 1 thread; two passes, the fastest sample of the faster; AMD "
        "EPYC, shared 2-core VM, AVX-512 with bf16, torch 2.13.0+cpu, idle machine, "
        "2026-11-25); peaks and bandwidth from its `paradnn calibrate` ceilings "
        "(sim_validation_cpu_ceilings.json), the CPU has no datasheet entry"
    ),
    "h100-run": (
        "our first GPU run: benchmarks/data/sim_validation_h100_runs.csv, exported from "
        "benchmarks/results/gpu/nvidia-h100-80gb-hbm3/work/runs.sqlite (19 runs: FC, CNN, RNN "
        "at fp32/tf32/bf16, RMSprop; NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, 2026-11-26; "
        "median step time); datasheet h100-sxm"
    ),
}


def host_profile_note() -> str:
    sig = inspect.signature(steptime.predict_step).parameters
    named = [p for p in sig if "host" in p]
    if named:
        return f"steptime.predict_step's default for {', '.join(named)}"
    return "none: today's steptime.predict_step has no host profile (host_s = 0)"


def run(names: Sequence[str], *, extras: bool = True) -> dict[str, Any]:
    SKIPPED.clear()
    datasets: dict[str, Any] = {}
    cache: dict[str, list[Case]] = {}
    for name in names:
        cache[name] = cases_of(name)
        d = evaluate_dataset(cache[name], cross_pairs=CROSS.get(name))
        d["source"] = SOURCES[name]
        d["kind"] = cache[name][0].kind
        datasets[name] = d
    transfers = {}
    t8 = [c for n in T8_DATASETS if n in cache for c in cache[n]]
    devs = {c.device for c in t8}
    if {"V100", "V100(MP)"} <= devs:
        transfers["v100_fp32_to_fp16"] = transfer(t8, [("V100", "V100(MP)")])
    if {"Titan X", "P100", "V100"} <= devs:
        transfers["nvidia_fp32"] = transfer(t8, CROSS["seed002-t8-nvidia-fp32"])
    if {"TPU V2", "TPU V3"} <= devs:
        transfers["tpu_v2_to_v3"] = transfer(t8, [("TPU V2", "TPU V3")])
    return {
        "schema": 2,
        "generated_by": "benchmarks/sim_validation.py",
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "kind": "prediction vs measurement",
        "error": "APE of the step time, |predicted − measured| ÷ measured (fractions)",
        "split": (
            f"per device (CPU sweep: per device and family), rows sorted by (family, precision, "
            f"config), numpy.random.default_rng({SEED}).permutation, the first "
            f"round({HOLDOUT} × n) held out"
        ),
        "host_profile": host_profile_note(),
        "targets": {
            "gpu": GPU_TARGETS,
            "cpu_family_holdout": CPU_FAMILY_TARGET,
            "tpu_table8_datasheet_throughput": TPU_TARGET,
            "transfer_fp32_fp16_throughput_mape": TRANSFER_FP16_TARGET,
        },
        "public_gpu_measurements": (
            "none used: no public source other than the held-out set (cissieAB/pytorch-paradnn "
            "FC results, not used) was found in the time given"
        ),
        "datasets": datasets,
        "skipped": list(SKIPPED),
        "transfer": transfers,
        "seed000": {"multichip": multichip(), "small_fc_one_core": small_fc()} if extras else None,
    }


def bands(res: Mapping[str, Any]) -> dict[str, Any]:
    """Per device kind, the datasheet-only error pooled over every row of every dataset of that
    kind: what a what-if row predicted from a datasheet can be expected to miss by."""
    out: dict[str, Any] = {}
    for kind in ("cpu", "gpu", "tpu"):
        names = [n for n, d in res["datasets"].items() if d["kind"] == kind]
        apes = [r["ape_datasheet"] for n in names for r in res["datasets"][n]["rows"]]
        s = stats(apes)
        if s["n"]:
            out[kind] = {
                "mdape": s["mdape"],
                "p90": s["p90"],
                "n": s["n"],
                "dataset": " + ".join(names),
                "method": "datasheet-only",
            }
    return {
        "schema": 1,
        "generated_by": "benchmarks/sim_validation.py",
        "generated_at": res["generated_at"],
        "bands": out,
    }


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _cell(s: Mapping[str, Any] | None) -> str:
    if s is None:
        return "n/a (one device)"
    if not s["n"]:
        return "— (n = 0)"
    return f"{_pct(s['mdape'])} (p90 {_pct(s['p90'])}, n = {s['n']})"


def _distance(fig: float | None, target: float) -> str:
    if fig is None:
        return "— (no figure)"
    d = 100 * (fig - target)
    met = "met" if fig <= target else "not met"
    return f"{_pct(fig)} vs ≤ {100 * target:.0f} %: {d:+.1f} pt, {met}"


def target_rows(res: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(what, distance) for every target of issue 35 this data can speak to."""
    ds = res["datasets"]
    out = []
    for name, d in ds.items():
        if d["kind"] != "gpu":
            continue
        for m, tgt in GPU_TARGETS.items():
            s = d["methods"].get(m)
            if s is None:
                continue
            out.append(
                (
                    f"{name}: {METHOD_LABEL[m]} MdAPE (GPU target, set on the held-out GPU set)",
                    _distance(s["mdape"], tgt),
                )
            )
    if "cpu-sweep-epyc" in ds:
        for fam, f in ds["cpu-sweep-epyc"]["by_family"].items():
            s = f["fitted_holdout"]
            out.append(
                (
                    f"cpu-sweep-epyc {fam}: fitted, held-out MdAPE (n = {s['n']})",
                    _distance(s["mdape"], CPU_FAMILY_TARGET),
                )
            )
    if "seed002-t8-tpu-bf16" in ds:
        for dev, _ in ds["seed002-t8-tpu-bf16"]["by_device"].items():
            apes = [
                _ape_thr(r["datasheet_s"], r["measured_s"])
                for r in ds["seed002-t8-tpu-bf16"]["rows"]
                if r["device"] == dev
            ]
            s = stats(apes)
            out.append(
                (
                    f"seed 002 Table 8 {dev}: datasheet-only MdAPE on throughput (n = {s['n']})",
                    _distance(s["mdape"], TPU_TARGET),
                )
            )
    tr = res["transfer"].get("v100_fp32_to_fp16")
    if tr:
        s = tr["throughput"]
        out.append(
            (
                f"seed 002 Table 8 V100 fp32 → fp16 transfer, MAPE on throughput (n = {s['n']}; "
                f"MdAPE {_pct(s['mdape'])})",
                _distance(s["mape"], TRANSFER_FP16_TARGET),
            )
        )
    return out


def markdown(res: Mapping[str, Any]) -> str:
    ds = res["datasets"]
    lines = [
        "# Step-time model: predicted vs measured (benchmarks/sim_validation.py)",
        "",
        f"Generated {res['generated_at']}. Error: {res['error']}; each cell is MdAPE (p90, n)."
        f" Split: {res['split']}. Host profile: {res['host_profile']}.",
        "",
        "| dataset | kind | n | datasheet-only | fitted 70 %, held-out 30 % | cross-device "
        "(same precision) | roofline |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, d in ds.items():
        m = d["methods"]
        lines.append(
            f"| {name} | {d['kind']} | {d['n']} | {_cell(m['datasheet'])} | "
            f"{_cell(m['fitted_holdout'])} | {_cell(m['cross_device'])} | "
            f"{_cell(m['roofline'])} |"
        )
    refused = [(n, r) for n, d in ds.items() for r in d.get("refused", [])]
    skipped = res.get("skipped") or []
    if refused or skipped:
        lines += [
            "",
            f"Rows the model refused (left out of every figure): {len(refused)} predicted, "
            f"{len(skipped)} not mapped; their reasons are in the JSON.",
        ]
    lines += [
        "",
        "## Targets (issue 35) and the distance to each",
        "",
        "| figure | distance |",
        "|---|---|",
    ]
    lines += [f"| {a} | {b} |" for a, b in target_rows(res)]
    lines += [
        "",
        "## Per family and per device",
        "",
        "| dataset | family / device | datasheet-only | fitted, held-out | roofline |",
        "|---|---|---|---|---|",
    ]
    for name, d in ds.items():
        for fam, f in d["by_family"].items():
            lines.append(
                f"| {name} | {fam} | {_cell(f['datasheet'])} | {_cell(f['fitted_holdout'])} | "
                f"{_cell(f['roofline'])} |"
            )
        if len(d["by_device"]) > 1:
            for dev, f in d["by_device"].items():
                lines.append(
                    f"| {name} | {dev} | {_cell(f['datasheet'])} | {_cell(f['fitted_holdout'])} | |"
                )
    lines += [
        "",
        "## Seed 002 Table 8 on throughput (as the seed reports it)",
        "",
        "| dataset | datasheet-only | fitted, held-out | cross-device | roofline |",
        "|---|---|---|---|---|",
    ]
    for name, d in ds.items():
        t = d.get("throughput")
        if t:
            lines.append(
                f"| {name} | {_cell(t['datasheet'])} | {_cell(t['fitted_holdout'])} | "
                f"{_cell(t['cross_device'])} | {_cell(t['roofline'])} |"
            )
    lines += [
        "",
        "Transfer on datasheet + defaults (measured on A × predicted B ÷ predicted A):",
        "",
    ]
    for key, t in res["transfer"].items():
        pairs = ", ".join(f"{a} → {b}" for a, b in t["pairs"])
        lines.append(
            f"- {key} ({pairs}): throughput MAPE {_pct(t['throughput']['mape'])}, MdAPE "
            f"{_pct(t['throughput']['mdape'])}; step time MdAPE {_pct(t['step']['mdape'])} "
            f"(n = {t['step']['n']})"
        )
    s0 = res.get("seed000")
    if s0:
        mc, sf = s0["multichip"], s0["small_fc_one_core"]
        lines += [
            "",
            "Seed 000's multi-chip figures (datasheet + defaults, not step-time datasets): "
            f"all-reduce share of a ResNet-50 step on a TPU v2-8, most over 16–256 per chip, "
            f"{_pct(mc['predicted_max'])} against the paper's up to 13 % "
            f"({mc['ratio_max']:.2f}×); small FCs predicted faster on one TPU v2 core than on "
            f"eight: {sf['faster_on_one_core']} of {sf['configs']} (paper: they are).",
        ]
    lines += ["", "## Fitted parameters (per device, on its 70 %)", ""]
    for name, d in ds.items():
        for dev, f in d["fits"].items():
            if f["fitted"] is None:
                lines.append(f"- {name} / {dev}: not fitted ({f['reason']})")
                continue
            p = f["fitted"]
            eff = ", ".join(f"{k} {v:.3g}" for k, v in (p.get("efficiency") or {}).items())
            lines.append(
                f"- {name} / {dev} ({f['fit_rows']} rows): kernel overhead "
                f"{1e6 * p['kernel_overhead_s']:.3g} µs, E {eff}, k_half {p['k_half']:.3g}, "
                f"bw_efficiency {p['bw_efficiency']:.3g}"
            )
    lines += ["", "## Where the data come from", ""]
    lines += [f"- **{n}**: {d['source']}" for n, d in ds.items()]
    lines += [f"- Public GPU measurements: {res['public_gpu_measurements']}.", ""]
    return "\n".join(lines)


def export(db: str, runs_csv: Path, ceilings_json: Path) -> None:
    """Write a committed copy of a database's runs and ceilings (what the datasets read)."""
    from paradnn.store import open_store

    with open_store(db, readonly=True) as store:
        frame = store.frame()
        ceilings = store.rows("ceilings")
    keep = [
        "run_key",
        "attempt",
        "family",
        "config",
        "precision",
        "optimizer",
        "status",
        "device_name",
        "procs",
        "step_time_s",
        "step_time_min_s",
        "ci_half_rel",
        "others_cpu_frac",
        "quality",
        "threads",
        "torch_version",
        "cpu_model",
        "gpu_name",
        "load",
        "started_at",
    ]
    out = frame[[c for c in keep if c in frame.columns]].copy()
    for col in ("config", "load"):
        if col in out:
            out[col] = out[col].map(lambda c: json.dumps(c, sort_keys=True, default=str))
    runs_csv.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(runs_csv, index=False)
    cols = ("device", "device_name", "kind", "precision", "value", "measured_at", "detail")
    ceilings_json.write_text(
        json.dumps([{k: c.get(k) for k in cols} for c in ceilings], indent=1, default=str) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--datasets",
        nargs="+",
        default=list(DATASETS),
        metavar="NAME",
        help="which datasets (default: all): " + ", ".join(DATASETS),
    )
    ap.add_argument("--out-dir", default=str(OUT_JSON.parent), help="where the results go")
    ap.add_argument(
        "--write-bands", action="store_true", help=f"also write {BANDS_JSON.relative_to(ROOT)}"
    )
    ap.add_argument("--bands-out", default=str(BANDS_JSON), help=argparse.SUPPRESS)
    ap.add_argument(
        "--export-cpu", metavar="DB", help="write the committed CPU sweep CSV from DB and exit"
    )
    ap.add_argument(
        "--export-h100",
        metavar="DB",
        nargs="?",
        const=str(H100_DB),
        help="write the committed H100 CSV from DB (default: the committed run) and exit",
    )
    args = ap.parse_args(argv)
    bad = [n for n in args.datasets if n not in DATASETS]
    if bad:
        print(f"--datasets: {bad[0]!r} is not one of {', '.join(DATASETS)}", file=sys.stderr)
        return 2
    if args.export_cpu:
        export(args.export_cpu, RUNS_CSV, CEILINGS_JSON)
        return 0
    if args.export_h100:
        export(args.export_h100, H100_CSV, H100_CEILINGS)
        return 0
    res = run(args.datasets, extras=set(args.datasets) == set(DATASETS))
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(res)
    (out / OUT_JSON.name).write_text(json.dumps(res, indent=1, default=str) + "\n")
    (out / OUT_MD.name).write_text(text)
    if args.write_bands:
        Path(args.bands_out).write_text(json.dumps(bands(res), indent=1) + "\n")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
