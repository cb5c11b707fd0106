"""One configuration across time: every stored attempt of it, in every database given, oldest
first, with the torch and paradnn versions, the host, the baselines that name it and each
step time's 95% confidence interval (`paradnn history`, docs/baselines.md).

A configuration is a family and its full config; the study axes narrow it further (a run at
fp32 and one at bf16 are two lines of one history unless `where` picks one). Every attempt is
listed, failures too, and each says whether it is its run key's chosen attempt (the one
compare and report use, paradnn.attempts)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from paradnn.analysis.frames import Data, choose
from paradnn.axes import BY_FIELD
from paradnn.errors import ConfigError

COLUMNS = (
    "started_at", "db", "id", "attempt", "chosen", "status", "quality", "precision", "mode",
    "threads", "hostname", "torch_version", "paradnn_version", "baselines", "step_time_s",
    "step_time_ci_low_s", "step_time_ci_high_s", "ci_rel", "examples_per_s", "n_samples",
)  # fmt: skip


def history(
    data: Data,
    family: str,
    config: Mapping[str, Any],
    where: Mapping[str, Any] | None = None,
    baselines: Mapping[tuple[str, int], list[str]] | None = None,
) -> pd.DataFrame:
    """Every attempt of `family` with exactly `config` (a full config: the family's defaults
    filled in by the caller), narrowed by `where` ({RunOptions field: value} of the study
    axes, as `results` filters), oldest first. `baselines`: (db, row id) -> the names of the
    baselines holding that run. An empty frame when nothing matches (the caller says so)."""
    runs = data.runs
    if not len(runs):
        return pd.DataFrame(columns=list(COLUMNS))
    key = json.dumps(dict(config), sort_keys=True, separators=(",", ":"))
    found = runs[(runs["family"] == family) & (runs["config_key"] == key)]
    for field, value in (where or {}).items():
        if field == "threads" or field == "attempt":
            column = field
        elif field in BY_FIELD and BY_FIELD[field].column is not None:
            column = BY_FIELD[field].column
        else:
            raise ConfigError("where", field, "a study axis with a record column, threads, attempt")
        if column not in found:
            return pd.DataFrame(columns=list(COLUMNS))
        found = found[found[column].astype(str) == str(value)]
    if not len(found):
        return pd.DataFrame(columns=list(COLUMNS))
    picked = set(choose(runs)["uid"])
    out = found.assign(
        chosen=found["uid"].isin(picked),
        baselines=[
            ", ".join((baselines or {}).get((str(d), int(i)), []))
            for d, i in zip(found["db"], found["id"], strict=True)
        ],
    )
    for c in COLUMNS:
        if c not in out:
            out[c] = None
    out = out.assign(_t=out["started_at"].fillna("").astype(str))  # ISO 8601: sorts in time
    out = out.sort_values(["_t", "db_index", "id"], kind="stable")
    return out[list(COLUMNS)].reset_index(drop=True)
