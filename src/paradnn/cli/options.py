"""Options made from what they set, so each is written once: every study axis (paradnn.axes)
as an option taking one value (`bench`) or several (`run`), and groups of options a command
takes as one value (`takes`): the axes as a dict, where and how runs are measured, how a sweep
runs (SweepSettings), where it executes (the executor's fields).

A command declares what it takes, e.g. `@takes(study=study(many=True), sweep=SWEEP)`, and its
function receives `study` and `sweep` made from the options the user gave; the options appear
in `--help` under one heading per group, each help generated from what it accepts."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from paradnn.axes import AXES, Axis
from paradnn.cli.common import (
    DeviceOpt,
    EmulatedOpt,
    EnergyIdleOpt,
    EnergyOpt,
    EnergyPeriodOpt,
    MaxTimeOpt,
    MinTimeOpt,
    ProfileOpt,
    ThreadsOpt,
    choice,
    flag_option,
    int_option,
    integer,
    number_option,
    text_option,
    timing,
    unique,
    words_option,
)
from paradnn.config import (
    EXECUTORS,
    MAX_ARRAY_SIZE,
    MAX_CONFIGS_PER_JOB,
    MAX_RECYCLE_EVERY,
    MAX_REMEASURE,
    MAX_THREADS,
    MAX_TIMEOUT_S,
    MAX_WORKERS,
    RunOptions,
    SweepSettings,
    TimingPolicy,
)
from paradnn.errors import ConfigError, OptionError
from paradnn.validate import parse_int

KW = inspect.Parameter.KEYWORD_ONLY
MAX_LISTED = 16  # values of one comma-separated option (`--procs 1,2,4`; docs/limits.md)
STUDY_PANEL, MEASURE_PANEL, SWEEP_PANEL, EXECUTOR_PANEL = (
    "Study axes",
    "Measuring",
    "Sweep",
    "Executor (docs/cluster.md)",
)


@dataclass(frozen=True)
class Group:
    """Options a command takes as one value: their parameters (typer options), and `make`,
    which turns the values given ({parameter: value}) into what the command receives."""

    params: tuple[inspect.Parameter, ...]
    make: Callable[[dict[str, Any]], Any]

    def only(self, *names: str, **defaults: Any) -> Group:
        """The group with only the options of these parameters, some with other defaults."""
        kept = (p for p in self.params if p.name in names)
        return Group(
            tuple(p.replace(default=defaults.get(p.name, p.default)) for p in kept), self.make
        )


def takes(**groups: Group) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: each parameter of the command named like a group is replaced by that
    group's options; the command is called with the group's value in its place."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        params: list[inspect.Parameter] = []
        for p in inspect.signature(func, eval_str=True).parameters.values():
            params += groups[p.name].params if p.name in groups else [p.replace(kind=KW)]

        @functools.wraps(func)
        def command(**given: Any) -> Any:
            for name, group in groups.items():
                given[name] = group.make({p.name: given.pop(p.name) for p in group.params})
            return func(**given)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return wrap


def param(name: str, annotation: Any, default: Any = None) -> inspect.Parameter:
    """One option of a Group: its parameter name, typer annotation and default."""
    return inspect.Parameter(name, KW, default=default, annotation=annotation)


# -- the study axes ------------------------------------------------------------------------------


def axis_option(
    axis: Axis, many: bool = False, panel: str | None = STUDY_PANEL, help: str | None = None
) -> Any:
    """The typer annotation of `axis`'s option: one value, or (`many`) several, each once
    (repeated, or comma-separated for an axis that says so). Not given: None."""
    flags = (axis.flag, axis.short) if axis.short else (axis.flag,)
    said = {
        "help": help or axis.help_text(many),
        "rich_help_panel": panel,
        "show_default": False,
    }
    if axis.kind is bool:  # --pin-memory/--no-pin-memory: one value, a list of it when many
        return Annotated[bool | None, typer.Option(f"{axis.flag}/--no-{axis.flag[2:]}", **said)]
    if many and axis.comma:
        return Annotated[str | None, typer.Option(*flags, **said)]
    if axis.words is not None:
        read = choice(axis.flag, axis.words)
    else:
        read = integer(axis.flag, axis.low or 0, axis.high or 2**63 - 1)
    kind = str if axis.words is not None else int
    if many:
        return Annotated[
            list[kind] | None,  # type: ignore[valid-type]
            typer.Option(*flags, parser=read, callback=unique(axis.flag), **said),
        ]
    return Annotated[kind | None, typer.Option(*flags, parser=read, **said)]  # type: ignore[valid-type]


def study(many: bool = False, fields: Iterable[str] | None = None) -> Group:
    """The study axes (paradnn.axes; `fields`: these only) as options; the command receives
    {field: value} (`many`: {field: [values]}) of those given."""
    chosen = [a for a in AXES if fields is None or a.field in fields]

    def make(given: dict[str, Any]) -> dict[str, Any]:
        found = {}
        for axis in chosen:
            value = given[axis.field]
            if value is None:
                continue
            if many and axis.comma:
                value = comma_list(axis.flag, value, axis.low or 0, axis.high or 2**63 - 1)
            elif many and axis.kind is bool:
                value = [value]
            found[axis.field] = value
        return found

    params = tuple(param(a.field, axis_option(a, many)) for a in chosen)
    return Group(params, make)


def filters() -> Group:
    """The study axes a stored run has a column for, as filters (`results --mode compile`):
    one value each; the command receives {field: value} of those given."""
    chosen = [a for a in AXES if a.column is not None and a.when is None]
    params = tuple(param(a.field, axis_option(a, panel=None, help=a.filter_help())) for a in chosen)
    return Group(params, lambda given: {k: v for k, v in given.items() if v is not None})


def comma_list(flag: str, text: str, low: int, high: int) -> list[int]:
    """`1,2,4` → [1, 2, 4]: each an integer in [low, high], each once, at most MAX_LISTED of
    them; one line naming the option and the value otherwise."""
    allowed = f"comma-separated integers in [{low}, {high}], each once, e.g. 1,2,4"
    words = text.split(",")
    if len(words) > MAX_LISTED:
        raise OptionError(flag, text, f"at most {MAX_LISTED} values")
    try:
        values = [parse_int(flag, w, low, high) for w in words]
    except ConfigError as e:  # an integer out of range is named alone; other words, the list
        if isinstance(e.value, int):
            raise OptionError(flag, e.value, e.allowed) from None
        raise OptionError(flag, text, allowed) from None
    repeated = next((n for i, n in enumerate(values) if n in values[:i]), None)
    if repeated is not None:  # `1,1`: a typo, not two measurements
        raise OptionError(flag, text, f"each value once ({repeated} is given twice)")
    return values


# -- where and how runs are measured ---------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """Where and how runs are measured, as given: RunOptions fields (device, threads, profile,
    energy, ...) and the timed phase's bounds (`fields` puts them on a timing policy)."""

    given: Mapping[str, Any]
    min_time: float | None = None
    max_time: float | None = None

    def fields(self, base: TimingPolicy | None = None) -> dict[str, Any]:
        """The RunOptions fields, with the timing policy `base` (a sweep's) bounded as given."""
        return {**self.given, "timing": timing(self.min_time, self.max_time, base)}


_FIELD = {"energy_period": "energy_period_s", "energy_idle": "energy_idle_s"}


def _defaults(cls: type) -> dict[str, Any]:
    """A config dataclass's field defaults: an option's default is its field's, stated once."""
    return {f.name: f.default for f in dataclasses.fields(cls)}


_RUN = _defaults(RunOptions)


def _measure(given: dict[str, Any]) -> Measure:
    bounds = {k: given.pop(k, None) for k in ("min_time", "max_time")}
    return Measure({_FIELD.get(k, k): v for k, v in given.items()}, **bounds)


MEASURE = Group(
    (
        param("device", DeviceOpt, _RUN["device"]),
        param("threads", ThreadsOpt),
        param("min_time", MinTimeOpt),
        param("max_time", MaxTimeOpt),
        param("profile", Annotated[bool, ProfileOpt], _RUN["profile"]),
        param("energy", EnergyOpt, _RUN["energy"]),
        param("energy_period", EnergyPeriodOpt, _RUN["energy_period_s"]),
        param("energy_idle", EnergyIdleOpt, _RUN["energy_idle_s"]),
        param("allow_emulated", EmulatedOpt, _RUN["allow_emulated"]),
    ),
    _measure,
)


# -- how a sweep runs ------------------------------------------------------------------------

# Re-measures of a noisy run (docs/runner.md#re-measuring-noisy-runs): a sweep tries twice more
# (other runs go on during the back-off, so the load has time to pass); `bench` once, so one
# command costs at most twice its run. PARADNN_REMEASURE sets both (0: off).
REMEASURE_RUN, REMEASURE_BENCH = 2, 1
_SETTING = {"timeout": "timeout_s", "remeasure_backoff": "remeasure_backoff_s"}
_SWEEP = {"rich_help_panel": SWEEP_PANEL}
_SWEPT = _defaults(SweepSettings)
SWEEP = Group(
    (
        param(
            "workers",
            int_option(
                "--workers",
                1,
                MAX_WORKERS,
                "Parallel worker processes (CPU only; cores are split).",
                int,
                **_SWEEP,
            ),
            _SWEPT["workers"],
        ),
        param(
            "timeout",
            number_option(
                "--timeout",
                0.0,
                MAX_TIMEOUT_S,
                "Seconds one run may take before it is killed.",
                float,
                strict=True,
                **_SWEEP,
            ),
            _SWEPT["timeout_s"],
        ),
        param(
            "recycle_every",
            int_option(
                "--recycle-every",
                1,
                MAX_RECYCLE_EVERY,
                "Start a fresh worker after this many runs.",
                int,
                **_SWEEP,
            ),
            _SWEPT["recycle_every"],
        ),
        param(
            "predict",
            flag_option(
                "--predict/--force",
                "Store runs whose predicted memory cannot fit in what the device has free as "
                "predicted_oom without running them (default); --force (or its old name "
                "--no-predict) runs them anyway.",
                " /--no-predict",
                **_SWEEP,
            ),
            _SWEPT["predict"],
        ),
        param(
            "retry_failed",
            flag_option(
                "--retry-failed", "Re-run oom, timeout, crashed, predicted_oom runs.", **_SWEEP
            ),
            _SWEPT["retry_failed"],
        ),
        param(
            "remeasure_changed",
            flag_option(
                "--remeasure-changed",
                "Measure again (a new attempt) each stored run measured with other timing, energy "
                "or profile settings than this one's; without it they are kept and the start says "
                "which.",
                **_SWEEP,
            ),
            _SWEPT["remeasure_changed"],
        ),
        param(
            "remeasure",
            int_option(
                "--remeasure",
                0,
                MAX_REMEASURE,
                "Measure a run flagged noisy again, up to N times, each a new attempt (0: never); "
                "compare and the report use each run's best good attempt.",
                int,
                metavar="N",
                envvar="PARADNN_REMEASURE",
                **_SWEEP,
            ),
            REMEASURE_RUN,
        ),
        param(
            "remeasure_backoff",
            number_option(
                "--remeasure-backoff",
                0.0,
                3600.0,
                "At the end of a sweep, how long noisy runs deferred on a busy machine wait once "
                "for it to quiet down before they are kept as measured.",
                float,
                metavar="SECONDS",
                **_SWEEP,
            ),
            _SWEPT["remeasure_backoff_s"],
        ),
    ),
    lambda given: SweepSettings(**{_SETTING.get(k, k): v for k, v in given.items()}),
)


# -- where a sweep executes ------------------------------------------------------------------

_EXECUTOR = {"rich_help_panel": EXECUTOR_PANEL}
_EXECUTOR_FIELD = {"executor": "kind", "slurm_folder": "folder", "slurm_partition": "partition"}
EXECUTOR = Group(
    (
        param(
            "executor",
            words_option(
                str | None,
                "--executor",
                choice("--executor", EXECUTORS),
                "Where runs execute: {values}. Default: the sweep's \\[executor] table, else "
                "local.",
                notes={"local": "worker processes here"},
                **_EXECUTOR,
            ),
        ),
        param(
            "address",
            text_option("--address", "ray: cluster address (default RAY_ADDRESS).", **_EXECUTOR),
        ),
        param(
            "cpus_per_task",
            int_option(
                "--cpus-per-task",
                1,
                MAX_THREADS,
                "ray/slurm: CPUs per run, its thread count (ray: a node).",
                **_EXECUTOR,
            ),
        ),
        param(
            "slurm_folder",
            text_option("--slurm-folder", "slurm: submitit's shared folder.", **_EXECUTOR),
        ),
        param(
            "slurm_partition",
            text_option("--slurm-partition", "slurm: partition to submit to.", **_EXECUTOR),
        ),
        param(
            "configs_per_job",
            int_option(
                "--configs-per-job",
                1,
                MAX_CONFIGS_PER_JOB,
                "slurm: runs per array element (default 4).",
                **_EXECUTOR,
            ),
        ),
        param(
            "max_array_size",
            int_option(
                "--max-array-size",
                1,
                MAX_ARRAY_SIZE,
                "slurm: split arrays below this (default 1000).",
                **_EXECUTOR,
            ),
        ),
    ),
    lambda given: {_EXECUTOR_FIELD.get(k, k): v for k, v in given.items() if v is not None},
)
