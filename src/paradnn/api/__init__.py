"""The library behind the CLI: each command calls one function here.

Split by domain — `runs` (bench, run, dry runs, stored results), `devices` (what the device
is, torch-free), `ceilings` (calibrate, ops), `analysis` (report, compare), `catalog`
(families), `simulation` (the what-if model) — and re-exported here, so `api.bench(...)` is
the one way in."""

from __future__ import annotations

from paradnn.api.analysis import compare, report
from paradnn.api.catalog import family_info
from paradnn.api.ceilings import calibrate, ops
from paradnn.api.devices import device_capacity, native_precisions
from paradnn.api.runs import (
    bench,
    dry_run,
    dry_run_count,
    results,
    run,
    side_table,
)
from paradnn.api.scaling import scale
from paradnn.api.simulation import (
    simulate,
    simulate_fit,
    simulate_mxu_study,
    simulate_precision_study,
    simulate_scaling,
    simulate_validate,
)

__all__ = [
    "bench",
    "calibrate",
    "compare",
    "device_capacity",
    "dry_run",
    "dry_run_count",
    "family_info",
    "native_precisions",
    "ops",
    "report",
    "results",
    "run",
    "scale",
    "side_table",
    "simulate",
    "simulate_fit",
    "simulate_mxu_study",
    "simulate_precision_study",
    "simulate_scaling",
    "simulate_validate",
]
