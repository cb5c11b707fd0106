"""Check the model against measurements: predict every measured run of a results database on
the chip that describes its device, and report the error per family.

Two predictions per run, both labelled:

* ``predicted_s`` — the analytical model alone (roofline per op, `model.predict`), with the
  device's measured ceilings (or its datasheet) as peak and bandwidth. Nothing is fitted.
* ``calibrated_s`` — the same times a per-family efficiency factor (median measured ÷ predicted)
  fitted on the *other* runs of the family on that device (leave-one-out), so a run never
  calibrates its own prediction. None when the family has no other run.

The error of a run is ``|predicted − measured| / measured``; a family's figure is the median
(MdAPE). For the report: `predicted_vs_measured(frame, platform)` returns a DataFrame with
columns family, config, precision, device_name, measured_s, predicted_s, ape, calibrated_s,
ape_calibrated, bound, basis, kind ("prediction").
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from typing import Any

import pandas as pd

from paradnn.attempts import choose
from paradnn.errors import ABSENT, ConfigError
from paradnn.precisions import PRECISIONS
from paradnn.records import Status
from paradnn.sim import chip as chips
from paradnn.sim.chip import Chip
from paradnn.sim.hostprofile import HostProfile, for_device
from paradnn.sim.model import KIND, predict
from paradnn.sim.steptime import predict_step

COLUMNS = (
    "family",
    "config",
    "precision",
    "device_name",
    "measured_s",
    "predicted_s",
    "ape",
    "calibrated_s",
    "ape_calibrated",
    "bound",
    "basis",
    "kind",
)


def _config(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def predicted_vs_measured(
    frame: pd.DataFrame,
    platform: Chip | str | Mapping[str, Chip],
    model: str = "roofline",
    host: HostProfile | Mapping[str, HostProfile] | None = None,
) -> pd.DataFrame:
    """One row per ok run of ``frame`` (runs as `Store.frame()` returns them; of several
    attempts of a run key, the one paradnn.attempts.choose picks, if ok) whose device the chip
    describes. ``platform``: a `Chip` (used for every run), a database id or TOML path, or a
    mapping device_name → Chip.
    Runs at a precision the chip has no peak for are left out. ``model``: ``roofline``
    (`model.predict`, the report's) or ``step`` (`steptime.predict_step`, what `simulate fit`
    fits and `simulate validate` uses by default). ``host``: the step model's host profile, one
    for every run or per device name (None, or a device it does not name: the chip file's
    [ID.host], else the defaults for the chip's kind)."""
    from paradnn.sim.curve import check_options

    check_options(model)
    if isinstance(platform, str):
        platform = chips.load(platform)
    rows: list[dict[str, Any]] = []
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = choose(frame)  # a re-measured config counts once: the attempt compare uses
    ok = frame[(frame["status"] == Status.OK) & frame["step_time_s"].notna()]
    for r in ok.to_dict("records"):
        chip = platform.get(r.get("device_name")) if isinstance(platform, Mapping) else platform
        if chip is None or r["precision"] not in PRECISIONS:
            continue
        if chip.platform.peak(r["precision"]) is None:
            continue
        cfg = _config(r["config"])
        opt = r.get("optimizer") or "rmsprop"
        if model == "step":
            prof = host.get(r.get("device_name")) if isinstance(host, Mapping) else host
            prof = prof or chip.host
            if prof is not None:
                prof = for_device(prof, "cpu" if chip.platform.kind == "cpu" else "cuda")
            p = predict_step(r["family"], cfg, chip, r["precision"], optimizer=opt, host=prof)
        else:
            p = predict(r["family"], cfg, chip, r["precision"], optimizer=opt)
        measured = float(r["step_time_s"])
        rows.append(
            {
                "family": r["family"],
                "config": json.dumps(cfg, sort_keys=True),
                "precision": r["precision"],
                "device_name": r.get("device_name"),
                "measured_s": measured,
                "predicted_s": p.predicted_step_s,
                "ape": abs(p.predicted_step_s - measured) / measured,
                "bound": p.bottleneck,
                "basis": chip.origin,
                "kind": KIND,
            }
        )
    df = pd.DataFrame(
        rows, columns=[c for c in COLUMNS if c not in ("calibrated_s", "ape_calibrated")]
    )
    return _leave_one_out(df)[list(COLUMNS)]


def _leave_one_out(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    cal: list[float | None] = []
    for i, r in df.iterrows():
        same = df[(df["family"] == r["family"]) & (df["device_name"] == r["device_name"])]
        others = same.drop(index=i)
        if others.empty:
            cal.append(None)
            continue
        factor = statistics.median(others["measured_s"] / others["predicted_s"])
        cal.append(r["predicted_s"] * factor)
    df["calibrated_s"] = pd.Series(cal, index=df.index, dtype="float64")
    df["ape_calibrated"] = (df["calibrated_s"] - df["measured_s"]).abs() / df["measured_s"]
    return df


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per family: runs, MdAPE of the analytical and of the calibrated prediction."""
    out = []
    for fam, g in df.groupby("family", sort=True):
        cal = g["ape_calibrated"].dropna()
        out.append(
            {
                "family": fam,
                "runs": len(g),
                "mdape": float(g["ape"].median()),
                "mdape_calibrated": float(cal.median()) if len(cal) else None,
                "basis": "; ".join(sorted(set(g["basis"]))),
                "kind": KIND,
            }
        )
    return pd.DataFrame(out)


def device_chips(runs: pd.DataFrame, ceilings: list[dict[str, Any]]) -> dict[str, Chip]:
    """The chip for each device in ``runs``: its measured ceilings when `paradnn calibrate` ran
    on it (same device, same software), else the datasheet entry that matches its name."""
    from paradnn import platforms

    out: dict[str, Chip] = {}
    for name in sorted(set(runs.get("device_name", pd.Series(dtype=str)).dropna())):
        chip = chips.from_ceilings(ceilings, name)
        if chip is None and (plat := platforms.match(name)) is not None:
            chip = chips.from_platform(plat)
        if chip is not None:
            out[name] = chip
    return out


def predicted_vs_measured_data(data: Any) -> pd.DataFrame:
    """`predicted_vs_measured` for the report: ``data`` is `paradnn.analysis.frames.Data` (any
    object with a ``runs`` and a ``ceilings`` DataFrame); each device gets `device_chips`.
    Empty when no device is described by ceilings or the platform database."""
    runs = data.runs
    if runs is None or not len(runs):
        return pd.DataFrame(columns=list(COLUMNS))
    ceilings = data.ceilings
    rows = ceilings.to_dict("records") if ceilings is not None and len(ceilings) else []
    target = device_chips(runs, rows)
    if not target:
        return pd.DataFrame(columns=list(COLUMNS))
    return predicted_vs_measured(runs, target)


def validate_frame(
    frame: pd.DataFrame,
    ceilings: list[dict[str, Any]],
    platform: str | None = None,
    *,
    db: str | None = None,
    model: str = "roofline",
    host: HostProfile | Mapping[str, HostProfile] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-run rows, per-family summary) for every ok run of ``frame`` (`Store.frame()`, with
    the store's ``ceilings`` rows; the caller reads the store, ``db`` names it in errors).
    ``platform`` forces one chip for all runs; by default each device gets `device_chips`.
    ``model`` and ``host``: as `predicted_vs_measured`."""
    if frame.empty:
        shown = ABSENT if db is None else db
        raise ConfigError("--db", shown, "holds no runs: run `paradnn run --db ...` first")
    target: Chip | Mapping[str, Chip] = (
        chips.load(platform) if platform else device_chips(frame, ceilings)
    )
    if not platform and not target:
        names = ", ".join(sorted(set(frame["device_name"].dropna())))
        raise ConfigError(
            "--db",
            db,
            f"no chip describes its devices ({names}): run `paradnn calibrate --db {db}` on "
            "that machine, or pass --platform",
        )
    df = predicted_vs_measured(frame, target, model, host)
    return df, summary(df)
