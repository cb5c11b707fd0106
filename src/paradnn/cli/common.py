"""What every command shares: the consoles, the options that recur, the output formats and the
timing-policy override."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.console import Console

# Piped output (CI logs, `| less`) gets a wide table instead of rich's 80-column default.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)  # an error stays one line

DbOpt = Annotated[str, typer.Option("--db", help="Result database (SQLite file).")]
DbsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--db", help="Result database; repeat to merge several (machines).", show_default=False
    ),
]
DeviceOpt = Annotated[
    str, typer.Option("--device", help="auto (first GPU, else CPU), cpu, cuda or cuda:N.")
]
ThreadsOpt = Annotated[
    int | None,
    typer.Option(
        "--threads",
        help="CPU threads for torch (default: the cores this process may use that other "
        "processes leave free, within the cgroup's CPU quota; docs/runner.md).",
    ),
]
OptimizerOpt = Annotated[
    str, typer.Option("--optimizer", help="rmsprop (ParaDnn's default), sgd or momentum.")
]
ModeOpt = Annotated[
    str, typer.Option("--mode", help="Execution mode (docs/modes.md); default eager.")
]
ModesOpt = Annotated[
    list[str] | None,
    typer.Option("--mode", help="Override the sweep's execution modes (repeatable)."),
]
# Host data infeed (docs/infeed.md): where each step's batch comes from, and the loader's settings.
DataOpt = Annotated[
    str,
    typer.Option(
        "--data",
        help="Data source: device (synthetic, on the device; default), host (pinned host "
        "tensors copied each step) or pipeline (JPEG/token files through a DataLoader).",
    ),
]
DatasOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--data",
        help="Override the sweep's data sources (repeatable): device, host, "
        "pipeline (docs/infeed.md).",
    ),
]
LoaderWorkersOpt = Annotated[
    int, typer.Option("--loader-workers", help="pipeline: DataLoader num_workers (0: in-process).")
]
LoaderWorkersListOpt = Annotated[
    list[int] | None,
    typer.Option("--loader-workers", help="pipeline: DataLoader num_workers (repeatable)."),
]
PinMemoryOpt = Annotated[
    bool | None,
    typer.Option(
        "--pin-memory/--no-pin-memory",
        help="pipeline: page-locked batches (CUDA).",
        show_default=False,
    ),
]
PrefetchOpt = Annotated[
    int | None,
    typer.Option(
        "--prefetch-factor", help="pipeline: batches each loader worker keeps ready (default 2)."
    ),
]
PersistentOpt = Annotated[
    bool | None,
    typer.Option(
        "--persistent-workers/--no-persistent-workers",
        help="pipeline: keep the loader workers across epochs (default on).",
        show_default=False,
    ),
]


def infeed_axes(
    data: list[str] | None,
    workers: list[int] | None,
    pin: bool | None,
    prefetch: int | None,
    persistent: bool | None,
) -> dict[str, Any]:
    """The infeed options as study axes (RunOptions fields -> values; None: the sweep's)."""

    def one(v: Any) -> list[Any] | None:
        return None if v is None else [v]

    return {
        "data_source": data,
        "loader_workers": workers,
        "pin_memory": one(pin),
        "prefetch_factor": one(prefetch),
        "persistent_workers": one(persistent),
    }


BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend", help="torch (default) or jax: the same model on JAX/XLA (docs/jax.md)."
    ),
]
BackendsOpt = Annotated[
    list[str] | None,
    typer.Option("--backend", help="Override the sweep's backends (repeatable): torch, jax."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
ProfileOpt = typer.Option(
    "--profile",
    help="Also profile 5 extra steps per run: per-op time per step, FLOPs and bytes "
    "(`paradnn results --table op_profile`).",
)
MinTimeOpt = Annotated[
    float | None,
    typer.Option("--min-time", help="Seconds of timed steps before stopping is allowed."),
]
MaxTimeOpt = Annotated[
    float | None, typer.Option("--max-time", help="Cap on the timed phase per config, in seconds.")
]
EnergyOpt = Annotated[
    bool,
    typer.Option(
        "--energy",
        help="Also measure energy over the timed window (NVML on GPUs, RAPL for CPU packages; "
        "the window grows to what the counter needs for ≤1% error). See docs/energy.md.",
    ),
]
EnergyPeriodOpt = Annotated[
    float, typer.Option("--energy-period", help="Power sampling period in seconds (≥ 0.05).")
]
EnergyIdleOpt = Annotated[
    float,
    typer.Option("--energy-idle", help="Seconds of idle power measured before the runs (0: none)."),
]
EmulatedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-emulated",
        help="Run a low precision this device has no native arithmetic for (e.g. bf16 on an "
        "AVX2 CPU); stored and shown as emulated. Without it such runs are `unsupported`.",
    ),
]
AssignmentsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Config values as key=value, e.g. layers=8 nodes=1024 batch=256.",
        show_default=False,
    ),
]


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table, csv or json.")]


def timing(min_time: float | None, max_time: float | None, base: Any = None) -> Any:
    """The timing policy with --min-time/--max-time applied (a longer minimum lifts the cap)."""
    import dataclasses

    from paradnn.measure.timer import TimingPolicy

    policy = base or TimingPolicy()
    changes = {
        k: v for k, v in (("min_time_s", min_time), ("max_time_s", max_time)) if v is not None
    }
    if "min_time_s" in changes and "max_time_s" not in changes:
        changes["max_time_s"] = max(policy.max_time_s, changes["min_time_s"])
    return dataclasses.replace(policy, **changes) if changes else policy
