"""The library behind the CLI: each command calls one function here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paradnn import families, presets
from paradnn.config import RunOptions
from paradnn.measure.timer import TimingPolicy
from paradnn.records import RunRecord
from paradnn.store import DEFAULT_DB, open_store

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.runner.local import Progress


def bench(
    family: str,
    config: Mapping[str, Any] | None = None,
    *,
    precision: str = "fp32",
    optimizer: str = "rmsprop",
    device: str = "auto",
    threads: int | None = None,
    timing: TimingPolicy | None = None,
    db: str = DEFAULT_DB,
) -> RunRecord:
    """Measure one configuration and store it. Bad input raises before any work starts."""
    from paradnn.measure.device import resolve
    from paradnn.runner.execute import execute

    cfg = families.get(family).config(dict(config or {}))
    options = RunOptions(
        precision=precision,
        optimizer=optimizer,
        device=device,
        threads=threads,
        timing=timing or TimingPolicy(),
    )
    resolve(device)
    with open_store(db) as store:
        rec = execute(family, dict(cfg.__dict__), options)
        store.insert(rec)
    return rec


def run(
    preset: str = "quick",
    *,
    precisions: Sequence[str] | None = None,
    optimizer: str = "rmsprop",
    device: str = "auto",
    threads: int | None = None,
    timing: TimingPolicy | None = None,
    db: str = DEFAULT_DB,
    progress: Progress | None = None,
) -> list[RunRecord]:
    """Run a named preset; every result is stored as soon as it is measured."""
    from paradnn.measure.device import resolve
    from paradnn.runner.local import run_specs

    p = presets.get(preset)
    options = RunOptions(
        optimizer=optimizer, device=device, threads=threads, timing=timing or p.timing
    )
    for prec in precisions or ():
        RunOptions(precision=prec)  # validate before any work
    specs = p.specs(precisions)
    for spec in specs:
        families.get(spec.family).config(dict(spec.config))
    resolve(device)
    with open_store(db) as store:
        return run_specs(specs, options, store, sweep=preset, progress=progress)


def results(db: str = DEFAULT_DB, **filters: Any) -> list[dict[str, Any]]:
    with open_store(db, readonly=True) as store:
        return store.runs(**filters)


def family_info() -> list[dict[str, Any]]:
    out = []
    for name in families.names():
        fam = families.get(name)
        default = fam.default_config()
        out.append(
            {
                "name": name,
                "title": fam.title,
                "fields": {f.name: getattr(default, f.name) for f in fam.fields()},
                "paper_space": {k: list(v) for k, v in fam.paper_space.items()},
                "paper_configs": _space_size(fam.paper_space),
            }
        )
    return out


def _space_size(space: Mapping[str, Sequence[Any]]) -> int:
    n = 1
    for values in space.values():
        n *= len(values)
    return n
