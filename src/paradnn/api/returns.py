"""What the api functions return: frozen dataclasses read by attribute (`fit.status`), each with
`as_dict()`, the plain value the commands print as JSON (`--json`, `--format json`), so a
script and the CLI see the same keys. Torch-free."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.config import RunOptions, RunSpec
    from paradnn.sweep import Sweep

Row = dict[str, Any]  # one table row: column -> value, in the table's column order


class _Plain:
    """`as_dict()` over the dataclass's fields, shallow: nested values are already plain."""

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


@dataclass(frozen=True)
class Rows(Sequence[Row]):
    """Rows of one table, each column -> value: stored runs or a side table as the store reads
    them (`results`, `side_table`, `calibrate`, `ops`), or the simulator's predictions. Their
    columns are the table's (the store's schema, the model's terms), so a row stays a dict;
    the rows read as a sequence (`len`, index, iterate, unpack). `table` names what they are.
    `as_dict()`: the rows as the list of dicts `--format json` prints."""

    table: str
    rows: tuple[Row, ...] = ()

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, i: int) -> Row: ...
    @overload
    def __getitem__(self, i: slice) -> Rows: ...
    def __getitem__(self, i: int | slice) -> Row | Rows:
        if isinstance(i, slice):
            return Rows(self.table, self.rows[i])
        return self.rows[i]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def as_dict(self) -> list[Row]:
        return [dict(r) for r in self.rows]

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame, one column per key (pandas is imported here)."""
        import pandas as pd

        return pd.DataFrame(self.as_dict())


def rows(table: str, found: Sequence[Mapping[str, Any]]) -> Rows:
    """`found` as the Rows of `table` (each row copied into a dict of its own)."""
    return Rows(table, tuple(dict(r) for r in found))


@dataclass(frozen=True)
class StoreInfo(_Plain):
    """The database an export reads: its path and schema version (None: no such file)."""

    db: str
    store_schema: int | None


@dataclass(frozen=True)
class FamilyInfo(_Plain):
    """One model family (`paradnn families`): its config fields with their defaults, the paper's
    space and the default config's size."""

    name: str
    title: str
    kind: str
    fields: dict[str, Any]
    paper_space: dict[str, list[Any]]
    space_label: str
    paper_configs: int
    default_params: int
    default_train_flops: int


@dataclass(frozen=True)
class DryRunRow:
    """One run a sweep would make (`run --dry-run`): its size, predicted memory and whether it
    fits in the device's free memory (`fits`: even the lower bound, memory.check;
    `fits_estimate`: the best estimate; None: unknown free memory), the stored status a
    resumed run skips on, and the time estimate (`api.dry_run`'s docstring says how)."""

    family: str
    config: dict[str, Any]
    precision: str
    optimizer: str
    options: dict[str, Any]  # the run's study-axis values (mode, procs, …), keyed by field
    params: int | None  # None: a model of your own (known once built)
    flops_per_step: int | None
    predicted_mem_bytes: int | None
    predicted_mem_lower_bytes: int | None
    fits: bool | None
    fits_estimate: bool | None
    stored: str | None
    est_time_s: float
    est_time_is_floor: bool

    def as_dict(self) -> dict[str, Any]:
        """The row with the study-axis values as columns after the optimizer."""
        plain = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        head = {k: plain.pop(k) for k in ("family", "config", "precision", "optimizer")}
        del plain["options"]
        return {**head, **self.options, **plain}


@dataclass(frozen=True)
class DoctorReport(_Plain):
    """`paradnn doctor`'s report (docs/gpu.md lists the keys): facts about the machine, then
    each check with its verdict; what cannot be read is null with its reason in `nulls`."""

    schema_version: int
    device: str
    device_type: str
    device_name: str | None
    software: dict[str, Any]
    cpu: dict[str, Any]
    precisions: dict[str, Any]
    gpus: list[dict[str, Any]]
    power: dict[str, Any]
    datasheet: dict[str, Any] | None
    checks: list[dict[str, Any]]
    summary: dict[str, int] | None
    nulls: dict[str, str]
    seconds: float  # the whole report's, its start-up (startup_s) included
    budget_s: float  # what it was given (--budget, or the device type's default)
    startup_s: float  # seconds before the doctor started (the command's start-up)

    @property
    def failed(self) -> bool:
        """Whether a check failed (the command exits 1)."""
        return any(c["status"] == "fail" for c in self.checks)


@dataclass(frozen=True)
class Validation:
    """`simulate validate`: each measured run predicted (`rows`) and the error per family
    (`summary`)."""

    rows: Rows
    summary: Rows
    host_profile: str | None = None  # which host profile the step model used, in words

    def as_dict(self) -> dict[str, Any]:
        d = {"rows": self.rows.as_dict(), "summary": self.summary.as_dict()}
        if self.host_profile is not None:  # the step model's: which host profile, in words
            d["host_profile"] = self.host_profile
        return d


OPS_ONLY = ("source", "fitted", "kept", "holdout_ops", "warnings")
RUNS_ONLY = ("identified", "regimes")


@dataclass(frozen=True)
class SimFit:
    """`simulate fit`: the fitted step-time parameters of a device, the error per family (or op)
    on the fitted and the held-out part, every run's prediction, and the chip file. Fitted from
    op micro-benchmarks (`source = "ops"`) it says which parameters were fitted (± as a factor)
    and which kept (with why); from runs those fields are None and not in `as_dict()`, and
    instead `identified` says per parameter what the runs identified (value, prior, status,
    95 % interval or why not, `sim.identify`), `regimes` how many fitted runs were host-bound,
    device-bound or mixed, and every row its run's `regime`."""

    device_name: str
    params: dict[str, Any]
    fitted_runs: int
    holdout_runs: int
    status: str
    summary: Rows
    rows: Rows
    chip_toml: str
    out: str | None
    source: str | None = None  # "ops", or None: fitted from runs
    fitted: dict[str, float] | None = None
    kept: dict[str, str] | None = None
    holdout_ops: list[str] | None = None
    warnings: list[str] = field(default_factory=list)
    identified: Rows | None = None  # from runs: per parameter (`sim.identify.Report.as_dict`)
    regimes: dict[str, int] | None = None  # from runs: fitted runs per regime

    @property
    def from_ops(self) -> bool:
        return self.source == "ops"

    def as_dict(self) -> dict[str, Any]:
        """The keys `simulate fit --format json` prints (plus `rows`), in its order."""
        order = (
            *("device_name", "source", "params", "fitted", "kept", "identified", "regimes"),
            *("fitted_runs", "holdout_runs", "holdout_ops", "warnings", "status", "summary"),
            *("rows", "chip_toml", "out"),
        )
        drop = OPS_ONLY if not self.from_ops else RUNS_ONLY
        keys = [k for k in order if k not in drop]
        plain = {k: getattr(self, k) for k in keys}
        plain["summary"], plain["rows"] = self.summary.as_dict(), self.rows.as_dict()
        if "identified" in plain:
            plain["identified"] = self.identified.as_dict() if self.identified else []
        return plain


@dataclass(frozen=True)
class SweepPlan:
    """A sweep expanded into its runs and checked (`api.plan`): what `run` measures and
    `dry_run` estimates, planned once. Each run is described whole (RunSpec); `options` are
    what every run shares (device, threads, timing, ...: the supervisor's). `as_dict()`: the
    sweep's name and each run."""

    sweep: Sweep
    specs: tuple[RunSpec, ...]
    options: RunOptions

    @property
    def name(self) -> str:
        return self.sweep.name

    def with_options(self, fields: Mapping[str, Any]) -> SweepPlan:
        """The same runs with `fields` (RunOptions fields every run shares: device, threads,
        timing, ...) in place, in each run and in `options`."""
        from paradnn.config import with_fields

        if not fields:
            return self
        runs = tuple(
            dataclasses.replace(s, options=with_fields(s.options, "run option", fields))
            for s in self.specs
        )
        return SweepPlan(self.sweep, runs, with_fields(self.options, "run option", fields))

    def as_dict(self) -> dict[str, Any]:
        runs = [
            {
                "family": s.family,
                "config": dict(s.config),
                "precision": s.precision,
                "optimizer": s.optimizer,
                "options": s.options.study(),
            }
            for s in self.specs
        ]
        return {"sweep": self.sweep.name, "runs": runs}


@dataclass(frozen=True)
class Baseline(_Plain):
    """A named set of runs of one database (`paradnn baseline`, docs/baselines.md): each run
    key's chosen attempt among the runs it was saved from."""

    name: str
    db: str
    runs: int
    saved_at: str | None
