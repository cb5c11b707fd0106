"""`calibrate` and `ops` through the sweep supervisor: kernels measured in isolated workers.

Torch-free (the supervisor's side). Each function plans its units from the first worker's
environment, skips units already measured `ok` in this environment (unless `force`), and returns
every row it stored, failures included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from paradnn.config import RunOptions, SweepSettings
from paradnn.records import Status
from paradnn.runner import tasks as T
from paradnn.runner.supervisor import Event, Supervisor
from paradnn.store import Store


def calibrate(
    store: Store,
    device: str = "auto",
    precisions: Sequence[str] | None = None,
    *,
    threads: int | None = None,
    budget_s: float | None = None,
    sizes: Sequence[int] | None = None,
    stream_bytes: int | None = None,
    kinds: Sequence[str] = T.CEILING_KINDS,
    allow_emulated: bool = False,
    force: bool = False,
    if_missing: bool = False,
    timeout_s: float = 900.0,
    on_event: Callable[[Event], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure the ceilings of `device`, one unit per worker; rows of this call (stored).
    Precisions the device cannot run natively are left out (their reasons are in every row's
    detail["skipped"]) unless `allow_emulated`. With `if_missing`, an environment that already
    has ok ceilings in the store measures nothing and those rows come back."""
    skipped: dict[str, str] = {}
    known: list[dict[str, Any]] = []
    notes: list[str] = []

    def plan(env: dict[str, Any]) -> list[T.KernelUnit]:
        if if_missing:
            known.extend(
                r
                for r in store.rows("ceilings", {"fingerprint": env["fingerprint"]})
                if r.get("status") == Status.OK
            )
            if known:
                return []
        units, left_out = T.ceiling_units(
            env,
            precisions,
            kinds=kinds,
            budget_s=budget_s,
            sizes=sizes,
            stream_bytes=stream_bytes,
            allow_emulated=allow_emulated,
        )
        skipped.update(left_out)
        notes.extend(f"{p}: skipped ({why})" for p, why in left_out.items())
        return units

    rows = _run(store, device, threads, plan, force, timeout_s, on_event, notes)
    if known:
        return known
    for row in rows:  # the precisions the plan left out, with the reasons, on every row
        if isinstance(row.get("detail"), dict):
            row["detail"]["skipped"] = {**skipped, **row["detail"].get("skipped", {})}
    return rows


def host_profile(
    store: Store,
    device: str = "auto",
    *,
    threads: int | None = None,
    force: bool = False,
    if_missing: bool = False,
    timeout_s: float = 900.0,
    on_event: Callable[[Event], None] | None = None,
    **settings: Any,
) -> list[dict[str, Any]]:
    """Measure this host's dispatch costs (measure/hostprofile.py) in one worker; the row of
    this call (stored). A host profile already measured `ok` in this environment is skipped
    unless `force`; with `if_missing`, an `ok` one of this environment comes back instead."""
    known: list[dict[str, Any]] = []

    def plan(env: dict[str, Any]) -> list[T.KernelUnit]:
        if if_missing:
            mine = store.rows("host_profile", {"fingerprint": env["fingerprint"]})
            known.extend(r for r in mine[-1:] if r.get("status") == Status.OK)
            if known:
                return []
        return [T.host_unit(env, **settings)]

    rows = _run(store, device, threads, plan, force, timeout_s, on_event)
    return known or rows


def ops(
    store: Store,
    device: str = "auto",
    precisions: Sequence[str] = ("fp32",),
    *,
    names: Sequence[str] | None = None,
    passes: Sequence[str] | None = None,
    threads: Sequence[int | None] = (None,),
    scale: float = 1.0,
    allow_emulated: bool = False,
    force: bool = False,
    timeout_s: float = 900.0,
    on_event: Callable[[Event], None] | None = None,
) -> list[dict[str, Any]]:
    """Time the Table 4 ops, one op × precision × pass × thread count per worker."""

    def plan(env: dict[str, Any]) -> list[T.KernelUnit]:
        return T.op_units(
            env,
            precisions,
            names=names,
            passes=passes,
            threads=threads,
            scale=scale,
            allow_emulated=allow_emulated,
        )

    return _run(store, device, None, plan, force, timeout_s, on_event)


def _run(
    store: Store,
    device: str,
    threads: int | None,
    plan: Callable[[dict[str, Any]], list[T.KernelUnit]],
    force: bool,
    timeout_s: float,
    on_event: Callable[[Event], None] | None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    options = RunOptions(device=device, threads=threads)
    settings = SweepSettings(timeout_s=timeout_s, predict=False, force=force)
    sup = Supervisor(store, dataclasses.replace(options), settings, on_event=on_event)
    return sup.run_kernels(plan, notes)
