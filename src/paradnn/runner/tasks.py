"""Ceilings and op micro-benchmarks as workloads of the one pipeline.

`calibrate` and `ops` used to time their kernels inside the CLI process: a segfault, a hang or
an OOM there lost everything and a re-run started over. Now each unit — one precision's matmul
ceiling, one bandwidth kernel, one op × precision × pass × thread count — is a `KernelUnit` that the
sweep supervisor sends to an isolated worker, exactly as it sends a training run: same timer,
same fault classification (a dead worker is `crashed`/`oom`, a late one `timeout`), same
environment fingerprint, and a row stored per unit in its own transaction. `task_key` (the unit,
its settings and the environment fingerprint) lets a re-run skip units already measured `ok`.

Planning (`ceiling_units`, `op_units`) is torch-free and runs in the supervisor; `run_kernel`
runs in the worker and calls the library functions (`measure.calibrate.calibrate`,
`ops.bench.run_ops`) on one unit.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.precisions import PRECISIONS, can_emulate
from paradnn.records import Status, now
from paradnn.runner.units import Stored, Unit

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.store import Store

CEILING_KINDS = ("matmul", "copy", "triad")
TABLES = {"ceiling": "ceilings", "op": "ops", "host": "host_profile"}
FAULT_ENV = "PARADNN_FAULT_TASK"  # tests: "<label substring>=<signal name>" kills that task


@dataclass(frozen=True)
class KernelUnit(Unit):
    """One unit of `calibrate` or `ops`, as the supervisor plans, sends and stores it: one
    precision's matmul ceiling, one bandwidth kernel, one op × precision × pass × threads."""

    answer: ClassVar[str] = "kernel"
    kind: str  # "ceiling" | "op" | "host" (the host profile, measure/hostprofile.py)
    key: str
    params: dict[str, Any]
    label: str
    failure: dict[str, Any] = field(default_factory=dict)  # the row stored if the worker dies

    @property
    def family(self) -> str:
        return "ops" if self.kind == "op" else "calibrate"

    @property
    def precision(self) -> str:
        return str(self.params.get("precision") or "-")

    @property
    def config(self) -> dict[str, Any]:
        return {"task": self.label}

    @property
    def table(self) -> str:
        return TABLES[self.kind]

    def status(self, outcome: Any) -> str:
        return str(outcome["status"])

    def failed(
        self, status: str, error: str, *, pid: int | None = None, index: int | None = None
    ) -> dict[str, Any]:
        return failure_row(self, status, error)

    def store(self, outcome: Any, store: Store, idle: dict[str, Any] | None = None) -> Stored:
        from paradnn import utilization

        row: dict[str, Any] = outcome
        if "device" not in row:  # the worker's own account of a failure: the template's row
            row = failure_row(self, row["status"], row["error"])
        row["task_key"] = self.key
        if self.kind == "op":
            utilization.fill(row, store)
        store.insert_rows(self.table, [row])
        return Stored(row["status"], row=row)


def task_key(kind: str, params: dict[str, Any], fingerprint: str) -> str:
    blob = json.dumps({"kind": kind, "params": params, "env": fingerprint}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _common(env: dict[str, Any]) -> dict[str, Any]:
    return {
        "device": env["device"],
        "device_name": str(env.get("gpu_name") or env.get("cpu_model") or env["device"]),
        "fingerprint": env["fingerprint"],
        "env": env,
    }


def ceiling_units(
    env: dict[str, Any],
    precisions: Sequence[str] | None,
    *,
    kinds: Iterable[str] = CEILING_KINDS,
    budget_s: float | None = None,
    sizes: Sequence[int] | None = None,
    stream_bytes: int | None = None,
    allow_emulated: bool = False,
    paths: Sequence[str] | None = None,
) -> tuple[list[KernelUnit], dict[str, str]]:
    """The units of one `calibrate`, and the precisions left out with their reasons. A
    precision's compute unit times every math-library path of `paths` (default: the device
    type's, measure/mathpaths.py); they are part of its key, so ceilings measured over other
    paths are measured again."""
    from paradnn.measure import mathpaths

    kinds = tuple(kinds)
    for k in kinds:
        if k not in CEILING_KINDS:
            raise ConfigError("kind", k, f"must be one of {', '.join(CEILING_KINDS)}")
    native = list(env.get("native_precisions") or ["fp32"])
    reasons = dict(env.get("precision_reasons") or {})
    asked = native if precisions is None else list(dict.fromkeys(precisions))
    tasks: list[KernelUnit] = []
    skipped: dict[str, str] = {}
    routes = mathpaths.check_paths(paths or mathpaths.default_paths(env["device_type"]))
    base = {"budget_s": budget_s, "sizes": list(sizes) if sizes else None, "paths": list(routes)}
    for kind in kinds:
        if kind == "matmul":
            for p in asked:
                if p not in PRECISIONS:
                    raise ConfigError("precision", p, f"must be one of {', '.join(PRECISIONS)}")
                emulate = p in reasons and allow_emulated and can_emulate(p, env["device_type"])
                if p in reasons and not emulate:
                    skipped[p] = reasons[p]
                    continue
                params = {"kind": kind, "precision": p, **base, "emulated": emulate}
                tasks.append(_ceiling(env, params, f"matmul {p}"))
        else:
            params = {"kind": kind, "precision": None, "stream_bytes": stream_bytes}
            tasks.append(_ceiling(env, params, kind))
    return tasks, skipped


def _ceiling(env: dict[str, Any], params: dict[str, Any], label: str) -> KernelUnit:
    key = task_key("ceiling", params, env["fingerprint"])
    failure = {
        **_common(env),
        "kind": params["kind"],
        "precision": params["precision"],
        "value": None,
        "unit": "FLOP/s" if params["kind"] == "matmul" else "B/s",
        "detail": {"params": params},
        "measured_at": None,
        "status": Status.CRASHED,
        "error": None,
        "task_key": key,
    }
    return KernelUnit("ceiling", key, params, label, failure)


def host_unit(env: dict[str, Any], **settings: Any) -> KernelUnit:
    """The unit of one host profile (`calibrate`; docs/simulate.md "The host profile").
    `settings` (sizes, policy as a dict, rounds: `measure.hostprofile.measure_profile`'s) travel
    to the worker in the unit's params; none by default."""
    params = {"kind": "host_profile", **{k: v for k, v in settings.items() if v is not None}}
    key = task_key("host", params, env["fingerprint"])
    failure = {
        **_common(env),
        "device_type": env.get("device_type") or str(env["device"]).split(":")[0],
        "host": env.get("cpu_model"),
        "hostname": env.get("hostname"),
        "detail": {"params": params},
        "nulls": {"forward_op_s": "the host profile did not finish"},
        "measured_at": None,
        "status": Status.CRASHED,
        "error": None,
        "task_key": key,
    }
    return KernelUnit("host", key, params, "host profile", failure)


def op_units(
    env: dict[str, Any],
    precisions: Sequence[str],
    *,
    names: Sequence[str] | None = None,
    passes: Sequence[str] | None = None,
    threads: Sequence[int | None] = (None,),
    scale: float = 1.0,
    allow_emulated: bool = False,
) -> list[KernelUnit]:
    """The units of one `ops` (thread counts outermost, as the study's thread sweep)."""
    from paradnn.ops.table4 import PASSES, TABLE4, spec

    names = tuple(names or TABLE4)
    passes = tuple(passes or PASSES)
    for p in passes:
        if p not in PASSES:
            raise ConfigError("pass", p, "must be fwd or fwd+bwd")
    for p in precisions:
        if p not in PRECISIONS:
            raise ConfigError("precision", p, f"must be one of {', '.join(PRECISIONS)}")
    specs = [spec(n, scale) for n in names]
    tasks = []
    for t in threads:
        for p in precisions:
            for s in specs:
                for pass_ in passes:
                    params = {
                        "name": s.name.split("@")[0],
                        "scale": scale,
                        "precision": p,
                        "pass": pass_,
                        "threads": t,
                        "allow_emulated": allow_emulated,
                    }
                    key = task_key("op", params, env["fingerprint"])
                    failure = {
                        "op": s.op,
                        "name": s.name,
                        "shape": s.shape(),
                        "precision": p,
                        "pass": pass_,
                        **_common(env),
                        "threads": t if t is not None else env.get("threads"),
                        "status": Status.CRASHED,
                        "error": None,
                        "flops": s.flops(pass_),
                        "nulls": {"time_s": "the op did not finish"},
                        "measured_at": None,
                        "task_key": key,
                    }
                    label = f"{s.name} {p} {pass_}" + (f" {t} threads" if t else "")
                    tasks.append(KernelUnit("op", key, params, label, failure))
    return tasks


def _maybe_fault(label: str) -> None:
    """Test hook: PARADNN_FAULT_TASK="<label substring>=<SIGNAL>" kills the worker there."""
    spec = os.environ.get(FAULT_ENV)
    if not spec or "=" not in spec:
        return
    needle, sig = spec.rsplit("=", 1)
    if needle in label:
        os.kill(os.getpid(), getattr(signal, sig))


def run_kernel(
    kind: str,
    params: dict[str, Any],
    label: str,
    device: str,
    threads: int | None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any] | None:
    """Measure one unit in this (worker) process; the row to store, or None when the unit has
    nothing to store (a precision the device cannot run natively and emulation is off)."""
    _maybe_fault(label)
    if kind == "ceiling":
        from paradnn.measure.calibrate import calibrate

        precision = params["precision"]
        rows = calibrate(
            device,
            [precision] if precision else [],
            sizes=params.get("sizes"),
            threads=threads,
            stream_bytes=params.get("stream_bytes"),
            kinds=(params["kind"],),
            budget_s=params.get("budget_s"),
            allow_emulated=bool(params.get("emulated")),
            progress=progress,
            paths=params.get("paths") or ("matmul",),
        )
        if not rows:
            return None
        (row,) = rows
        short = (row.get("detail") or {}).get("too_small")
        if short:  # measured, but no ceiling: stored with the reason, re-measured next time
            return {**row, "value": None, "status": "too_small", "error": short}
        return {**row, "status": Status.OK, "error": None}
    if kind == "op":
        from paradnn.ops.bench import run_ops

        (row,) = run_ops(
            device,
            (params["precision"],),
            (params["name"],),
            (params["pass"],),
            threads=params.get("threads") or threads,
            scale=params.get("scale", 1.0),
            allow_emulated=bool(params.get("allow_emulated")),
            progress=progress,
        )
        return row
    if kind == "host":
        from paradnn.config import TimingPolicy
        from paradnn.measure.hostprofile import host_row

        extra = {k: params[k] for k in ("sizes", "rounds") if k in params}
        if "policy" in params:
            extra["policy"] = TimingPolicy(**params["policy"])
        return host_row(device, threads, progress=progress, **extra)
    raise ValueError(f"task kind = {kind!r}: must be ceiling, op or host")


def failure_row(task: KernelUnit, status: str, error: str) -> dict[str, Any]:
    """The row stored for a unit whose worker died, hung or ran out of memory."""
    row = {**task.failure, "status": status, "error": error, "measured_at": now()}
    if task.kind == "ceiling":
        row["detail"] = {**row.get("detail", {}), "failed": status}
    return row
