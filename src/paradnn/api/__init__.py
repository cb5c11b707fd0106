"""The library behind the CLI: each command calls one function here.

Split by domain — `runs` (bench, run, dry runs, stored results), `devices` (what the device
is, torch-free), `ceilings` (calibrate, ops), `analysis` (report, compare), `catalog`
(families), `simulation` (the what-if model) — and re-exported here, so `api.bench(...)` is
the one way in. What they return is typed (`paradnn.api.returns`: frozen dataclasses, each
with `as_dict()` for JSON)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.analysis import compare, report
    from paradnn.api.baselines import (
        baseline_delete,
        baseline_list,
        baseline_save,
        compare_baseline,
        history,
    )
    from paradnn.api.catalog import family_info
    from paradnn.api.ceilings import beaten_ceilings, calibrate, calibrate_host, ops
    from paradnn.api.devices import (
        device_capacity,
        free_memory,
        native_precisions,
        unsupported_precision,
    )
    from paradnn.api.doctor import doctor
    from paradnn.api.runs import (
        bench,
        check_can_run,
        check_precisions,
        dry_run,
        dry_run_count,
        dry_run_total,
        plan,
        results,
        run,
        side_table,
        store_info,
    )
    from paradnn.api.sample import table2_sample
    from paradnn.api.scaling import scale
    from paradnn.api.sessions import TimeBoxExpired as TimeBoxExpired
    from paradnn.api.sessions import shared_workers
    from paradnn.api.simulation import (
        simulate,
        simulate_fit,
        simulate_mxu_study,
        simulate_platforms,
        simulate_precision_study,
        simulate_scaling,
        simulate_validate,
    )
    from paradnn.api.versions import versions

# Each name is imported from its module on first use (PEP 562), so `from paradnn import api`
# costs nothing: the CLI's `--help` and `--version` stay fast (tests/test_startup.py).
_HOMES = {
    "compare": "analysis",
    "report": "analysis",
    "baseline_delete": "baselines",
    "baseline_list": "baselines",
    "baseline_save": "baselines",
    "compare_baseline": "baselines",
    "history": "baselines",
    "family_info": "catalog",
    "beaten_ceilings": "ceilings",
    "calibrate": "ceilings",
    "calibrate_host": "ceilings",
    "ops": "ceilings",
    "device_capacity": "devices",
    "free_memory": "devices",
    "native_precisions": "devices",
    "unsupported_precision": "devices",
    "doctor": "doctor",
    "bench": "runs",
    "check_can_run": "runs",
    "check_precisions": "runs",
    "dry_run": "runs",
    "dry_run_count": "runs",
    "dry_run_total": "runs",
    "plan": "runs",
    "results": "runs",
    "run": "runs",
    "side_table": "runs",
    "store_info": "runs",
    "table2_sample": "sample",
    "scale": "scaling",
    "shared_workers": "sessions",
    "TimeBoxExpired": "sessions",
    "simulate": "simulation",
    "simulate_fit": "simulation",
    "simulate_mxu_study": "simulation",
    "simulate_platforms": "simulation",
    "simulate_precision_study": "simulation",
    "simulate_scaling": "simulation",
    "simulate_validate": "simulation",
    "versions": "versions",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'paradnn.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"paradnn.api.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "baseline_delete",
    "baseline_list",
    "baseline_save",
    "beaten_ceilings",
    "bench",
    "calibrate",
    "calibrate_host",
    "check_can_run",
    "check_precisions",
    "compare",
    "compare_baseline",
    "device_capacity",
    "doctor",
    "dry_run",
    "dry_run_count",
    "dry_run_total",
    "family_info",
    "free_memory",
    "history",
    "native_precisions",
    "ops",
    "plan",
    "report",
    "results",
    "run",
    "scale",
    "shared_workers",
    "side_table",
    "simulate",
    "simulate_fit",
    "simulate_mxu_study",
    "simulate_platforms",
    "simulate_precision_study",
    "simulate_scaling",
    "simulate_validate",
    "store_info",
    "table2_sample",
    "unsupported_precision",
    "versions",
]
