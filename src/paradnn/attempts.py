"""Which stored attempt of a configuration counts: the quality flags of a run and the one choice
every consumer makes (results, compare, report, findings, `simulate fit`/`validate`).

A run key (one config in one environment, docs/runner.md) can hold several attempts: a failure
retried, a noisy run re-measured (`--remeasure`), a `bench` repeated. None is ever deleted. The
choice, per database and run key:

1. the best *good* attempt: status `ok` and not flagged noisy. "Best" is the narrowest 95% CI
   of the median step time relative to the median, not the lowest median: choosing the fastest
   of several measurements would bias every speedup towards the config measured most often (the
   minimum of k noisy medians sits below their centre), while the CI width says how well a
   measurement converged without looking at its value. Ties (or no CI) go to the latest attempt;
2. else the latest attempt (noisy, failed or skipped), and the row says so.

Torch-free and store-free (pandas only): it sits below both `analysis` and `sim`.
"""

from __future__ import annotations

import json

import pandas as pd

from paradnn.records import Status

BEST_GOOD = "best good attempt"
LATEST_NONE_GOOD = "latest attempt, none good"
CHOICES = (BEST_GOOD, LATEST_NONE_GOOD)
OLD_UNCONVERGED = "did not reach its CI target (recorded before quality flags)"


def add_quality(runs: pd.DataFrame) -> pd.DataFrame:
    """Boolean `noisy` and `emulated` columns and a `quality_reasons` list per run, in place.

    A run is noisy when the store rated it so (`quality` = 'noisy', schema v5). A timed run
    stored before the ratings (NULL quality, status ok or nan with a step time) is noisy when
    its timer did not converge to the CI target. `emulated` is False where the column is absent.
    Comparisons and the report leave noisy runs out by default; both read these columns.
    """
    n = len(runs)
    quality = runs["quality"] if "quality" in runs else pd.Series([None] * n, index=runs.index)
    reasons = (
        runs["quality_reasons"].map(_reason_list)
        if "quality_reasons" in runs
        else pd.Series([[] for _ in range(n)], index=runs.index, dtype=object)
    )
    rated = quality.notna()
    noisy = rated & (quality == "noisy")
    status = runs["status"] if "status" in runs else pd.Series([None] * n, index=runs.index)
    step = (
        pd.to_numeric(runs["step_time_s"], errors="coerce")
        if "step_time_s" in runs
        else pd.Series(float("nan"), index=runs.index)
    )
    timed = status.isin([Status.OK, Status.NAN]) & step.notna()
    unconverged = (
        runs["converged"].map(lambda v: v is not None and not pd.isna(v) and not bool(v))
        if "converged" in runs
        else pd.Series(False, index=runs.index)
    )
    old_noisy = ~rated & timed & unconverged.astype(bool)
    reasons = reasons.where(~old_noisy, pd.Series([[OLD_UNCONVERGED]] * n, index=runs.index))
    flagged = noisy & (reasons.map(len) == 0)
    reasons = reasons.where(~flagged, pd.Series([["rated noisy"]] * n, index=runs.index))
    runs["noisy"] = (noisy | old_noisy).astype(bool)
    runs["quality_reasons"] = reasons
    runs["emulated"] = (
        runs["emulated"].map(lambda v: v is not None and not pd.isna(v) and bool(v)).astype(bool)
        if "emulated" in runs
        else False
    )
    return runs


def _reason_list(v) -> list[str]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return [v]
    if isinstance(v, (list, tuple)):
        return [str(x) for x in v]
    return []


def good(runs: pd.DataFrame) -> pd.Series:
    """Attempts that count as measurements: status ok and not flagged noisy."""
    if not len(runs):
        return pd.Series(False, index=runs.index, dtype=bool)
    noisy = runs["noisy"] if "noisy" in runs else add_quality(runs.copy())["noisy"]
    return (runs["status"] == Status.OK) & ~noisy.astype(bool)


def choose(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per database and run key: its chosen attempt (the module docstring's rule).

    Adds `attempts` (stored attempts of the key), `good_attempts` and `attempt_choice`
    (BEST_GOOD or LATEST_NONE_GOOD); rows keep their index labels, in index order. A frame
    already chosen comes back as it is, so a consumer may choose again."""
    if not len(runs) or "run_key" not in runs:
        return runs
    keys = [c for c in ("db_index", "run_key") if c in runs]
    if "attempt_choice" in runs and not runs.duplicated(keys).any():
        return runs
    df = runs.reset_index(drop=True)  # positions: an index may repeat (concatenated frames)
    ok = good(df)
    attempt = _num(df, "attempt").fillna(0) if "attempt" in df else 0
    step = _num(df, "step_time_s")
    width = (_num(df, "step_time_ci_high_s") - _num(df, "step_time_ci_low_s")) / step
    width = width.where(width.notna() & (step > 0), float("inf"))
    rank = pd.DataFrame(
        {
            "_good": ok.astype(int),  # a good attempt first
            "_narrow": -width.where(ok, float("inf")),  # then the narrowest relative CI
            "_attempt": attempt,  # then the latest
            "_id": _num(df, "id").fillna(0),
        }
    )
    order = rank.sort_values(["_good", "_narrow", "_attempt", "_id"], kind="stable").index
    by = [df[k] for k in keys]
    last = df.loc[order].groupby(keys, sort=False, dropna=False).tail(1).index.sort_values()
    attempts = df.groupby(by, dropna=False)[keys[0]].transform("size")
    goods = ok.groupby(by, dropna=False).transform("sum")
    out = runs.iloc[last].copy()
    out["attempts"] = attempts.iloc[last].astype(int).to_numpy()
    out["good_attempts"] = goods.iloc[last].astype(int).to_numpy()
    out["attempt_choice"] = [BEST_GOOD if g else LATEST_NONE_GOOD for g in ok.iloc[last]]
    return out.sort_index(kind="stable")


def choice_counts(chosen: pd.DataFrame) -> dict[str, int]:
    """Configs with several stored attempts, by how their attempt was chosen (for a note)."""
    if not len(chosen) or "attempt_choice" not in chosen:
        return {}
    many = chosen[pd.to_numeric(chosen["attempts"], errors="coerce") > 1]
    return {c: int((many["attempt_choice"] == c).sum()) for c in CHOICES}


def choice_note(chosen: pd.DataFrame) -> str | None:
    """'4 configs with several attempts: 3 the best of their good attempts, 1 the latest
    (none good)', or None when every config has one attempt."""
    n = choice_counts(chosen)
    total = sum(n.values())
    if not total:
        return None
    return (
        f"{total} config{'s' if total != 1 else ''} with several stored attempts: "
        f"{n[BEST_GOOD]} use the best of their good attempts (narrowest CI), "
        f"{n[LATEST_NONE_GOOD]} the latest attempt (none good)"
    )


def _num(df: pd.DataFrame, col: str) -> pd.Series:
    if col not in df:
        return pd.Series(float("nan"), index=df.index)
    return pd.to_numeric(df[col], errors="coerce")


_ROW_COLUMNS = ("id", "run_key", "attempt", "status", "quality", "quality_reasons", "converged")
_ROW_COLUMNS += ("step_time_s", "step_time_ci_low_s", "step_time_ci_high_s")


def chosen_ids(rows: list[dict]) -> dict[int, str]:
    """Stored rows (one database's `runs`) → {row id: attempt_choice} of the chosen attempts:
    what `paradnn results` marks, the same rows `choose` keeps for compare and the report."""
    if not rows:
        return {}
    df = pd.DataFrame([{c: r.get(c) for c in _ROW_COLUMNS} for r in rows])
    out = choose(add_quality(df))
    return dict(zip(out["id"].astype(int), out["attempt_choice"], strict=True))
