"""What the result databases measure of a seed's claim (paradnn/data/paper_claims.toml,
`sim.papers`): the claim's ``measure`` table says which runs count, on which kind of device.
A claim the databases cannot speak to gets its reason, and the report falls back to the
step-time model's prediction for the paper's platform."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from paradnn.analysis.frames import Data, chosen_ok

# How a run's device string starts → the kind of platform the seeds compare (cpu, gpu, tpu).
_KINDS = {"cpu": "cpu", "cuda": "gpu", "gpu": "gpu", "rocm": "gpu", "hip": "gpu", "tpu": "tpu"}


def device_kind(device: object) -> str | None:
    """cpu, gpu or tpu for a stored device string ("cpu", "cuda:0", "tpu:0"), else None."""
    if not isinstance(device, str) or not device:
        return None
    return _KINDS.get(device.partition(":")[0].lower())


def _runs(data: Data, family: str, device: str, precision: str | None = None) -> pd.DataFrame:
    """Chosen ok single-process runs of ``family`` on a ``device``-kind platform."""
    runs = chosen_ok(data)
    if not len(runs):
        return runs
    keep = (runs["family"] == family) & (runs["device"].map(device_kind) == device)
    if "procs" in runs:
        keep &= pd.to_numeric(runs["procs"], errors="coerce").fillna(1) <= 1
    if precision is not None:
        keep &= runs["precision"] == precision
    return runs[keep]


def _utilization(runs: pd.DataFrame) -> tuple[pd.Series, str]:
    """Utilization as the seeds define it (achieved ÷ datasheet peak), else against the
    measured matmul ceiling, saying which."""
    for col, what in (
        ("utilization_datasheet", "of the datasheet peak"),
        ("utilization_measured", "of the measured matmul ceiling (no datasheet peak)"),
    ):
        if col in runs:
            vals = pd.to_numeric(runs[col], errors="coerce").dropna()
            if len(vals):
                return vals, what
    return pd.Series(dtype=float), ""


def _platforms(runs: pd.DataFrame) -> str:
    return ", ".join(sorted({str(p) for p in runs["platform"].dropna()}))


def max_utilization(data: Data, family: str, device: str) -> tuple[float | None, str]:
    """Highest utilization (%) of a family's runs on a kind of device, or (None, why)."""
    runs = _runs(data, family, device)
    if not len(runs):
        return None, f"no {family} runs on a {device.upper()} in the databases"
    vals, what = _utilization(runs)
    if not len(vals):
        return None, f"the {family} runs on a {device.upper()} have no utilization (no peak known)"
    return (
        100 * float(vals.max()),
        f"max over {len(vals)} {family} runs on {_platforms(runs)}, {what}",
    )


def throughput(
    data: Data,
    family: str,
    config: Mapping[str, Any],
    device: str,
    precision: str | None,
    per_example: float = 1,
) -> tuple[float | None, str]:
    """Median examples/s (× ``per_example``: tokens per sequence) of the runs of ``family``
    whose config holds ``config``'s values, on a kind of device at ``precision``."""
    runs = _runs(data, family, device, precision)
    if len(runs):
        keep = runs["config"].map(
            lambda c: isinstance(c, Mapping) and all(c.get(k) == v for k, v in config.items())
        )
        runs = runs[keep.astype(bool)]
    cfg = " ".join(f"{k}={v}" for k, v in config.items())
    if not len(runs):
        return None, f"no {family} {cfg} {precision or ''} run on a {device.upper()} here".replace(
            "  ", " "
        )
    vals = pd.to_numeric(runs["examples_per_s"], errors="coerce").dropna()
    if not len(vals):
        return None, f"the {family} {cfg} runs here have no throughput"
    n = f"median of {len(vals)} runs" if len(vals) > 1 else "1 run"
    return float(vals.median()) * per_example, f"{n} on {_platforms(runs)}"


def measured(data: Data, spec: Mapping[str, Any] | None) -> tuple[float | None, str]:
    """A claim's ``measure`` table evaluated on the databases: (value, basis) or (None, why)."""
    if not spec:
        return None, "not measurable here"
    kind = spec.get("kind")
    if kind == "max_util":
        return max_utilization(data, spec["family"], spec["device"])
    if kind == "max_util_ratio":
        a, why_a = max_utilization(data, spec["family"], spec["a"])
        b, why_b = max_utilization(data, spec["family"], spec["b"])
        if a is None or b is None or not b:
            return None, why_a if a is None else why_b
        return a / b, f"{why_a} ÷ {why_b}"
    if kind == "throughput":
        return throughput(
            data,
            spec["family"],
            spec.get("config", {}),
            spec["device"],
            spec.get("precision"),
            spec.get("per_example", 1),
        )
    return None, str(spec.get("reason") or "not measurable here")
