"""`calibrate` and `ops` through the sweep supervisor: kernels measured in isolated workers.

Torch-free (the supervisor's side). Each function plans its units from the first worker's
environment, skips units already measured `ok` in this environment (unless `force`), and returns
every row it stored, failures included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from paradnn.config import SweepSettings, with_fields
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
    paths: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Measure the ceilings of `device`, one unit per worker; rows of this call (stored).
    Precisions the device cannot run natively are left out (their reasons are in every row's
    detail["skipped"]) unless `allow_emulated`. `paths`: the math-library paths of each
    precision's compute unit (default: the device type's, measure/mathpaths.py). With
    `if_missing`, an environment whose store already covers every planned unit with an ok
    row (a compute row measured over these paths) measures nothing and those rows come back;
    otherwise only the units not covered are measured."""
    skipped: dict[str, str] = {}
    known: list[dict[str, Any]] = []
    notes: list[str] = []

    def plan(env: dict[str, Any]) -> list[T.KernelUnit]:
        units, left_out = T.ceiling_units(
            env,
            precisions,
            kinds=kinds,
            budget_s=budget_s,
            sizes=sizes,
            stream_bytes=stream_bytes,
            allow_emulated=allow_emulated,
            paths=paths,
        )
        skipped.update(left_out)
        notes.extend(f"{p}: skipped ({why})" for p, why in left_out.items())
        if if_missing:
            ok = [
                r
                for r in store.rows("ceilings", {"fingerprint": env["fingerprint"]})
                if r.get("status") == Status.OK
            ]
            found = {u.key: _covering(u, ok) for u in units}
            if all(found.values()):
                known.extend(r for r in found.values() if r is not None)
                return []
            units = [u for u in units if found[u.key] is None]
        return units

    rows = _run(store, device, threads, plan, force, timeout_s, on_event, notes)
    if known:
        return known
    for row in rows:  # the precisions the plan left out, with the reasons, on every row
        if isinstance(row.get("detail"), dict):
            row["detail"]["skipped"] = {**skipped, **row["detail"].get("skipped", {})}
    return rows


def _covering(unit: T.KernelUnit, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest ok row that already answers `unit`: same kind and precision and, for a
    compute unit, measured over at least its paths (a ceiling from before the paths existed
    timed torch.mm alone, and does not)."""
    kind, precision = unit.params["kind"], unit.params.get("precision")
    want = set(unit.params.get("paths") or ())
    for r in reversed(rows):
        if r.get("kind") != kind or r.get("precision") != precision:
            continue
        detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
        if kind == "matmul" and not want <= set(detail.get("paths") or ("matmul",)):
            continue
        return r
    return None


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
    options = with_fields(None, "kernel option", {"device": device, "threads": threads})
    settings = SweepSettings(timeout_s=timeout_s, predict=False, force=force)
    sup = Supervisor(store, options, settings, on_event=on_event)
    return sup.run_kernels(plan, notes)
