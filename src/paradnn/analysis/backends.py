"""The backend study (docs/jax.md): the same configs on PyTorch and on JAX/XLA.

A ratio is `compare(data, "engine", "torch-<mode>", "jax")` (analysis/speedup.py): examples/s
of the JAX run over the torch run of the same config (same family, config, precision,
optimizer, platform), with the bootstrap interval of the ratio of medians from the raw samples.
`engine` is `torch-eager`, `torch-compile`, … or `jax` (analysis/frames.engine), so JAX is set
against every torch mode that ran; `compare --by backend` is the torch-eager case.

To each matched config this adds what XLA's compile cost (lowering and compile seconds, apart
from the first step) and XLA's own FLOP count against the analytic one. The agreement table
(`flop_agreement`) is per family over every JAX run that reached its compile, ok or not: the
ratio XLA FLOPs / analytic FLOPs of the whole step (`xla_flops_ratio`, optimizer included,
after XLA's optimisations) and of forward+backward alone before optimisation (`grad_flops`, in
xla_detail), and how many rows were flagged (|ratio − 1| > 10 %).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from paradnn.analysis.frames import Data, choose
from paradnn.analysis.speedup import Comparison, compare, values
from paradnn.records import Status

JAX = "jax"
XLA_COLUMNS = ("xla_lower_s", "xla_compile_s", "xla_flops_ratio", "xla_flops_mismatch")


@dataclass
class BackendStudy:
    base: str  # the torch engine JAX is set against (torch-eager, torch-compile, …)
    comparison: Comparison
    pairs: pd.DataFrame  # per config: ratio with CI and call, XLA compile times and FLOP ratio
    families: pd.DataFrame  # per family and 'all': geomean with CI, compile medians
    notes: list[str] = field(default_factory=list)


def torch_engines(data: Data) -> list[str]:
    """The torch engines with ok runs (torch-eager first), each a baseline for JAX."""
    have = values(data, "engine")
    torch = [e for e in have if e.startswith("torch-")]
    return sorted(torch, key=lambda e: (e != "torch-eager", e))


def study(
    data: Data, base: str = "torch-eager", include_noisy: bool = False
) -> BackendStudy | None:
    """JAX against one torch engine over every config both ran ok; None without both."""
    have = values(data, "engine")
    if JAX not in have or base not in have:
        return None
    c = compare(data, "engine", base, JAX, include_noisy=include_noisy)
    pairs = _with_xla(data, c)
    return BackendStudy(base, c, pairs, _families(c, pairs), _notes(c, pairs))


def _jax_rows(data: Data) -> pd.DataFrame:
    runs = choose(data.runs) if len(data.runs) else data.runs
    if not len(runs) or "backend" not in runs:
        return runs.iloc[0:0]
    return runs[runs["backend"] == JAX]


def _with_xla(data: Data, c: Comparison) -> pd.DataFrame:
    pairs = c.pairs.copy()
    if not len(pairs):
        return pairs
    key = [k for k in c.key if k in pairs]
    jax = _jax_rows(data)
    jax = jax[jax["status"] == Status.OK]
    have = [col for col in XLA_COLUMNS if col in jax]
    side = jax[key + have].drop_duplicates(subset=key, keep="last")
    pairs = pairs.merge(side, on=key, how="left")
    for col in XLA_COLUMNS:
        if col not in pairs:
            pairs[col] = np.nan
    for col in XLA_COLUMNS[:3]:
        pairs[col] = pd.to_numeric(pairs[col], errors="coerce")
    return pairs


def _families(c: Comparison, pairs: pd.DataFrame) -> pd.DataFrame:
    out = c.summary.copy()
    if not len(out):
        return out
    for col in XLA_COLUMNS[:3]:
        # numeric already: _with_xla converted the column (pd.to_numeric, errors="coerce")
        med = {f: g[col].median() for f, g in pairs.groupby("family")}
        med["all"] = pairs[col].median() if len(pairs) else np.nan
        out[f"median_{col}"] = out["family"].map(med)
    return out


def _notes(c: Comparison, pairs: pd.DataFrame) -> list[str]:
    notes = []
    if c.noisy_left_out and any(c.noisy_left_out.values()):
        left = ", ".join(f"{k}: {v}" for k, v in c.noisy_left_out.items())
        notes.append(f"Noisy runs left out ({left}); --include-noisy keeps them.")
    missing = {k: v for k, v in c.unmatched.items() if v}
    if missing:
        notes.append(
            "Ran ok on one side only: " + ", ".join(f"{k}: {v}" for k, v in missing.items())
        )
    return notes


def _grad_ratio(detail: object) -> float:
    if isinstance(detail, dict):
        v = detail.get("grad_flops_ratio")
        if isinstance(v, int | float):
            return float(v)
    return np.nan


def flop_agreement(data: Data) -> pd.DataFrame:
    """Per family (and 'all'): XLA FLOPs over analytic FLOPs of the JAX runs that compiled:
    runs, median/min/max of the whole step's ratio, the median forward+backward ratio, and
    how many rows are flagged (|ratio − 1| > 10 %)."""
    cols = ["family", "runs", "median_ratio", "min_ratio", "max_ratio", "median_grad_ratio"]
    cols += ["flagged"]
    jax = _jax_rows(data)
    if not len(jax) or "xla_flops_ratio" not in jax:
        return pd.DataFrame(columns=cols)
    jax = jax.assign(
        ratio=pd.to_numeric(jax["xla_flops_ratio"], errors="coerce"),
        grad=jax["xla_detail"].map(_grad_ratio) if "xla_detail" in jax else np.nan,
    )
    jax = jax[jax["ratio"].notna()]
    if not len(jax):
        return pd.DataFrame(columns=cols)
    rows = []
    groups = [(str(f), g) for f, g in jax.groupby("family")] + [("all", jax)]
    for fam, g in groups:
        flagged = (g["ratio"] - 1).abs() > 0.10
        rows.append(
            {
                "family": fam,
                "runs": len(g),
                "median_ratio": g["ratio"].median(),
                "min_ratio": g["ratio"].min(),
                "max_ratio": g["ratio"].max(),
                "median_grad_ratio": pd.to_numeric(g["grad"], errors="coerce").median(),
                "flagged": int(flagged.sum()),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def failures(data: Data) -> pd.DataFrame:
    """JAX runs (newest attempt) that did not finish ok: the reason is the finding."""
    jax = _jax_rows(data)
    bad = jax[jax["status"] != Status.OK] if len(jax) else jax
    cols = [c for c in ("family", "config_key", "precision", "status", "error") if c in bad]
    return bad[cols].reset_index(drop=True)


__all__ = [
    "JAX",
    "BackendStudy",
    "failures",
    "flop_agreement",
    "study",
    "torch_engines",
]
