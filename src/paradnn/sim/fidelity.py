"""Check the model against measurements: predict every measured run of a results database on
the chip that describes its device, and report the error per family.

`validate_frame` is the one computation behind `paradnn simulate validate` (api) and the
report's "Predicted vs measured" section, so both print the same numbers: the same runs (each
config's chosen attempt, noisy ones left out unless asked), the same chip per device
(`device_chips`), the same host profile per run (`host_for`: the profile `paradnn calibrate`
stored for the host that measured it, else the assumed defaults) and the same model — the
step-time model (`steptime.predict_step`) unless the roofline is asked for by name.

Two predictions per run, both labelled with the model (``model``) and host profile:

* ``predicted_s`` — the model alone, with the device's measured ceilings (or its datasheet) as
  peak and bandwidth. Nothing is fitted.
* ``calibrated_s`` — the same times a per-family efficiency factor (median measured ÷ predicted)
  fitted on the *other* runs of the family on that device (leave-one-out), so a run never
  calibrates its own prediction. None when the family has no other run.

The error of a run is ``|predicted − measured| / measured``, a fraction; a family's figure is
the median (MdAPE). Columns: family, config, precision, device_name, measured_s, predicted_s,
ape, calibrated_s, ape_calibrated, bound, basis, model, host_profile, kind ("prediction").
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from paradnn import families
from paradnn.attempts import choose, good
from paradnn.errors import ABSENT, ConfigError
from paradnn.precisions import PRECISIONS
from paradnn.records import Status
from paradnn.sim import chip as chips
from paradnn.sim import hostprofile as hp
from paradnn.sim.chip import Chip
from paradnn.sim.model import KIND, predict
from paradnn.sim.steptime import predict_step

# The step model's host profile forced on every run: one profile, one per device name, or
# "defaults" (each chip's kind's documented defaults); None: each run's own (`_host_of`).
Host = hp.HostProfile | Mapping[str, hp.HostProfile] | str | None

DEFAULT_MODEL = "step"  # the model `simulate validate`, `simulate step` and the report use
MODEL_NAMES = {"step": "step-time model", "roofline": "roofline model"}

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
    "model",
    "host_profile",
    "kind",
)


def _config(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def predicted_vs_measured(
    frame: pd.DataFrame,
    platform: Chip | str | Mapping[str, Chip],
    model: str = DEFAULT_MODEL,
    *,
    host: Host = None,
    host_profiles: Sequence[Mapping[str, Any]] = (),
    include_noisy: bool = False,
) -> pd.DataFrame:
    """One row per ok run of ``frame`` (runs as `Store.frame()` returns them; of several
    attempts of a run key, the one paradnn.attempts.choose picks, if ok and — unless
    ``include_noisy`` — not flagged noisy, as `compare` and the report) whose device the chip
    describes. ``platform``: a `Chip` (used for every run), a database id or TOML path, or a
    mapping device_name → Chip. Runs at a precision the chip has no peak for are left out.
    ``model``: ``step`` (`steptime.predict_step`) or ``roofline`` (`model.predict`). The step
    model's host profile, first found: ``host`` (a profile for every run, one per device name,
    or "defaults": each chip's kind's; `simulate validate --host-profile`), the chip file's own
    [ID.host], the profile stored for the host that measured the run (``host_profiles``, the
    store's `host_profile` rows: `host_for`), else the assumed defaults."""
    from paradnn.sim.curve import check_options

    check_options(model)
    if isinstance(platform, str):
        platform = chips.load(platform)
    rows: list[dict[str, Any]] = []
    if frame.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = choose(frame)  # a re-measured config counts once: the attempt compare uses
    keep = (frame["status"] == Status.OK) if include_noisy else good(frame)
    ok = frame[keep & frame["step_time_s"].notna()]
    hosts: dict[tuple[Any, ...], tuple[hp.HostProfile, str]] = {}
    for r in ok.to_dict("records"):
        chip = platform.get(r.get("device_name")) if isinstance(platform, Mapping) else platform
        if chip is None or r["precision"] not in PRECISIONS:
            continue
        if not families.analytic(r["family"]):  # a model of your own: nothing to predict from
            continue
        if chip.platform.peak(r["precision"]) is None:
            continue
        cfg = _config(r["config"])
        opt = r.get("optimizer") or "rmsprop"
        words = None
        if model == "step":
            key = (str(r.get("hostname") or ""), _device_type(chip), r.get("device_name"))
            if key not in hosts:
                hosts[key] = _host_of(chip, key, host, host_profiles)
            prof, words = hosts[key]
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
                "model": model,
                "host_profile": words,
                "kind": KIND,
            }
        )
    df = pd.DataFrame(
        rows, columns=[c for c in COLUMNS if c not in ("calibrated_s", "ape_calibrated")]
    )
    return _leave_one_out(df)[list(COLUMNS)]


def _host_of(
    chip: Chip, key: tuple[Any, ...], host: Host, profiles: Sequence[Mapping[str, Any]]
) -> tuple[hp.HostProfile, str]:
    """The host profile one run is predicted with and the line naming it (see
    `predicted_vs_measured` for the order)."""
    hostname, device, device_name = key
    if isinstance(host, str):  # "defaults", asked for by name
        p = hp.default(device)
        return p, hp.describe(p) + " (--host-profile defaults)"
    given = host.get(device_name) if isinstance(host, Mapping) else host
    if given is not None:
        origin = str(given.detail.get("origin") or "--host-profile")
        return hp.for_device(given, device), hp.describe(given, origin)
    if chip.host is not None:
        origin = f"the platform {chip.origin} [{chip.platform.id}.host]"
        return hp.for_device(chip.host, device), hp.describe(chip.host, origin)
    return host_for(profiles, hostname, device)


def _device_type(chip: Chip) -> str:
    """The host profile's device kind for a chip (as api.host_profile_for): cpu, else cuda."""
    return "cpu" if chip.platform.kind == "cpu" else "cuda"


def host_for(
    profiles: Sequence[Mapping[str, Any]], hostname: str, device: str
) -> tuple[hp.HostProfile, str]:
    """The host profile a measured run is predicted with, and one line saying which: the
    newest ok profile `paradnn calibrate` stored for the host that measured it (``profiles``:
    the store's `host_profile` rows; ``device``: cpu or cuda; one measured on that kind of
    device first, else one measured on its CPU, lent launch and sync defaults), else the
    assumed defaults."""
    same = [r for r in profiles if r.get("device_type") == device]  # its launches timed
    row = (
        (hp.newest_for(same, hostname) or hp.newest_for(list(profiles), hostname))
        if hostname
        else None
    )
    if row is None:
        p = hp.default(device)
        return p, hp.describe(p)
    where = f"host_profile row {row.get('id')}"
    try:
        p = hp.for_device(hp.from_row(row, where=where), device)
    except ConfigError as e:  # a damaged row: the defaults, saying why
        p = hp.default(device)
        return p, hp.describe(p) + f"; {where} of {hostname} not used ({e})"
    return p, hp.describe(p, f"{where} of {hostname}")


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
    """Per family: runs, MdAPE of the model's and of the calibrated prediction, the model."""
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
                "model": "; ".join(sorted(set(g["model"].astype(str)))),
                "kind": KIND,
            }
        )
    return pd.DataFrame(
        out, columns=["family", "runs", "mdape", "mdape_calibrated", "basis", "model", "kind"]
    )


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


def validate_frame(
    frame: pd.DataFrame,
    ceilings: list[dict[str, Any]],
    platform: str | None = None,
    *,
    db: str | None = None,
    model: str = DEFAULT_MODEL,
    host: Host = None,
    host_profiles: Sequence[Mapping[str, Any]] = (),
    include_noisy: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-run rows, per-family summary) for every ok run of ``frame`` (`Store.frame()`, with
    the store's ``ceilings`` and ``host_profiles`` rows; the caller reads the store, ``db``
    names it in errors). ``platform`` forces one chip for all runs; by default each device
    gets `device_chips`. ``model``, ``host``, ``include_noisy``: as `predicted_vs_measured`.
    The one computation of `simulate validate` and of the report's prediction section."""
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
    df = predicted_vs_measured(
        frame,
        target,
        model,
        host=host,
        host_profiles=host_profiles,
        include_noisy=include_noisy,
    )
    return df, summary(df)


def validate_data(
    data: Any, model: str = DEFAULT_MODEL
) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """`validate_frame` for the report: ``data`` is `paradnn.analysis.frames.Data` (``runs``,
    ``ceilings`` and ``host_profile`` frames), its runs already chosen and filtered as the
    report was asked (noisy ones out unless --include-noisy). None when no device of its runs
    is described by ceilings or the platform database."""
    runs = data.runs
    if runs is None or not len(runs):
        return None
    ceilings, profiles = _records(data.ceilings), _records(getattr(data, "host_profile", None))
    if not device_chips(runs, ceilings):
        return None
    return validate_frame(runs, ceilings, model=model, host_profiles=profiles, include_noisy=True)


def _records(frame: pd.DataFrame | None) -> list[dict[str, Any]]:
    if frame is None or not len(frame):
        return []
    return frame.astype(object).where(frame.notna(), None).to_dict("records")
