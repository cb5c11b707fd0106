"""Result databases as pandas frames: the one input of every analysis. Torch-free.

Several databases (one per machine, say) merge into one set of frames; each row keeps the
database it came from. Runs get one column per hyperparameter (the config JSON flattened), a
`platform` label, and the utilization against a measured ceiling recomputed when the ceiling
was calibrated after the run (both numbers are measurements; the stored value wins when present).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from paradnn import rounding
from paradnn.attempts import OLD_UNCONVERGED as OLD_UNCONVERGED  # re-exported
from paradnn.attempts import add_quality as add_quality  # the quality flags live with the choice
from paradnn.attempts import choice_note as choice_note
from paradnn.attempts import choose as choose  # the one choice of a config's attempt
from paradnn.errors import ConfigError, StoreError
from paradnn.formatting import missing as no_value
from paradnn.records import Status
from paradnn.store import open_store
from paradnn.utilization import flagged

SIDE_TABLES = ("ceilings", "ops", "op_profile")
# Run columns a config key may not shadow (a hyperparameter named like one gets a `cfg_` prefix).
_RESERVED = {
    *("id", "status", "precision", "device", "threads", "mode", "family", "params", "db"),
    *("backend", "engine"),
}


@dataclass
class Data:
    """Everything the analysis reads: runs plus the side tables, and where they came from."""

    runs: pd.DataFrame
    ceilings: pd.DataFrame
    ops: pd.DataFrame
    op_profile: pd.DataFrame
    sources: list[dict] = field(default_factory=list)
    hyperparameters: dict[str, list[str]] = field(default_factory=dict)  # family -> config keys
    # without_noisy: the chosen attempts it left out as noisy (a finding's "no fc runs" says so)
    noisy_left_out: pd.DataFrame = field(default_factory=pd.DataFrame)
    # rows left out because a column could not be read: {"db", "table", "id", "column", "problem"}
    skipped: list[dict] = field(default_factory=list)
    # predicted rows (`report --what-if`, analysis/whatif.py): a frame apart from `runs`, so no
    # measured statistic (they all read `runs`) can take in a predicted value
    predicted: pd.DataFrame = field(default_factory=pd.DataFrame)
    # `paradnn calibrate`'s host profiles (the step-time model's host side: sim/fidelity.py
    # predicts a run with the profile of the host that measured it, as `simulate validate`)
    host_profile: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def ok(self) -> pd.DataFrame:
        return self.runs[self.runs["status"] == Status.OK] if len(self.runs) else self.runs

    def empty(self) -> bool:
        return not (len(self.runs) or len(self.ops) or len(self.ceilings))


def load(paths: Sequence[str | Path]) -> Data:
    """Read and merge result databases; a missing one is a one-line error before any work. A
    row with a column that cannot be read is left out and listed in `Data.skipped`."""
    paths = [str(p) for p in paths]
    for p in paths:
        if not Path(p).exists():
            raise StoreError(f"{p}: no such database (run `paradnn run` first, or pass --db)")
    runs, sides, sources, skipped = [], {t: [] for t in SIDE_TABLES}, [], []
    profiles = []
    for i, p in enumerate(dict.fromkeys(paths)):
        with open_store(p, readonly=True) as store:
            r = pd.DataFrame(store.runs())
            r["db"] = p
            r["db_index"] = i
            runs.append(r)
            for t in SIDE_TABLES:
                s = pd.DataFrame(store.rows(t))
                if len(s):
                    s["db"] = p
                    if t == "op_profile":  # run ids are per database
                        s["run_uid"] = s["run_id"].map(lambda x, i=i: f"{i}:{x}")
                sides[t].append(s)
            sources.append(_source(p, r, {t: len(sides[t][-1]) for t in SIDE_TABLES}))
            profiles.append(pd.DataFrame(store.rows("host_profile")).assign(db=p))
            skipped += [{"db": p, **row} for row in store.skipped]
    data = Data(
        runs=_runs_frame(runs),
        ceilings=_concat(sides["ceilings"]),
        ops=_concat(sides["ops"]),
        op_profile=_concat(sides["op_profile"]),
        sources=sources,
        skipped=skipped,
        host_profile=_concat(profiles),
    )
    data.runs, data.hyperparameters = _flatten_configs(data.runs)
    _fill_measured_utilization(data)
    return data


def from_frames(
    runs: pd.DataFrame | Iterable[dict] | None = None,
    ceilings: pd.DataFrame | None = None,
    ops: pd.DataFrame | None = None,
    op_profile: pd.DataFrame | None = None,
) -> Data:
    """A Data from in-memory rows (tests and notebooks); runs need family, config and status."""
    r = pd.DataFrame(runs if runs is not None else [])
    data = Data(
        runs=_runs_frame([r]) if len(r) else _runs_frame([]),
        ceilings=ceilings if ceilings is not None else pd.DataFrame(),
        ops=ops if ops is not None else pd.DataFrame(),
        op_profile=op_profile if op_profile is not None else pd.DataFrame(),
        sources=[{"db": "<memory>", "runs": len(r)}],
    )
    data.runs, data.hyperparameters = _flatten_configs(data.runs)
    _fill_measured_utilization(data)
    return data


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _runs_frame(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return add_quality(
            pd.DataFrame(columns=["family", "config", "status", "precision", "platform"])
        )
    df = pd.concat(frames, ignore_index=True)
    for col in ("device_name", "device", "optimizer", "torch_version", "hostname"):
        if col not in df:
            df[col] = None
    for col, default in (("db_index", 0), ("attempt", 1), ("mode", "eager"), ("backend", "torch")):
        if col not in df:
            df[col] = default
    # every row before the infeed study trained on device data (docs/infeed.md)
    df["data_source"] = df["data_source"].fillna("device") if "data_source" in df else "device"
    df["backend"] = df["backend"].fillna("torch")
    # every row before the precision policy kept fp32 master weights (docs/optimizers.md)
    df["precision_policy"] = (
        df["precision_policy"].fillna("mixed") if "precision_policy" in df else "mixed"
    )
    df["engine"] = engine(df)
    if "id" not in df:
        df["id"] = range(1, len(df) + 1)
    if "run_key" not in df:
        df["run_key"] = df["id"].astype(str)
    if "threads" in df:  # a count, printed as one ("2", not "2.0") even beside nulls
        df["threads"] = pd.to_numeric(df["threads"], errors="coerce").astype("Int64")
    df["uid"] = df["db_index"].astype(str) + ":" + df["id"].astype(str)
    # The platform a row ran on: the device's own name (GPU model or CPU model), else the
    # device string. Two machines with one GPU model are one platform, as in the paper.
    df["platform"] = df["device_name"].where(df["device_name"].notna(), df["device"])
    df["config_key"] = df["config"].map(_canonical)
    return add_quality(df)


def engine(df: pd.DataFrame) -> pd.Series:
    """What ran the step (docs/jax.md): `torch-<mode>` (torch-eager, torch-compile, …) or `jax`
    (XLA compiles every JAX step): the group `compare --by engine` pairs across modes."""
    backend = df["backend"].fillna("torch").astype(str)
    mode = df["mode"].fillna("eager").astype(str)
    return backend.where(backend != "torch", "torch-" + mode)


def noisy_ok(runs: pd.DataFrame) -> pd.Series:
    """Rows that finished ok but are flagged noisy: the ones comparisons leave out."""
    if not len(runs) or "noisy" not in runs:
        return pd.Series(False, index=runs.index)
    return (runs["status"] == Status.OK) & runs["noisy"].astype(bool)


def reason_counts(runs: pd.DataFrame) -> dict[str, int]:
    """How many noisy ok runs give each reason, most common first (ties by reason)."""
    out: dict[str, int] = {}
    for rs in runs.loc[noisy_ok(runs), "quality_reasons"]:
        for r in rs or ["rated noisy"]:
            out[r] = out.get(r, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def ordered(
    df: pd.DataFrame, by: str, names: Sequence[str], ascending: bool = True
) -> pd.DataFrame:
    """`df` by the number column `by` (NaN last), rows whose values are equal within rounding
    (paradnn.rounding) by the `names` columns: an order that no CPU, sort algorithm (numpy's
    quicksort orders ties by SIMD width) or last bit of a float changes."""
    if not len(df):
        return df
    k = pd.to_numeric(df[by], errors="coerce").map(rounding.key)
    tie = {f"_tie{i}": df[c].astype(str) for i, c in enumerate(names) if c in df}
    return (
        df.assign(_key=k if ascending else -k, **tie)
        .sort_values(["_key", *tie], kind="stable", na_position="last")
        .drop(columns=["_key", *tie])
    )


def by_count(counts: pd.Series) -> pd.Series:
    """A count per group, most first, equal counts by the group's name (never by the order a
    sort algorithm leaves ties in)."""
    names = [str(i) for i in counts.index]
    order = sorted(range(len(counts)), key=lambda i: (-counts.iloc[i], names[i]))
    return counts.iloc[order]


def without_noisy(data: Data) -> tuple[Data, pd.DataFrame]:
    """The data reduced to each config's chosen attempt (paradnn.attempts.choose: its best good
    attempt, else its latest) with the noisy ok ones left out, and those left out.

    A config with one good attempt keeps it however many noisy re-runs followed; one with no
    good attempt is left out when its latest is noisy. The other tables are shared."""
    runs = choose(data.runs)
    drop = noisy_ok(runs)
    kept = Data(
        runs=runs[~drop],
        ceilings=data.ceilings,
        ops=data.ops,
        op_profile=data.op_profile,
        sources=data.sources,
        hyperparameters=data.hyperparameters,
        noisy_left_out=runs[drop],
        predicted=data.predicted,
        host_profile=data.host_profile,
    )
    return kept, runs[drop]


def _canonical(cfg) -> str:
    if isinstance(cfg, str):
        cfg = json.loads(cfg)
    return json.dumps(cfg, sort_keys=True, separators=(",", ":"))


def _flatten_configs(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One column per config key; returns the keys each family uses, in config order."""
    if not len(df):
        return df, {}
    configs = df["config"].map(lambda c: json.loads(c) if isinstance(c, str) else dict(c or {}))
    keys: dict[str, list[str]] = {}
    for fam, cfgs in configs.groupby(df["family"]):
        seen: dict[str, None] = {}
        for c in cfgs:
            seen.update(dict.fromkeys(c))
        keys[str(fam)] = [k if k not in _RESERVED else f"cfg_{k}" for k in seen]
    flat = pd.DataFrame(
        [{(k if k not in _RESERVED else f"cfg_{k}"): v for k, v in c.items()} for c in configs],
        index=df.index,
    )
    clash = [c for c in flat.columns if c in df.columns]
    flat = flat.drop(columns=clash)
    return pd.concat([df, flat], axis=1), keys


def _fill_measured_utilization(data: Data) -> None:
    """utilization_measured for runs stored before `paradnn calibrate` ran on their device, and
    `ceiling_beaten` (utilization.flagged: the stored flag, else a utilization above 1) for
    every run, so a reader never needs to know which rows predate the flag."""
    runs, ceilings = data.runs, data.ceilings
    if len(runs) and len(ceilings) and "achieved_flops" in runs:
        mm = ceilings[(ceilings["kind"] == "matmul") & ceilings["value"].notna()]
        if "status" in mm:
            mm = mm[mm["status"].fillna(Status.OK) == Status.OK]
        best = mm.groupby(["device_name", "precision"])["value"].max().to_dict()
        if "utilization_measured" not in runs:
            runs["utilization_measured"] = None
        missing = runs["utilization_measured"].isna() & runs["achieved_flops"].notna()
        for idx in runs.index[missing]:
            ceiling = best.get((runs.at[idx, "device_name"], runs.at[idx, "precision"]))
            if ceiling:
                runs.at[idx, "utilization_measured"] = runs.at[idx, "achieved_flops"] / ceiling
                if "ceiling_beaten" in runs:
                    runs.at[idx, "ceiling_beaten"] = None  # decided below, from the new value
    if len(runs):
        cols = [c for c in ("ceiling_beaten", "utilization_measured") if c in runs]
        rows = [dict(zip(cols, v, strict=True)) for v in runs[cols].itertuples(index=False)]
        # None where nothing says (no measured utilization), as in the store
        runs["ceiling_beaten"] = [
            flagged(r) if any(not no_value(x) for x in r.values()) else None for r in rows
        ]


def _source(path: str, runs: pd.DataFrame, side_counts: dict[str, int]) -> dict:
    def distinct(col: str) -> list[str]:
        if col not in runs or not len(runs):
            return []
        return sorted({str(v) for v in runs[col].dropna()})

    statuses = runs["status"].value_counts().to_dict() if len(runs) else {}
    return {
        "db": path,
        "runs": len(runs),
        "statuses": {str(k): int(v) for k, v in statuses.items()},
        "hosts": distinct("hostname"),
        "devices": distinct("device_name"),
        "torch": distinct("torch_version"),
        "cuda": distinct("cuda_version"),
        "python": distinct("python_version"),
        "first": min(distinct("started_at"), default=None),
        "last": max(distinct("finished_at"), default=None),
        **side_counts,
    }


METRICS = {
    "utilization_measured": "FLOP/s utilization (of measured ceiling)",
    "utilization_datasheet": "FLOP/s utilization (of datasheet peak)",
    "examples_per_s": "examples/s",
    "achieved_flops": "achieved FLOP/s",
    "step_time_s": "step time (s)",
}


def default_metric(runs: pd.DataFrame) -> str:
    """Utilization when some denominator exists (measured ceiling first), else achieved FLOP/s
    (utilization's numerator), else examples/s."""
    for m in ("utilization_measured", "utilization_datasheet", "achieved_flops"):
        if m in runs and runs[m].notna().any():
            return m
    return "examples_per_s"


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ConfigError("metric", metric, "one of " + ", ".join(METRICS))
    return metric


def numeric_hyperparameters(data: Data, family: str) -> list[str]:
    """Config keys of a family whose values are numbers (categorical ones are kept apart)."""
    runs = data.runs[data.runs["family"] == family]
    out = []
    for k in data.hyperparameters.get(family, []):
        col = runs[k].dropna()
        if len(col) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in col):
            out.append(k)
    return out


# Run properties that change what the same config measures. A default slice (heat map,
# regression) holds each one fixed when it varies in the data, so a cell is never the median of
# 1 and 2 threads, or of eager and compiled runs.
SLICE = ("platform", "precision")
SLICE_EXTRA = ("threads", "mode", "torch_version", "procs", "backend")


def slice_columns(runs: pd.DataFrame) -> list[str]:
    """platform, precision, and each of SLICE_EXTRA that takes several values in `runs`."""
    extra = [c for c in SLICE_EXTRA if c in runs and runs[c].dropna().astype(str).nunique() > 1]
    return [*SLICE, *extra]


def where_text(where: dict) -> str:
    """'AMD EPYC, fp32, threads=2': platform and precision bare, the other slice columns named."""
    return ", ".join(str(v) if k in SLICE else f"{k}={v}" for k, v in where.items()) or "all runs"


def largest_group(runs: pd.DataFrame, by: Sequence[str]) -> dict:
    """The (platform, precision, ...) group with the most rows: a sensible default slice."""
    if not len(runs):
        return {}
    counts = by_count(runs.groupby(list(by), dropna=False).size())
    top = counts.index[0]
    top = top if isinstance(top, tuple) else (top,)
    return dict(zip(by, top, strict=True))


def select(runs: pd.DataFrame, where: dict) -> pd.DataFrame:
    mask = pd.Series(True, index=runs.index)
    for k, v in where.items():
        missing = v is None or (not isinstance(v, str) and pd.api.types.is_scalar(v) and pd.isna(v))
        mask &= runs[k].isna() if missing else (runs[k] == v)
    return runs[mask]


def chosen_ok(data: Data) -> pd.DataFrame:
    """The chosen attempt of each config (paradnn.attempts.choose) where it finished ok."""
    runs = choose(data.runs)
    return runs[runs["status"] == Status.OK] if len(runs) else runs
