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
from paradnn.records import (
    Counts,
    Identity,
    Outcome,
    RunRecord,
    Utilization,
    now,
    null_energy,
    run_key,
)


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
    identity = dict(
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
        paradnn_version=env.get("paradnn"),
    )
    energy = null_energy("not_measured" if getattr(options, "energy", False) else "not_requested")
    try:
        fam = families.get(family_name)
        cfg = fam.config(values)
    except ConfigError as e:
        key = run_key(family_name, dict(values), options.key_fields(), env["fingerprint"])
        return RunRecord(
            Identity(run_key=key, config=dict(values), **identity),
            Outcome("invalid", error=str(e), started_at=now()),
            energy_part=energy,
        )
    resolved = dict(cfg.__dict__)
    key = options.key_fields()
    emulated = _emulated(options, env)
    if emulated:  # an emulated run is another measurement than the `unsupported` row it replaces
        key["emulated"] = True
        identity["flags"] = {**identity["flags"], "emulated": emulated}
    why = "computed against the platform database and ceilings when stored"
    return RunRecord(
        Identity(
            run_key=run_key(family_name, resolved, key, env["fingerprint"]),
            config=resolved,
            emulated=bool(emulated),
            **identity,
        ),
        Outcome("ok", started_at=now()),
        counts=Counts(
            params_analytic=fam.params(cfg),
            flops_analytic=fam.train_flops(cfg),
            examples_per_step=fam.examples_per_step(cfg),
        ),
        utilization=Utilization(nulls={"utilization_datasheet": why, "utilization_measured": why}),
        energy_part=energy,
    )


def _emulated(options: RunOptions, env: dict[str, Any]) -> str | None:
    """Why this run will be emulated (not native, but allowed and emulatable), else None."""
    if not getattr(options, "allow_emulated", False):
        return None
    reasons = env.get("precision_reasons") or {}
    reason = reasons.get(options.precision)
    if reason and precisions.can_emulate(options.precision, env.get("device_type", "cpu")):
        return reason
    return None
