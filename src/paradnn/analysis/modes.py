"""The execution-mode study (docs/modes.md): compiled against eager, config by config.

A speedup is `compare(data, "mode", "eager", mode)` (analysis/speedup.py): examples/s of the
compiled run over the eager run of the same config, with the bootstrap interval of the ratio
of medians, which is the method of PyTorch's own compiler benchmark (speedup = median eager /
median compiled step time). To each matched config this adds what compiling cost:

- compile time cold and warm (records.Compiled);
- break-even steps = cold compile time ÷ time saved per step (t_eager − t_compiled): after
  that many training steps the compile has paid for itself; none when compiled is not faster;
- memory ratio = peak eager / peak compiled (the harness's `compression_ratio`); null where
  the peak is not measured (a CPU run: host memory of one run is not separable);
- graphs and graph breaks of forward+loss.

Compiled runs that failed (a compile error, a recompile under fail_on_recompile, a timeout) are
listed with their status and reason: failures are data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paradnn.analysis.findings import (
    CHECKS,
    NO_DATA,
    QUOTES,
    UNTESTABLE,
    Finding,
    decided,
    geomean_more,
)
from paradnn.analysis.frames import Data, choose
from paradnn.analysis.speedup import Comparison, compare, values
from paradnn.records import Status

BASE = "eager"
# what a compiled run adds to its pair (records.Compiled)
COMPILE_COLUMNS = ("compile_cold_s", "compile_warm_s", "graph_count", "graph_breaks", "recompiles")
# Seed 001, Table 4: XLA operator fusion on TPUv2 sped programs up 1.8-6.3x.
SEED_RANGE = (1.8, 6.3)


@dataclass
class ModeStudy:
    mode: str
    comparison: Comparison
    pairs: pd.DataFrame  # per config: speedup with CI and call, compile costs, break-even
    families: pd.DataFrame  # per family and 'all': geomean with CI, compile and break-even medians
    failures: pd.DataFrame  # compiled runs that did not finish ok, with status and reason
    notes: list[str] = field(default_factory=list)


def compiled_modes(data: Data) -> list[str]:
    """Modes other than eager with at least one ok run."""
    return [m for m in values(data, "mode") if m != BASE]


def failures(data: Data, mode: str | None = None) -> pd.DataFrame:
    """Compiled runs (newest attempt) that did not finish ok: the reason is the finding."""
    runs = choose(data.runs) if len(data.runs) else data.runs
    if not len(runs) or "mode" not in runs:
        return pd.DataFrame(columns=["family", "config_key", "mode", "status", "error"])
    bad = runs[(runs["mode"] != BASE) & (runs["status"] != Status.OK)]
    if mode is not None:
        bad = bad[bad["mode"] == mode]
    cols = [c for c in ("family", "config_key", "mode", "status", "error") if c in bad]
    return bad[cols].reset_index(drop=True)


def study(data: Data, mode: str, include_noisy: bool = False) -> ModeStudy | None:
    """`mode` against eager over every config both ran ok; None when either has no ok run."""
    have = values(data, "mode")
    if BASE not in have or mode not in have:
        return None
    c = compare(data, "mode", BASE, mode, include_noisy=include_noisy)
    pairs = _costs(data, c, mode)
    return ModeStudy(
        mode, c, pairs, _families(c, pairs), failures(data, mode), notes=_notes(c, pairs)
    )


def _side(data: Data, mode: str, key: list[str], cols: list[str]) -> pd.DataFrame:
    runs = choose(data.runs)
    runs = runs[(runs["mode"] == mode) & (runs["status"] == Status.OK)]
    have = [c for c in cols if c in runs]
    return runs[key + have].drop_duplicates(subset=key, keep="last")


def _costs(data: Data, c: Comparison, mode: str) -> pd.DataFrame:
    pairs = c.pairs.copy()
    if not len(pairs):
        return pairs
    key = [k for k in c.key if k != "mode"]
    eager = _side(data, BASE, key, ["step_time_s", "peak_mem_bytes"])
    comp = _side(data, mode, key, ["step_time_s", "peak_mem_bytes", *COMPILE_COLUMNS])
    eager = eager.rename(columns={"step_time_s": "t_eager_s", "peak_mem_bytes": "mem_eager"})
    comp = comp.rename(columns={"step_time_s": "t_compiled_s", "peak_mem_bytes": "mem_compiled"})
    pairs = pairs.merge(eager, on=key, how="left").merge(comp, on=key, how="left")
    for col in ("t_eager_s", "t_compiled_s", "mem_eager", "mem_compiled", *COMPILE_COLUMNS):
        if col not in pairs:
            pairs[col] = np.nan
        pairs[col] = pd.to_numeric(pairs[col], errors="coerce")
    saved = pairs["t_eager_s"] - pairs["t_compiled_s"]
    pairs["saved_per_step_s"] = saved
    pairs["break_even_steps"] = (pairs["compile_cold_s"] / saved).where(saved > 0)
    pairs["memory_ratio"] = pairs["mem_eager"] / pairs["mem_compiled"]
    return pairs


def _families(c: Comparison, pairs: pd.DataFrame) -> pd.DataFrame:
    """The comparison's per-family summary (geomean with its CI) plus compile-cost medians."""
    out = c.summary.copy()
    if not len(out):
        return out
    extra = ("compile_cold_s", "compile_warm_s", "break_even_steps", "graph_count", "memory_ratio")
    for col in extra:
        # numeric already: _costs converted the column (pd.to_numeric, errors="coerce")
        med = {f: g[col].median() for f, g in pairs.groupby("family")}
        med["all"] = pairs[col].median() if len(pairs) else np.nan
        out[f"median_{col}"] = out["family"].map(med)
    return out


def _notes(c: Comparison, pairs: pd.DataFrame) -> list[str]:
    notes = []
    if len(pairs) and pairs["memory_ratio"].isna().all():
        notes.append(
            "Memory ratio: no peak measured on either side (CPU runs: host memory of one run is "
            "not separable inside a shared process); measured on CUDA devices."
        )
    never = int((pairs["saved_per_step_s"] <= 0).sum()) if len(pairs) else 0
    if never:
        notes.append(f"{never} config(s) ran no faster compiled: no break-even (never pays off).")
    if c.noisy_left_out and any(c.noisy_left_out.values()):
        left = ", ".join(f"{k}: {v}" for k, v in c.noisy_left_out.items())
        notes.append(f"Noisy runs left out ({left}); --include-noisy keeps them.")
    return notes


def heat(pairs: pd.DataFrame, family: str) -> tuple[pd.DataFrame, str, str] | None:
    """Geometric-mean speedup per (width, batch) cell of one family, or None with < 2 cells.
    Other hyperparameters that vary are pooled into the cell's geometric mean."""
    fam = pairs[pairs["family"] == family]
    if not len(fam) or "batch" not in fam:
        return None
    # the paper's second axis (analysis/heatmap.py); a column other families fill is NaN here
    axes = ("nodes", "filters", "embed", "d_model")
    width = next((h for h in axes if h in fam and fam[h].notna().any()), None)
    if width is None:
        return None
    grid = (
        fam.assign(log=np.log(fam["speedup"].astype(float)))
        .groupby([width, "batch"])["log"]
        .mean()
        .map(np.exp)
        .unstack("batch")
    )
    if grid.notna().sum().sum() < 2:
        return None
    return grid, width, "batch"


__all__ = ["BASE", "SEED_RANGE", "ModeStudy", "compiled_modes", "failures", "heat", "study"]


def fusion_finding(data: Data) -> Finding:
    """Seed 001's fusion claim, on PyTorch: compiling the step (inductor fuses operators as XLA
    does) speeds training up. Decided on the geometric mean over matched configs."""
    fid, src = "compile-fusion", "seed 001, Table 4 (XLA fusion 1.8-6.3× on TPUv2)"
    claim = "Compiling the training step (operator fusion) speeds it up"
    rule = (
        "holds when the 95% CI of the geometric-mean speedup of compile over eager (examples/s, "
        "matched configs, ≥ 3) lies above 1; does not hold when it lies at or below 1; "
        "inconclusive when it straddles 1; the evidence places it "
        f"against the seed's {SEED_RANGE[0]}-{SEED_RANGE[1]}× range"
    )
    modes = compiled_modes(data)
    if not modes or BASE not in values(data, "mode"):
        return Finding(
            fid, claim, src, UNTESTABLE, "no eager and compiled runs of one config", rule
        )
    mode = "compile" if "compile" in modes else modes[0]
    s = study(data, mode, include_noisy=True)  # `data` is already filtered by the caller
    if s is None or len(s.pairs) < 3:
        n = 0 if s is None else len(s.pairs)
        return Finding(fid, claim, src, NO_DATA, f"{n} config(s) ran ok eager and {mode}", rule)
    g = s.comparison.overall()
    lo, hi = g.get("geomean_ci_low"), g.get("geomean_ci_high")
    fams = s.families[s.families["family"] != "all"]
    per = ", ".join(f"{r.family} {r.geomean:.2f}×" for r in fams.itertuples())
    inside = int(s.pairs["speedup"].between(*SEED_RANGE).sum())
    ci = f"[{lo:.2f}, {hi:.2f}]" if lo is not None and not pd.isna(lo) else "[no interval]"
    ev = (
        f"{mode} over eager: {g['geomean']:.2f}× {ci} over {g['n']} configs ({per}); "
        f"{inside} of {len(s.pairs)} configs inside {SEED_RANGE[0]}-{SEED_RANGE[1]}×"
    )
    return decided(
        fid, claim, src, rule, ev, "geomean speedup", g["geomean"], lo, hi, 1.0, ">",
        lambda: geomean_more(int(g["n"]), g["geomean"], lo, hi, 1.0),
    )  # fmt: skip


CHECKS.append(fusion_finding)  # registered when paradnn.analysis imports this module
QUOTES["compile-fusion"] = (
    "Table 4 shows the speedup from the fusion optimization on 2D data is from 1.8 to 6.3",
)
