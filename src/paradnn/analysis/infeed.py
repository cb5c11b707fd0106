"""The data-infeed study (docs/infeed.md): seed 000's Fig. 5, §4.4 and observation 4 on PyTorch.

- **Infeed share** (Fig. 5 plots the TPU infeed time of the six real models): per host-fed
  run, the share of the timed window spent blocked waiting for the next batch plus copying it
  to the device (records.Infeed); also mapped over a family's hyperparameter space (its width
  axis × batch, other axes pooled by the mean), which the seed does not plot.
- **Speedup from removing the infeed bottleneck** (§4.4): examples/s of the same config on
  device data (the batch resident on the device: no infeed at all) over the host-fed run,
  `compare(data, "data_source", source, "device")`, a ratio of medians with its bootstrap CI.
  Seed 000 measured 34 % (ResNet-50) to 180 % (SqueezeNet) on TPU.
- **Observation 4** as a finding with its rule (`infeed_finding`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paradnn import families
from paradnn.analysis.findings import (
    CHECKS,
    NEVER_TESTABLE,
    NO_DATA,
    UNTESTABLE,
    Finding,
    decided,
    geomean_more,
)
from paradnn.analysis.frames import Data, choose
from paradnn.analysis.speedup import Comparison, compare, values
from paradnn.records import Status

BASE = "device"
FED = ("pipeline", "host")  # host-fed sources, the realistic one first
SEED_GAIN = 1.34  # seed 000 §4.4: removing the infeed bottleneck sped ResNet-50 up by 34 %
SEED_RANGE = (1.34, 2.80)  # ... up to 180 % (SqueezeNet)
OBS4_CLAIM = "Improving data infeed speeds training by ≥ 34%"
OBS4_SOURCE = "seed 000 observation 4 (§4.4: +34 % ResNet-50 to +180 % SqueezeNet)"
INFEED_COLUMNS = (
    "data_source", "loader_workers", "pin_memory", "prefetch_factor", "persistent_workers",
    "infeed_share", "data_wait_s", "data_copy_s", "loader_examples_per_s",
    "model_only_examples_per_s", "input_bound", "host_cpu_cores", "host_cpu_share",
    "step_time_s", "examples_per_s",
)  # fmt: skip
WIDTHS = ("nodes", "filters", "embed", "d_model", "image", "length")


@dataclass
class InfeedStudy:
    source: str
    runs: pd.DataFrame  # host-fed ok runs: config hyperparameters and the infeed figures
    comparison: Comparison | None  # device over `source`: the gain from removing the infeed
    real: pd.DataFrame  # per real model: geomean gain with its CI, median share, input-bound
    notes: list[str] = field(default_factory=list)


def real_family(name: str) -> bool:
    try:
        return families.get(name).kind == "real"
    except Exception:  # a family no longer registered reads as generated
        return False


def fed_sources(data: Data) -> list[str]:
    """Host-fed data sources with at least one ok run, the pipeline first."""
    have = values(data, "data_source") if len(data.runs) else []
    return [s for s in FED if s in have]


def variants(data: Data) -> list[tuple[str, int | None]]:
    """(source, loader workers) of every host-fed kind of run: a pipeline per worker count
    (each is its own input pipeline), host data once."""
    out: list[tuple[str, int | None]] = []
    for source in fed_sources(data):
        if source != "pipeline" or "loader_workers" not in data.ok:
            out.append((source, None))
            continue
        ok = data.ok[data.ok["data_source"] == source]
        counts = sorted({int(w) for w in pd.to_numeric(ok["loader_workers"]).dropna()})
        out += [(source, w) for w in counts] or [(source, None)]
    return out


def label(source: str, workers: int | None) -> str:
    return source if workers is None else f"{source} w{workers}"


def _restrict(data: Data, source: str, workers: int | None) -> Data:
    """Device-data runs and the `source` runs with `workers` loader workers (None: all)."""
    import dataclasses

    runs = data.runs
    if workers is None or not len(runs) or "loader_workers" not in runs:
        return data
    w = pd.to_numeric(runs["loader_workers"], errors="coerce")
    keep = (runs["data_source"] != source) | (w == workers)
    return dataclasses.replace(data, runs=runs[keep])


def host_fed(data: Data, source: str) -> pd.DataFrame:
    """The newest ok run of each `source` config: hyperparameters and infeed figures."""
    runs = choose(data.runs) if len(data.runs) else data.runs
    if not len(runs) or "data_source" not in runs:
        return pd.DataFrame(columns=["family", "config_key", *INFEED_COLUMNS])
    runs = runs[(runs["status"] == Status.OK) & (runs["data_source"] == source)]
    cols = ["family", "config_key", *(c for c in INFEED_COLUMNS if c in runs)]
    out = runs[cols].reset_index(drop=True)
    hp = pd.DataFrame([dict(c) if isinstance(c, dict) else {} for c in runs["config"]])
    hp = hp[[c for c in hp if c not in out]]
    return pd.concat([out, hp.reset_index(drop=True)], axis=1)


def share_map(runs: pd.DataFrame, family: str) -> tuple[pd.DataFrame, str, str] | None:
    """Mean infeed share per (width, batch) cell of one family (a heat map like Fig. 2's; the
    seed's Fig. 5 has bars per real model); None with
    fewer than 2 cells. Other hyperparameters that vary are pooled into the cell's mean."""
    fam = runs[runs["family"] == family]
    if not len(fam) or "batch" not in fam:
        return None
    width = next((h for h in WIDTHS if h in fam and fam[h].notna().any()), None)
    if width is None:
        return None
    fam = fam.assign(share=pd.to_numeric(fam["infeed_share"], errors="coerce"))
    grid = fam.groupby([width, "batch"])["share"].mean().unstack("batch")
    if grid.notna().sum().sum() < 2:
        return None
    return grid, width, "batch"


def study(data: Data, source: str, workers: int | None = None) -> InfeedStudy | None:
    """`source` runs (a pipeline's: those with `workers` loader workers, None: all) and, where
    the same config ran on device data, the gain of removing the infeed; None when no such run
    finished ok."""
    data = _restrict(data, source, workers)
    runs = host_fed(data, source)
    if not len(runs):
        return None
    notes: list[str] = []
    comp = None
    if BASE in values(data, "data_source"):
        comp = compare(data, "data_source", source, BASE, include_noisy=True)  # caller filtered
        if comp is not None and not len(comp.pairs):
            notes.append(f"no config ran ok both on device data and {source}")
    else:
        notes.append(f"no device-data runs: the gain of removing the {source} infeed needs them")
    bound = runs["input_bound"].astype("boolean") if "input_bound" in runs else None
    if bound is not None and bound.notna().any():
        notes.append(
            f"{int(bound.sum())} of {int(bound.notna().sum())} {source} runs are input-bound "
            "(the infeed drained alone is slower than the model alone on device data)"
        )
    if source == "pipeline" and workers is None and runs["loader_workers"].nunique() > 1:
        notes.append("several loader settings pooled per config (median); study them apart")
    return InfeedStudy(label(source, workers), runs, comp, _real(runs, comp), notes)


def _real(runs: pd.DataFrame, comp: Comparison | None) -> pd.DataFrame:
    """Per family (real models first): geomean gain with CI, median infeed share, input-bound."""
    rows = []
    summary = comp.summary if comp is not None else pd.DataFrame(columns=["family"])
    for fam, g in runs.groupby("family"):
        s = summary[summary["family"] == fam]
        r = s.iloc[0].to_dict() if len(s) else {}
        rows.append(
            {
                "family": fam,
                "real": real_family(str(fam)),
                "configs": len(g),
                "median_infeed_share": pd.to_numeric(g["infeed_share"], errors="coerce").median(),
                "input_bound": int(g["input_bound"].astype("boolean").fillna(False).sum()),
                "gain_geomean": r.get("geomean", np.nan),
                "gain_ci_low": r.get("geomean_ci_low", np.nan),
                "gain_ci_high": r.get("geomean_ci_high", np.nan),
                "paired": r.get("n", 0),
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        out = out.sort_values(["real", "family"], ascending=[False, True]).reset_index(drop=True)
    return out


def infeed_finding(data: Data) -> Finding:
    """Seed 000 observation 4: removing the infeed bottleneck speeds real models up by at least
    34 %. Decided on the geometric-mean gain (device data over the pipeline) of the real models,
    else of every family, with its bootstrap CI."""
    fid = "infeed"
    rule = (
        f"holds when the 95% CI of the geometric-mean speedup of device data over the host-fed "
        f"run (examples/s, matched configs; real models if any ran, else every family) lies "
        f"at or above {SEED_GAIN:.2f}× (the seed's lower end); does not hold when it lies "
        f"below; inconclusive when it straddles {SEED_GAIN:.2f}×"
    )
    kinds = variants(data)
    if not kinds:
        why = "no host-fed runs in the data (`--data pipeline` or `--data host`)"
        return Finding(fid, OBS4_CLAIM, OBS4_SOURCE, UNTESTABLE, why, rule)
    # the pipeline with the most loader workers (the best-fed one: what is left to remove),
    # else host data
    source, workers = max(kinds, key=lambda k: (k[0] == "pipeline", k[1] or 0))
    data = _restrict(data, source, workers)
    s = study(data, source)
    if s is None or s.comparison is None or not len(s.comparison.pairs):
        why = "; ".join(s.notes if s else []) or f"no {source} run paired with device data"
        return Finding(fid, OBS4_CLAIM, OBS4_SOURCE, NO_DATA, why, rule)
    pairs = s.comparison.pairs
    real = pairs[pairs["family"].map(lambda f: real_family(str(f)))]
    scope = "real models" if len(real) else "all families (no real model ran both)"
    fams = sorted(set((real if len(real) else pairs)["family"]))
    c = s.comparison
    if len(real):  # the same comparison, restricted to the real models' configs
        c = compare(_only(data, fams), "data_source", source, BASE, include_noisy=True)
    g = c.overall()
    lo, hi = g.get("geomean_ci_low"), g.get("geomean_ci_high")
    ci = "[no interval]" if lo is None or pd.isna(lo) else f"[{lo:.2f}, {hi:.2f}]"
    per = ", ".join(
        f"{r.family} {r.geomean:.2f}×" for r in c.summary[c.summary["family"] != "all"].itertuples()
    )
    bound = s.runs["input_bound"].astype("boolean")
    share = pd.to_numeric(s.runs["infeed_share"]).median()
    ev = (
        f"device data over {label(source, workers)} ({scope}): {g['geomean']:.2f}× {ci} over "
        f"{g['n']} configs ({per}); median infeed share {share:.1%}; "
        f"{int(bound.sum())}/{int(bound.notna().sum())} {source} runs input-bound"
    )
    return decided(
        fid, OBS4_CLAIM, OBS4_SOURCE, rule, ev, "geomean gain", g["geomean"], lo, hi,
        SEED_GAIN, ">=", lambda: geomean_more(int(g["n"]), g["geomean"], lo, hi, SEED_GAIN),
    )  # fmt: skip


def _only(data: Data, fams: list[str]) -> Data:
    import dataclasses

    return dataclasses.replace(data, runs=data.runs[data.runs["family"].isin(fams)])


def simulator_rows(runs: pd.DataFrame) -> list[dict]:
    """What sim.infeed_check needs of each host-fed run (plain numbers, no frames)."""
    cols = (
        "family", "config_key", "data_source", "loader_workers", "step_time_s",
        "examples_per_s", "loader_examples_per_s", "model_only_examples_per_s", "infeed_share",
        "input_bound",
    )  # fmt: skip
    have = [c for c in cols if c in runs]
    return [
        {k: (None if pd.isna(v) else v) for k, v in row.items()}
        for row in runs[have].to_dict("records")
    ]


__all__ = [
    "BASE",
    "OBS4_CLAIM",
    "SEED_GAIN",
    "InfeedStudy",
    "fed_sources",
    "host_fed",
    "infeed_finding",
    "label",
    "share_map",
    "simulator_rows",
    "study",
    "variants",
]

# The computed verdict takes the place of findings.CHECKS' placeholder (`untestable`: no
# host-fed runs), registered when paradnn.analysis imports this module.
_at = [i for i, c in enumerate(CHECKS) if getattr(c, "finding_id", None) == "infeed"]
NEVER_TESTABLE.discard("infeed")  # host-fed runs are what this study measures
if _at:
    CHECKS[_at[0]] = infeed_finding
else:  # pragma: no cover - the placeholder is always there
    CHECKS.append(infeed_finding)
