"""The record of a run before it is measured: identity, environment and analytic counts.

Here in the runner (not in `paradnn.records`, which only defines the row) because it asks a
family for its counts; torch-free, so the supervisor can write rows for runs that never reach
a worker.
"""

from __future__ import annotations

from typing import Any

from paradnn import families, precisions
from paradnn.config import RunOptions
from paradnn.errors import ConfigError
from paradnn.precisions import precision_flags
from paradnn.records import RunRecord, now, null_energy, run_key


def start_record(
    family_name: str,
    values: dict[str, Any],
    options: RunOptions,
    env: dict[str, Any],
    *,
    sweep: str | None = None,
) -> RunRecord:
    """The record of a run before it is measured: identity, environment and analytic counts.

    Torch-free, so the sweep supervisor can write rows for runs that never reach a worker
    (`predicted_oom`) or whose worker died (`timeout`, `crashed`). A config that does not make
    a model comes back `invalid`; otherwise the status is `ok` until something says otherwise.
    """
    common = dict(
        family=family_name,
        precision=options.precision,
        optimizer=options.optimizer,
        mode=options.mode,
        device=env["device"],
        device_name=env.get("gpu_name") or env.get("cpu_model"),
        sweep=sweep,
        threads=env.get("threads"),
        fingerprint=env["fingerprint"],
        env=env,
        flags=precision_flags(options.precision),
        started_at=now(),
        paradnn_version=env.get("paradnn"),
    )
    try:
        fam = families.get(family_name)
        cfg = fam.config(values)
    except ConfigError as e:
        key = run_key(family_name, dict(values), options.key_fields(), env["fingerprint"])
        return RunRecord(run_key=key, config=dict(values), status="invalid", error=str(e), **common)
    resolved = dict(cfg.__dict__)
    key = options.key_fields()
    emulated = _emulated(options, env)
    if emulated:  # an emulated run is another measurement than the `unsupported` row it replaces
        key["emulated"] = True
        common["flags"] = {**common["flags"], "emulated": emulated}
    rec = RunRecord(
        run_key=run_key(family_name, resolved, key, env["fingerprint"]),
        config=resolved,
        status="ok",
        params_analytic=fam.params(cfg),
        flops_analytic=fam.train_flops(cfg),
        examples_per_step=fam.examples_per_step(cfg),
        emulated=bool(emulated),
        **common,
    )
    for name in ("utilization_datasheet", "utilization_measured"):  # until the store fills them
        rec.null(name, "computed against the platform database and ceilings when stored")
    null_energy(rec, "not_measured" if getattr(options, "energy", False) else "not_requested")
    return rec


def _emulated(options: RunOptions, env: dict[str, Any]) -> str | None:
    """Why this run will be emulated (not native, but allowed and emulatable), else None."""
    if not getattr(options, "allow_emulated", False):
        return None
    reasons = env.get("precision_reasons") or {}
    reason = reasons.get(options.precision)
    if reason and precisions.can_emulate(options.precision, env.get("device_type", "cpu")):
        return reason
    return None
