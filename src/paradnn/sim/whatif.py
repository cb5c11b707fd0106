"""`paradnn report --what-if`: the configs a sweep measured here, predicted on other platforms by
the step-time model (`steptime.predict_step`, datasheet or chip-file parameters), one row per
config and platform, each marked predicted and carrying its kind's validated error band
(`errorbands`). The analysis keeps these rows apart from the measured ones (analysis/whatif.py).

Torch-free and store-free: the caller passes the measured configs as plain dicts."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paradnn.errors import ConfigError
from paradnn.platforms import datasheets
from paradnn.sim import chip as chips_mod
from paradnn.sim import errorbands
from paradnn.sim.chip import Chip
from paradnn.sim.steptime import predict_step

OPTION = "--what-if"
MAX_PLATFORMS = 12  # platforms in one report: each adds a group to every pair
MAX_SPEC = 4096  # characters of one item (as sim.chip.load)
PREDICTED = "predicted"


def label(platform_id: str) -> str:
    """The platform label of a predicted row: 'tpu-v2 (predicted)' wherever it appears."""
    return f"{platform_id} ({PREDICTED})"


def allowed() -> str:
    ids = [p.id for p in datasheets.all_platforms()]
    return (
        "comma-separated platform ids (" + ", ".join(ids) + "), a unique prefix of one "
        "(v100), or chip .toml files"
    )


def resolve(value: str | Sequence[str]) -> list[Chip]:
    """The chips a --what-if value names: ids of the platform database, a unique prefix of one
    (`v100` → v100-sxm2), or paths of chip TOML files (docs/simulate.md). One bad item is one
    line naming it and the allowed ids (ConfigError: exit 2 before any work)."""
    items = [value] if isinstance(value, str) else list(value)
    parts = [p.strip() for it in items for p in str(it).split(",")]
    if not parts or any(not p for p in parts):
        raise ConfigError(OPTION, ",".join(items), allowed())
    if len(parts) > MAX_PLATFORMS:
        raise ConfigError(OPTION, ",".join(parts), f"at most {MAX_PLATFORMS} platforms")
    ids = [p.id for p in datasheets.all_platforms()]
    out: list[Chip] = []
    for p in parts:
        if not p.isprintable() or len(p) > MAX_SPEC:  # a NUL or a huge name: not a path
            raise ConfigError(OPTION, p, allowed())
        if p in ids:
            got = chips_mod.from_platform(datasheets.get(p))
        elif p.endswith(".toml") or _is_file(p):
            if not _is_file(p):
                raise ConfigError(OPTION, p, "no such chip file; " + allowed())
            got = chips_mod.load_file(p)
        else:  # the one resolver of platform names (platforms.datasheets.prefixed)
            near = datasheets.prefixed(p)
            if len(near) != 1:
                raise ConfigError(OPTION, p, datasheets.ambiguous(near) if near else allowed())
            got = chips_mod.from_platform(datasheets.get(near[0]))
        if got.id not in {c.id for c in out}:
            out.append(got)
    return out


def _is_file(p: str) -> bool:
    """Whether `p` names a file; a name the OS refuses (longer than NAME_MAX) names none."""
    try:
        return Path(p).is_file()
    except OSError:
        return False


@dataclass(frozen=True)
class Target:
    """One measured config to predict: what the step-time model needs, and the measured
    precision it stands beside (`precision_here`)."""

    family: str
    config: Mapping[str, Any]
    precision_here: str
    optimizer: str | None = None


def precision_on(chip: Chip, precision: str) -> str | None:
    """The measured precision when the chip has a dense peak for it (measured here beside
    predicted there, like for like), else the chip's native precision
    (`Platform.native_precision`: a TPU bf16, a V100 fp16); None when it has no peak for that
    either."""
    plat = chip.platform
    if plat.peak(precision) is not None:
        return precision
    native = plat.native_precision()
    return native if plat.peak(native) is not None else None


def predict_rows(
    targets: Iterable[Target], chips: Sequence[Chip], bands: errorbands.Bands | None = None
) -> list[dict[str, Any]]:
    """One row per target and chip: the predicted examples/s, step time, achieved FLOP/s and
    utilization (of the chip's datasheet peak), the model's bottleneck, and the band of the
    chip's kind (`band`, `examples_per_s_low/high`; null with `band_reason` when not
    validated). A config the model cannot predict gets a row with null values and `reason`."""
    bands = bands if bands is not None else errorbands.read()
    seen: set[tuple] = set()
    rows: list[dict[str, Any]] = []
    for t in targets:
        key = (t.family, json.dumps(dict(t.config), sort_keys=True), t.precision_here, t.optimizer)
        if key in seen:
            continue
        seen.add(key)
        for chip in chips:
            rows.append(_row(t, chip, bands.of(chip.platform.kind)))
    return rows


def _row(t: Target, chip: Chip, band: errorbands.Band) -> dict[str, Any]:
    prec = precision_on(chip, t.precision_here)
    row: dict[str, Any] = {
        "kind": PREDICTED,
        "predicted": True,
        "platform": label(chip.id),
        "platform_id": chip.id,
        "device_kind": chip.platform.kind,
        "family": t.family,
        "config": json.dumps(dict(t.config), sort_keys=True, separators=(",", ":")),
        "precision": prec,
        "precision_here": t.precision_here,
        "optimizer": t.optimizer,
        "band": band.p90,
        "band_reason": band.reason if band.p90 is None else None,
        "band_label": band.label(),
        "origin": chip.origin,
        "reason": None,
    }
    nulls = dict.fromkeys(
        ("examples_per_s", "examples_per_s_low", "examples_per_s_high", "step_time_s",
         "achieved_flops", "utilization", "bottleneck", "params_source"),
    )  # fmt: skip
    if prec is None:
        return row | nulls | {"reason": f"{chip.id} has no fp32, bf16 or fp16 peak"}
    kw = {"optimizer": t.optimizer} if t.optimizer else {}
    try:
        st = predict_step(t.family, dict(t.config), chip, prec, **kw)
    except (ConfigError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
        return row | nulls | {"reason": f"not predicted: {str(e).splitlines()[0][:160]}"}
    x = st.examples_per_s
    lo, hi = band.throughput(x)
    step = st.predicted_step_s
    return row | {
        "examples_per_s": x,
        "examples_per_s_low": None if math.isnan(lo) else lo,
        "examples_per_s_high": None if math.isnan(hi) else hi,
        "step_time_s": step,
        "achieved_flops": st.flops_per_chip / step if step > 0 else None,
        "utilization": st.utilization,
        "bottleneck": st.bottleneck,
        "params_source": st.params_source,
    }
