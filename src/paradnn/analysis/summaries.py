"""Tables behind the remaining figures: parameter ranges (Figure 1), op micro-benchmarks
(the accelerator study's Table 4 and Figures 5-6), its Table 8 layout, batch-size effects."""

from __future__ import annotations

import json
from itertools import product

import pandas as pd

from paradnn.analysis.frames import Data, by_count, choose, chosen_ok
from paradnn.records import Status

SPACE_LIMIT = 20_000  # configs enumerated per family for the analytic parameter range


def family_kind(name: str) -> str:
    """'generated' for ParaDnn families, 'real' for the real-world models, '?' if unknown."""
    from paradnn import families
    from paradnn.errors import ConfigError

    try:
        return str(getattr(families.get(name), "kind", "generated"))
    except (ConfigError, ImportError):
        return "?"


def space_param_range(name: str) -> tuple[int, int, int] | None:
    """(configs, min, max) trainable parameters over a family's paper space, counted from the
    analytic formulas (no runs needed); None when the space is empty or too large to list."""
    from paradnn import families

    fam = families.get(name)
    space = dict(fam.paper_space)
    n = 1
    for v in space.values():
        n *= len(v)
    if not space or n > SPACE_LIMIT:
        return None
    counts = []
    for combo in product(*space.values()):
        try:
            counts.append(fam.params(fam.config(dict(zip(space, combo, strict=True)))))
        except ValueError:  # a combination the family rejects (e.g. too small for its blocks)
            continue
    return (len(counts), min(counts), max(counts)) if counts else None


def param_ranges(data: Data, include_space: bool = True) -> pd.DataFrame:
    """Per family: parameters of the configs in the database, and of the paper space."""
    from paradnn import families

    cols = ["family", "kind", "source", "configs", "min", "median", "max"]
    rows = []
    runs = choose(data.runs)
    if len(runs):
        params = runs["params"].where(runs["params"].notna(), runs.get("params_analytic"))
        runs = runs.assign(p=pd.to_numeric(params, errors="coerce")).dropna(subset=["p"])
        for fam, g in runs.groupby("family"):
            per_cfg = g.groupby("config_key")["p"].first()
            rows.append(
                {
                    "family": fam,
                    "kind": family_kind(str(fam)),
                    "source": "database",
                    "configs": len(per_cfg),
                    "min": int(per_cfg.min()),
                    "median": int(per_cfg.median()),
                    "max": int(per_cfg.max()),
                }
            )
    if include_space:
        for name in families.names():
            try:
                found = space_param_range(name)
            except Exception:  # a broken user family must not stop the report
                found = None
            if found:
                n, lo, hi = found
                rows.append(
                    {
                        "family": name,
                        "kind": family_kind(name),
                        "source": "paper space (analytic)"
                        if family_kind(name) != "real"
                        else "as defined (analytic)",
                        "configs": n,
                        "min": lo,
                        "median": None,
                        "max": hi,
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def ops_table(data: Data) -> pd.DataFrame:
    """Op micro-benchmarks, one row per op/shape/precision/pass/device/threads."""
    cols = [
        "name",
        "op",
        "precision",
        "pass",
        "device_name",
        "threads",
        "status",
        "flops",
        "time_s",
        "achieved_flops",
        "utilization_measured",
        "utilization_datasheet",
    ]
    ops = data.ops
    if not len(ops):
        return pd.DataFrame(columns=cols)
    ops = ops.copy()
    for c in cols:
        if c not in ops:
            ops[c] = None
    return ops[cols].reset_index(drop=True)


def thread_scaling(data: Data) -> pd.DataFrame:
    """Speedup and parallel efficiency of each op against its fewest-thread run (CPU)."""
    cols = [
        "name",
        "precision",
        "pass",
        "device_name",
        "threads",
        "time_s",
        "speedup",
        "efficiency",
        "base_threads",
    ]
    ops = data.ops
    if not len(ops) or "threads" not in ops:
        return pd.DataFrame(columns=cols)
    ok = ops[(ops["status"] == Status.OK) & ops["threads"].notna() & ops["time_s"].notna()]
    rows = []
    for key, g in ok.groupby(["name", "precision", "pass", "device_name"]):
        per = g.groupby("threads")["time_s"].median().sort_index()
        if len(per) < 2:
            continue
        base_t, base = int(per.index[0]), float(per.iloc[0])
        for t, time_s in per.items():
            speedup = base / float(time_s)
            rows.append(
                dict(zip(["name", "precision", "pass", "device_name"], key, strict=True))
                | {
                    "threads": int(t),
                    "time_s": float(time_s),
                    "speedup": speedup,
                    "efficiency": speedup / (int(t) / base_t),
                    "base_threads": base_t,
                }
            )
    return pd.DataFrame(rows, columns=cols)


# Energy columns (issue 7); absent from older databases, null where not measurable.
ENERGY_ROWS = {
    "avg_power_w": "average power (W)",
    "energy_per_sample_j": "energy per sample (J)",
    "samples_per_j": "samples per J",
}


def energy_null_reasons(data: Data) -> dict[str, int]:
    """How many runs asked for energy and got none, by reason (`nulls['energy_j']`)."""
    runs = choose(data.runs)
    if not len(runs) or "nulls" not in runs:
        return {}
    out: dict[str, int] = {}
    for nulls in runs["nulls"]:
        why = (nulls or {}).get("energy_j") if isinstance(nulls, dict) else None
        if why and not why.startswith("not_requested"):
            out[why] = out.get(why, 0) + 1
    return out


def table8(data: Data, max_models: int = 16) -> pd.DataFrame:
    """The accelerator study's Table 8 layout: a row per (model, quantity), a column per
    platform/precision; throughput always, power and energy rows when they were measured.

    Models are the real-world ones when present, else the configs run on the most platforms."""
    runs = chosen_ok(data)
    if not len(runs):
        return pd.DataFrame()
    runs = runs.assign(
        column=runs["platform"].astype(str) + " " + runs["precision"].astype(str),
        kind=runs["family"].map(family_kind),
    )
    real = runs[runs["kind"] == "real"]
    if len(real):
        runs, label = real, real["family"]
    else:
        label = runs["family"] + " " + runs["config_key"].map(_short_config)
    runs = runs.assign(model=label)
    coverage = by_count(runs.groupby("model")["column"].nunique())
    runs = runs[runs["model"].isin(coverage.index[:max_models])]
    quantities = {"examples_per_s": "examples/s"}
    quantities |= {k: v for k, v in ENERGY_ROWS.items() if k in runs and runs[k].notna().any()}
    rows = []
    for model, g in runs.groupby("model", sort=False):
        for col, name in quantities.items():
            vals = pd.to_numeric(g[col], errors="coerce")
            cells = vals.groupby(g["column"]).median()
            rows.append({"model": model, "quantity": name} | cells.to_dict())
    out = pd.DataFrame(rows).set_index(["model", "quantity"])
    return out.reindex(sorted(out.columns), axis=1)


def _short_config(key: str) -> str:
    cfg = json.loads(key)
    return " ".join(f"{k}={v}" for k, v in cfg.items())


def batch_effect(data: Data, metric: str) -> pd.DataFrame:
    """Median metric per batch size and its ratio to the smallest batch, per family/platform/
    precision, over configs that ran at two or more batch sizes (other hyperparameters equal)."""
    cols = ["family", "platform", "precision", "batch", "median", "ratio", "configs"]
    runs = chosen_ok(data)
    if not len(runs) or "batch" not in runs or metric not in runs:
        return pd.DataFrame(columns=cols)
    runs = runs[runs["batch"].notna()].copy()
    runs["rest"] = runs["config_key"].map(
        lambda k: json.dumps({a: b for a, b in json.loads(k).items() if a != "batch"})
    )
    runs["value"] = pd.to_numeric(runs[metric], errors="coerce")
    rows = []
    for (fam, plat, prec), g in runs.groupby(["family", "platform", "precision"]):
        multi = g.groupby("rest")["batch"].nunique()
        g = g[g["rest"].isin(multi[multi >= 2].index)]
        if not len(g):
            continue
        ratios = []
        for _, c in g.groupby("rest"):
            per = c.groupby("batch")["value"].median().sort_index()
            ratios.append(per / per.iloc[0])
        ratio = pd.concat(ratios, axis=1).median(axis=1)
        med = g.groupby("batch")["value"].median()
        n = g.groupby("batch")["rest"].nunique()
        for b in sorted(med.index):
            rows.append(
                {
                    "family": fam,
                    "platform": plat,
                    "precision": prec,
                    "batch": int(b),
                    "median": float(med[b]),
                    "ratio": float(ratio.get(b, float("nan"))),
                    "configs": int(n[b]),
                }
            )
    return pd.DataFrame(rows, columns=cols)
