"""The record of a run before it is measured: identity, environment and analytic counts.

Here in the runner (not in `paradnn.records`, which only defines the row) because it asks a
family for its counts; torch-free, so the supervisor can write rows for runs that never reach
a worker.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from paradnn import backends, families, precisions
from paradnn.axes import AXES
from paradnn.config import LOADER_SETTINGS, RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.precisions import precision_flags
from paradnn.records import (
    DEVICE_DATA,
    HOST_DATA,
    Counts,
    Identity,
    Infeed,
    Outcome,
    Parallel,
    RunRecord,
    Status,
    Utilization,
    now,
    null_energy,
    run_key,
    single_process_nulls,
)


def start_record(spec: RunSpec, env: dict[str, Any], *, sweep: str | None = None) -> RunRecord:
    """The record of the run `spec` describes, in the environment `env`, before it is
    measured (`_start`), with its data source."""
    rec = _start(spec.family, dict(spec.config), spec.options, env, sweep=sweep)
    return rec.with_part(infeed_start(spec.options))


IDENTITY_FIELDS = frozenset(f.name for f in dataclasses.fields(Identity))


def identity_axes(options: RunOptions) -> dict[str, Any]:
    """The study axes the record's identity has a column for (precision, optimizer, mode,
    backend, ...: paradnn.axes), each as the run has it in effect (fp32's pure policy is
    mixed)."""
    values = options.axis_values()
    return {a.column: a.value_in(values) for a in AXES if a.column in IDENTITY_FIELDS}


NOT_MEASURED = "not measured: the run did not reach its timed window"
INFEED_MEASURED = (
    *("data_wait_s", "data_copy_s", "infeed_share", "loader_examples_per_s"),
    *("model_only_examples_per_s", "input_bound", "host_cpu_cores", "host_cpu_share", "infeed"),
)


def infeed_start(options: RunOptions) -> Infeed:
    """The data source and loader settings a run asked for (docs/infeed.md); its measured
    figures stay null, each with its reason, until the worker fills them in."""
    source = options.data_source
    nulls = dict.fromkeys(INFEED_MEASURED, NOT_MEASURED)
    if source != "pipeline":
        why = DEVICE_DATA if source == "device" else HOST_DATA
        nulls.update(dict.fromkeys(LOADER_SETTINGS, why))
        return Infeed(data_source=source, nulls=nulls)
    return Infeed(
        data_source=source,
        loader_workers=options.loader_workers,
        pin_memory=options.pin_memory,
        prefetch_factor=options.prefetch_factor,
        persistent_workers=options.persistent_workers,
        nulls=nulls,
    )


def _start(
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
        **identity_axes(options),
        device=env["device"],
        device_name=env.get("gpu_name") or env.get("cpu_model"),
        sweep=sweep,
        threads=env.get("threads"),
        fingerprint=env["fingerprint"],
        env=env,
        flags=precision_flags(options.precision, options.precision_policy),
        paradnn_version=env.get("paradnn"),
    )
    energy = null_energy("not_measured" if options.energy else "not_requested")
    try:
        fam = families.get(family_name)
        cfg = fam.config(values)
    except ConfigError as e:
        key = run_key(family_name, dict(values), options.key_fields(), env["fingerprint"])
        return RunRecord(
            Identity(run_key=key, config=dict(values), **identity),
            Outcome(Status.INVALID, error=str(e), started_at=now()),
            energy_part=energy,
        )
    resolved = dict(cfg.__dict__)
    key = options.key_fields()
    emulated = _emulated(options, env)
    if emulated:  # an emulated run is another measurement than the `unsupported` row it replaces
        key["emulated"] = True
        identity["flags"] = {**identity["flags"], "emulated": emulated}
    package = backends.get(options.backend).package
    if package is not None:  # another jax is another measurement
        key[package] = package_version(package)
    why = "computed against the platform database and ceilings when stored"
    if options.procs > 1 and not fam.analytic:
        outcome = Outcome(
            Status.UNSUPPORTED,
            error="a model of your own runs on one process (procs = 1)",
            started_at=now(),
        )
        rid = run_key(family_name, resolved, key, env["fingerprint"])
        return RunRecord(Identity(run_key=rid, config=resolved, **identity), outcome,
                         energy_part=energy)  # fmt: skip
    if options.procs > 1:  # N ranks: its own start (docs/scaling.md)
        return _parallel_start(fam, cfg, options, env, key, identity, emulated, energy)
    return RunRecord(
        Identity(
            run_key=run_key(family_name, resolved, key, env["fingerprint"]),
            config=resolved,
            emulated=bool(emulated),
            **identity,
        ),
        Outcome(Status.OK, started_at=now()),
        counts=analytic_counts(fam, cfg),
        utilization=Utilization(nulls={"utilization_datasheet": why, "utilization_measured": why}),
        energy_part=energy,
        parallel_part=Parallel(nulls=single_process_nulls()),
    )


def analytic_counts(fam: Any, cfg: Any) -> Counts:
    """A family's analytic counts; null, with the reason, for a model known only once built
    (a model of your own: its worker counts them)."""
    if fam.analytic:
        return Counts(
            params_analytic=fam.params(cfg),
            flops_analytic=fam.train_flops(cfg),
            examples_per_step=fam.examples_per_step(cfg),
        )
    from paradnn.families.user import NO_ANALYTIC

    why = "read from the batch when measured"
    return Counts(
        nulls={"params_analytic": NO_ANALYTIC, "flops_analytic": NO_ANALYTIC,
               "examples_per_step": why}
    )  # fmt: skip


def package_version(name: str) -> str | None:
    """An installed package's version without importing it (None: not installed)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def jax_version() -> str | None:
    """The installed jax's version (None: not installed)."""
    return package_version("jax")


def _emulated(options: RunOptions, env: dict[str, Any]) -> str | None:
    """Why this run will be emulated (not native, but allowed and emulatable), else None."""
    if not options.allow_emulated:
        return None
    reasons = env.get("precision_reasons") or {}
    reason = reasons.get(options.precision)
    if reason and precisions.can_emulate(options.precision, env.get("device_type", "cpu")):
        return reason
    return None


_MEASURED = (
    "rank_threads",
    "compute_nosync_s",
    "allreduce_bytes",
    "allreduce_s",
    "allreduce_algbw",
    "allreduce_busbw",
    "overlap_frac",
    "parallel",
)


def dist_backend(device_type: str) -> str:
    """torch.distributed's backend for a device: NCCL between GPUs, gloo between CPU ranks."""
    return "nccl" if device_type == "cuda" else "gloo"


def _parallel_start(
    fam: Any,
    cfg: Any,
    options: RunOptions,
    env: dict[str, Any],
    key: dict[str, Any],
    identity: dict[str, Any],
    emulated: str | None,
    energy: Any,
) -> RunRecord:
    """A data-parallel run's record before it runs: the key names N, strategy, scaling and the
    backend; counts are of the global step (every rank's examples and FLOPs). Strong scaling
    of a batch that does not split evenly over the ranks is `invalid`, without a worker."""
    n = options.procs
    backend = dist_backend(env.get("device_type", "cpu"))
    key = {**key, "backend": backend}
    resolved = dict(cfg.__dict__)
    rid = run_key(identity["family"], resolved, key, env["fingerprint"])
    batch = int(resolved.get("batch", fam.examples_per_step(cfg)))
    strong = options.scaling == "strong"
    part = Parallel(
        procs=n,
        strategy=options.strategy,
        scaling=options.scaling,
        dist_backend=backend,
        global_batch=batch if strong else batch * n,
        rank_batch=batch // n if strong else batch,
        nulls={
            **{f: "not measured: the run did not reach its timed phases" for f in _MEASURED},
            "failed_rank": "no rank failed",
        },
    )
    ident = Identity(run_key=rid, config=resolved, emulated=bool(emulated), **identity)
    if strong and batch % n:
        error = (
            f"batch = {batch}: strong scaling splits it over procs = {n} ranks; "
            f"use a multiple of {n}"
        )
        outcome = Outcome(Status.INVALID, error=error, started_at=now())
        return RunRecord(ident, outcome, energy_part=energy, parallel_part=part)
    rank_cfg = fam.config({**resolved, "batch": part.rank_batch}) if "batch" in resolved else cfg
    why = "computed against the platform database and ceilings when stored"
    return RunRecord(
        ident,
        Outcome(Status.OK, started_at=now()),
        counts=Counts(
            params_analytic=fam.params(cfg),
            flops_analytic=fam.train_flops(rank_cfg) * n,
            examples_per_step=part.global_batch,
        ),
        utilization=Utilization(nulls={"utilization_datasheet": why, "utilization_measured": why}),
        energy_part=energy,
        parallel_part=part,
    )
