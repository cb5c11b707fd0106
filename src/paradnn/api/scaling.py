"""`scale`: one configuration at N = 1, 2, … data-parallel ranks, stored, with its scaling
table (efficiency, Karp–Flatt, Amdahl) and the simulator's check (docs/scaling.md)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paradnn import families
from paradnn.axes import BY_FIELD
from paradnn.config import RunOptions, RunSpec, SweepSettings, with_fields
from paradnn.errors import ConfigError
from paradnn.records import RunRecord
from paradnn.store import DEFAULT_DB, open_store

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from paradnn.runner.supervisor import Event
    from paradnn.sim.scaling_check import Check

MAX_PROCS_LIST = 16  # values of --procs in one command (docs/limits.md)


@dataclass(frozen=True)
class Scaled:
    """`scale`'s result: the stored runs, their scaling table (`scale --json` prints it), the
    Amdahl fits and the simulator's check."""

    records: list[RunRecord]
    table: pd.DataFrame  # analysis.scaling.efficiency_table over these runs
    fits: pd.DataFrame  # an Amdahl fit over N
    check: Check  # of the measured all-reduces and efficiencies

    def as_dict(self) -> dict[str, Any]:
        """Plain values: the records' flat rows, the table and fits as lists of rows, the
        check's rows, errors and reason."""
        from paradnn.formatting import plain

        return {f: plain(getattr(self, f)) for f in ("records", "table", "fits", "check")}


def check_procs(procs: Sequence[int]) -> list[int]:
    """--procs: distinct integers ≥ 1, at most MAX_PROCS_LIST of them (in the order given)."""
    if isinstance(procs, (str, bytes)) or not isinstance(procs, Sequence) or not procs:
        raise ConfigError("procs", procs, "a non-empty list of process counts, e.g. 1,2")
    if len(procs) > MAX_PROCS_LIST:
        raise ConfigError("procs", list(procs), f"at most {MAX_PROCS_LIST} values")
    for n in procs:
        BY_FIELD["procs"].check(n)  # its ConfigError names the field, value and range
    if len(set(procs)) < len(procs):  # `1,1`: a typo, not two measurements
        raise ConfigError("procs", list(procs), "each process count once")
    return list(procs)


def scale(
    family: str,
    config: Mapping[str, Any] | None = None,
    *,
    procs: Sequence[int] = (1, 2),
    timeout_s: float = 900.0,
    db: str = DEFAULT_DB,
    on_event: Callable[[Event], None] | None = None,
    force: bool = False,
    options: RunOptions | None = None,
    **fields: Any,
) -> Scaled:
    """Measure `family`'s config at each N in `procs` (a new attempt of each), every rank with
    the same device: on CPU `threads` cores each (default: the usable cores // max(procs)), so
    the N = 1 run is the baseline of the others. The runs are `options` with `fields` in place
    (RunOptions fields as for `bench`: strategy, scaling, precision, device, threads, timing,
    allow_emulated, ...; not procs). Bad input (a batch that strong scaling cannot split, more
    ranks than cores, a precision the device lacks, ranks whose memory cannot fit in what is
    free unless `force`: api.check_can_run) raises before any work starts; `allow_emulated`
    runs an emulatable precision the device lacks, labelled emulated."""
    import dataclasses

    from paradnn import host
    from paradnn.api.devices import device_capacity
    from paradnn.api.runs import _given, check_can_run
    from paradnn.runner.supervisor import Supervisor

    ns = check_procs(procs)
    cfg = families.get(family).config(dict(config or {}))
    if "procs" in fields:
        raise ConfigError("scale option", "procs", "is given by procs=[...]: each N is one run")
    options = with_fields(options, "scale option", _given(fields))
    batch = getattr(cfg, "batch", None)
    if options.scaling == "strong" and batch is not None:
        bad = [n for n in ns if batch % n]
        if bad:
            raise ConfigError(
                "batch", batch, f"strong scaling splits it over procs = {bad[0]}: a multiple of it"
            )
    _, device_type = device_capacity(options.device)
    cpus = host.usable_cpus()
    threads = options.threads
    if device_type == "cpu":
        usable = len(cpus)
        if threads is None:
            threads = max(1, usable // max(ns))
        if max(ns) * threads > usable:
            raise ConfigError(
                "procs",
                max(ns),
                f"× threads = {threads} needs {max(ns) * threads} CPU cores pinned apart; "
                f"this machine lets paradnn use {usable}",
            )
    options = dataclasses.replace(options, threads=threads)
    if not isinstance(force, bool):
        raise ConfigError("force", force, "must be true or false")
    values = dict(cfg.__dict__)
    runs = {
        n: RunSpec(family, values, dataclasses.replace(options, procs=n).in_effect()) for n in ns
    }
    check_can_run(runs[max(ns)], force=force)  # the most ranks need the most memory
    settings = SweepSettings(timeout_s=timeout_s, predict=not force, force=True)
    records: list[RunRecord] = []
    with open_store(db, lazy=True) as store:
        for group in ([n for n in ns if n == 1], [n for n in ns if n > 1]):
            if not group:
                continue
            # N = 1 on CPU runs on the cores rank 0 gets at N > 1 (its worker inherits this
            # affinity), so the baseline and each rank had the same cores, not the whole host
            pin = cpus[: threads or len(cpus)] if group == [1] and device_type == "cpu" else None
            with _pinned(pin):
                sup = Supervisor(store, options, settings, on_event=on_event)
                records += sup.run([runs[n] for n in group])
    return summarize(records)


@contextlib.contextmanager
def _pinned(cpus: list[int] | None) -> Iterator[None]:
    """This process's CPU affinity narrowed to `cpus` for the block (workers started inside
    inherit it), restored after."""
    if not cpus:
        yield
        return
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, old)


def summarize(records: Sequence[RunRecord]) -> Scaled:
    """The scaling table, Amdahl fits and the simulator's check of a set of records."""
    from paradnn.analysis import frames
    from paradnn.analysis import scaling as S
    from paradnn.sim.scaling_check import check_frame

    data = frames.from_frames([r.as_dict() for r in records])
    table = S.efficiency_table(data)
    return Scaled(list(records), table, S.fits(table), check_frame(table))
