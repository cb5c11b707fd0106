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
  400 frames, the Transformer at length 512 with batch = tokens ÷ 512, CNN batches on a TPU
  global over its 4 chips), except where the TPU models' own code says otherwise (`T8_TPU_RUNS`:
  tensor2tensor's batch on a TPU is tokens per core, and the float32 models' tensors stay fp32);
  step time = the samples the paper counts per step ÷ its throughput;
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from paradnn import families
from paradnn.sim import chip as sim_chip
from paradnn.sim import identify, steptime
from paradnn.sim import model as sim_model
from paradnn.sim.chip import Chip
from paradnn.sim.hostprofile import HostProfile
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
GPU_DIR = DATA / "gpu"  # every paradnn database here is a dataset of its own (one per GPU loan)
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

# Issue 42's targets (checked independently on GPU measurements not in the repository): our own
# GPUs (H100, H200: the datasets under data/gpu/ and h100-run) datasheet + measured host profile
# ≤ 15 %, fitted on a quick sweep of the same machine ≤ 12 % on bigger configurations, fitted
# 70/30 ≤ 8 %, cross-device ≤ 12 %; peer GPUs (seed 002's) datasheet ≤ 25 %, fitted ≤ 8 %,
# cross-device ≤ 12 %; Table 8 TPUs ≤ 40 %. Beside our data they are shown with the distance.
OWN_GPU_TARGETS = {
    "datasheet": 0.15,
    "fitted_holdout": 0.08,
    "cross_device": 0.12,
    "quick_to_bigger": 0.12,
}
GPU_TARGETS = {"datasheet": 0.25, "fitted_holdout": 0.08, "cross_device": 0.12}  # peer GPUs
CPU_FAMILY_TARGET = 0.15  # every family, held out (issue 35)
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
# How each Table 8 model ran on the Cloud TPUs (seed 002, Table 7: TensorFlow 1.14), from the
# reference code of the time → (precision policy, batch semantics):
# - ResNet-50, tensorflow/tpu models/official/resnet (2019-07, resnet_config.py):
#   'precision': 'bfloat16' (weights fp32 in a bfloat16_scope: mixed); `train_batch_size` is
#   the global batch, which TPUEstimator splits over the 8 cores;
# - Inception v3, tensorflow/tpu models/experimental/inception/inception_v3.py (2019-07):
#   DEFINE_string('precision', 'float32'): float32 tensors, the MXU at its default one-pass bf16
#   (Cloud TPU docs, "bfloat16"); global batch as ResNet's;
# - Transformer, tensor2tensor (the TPU Transformer of the time; seed 000 §2.2 names it):
#   hparams `activation_dtype = "float32"` (basic_params1), and the batch is tokens *per core*:
#   `Problem.tpu_batch_size_per_shard` ("Batch size in examples per TPU core" = batch_size ÷
#   max_length, problem.py) × `num_shards` in trainer_lib.create_estimator. Seed 002 §3.3 takes
#   a throughput as the mini-batch it set ÷ the iteration time, so a Table 8 TPU Transformer
#   figure is one core's tokens ÷ step: a v2-8 step runs 8 × that batch. (Read as the board's,
#   the 21,333 tokens/s of a v2-8 at "4096" would be 5 % of its peak; seed 000 §4.2 finds the
#   Transformer at a 4k batch "close to compute-bound" on the same TPU.)
T8_TPU_RUNS = {
    "resnet50": ("mixed", "global"),
    "inception_v3": ("fp32-storage", "global"),
    "transformer_base": ("fp32-storage", "per-core"),
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


def gpu_databases(folder: Path | None = None) -> dict[str, Path]:
    """Every paradnn database under ``folder`` (default `GPU_DIR`), by dataset name (its file
    name without the suffix): a GPU loan adds one, and it is validated without a code change."""
    folder = GPU_DIR if folder is None else folder
    if not folder.is_dir():
        return {}
    found = sorted(p for p in folder.iterdir() if p.suffix in (".sqlite", ".db") and p.is_file())
    return {p.stem: p for p in found}


def datasets() -> tuple[str, ...]:
    return (*T8_DATASETS, *OUR_DATASETS, *gpu_databases())


DATASETS = datasets()


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
    policy: str = "mixed"  # 16-bit: fp32 master weights (autocast) or pure
    optimizer_impl: str | None = None  # loop | foreach | fused (None: torch's default)
    host: HostProfile | None = field(default=None, repr=False)  # measured where the data has one
    sweep: str | None = None  # the preset or sweep file the run came from

    @property
    def key(self) -> str:
        return json.dumps([self.family, self.precision, dict(sorted(self.config.items()))])


def _topo(case: Case) -> Any:
    if case.topology is None:
        return None
    from paradnn.sim.interconnect import parse_topology

    return parse_topology(case.topology)


def _step(case: Case, params: StepParams | None, chip: Chip | None) -> steptime.StepTime:
    return steptime.predict_step(
        case.family,
        dict(case.config),
        chip or case.chip,
        case.precision,
        optimizer=case.optimizer,
        chips=case.chips,
        topology=_topo(case),
        params=params,
        host=case.host,
        policy=case.policy,
        optimizer_impl=case.optimizer_impl,
    )


def predict(case: Case, params: StepParams | None = None, chip: Chip | None = None) -> float:
    """The step model's step time (seconds) for ``case``, on its own chip unless ``chip``."""
    return float(_step(case, params, chip).predicted_step_s)


# Plans by case: a plan depends on the parameters `fit` does not move (tiles, units, the tensor-
# core rule, the convolution algorithms), so a fit evaluates one plan per case under each
# candidate (`steptime.evaluate`) instead of rebuilding it, 20-80× faster. Multi-chip and
# multi-core cases (their all-reduce moves with the bandwidth efficiency) take the whole step.
_PLANS: dict[tuple[Any, ...], tuple[steptime.Plan, float] | None] = {}


def fast_predict(case: Case, params: StepParams | None = None) -> float:
    """`predict` on the case's own chip, with the plan built once per case and base."""
    if params is None:
        return predict(case, None)
    base = steptime.params_of(case.chip)
    key = (case.dataset, case.device, case.key, case.optimizer, case.chips, base.source)
    if key not in _PLANS:
        whole = _step(case, base, None)
        simple = whole.chips == 1 and whole.cores_per_chip == 1
        _PLANS[key] = (whole.plan, case.chip.mem_bandwidth) if simple else None
    got = _PLANS[key]
    if got is None:
        return predict(case, params)
    plan, bandwidth = got
    return float(steptime.evaluate(plan, params, bandwidth).total_s)


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


def _t8_config(
    model: str, batch: int, chips: int, cores: int = 1, per_core: bool = False
) -> tuple[dict[str, Any], int]:
    """(per-chip config, the samples the paper counts per step), as the audit mapped Table 8;
    ``per_core``: the table's batch is each core's (tensor2tensor on a TPU), so a chip runs
    ``cores`` of them and the paper counts one."""
    if model == "transformer_base":
        per_chip = batch * cores if per_core else batch // chips
        length = 512 if per_chip >= 512 else per_chip
        counted = batch if per_core else per_chip // length * length * chips
        return {"batch": per_chip // length, "length": length}, counted
    if model == "deepspeech2":
        return {"batch": batch // chips, "frames": 400}, batch
    return {"batch": batch // chips}, batch


def table8_cases(name: str) -> list[Case]:
    kind, devices = T8_DATASETS[name]
    table = pd.read_csv(TABLE8_CSV)
    out = []
    for device in devices:
        plat, precision, chips = T8_PLATFORMS[device]
        chip = sim_chip.load(plat)
        mxu = chip.platform.mxu
        cores = mxu.cores if mxu is not None else 1
        for r in table[table["device"] == device].to_dict("records"):
            policy, batching = "mixed", "global"
            if kind == "tpu":
                policy, batching = T8_TPU_RUNS[r["model"]]
            cfg, counted = _t8_config(
                r["model"], int(r["batch"]), chips, cores, batching == "per-core"
            )
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
                policy=policy,
            )
            # the step the paper timed processed `counted` of its samples (samples/s)
            try:
                fam = families.get(c.family)
                fam.config(dict(cfg))
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
            out.append(replace(c, measured_s=counted / c.paper))
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


def db_cases(name: str, path: Path) -> list[Case]:
    """The ok single-process runs of a paradnn database (each config's chosen attempt, as
    `paradnn.attempts.choose`), on the datasheet entry that matches each device (else its
    measured ceilings), with the host profile measured on the runs' host when the database holds
    one (`paradnn calibrate --host-only`), their precision policy and optimizer implementation;
    the median step time. A device no chip describes is left out, with its reason (SKIPPED)."""
    from paradnn import platforms
    from paradnn.attempts import choose
    from paradnn.sim import hostprofile as hp
    from paradnn.sim.fidelity import device_chips
    from paradnn.store import open_store

    with open_store(str(path), readonly=True) as store:
        frame = store.frame()
        ceilings = store.rows("ceilings")
        profiles = store.rows("host_profile")
    if frame.empty:
        return []
    frame = choose(frame)
    ok = frame[(frame["status"] == "ok") & frame["step_time_s"].notna()]
    if "procs" in ok:
        ok = ok[ok["procs"].fillna(1).astype(int) == 1]
    out = []
    for dev, rows in ok.groupby("device_name", sort=True):
        plat = platforms.match(str(dev))
        chip = sim_chip.from_platform(plat) if plat is not None else None
        chip = chip or device_chips(rows, ceilings).get(dev)
        if chip is None:
            SKIPPED.append(
                {"dataset": name, "device": dev, "reason": "no datasheet entry and no ceilings"}
            )
            continue
        kind = chip.platform.kind
        hosts = sorted({str(h) for h in rows.get("hostname", pd.Series(dtype=str)).dropna()})
        host = None
        found = hp.newest_for(profiles, hosts[0]) if len(hosts) == 1 else None
        if found is not None:
            host = hp.for_device(hp.from_row(found, where=f"{path.name}: host_profile"), kind)
        for r in rows.to_dict("records"):
            if chip.platform.peak(r["precision"]) is None:
                continue
            cfg = r["config"] if isinstance(r["config"], Mapping) else json.loads(r["config"])
            flags = r.get("flags") if isinstance(r.get("flags"), Mapping) else {}
            policy = r.get("precision_policy")
            out.append(
                Case(
                    dataset=name,
                    device=str(dev),
                    kind=kind,
                    family=r["family"],
                    config=dict(cfg),
                    precision=r["precision"],
                    measured_s=float(r["step_time_s"]),
                    chip=chip,
                    optimizer=r.get("optimizer") or "rmsprop",
                    policy=policy if policy in steptime.POLICIES else "mixed",
                    optimizer_impl=flags.get("optimizer_impl"),
                    host=host,
                    sweep=r.get("sweep") if isinstance(r.get("sweep"), str) else None,
                )
            )
    return out


def cases_of(name: str) -> list[Case]:
    if name in T8_DATASETS:
        return table8_cases(name)
    if name == "cpu-sweep-epyc":
        return cpu_cases()
    if name == "h100-run":
        return h100_cases()
    dbs = gpu_databases()
    if name in dbs:
        return db_cases(name, dbs[name])
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


@dataclass(frozen=True)
class Fitted:
    """A staged fit's parameters and what the rows identified (`sim.identify`)."""

    params: StepParams
    identified: dict[str, Any]
    regimes: dict[str, int]
    rows: int


def allowed_params(cases: Sequence[Case], base: StepParams) -> list[identify.Param]:
    """What a fit on ``cases`` may move (as `sim.fit.default_free` without its row count: the
    staged fit drops what the rows do not identify): the four GEMM/overhead parameters with E
    per precision; the host profile's scale where host and device are two timelines (a GPU);
    the convolutions' efficiency per precision with convolutions; the cache gain where the chip
    has a cache term."""
    names = ["kernel_overhead_s", "efficiency", "k_half", "bw_efficiency"]
    if any(c.kind == "gpu" for c in cases):
        names.append("host_scale")
    conv = sorted({c.precision for c in cases if _has_conv(c)})
    if conv:
        names.append("conv_efficiency")
    if base.cache_bytes:
        names.append("cache_gain")
    return identify.expand(names, sorted({c.precision for c in cases}), conv)


def _has_conv(case: Case) -> bool:
    from paradnn.families.shapes import Conv2d

    try:
        fam = families.get(case.family)
        return any(isinstance(s, Conv2d) for s in fam.shapes(fam.config(dict(case.config))))
    except Exception:  # a config the family refuses has no shapes to look at
        return False


def fit_staged(
    cases: Sequence[Case],
    base: StepParams,
    predictor: Callable[[Case, StepParams], float] = fast_predict,
) -> Fitted:
    """`sim.identify.fit_staged` over ``cases`` (log predicted − log measured, soft-L1, host
    parameters on host-bound rows and device parameters on device-bound ones, each moved only
    where the rows identify it), with ``predictor`` giving the step under candidate parameters."""

    def pred(p: StepParams, idx: Sequence[int]) -> np.ndarray:
        return np.array([predictor(cases[i], p) for i in idx])

    staged = identify.fit_staged(
        pred, [c.measured_s for c in cases], base, allowed_params(cases, base)
    )
    fitted = replace(
        staged.params, source=f"fitted on {len(cases)} rows by benchmarks/sim_validation.py"
    )
    counts = {r: staged.regimes.count(r) for r in identify.REGIMES}
    return Fitted(
        fitted,
        {k: r.as_dict() for k, r in sorted(staged.reports.items())},
        counts,
        len(cases),
    )


def fit_params(
    cases: Sequence[Case],
    base: StepParams,
    predictor: Callable[[Case, StepParams], float] = fast_predict,
) -> StepParams:
    """The staged fit's parameters (`fit_staged`)."""
    return fit_staged(cases, base, predictor).params


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
    predictor: Callable[[Case, StepParams | None], float] = fast_predict,
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
            got = fit_staged(train, base, predictor)
        except Exception as e:  # a failed fit is reported, not a crash
            fits[dev] = {"fitted": None, "reason": f"{type(e).__name__}: {e}"}
            continue
        p = got.params
        fits[dev] = {
            "fitted": _param_summary(p),
            "fit_rows": len(train),
            "regimes": got.regimes,
            "identified": got.identified,
        }
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


def _shown(path: Path) -> str:
    """A path relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def source_of(name: str, cases: Sequence[Case]) -> str:
    """Where a dataset's rows come from: `SOURCES`, or, for a database under data/gpu/, what
    the database itself says (devices, runs, families, precisions, sweeps, host profile)."""
    if name in SOURCES:
        return SOURCES[name]
    path = gpu_databases()[name]
    devs = ", ".join(sorted({c.device for c in cases}))
    fams = ", ".join(sorted({c.family for c in cases}))
    precs = ", ".join(sorted({c.precision for c in cases}))
    sweeps = ", ".join(sorted({c.sweep or "?" for c in cases}))
    host = "measured host profile" if any(c.host for c in cases) else "default host profile"
    readme = path.parent / "README.md"
    more = f"; {_shown(readme)} describes it" if readme.is_file() else ""
    return (
        f"a paradnn database, {_shown(path)}: {len(cases)} ok runs of {devs} "
        f"({fams}; {precs}; sweep {sweeps}; median step time); datasheet chip, {host}{more}"
    )


def host_profile_note() -> str:
    sig = inspect.signature(steptime.predict_step).parameters
    named = [p for p in sig if "host" in p]
    if named:
        return f"steptime.predict_step's default for {', '.join(named)}"
    return "none: today's steptime.predict_step has no host profile (host_s = 0)"


def own_gpu(name: str) -> bool:
    """One of our own GPU datasets (the 19 runs, a database under data/gpu/), not a seed's."""
    return name == "h100-run" or name in gpu_databases()


def is_quick(cases: Sequence[Case]) -> bool:
    """A dataset measured with the quick preset (tiny models: the host's floor)."""
    return bool(cases) and all(c.sweep == "quick" for c in cases)


def across(cache: Mapping[str, list[Case]]) -> dict[str, dict[str, Any]]:
    """Our GPU datasets against each other: each fitted on all its rows per device
    (`fit_staged`) and predicting every other dataset — of the same device (the datasets held
    out from each other, both ways: ``other_dataset``) and, at a precision it fitted, of another
    device with that device's datasheet and defaults (``cross_device``)."""
    own = [n for n in cache if own_gpu(n) and cache[n]]
    fitted: dict[tuple[str, str], Fitted] = {}
    for n in own:
        for dev in sorted({c.device for c in cache[n]}):
            rows = [c for c in cache[n] if c.device == dev]
            if len(rows) < MIN_FIT:
                continue
            try:
                fitted[(n, dev)] = fit_staged(rows, steptime.params_of(rows[0].chip))
            except Exception:  # a failed fit predicts nothing; its dataset's own fit says why
                continue
    out: dict[str, dict[str, Any]] = {}
    for n in own:
        other: dict[str, list[dict[str, Any]]] = {}
        cross: list[dict[str, Any]] = []
        for (m, dev), f in fitted.items():
            if m == n:
                continue
            prec = set(f.params.efficiency) - {"default"}
            for c in cache[n]:
                if c.device == dev:
                    got = _try(fast_predict, c, f.params)[0]
                    bucket = other.setdefault(m, [])
                elif c.precision in prec:
                    onto = transplant(f.params, steptime.params_of(c.chip))
                    got = _try(predict, c, onto)[0]
                    bucket = cross
                else:
                    continue
                if got is not None:
                    bucket.append(
                        {
                            "from": m,
                            "from_device": dev,
                            "family": c.family,
                            "config": json.dumps(dict(c.config), sort_keys=True),
                            "precision": c.precision,
                            "measured_s": c.measured_s,
                            "predicted_s": got,
                            "ape": _ape(got, c.measured_s),
                        }
                    )
        out[n] = {
            "other_dataset": {
                m: {
                    "stats": stats([r["ape"] for r in rows]),
                    "from_quick_sweep": is_quick(cache[m]),
                    "fit_rows": fitted[(m, rows[0]["from_device"])].rows,
                    "regimes": fitted[(m, rows[0]["from_device"])].regimes,
                    "identified": fitted[(m, rows[0]["from_device"])].identified,
                    "rows": rows,
                }
                for m, rows in sorted(other.items())
                if rows
            },
            "cross_device_rows": cross,
        }
    return out


def run(names: Sequence[str], *, extras: bool = True) -> dict[str, Any]:
    SKIPPED.clear()
    _PLANS.clear()
    datasets: dict[str, Any] = {}
    cache: dict[str, list[Case]] = {}
    for name in names:
        cache[name] = cases_of(name)
        if not cache[name]:
            SKIPPED.append({"dataset": name, "reason": "no ok single-process runs"})
            continue
        d = evaluate_dataset(cache[name], cross_pairs=CROSS.get(name))
        d["source"] = source_of(name, cache[name])
        d["kind"] = cache[name][0].kind
        d["quick_sweep"] = is_quick(cache[name])
        hosts = {c.host.source for c in cache[name] if c.host is not None}
        d["host_profile"] = "measured host profile" if hosts else "default host profile"
        datasets[name] = d
    for name, got in across({n: cache[n] for n in datasets}).items():
        d = datasets[name]
        d["other_dataset"] = got["other_dataset"]
        every = [r["ape"] for o in got["other_dataset"].values() for r in o["rows"]]
        d["methods"]["other_dataset"] = stats(every) if got["other_dataset"] else None
        if d["methods"]["cross_device"] is None and got["cross_device_rows"]:
            d["cross_rows"] = got["cross_device_rows"]
            d["methods"]["cross_device"] = stats([r["ape"] for r in got["cross_device_rows"]])
    for d in datasets.values():
        d["methods"].setdefault("other_dataset", None)
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
        "fit": (
            "sim.identify's staged fit: host parameters on host-bound rows, device parameters "
            "on device-bound rows, each moved only where the rows identify it"
        ),
        "targets": {
            "own_gpu": OWN_GPU_TARGETS,
            "peer_gpu": GPU_TARGETS,
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


def _cell(s: Mapping[str, Any] | None, none: str = "n/a (one device)") -> str:
    if s is None:
        return none
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
    """(what, distance) for every target of issues 42 and 35 this data can speak to."""
    ds = res["datasets"]
    out = []
    for name, d in ds.items():
        if d["kind"] != "gpu":
            continue
        own = own_gpu(name)
        targets = OWN_GPU_TARGETS if own else GPU_TARGETS
        who = "own-GPU target" if own else "peer-GPU target"
        for m in ("datasheet", "fitted_holdout", "cross_device"):
            s = d["methods"].get(m)
            if s is None:
                continue
            what = METHOD_LABEL[m]
            if m == "datasheet" and own:
                what += " + " + d.get("host_profile", "default host profile")
            out.append(
                (
                    f"{name}: {what} MdAPE (n = {s['n']}; {who})",
                    _distance(s["mdape"], targets[m]),
                )
            )
        for src, o in (d.get("other_dataset") or {}).items():
            st = o["stats"]
            label = f"{name}: fitted on {src} (same device, all its rows) MdAPE (n = {st['n']}"
            if o["from_quick_sweep"] and not d.get("quick_sweep"):
                out.append(
                    (
                        label + "; quick sweep → bigger configurations)",
                        _distance(st["mdape"], OWN_GPU_TARGETS["quick_to_bigger"]),
                    )
                )
            else:
                out.append((label + "; no target for this direction)", _pct(st["mdape"])))
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
        "| dataset | kind | n | datasheet-only | fitted 70 %, held-out 30 % | fitted on the "
        "device's other dataset(s), all rows held out | cross-device (same precision) | "
        "roofline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, d in ds.items():
        m = d["methods"]
        lines.append(
            f"| {name} | {d['kind']} | {d['n']} | {_cell(m['datasheet'])} | "
            f"{_cell(m['fitted_holdout'])} | "
            f"{_cell(m.get('other_dataset'), 'n/a (no other dataset)')} | "
            f"{_cell(m['cross_device'])} | {_cell(m['roofline'])} |"
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
        "## Targets (issues 42 and 35) and the distance to each",
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
    lines += [
        "",
        "## What each fit identified (per device, on its 70 %; sim/identify.py)",
        "",
        "Fitted rows by regime (host-bound / device-bound / mixed, at the fitted parameters), "
        "then each parameter the rows identified (value, 95 % interval) and those kept at "
        "their priors (why).",
        "",
    ]
    for name, d in ds.items():
        for dev, f in d["fits"].items():
            if f["fitted"] is None:
                lines.append(f"- {name} / {dev}: not fitted ({f['reason']})")
                continue
            lines.append(f"- {name} / {dev} ({f['fit_rows']} rows): {_fit_words(f)}")
        for src, o in (d.get("other_dataset") or {}).items():
            lines.append(
                f"- {name} predicted from {src} (all {o['fit_rows']} of its rows): {_fit_words(o)}"
            )
    lines += ["", "## Where the data come from", ""]
    lines += [f"- **{n}**: {d['source']}" for n, d in ds.items()]
    lines += [f"- Public GPU measurements: {res['public_gpu_measurements']}.", ""]
    return "\n".join(lines)


def _fit_words(f: Mapping[str, Any]) -> str:
    reg = ", ".join(f"{v} {k}" for k, v in (f.get("regimes") or {}).items())
    got, kept = [], []
    for key, r in (f.get("identified") or {}).items():
        if r["status"] == "identified":
            bound = f", at its {r['at_bound']} bound" if r["at_bound"] else ""
            got.append(f"{key} {r['value']:.3g} [{r['low']:.3g}, {r['high']:.3g}]{bound}")
        else:
            kept.append(f"{key} ({r['reason'].removesuffix('; kept at its prior')})")
    return (
        f"{reg}; identified: {', '.join(got) or 'nothing'}; kept at prior: "
        f"{', '.join(kept) or 'nothing'}"
    )


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
    """The CLI; ``--gpu-dir`` replaces `GPU_DIR` for this call only."""
    global GPU_DIR
    kept = GPU_DIR
    try:
        return _main(argv)
    finally:
        GPU_DIR = kept


def _main(argv: list[str] | None) -> int:
    global GPU_DIR
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--datasets",
        nargs="+",
        default=None,
        metavar="NAME",
        help="which datasets (default: all): " + ", ".join(DATASETS),
    )
    ap.add_argument(
        "--gpu-dir",
        default=None,
        help="the folder of GPU databases (default benchmarks/data/gpu)",
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
    if args.gpu_dir is not None:
        GPU_DIR = Path(args.gpu_dir)
        if not GPU_DIR.is_dir():
            print(f"--gpu-dir: {args.gpu_dir!r} is not a folder", file=sys.stderr)
            return 2
    every = datasets()
    names = every if args.datasets is None else args.datasets
    bad = [n for n in names if n not in every]
    if bad:
        print(f"--datasets: {bad[0]!r} is not one of {', '.join(every)}", file=sys.stderr)
        return 2
    if args.export_cpu:
        export(args.export_cpu, RUNS_CSV, CEILINGS_JSON)
        return 0
    if args.export_h100:
        export(args.export_h100, H100_CSV, H100_CEILINGS)
        return 0
    res = run(names, extras=set(names) == set(every))
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
