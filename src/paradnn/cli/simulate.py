"""`paradnn simulate …`: the what-if accelerator model, one subcommand per question — `step`
(one config or a preset on a chip), `scaling` (its data-parallel curve), `mxu-study`,
`precision-study` and `validate` (the model against measured runs)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from paradnn import api
from paradnn.axes import OPTIMIZER, PRECISION, listing
from paradnn.cli import tables
from paradnn.cli.common import (
    DbOpt,
    Format,
    FormatOpt,
    choice,
    flag_option,
    number,
    option,
    out,
    parsed,
    path,
    text_option,
    words_option,
)
from paradnn.cli.options import Group, axis_option, param, takes
from paradnn.config import PRECISIONS
from paradnn.errors import ABSENT, ConfigError, ParadnnError
from paradnn.store import DEFAULT_DB
from paradnn.validate import parse_int, parse_number

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.api.returns import SimFit

# The flags that chose a mode before `simulate` had subcommands, and the subcommand now.
MOVED_FLAGS = {
    "--mxu-study": "mxu-study",
    "--precision-study": "precision-study",
    "--validate": "validate",
    "--scaling": "scaling",
}


def moved(args: list[str], subcommands: set[str]) -> str | None:
    """What to say when `args` are an old `paradnn simulate` command line (a mode flag, or a
    FAMILY / --platform / --preset before any subcommand): the new form, with their own
    arguments. None when they are not (a subcommand, --help, or a word click should reject)."""
    from paradnn import families

    if not args or args[0] in subcommands or args[0] == "--help":
        return None
    flags = [a for a in args if a.split("=", 1)[0] in MOVED_FLAGS]
    rest, i = [], 0
    while i < len(args):
        flag, eq, value = args[i].partition("=")
        if flag == "--scaling" and not eq:
            value = args[i + 1] if i + 1 < len(args) else "N"
            i += 1
        if flag not in MOVED_FLAGS:
            rest.append(args[i])
        elif flag == "--scaling":
            rest += ["--max-chips", value]
        i += 1
    if flags:
        what, sub = flags[0].split("=", 1)[0], MOVED_FLAGS[flags[0].split("=", 1)[0]]
    elif args[0] in families.names() or any(
        a.split("=", 1)[0] in ("--platform", "--preset") for a in args
    ):
        what, sub = f"`paradnn simulate {args[0]}`", "step"
    else:
        return None
    return f"{what} moved: use `{shlex.join(['paradnn', 'simulate', sub, *rest])}`"


class SimulateGroup(TyperGroup):
    """`simulate`'s subcommands, and one line naming the new form for an old command line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        message = moved(args, set(self.commands))
        if message:
            raise ParadnnError(message)
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=SimulateGroup,
    no_args_is_help=True,
    rich_markup_mode="rich",
    help='Predict ("what if") a workload\'s training step on any platform, real or '
    "hypothetical: step time, utilization, bottleneck, multi-chip all-reduce and scaling. Every "
    "figure is a prediction of an analytical model (docs/simulate.md), not a measurement.",
)

PlatformOpt = text_option("--platform", "Platform id (`paradnn platforms`) or a chip .toml file.")
StepPlatformOpt = text_option(
    "--platform",
    "Platform id (`paradnn platforms`) or a chip .toml file; several, comma-separated "
    "(tpu-v2,tpu-v3,v100-sxm2), give one table at one precision policy (-p on every platform, "
    "else each one's default).",
)
AssignmentsArg = Annotated[
    list[str] | None,
    typer.Argument(help="Config values as key=value, e.g. layers=8 batch=256.", show_default=False),
]


def _const(module: str, name: str) -> Any:
    """A bound or a list of choices from its home module, imported when an option is read (the
    simulator's modules stay out of every command's start-up)."""
    import importlib

    return getattr(importlib.import_module(module), name)


def _bounded(flag: str, module: str, name: str, low: int = 1) -> Any:
    """An integer option in [low, module.name]."""
    return option(flag, lambda v: parse_int(flag, v, low, _const(module, name)))


CHIPS = _bounded("--chips", "paradnn.sim.interconnect", "MAX_CHIPS")
OVERLAP = number("--overlap", 0.0, 1.0)
PrecisionOpt = axis_option(
    PRECISION,
    panel=None,
    help=f"Numeric precision: {listing(PRECISIONS)} (default fp32 as in bench and run; bf16 on "
    "a chip without an fp32 peak, e.g. a TPU).",
)
OptimizerOpt = axis_option(OPTIMIZER, panel=None)
OverlapOpt = parsed(
    float, "--overlap", OVERLAP, "Share of backward that hides the all-reduce (0 to 1)."
)
ConcurrentOpt = flag_option("--concurrent", "Torus: drive all dimensions at once.")
CsvOpt = text_option("--csv", "Also write the rows to this CSV file.")
# The simulator's words, here so that its modules stay out of every command's start-up; a test
# holds each against its home (tests/test_cli_help.py).
MODELS = ("step", "roofline")  # paradnn.sim.curve.MODELS
PRECISION_POLICIES = ("16-bit",)  # paradnn.api.simulation.PRECISION_POLICIES
DATAFLOWS = ("os", "ws", "is")  # paradnn.sim.systolic.DATAFLOWS
STATISTICS = ("median", "min")  # paradnn.sim.fit.STATISTICS, paradnn.sim.opfit.STATISTICS
SOURCES = ("runs", "ops")  # what paradnn.api.simulate_fit fits from
ModelOpt = words_option(
    str,
    "--model",
    choice("--model", MODELS),
    "Which model: {values}.",
    notes={
        "step": "default: the step-time model, term by term (kernels, overheads, elementwise, "
        "optimizer, master weights, host, all-reduce), the one `fit` fits",
        "roofline": "the bare roofline per op, the one --overlap and --concurrent apply to",
    },
)
MaxChipsOpt = parsed(
    int,
    "--max-chips",
    _bounded("--max-chips", "paradnn.sim.interconnect", "MAX_CHIPS"),
    "The curve: 1, 2, 4 … up to this many chips.",
)
# What a prediction is made with (step and scaling): the run's precision and optimizer, and the
# model's terms for the all-reduce (the roofline's) and which model.
PREDICTION = Group(
    (
        param("precision", PrecisionOpt),
        param("optimizer", OptimizerOpt),
        param("overlap", OverlapOpt, 0.0),
        param("concurrent", ConcurrentOpt, False),
        param("model", ModelOpt, "step"),
    ),
    dict,
)
FamilyArg = Annotated[
    str | None,
    typer.Argument(help="Model family (`paradnn families`), unless --preset is given."),
]
PresetOpt = text_option("--preset", "Predict every run of a preset or sweep file.")
ChipsOpt = parsed(int, "--chips", CHIPS, "Data-parallel chips.")
TopologyOpt = text_option("--topology", "e.g. torus2d:16x16, torus3d:4x4x4, ring:8, biring:8.")


def _loader_rate(v: Any) -> float:
    high = _const("paradnn.api.simulation", "MAX_LOADER_RATE")
    return parse_number("--loader-rate", v, 0.0, high, strict=True)


LoaderRateOpt = parsed(
    float | None,
    "--loader-rate",
    option("--loader-rate", _loader_rate),
    "Examples/s the host's input pipeline delivers per chip (a run's measured "
    "loader_examples_per_s): adds the input term, bottleneck `input` when it is the slower "
    "side (docs/infeed.md).",
)
LoaderSerialOpt = flag_option(
    "--loader-serial",
    "The batch is made in the training process (0 loader workers): the input adds to the step "
    "instead of overlapping it.",
)
ByPolicyOpt = words_option(
    str | None,
    "--precision-policy",
    choice("--precision-policy", PRECISION_POLICIES),
    "One precision policy on every platform, instead of -p: {values}.",
    notes={"16-bit": "each platform's bf16, else fp16: the papers' TPU-vs-GPU comparisons"},
)
HOST_PROFILE_HELP = (
    "The step model's host dispatch costs: a TOML/JSON file of a host profile, or `defaults` "
    "(default: the platform file's [ID.host], else the profile `paradnn calibrate` stored in "
    "--db on {where}, else the documented defaults)."
)
StepHostProfileOpt = parsed(
    str | None,
    "--host-profile",
    path("--host-profile"),
    HOST_PROFILE_HELP.format(where="this host"),
)
RunsHostProfileOpt = parsed(
    str | None,
    "--host-profile",
    path("--host-profile"),
    HOST_PROFILE_HELP.format(where="the runs' machine"),
)
ValidatePlatformOpt = text_option(
    "--platform", "Predict every run on this chip (default: each device's own)."
)
NoisyOpt = flag_option("--include-noisy", "Keep runs flagged noisy (left out, as compare).")
FitOutOpt = text_option("--out", "Write the fitted chip file here (.toml).")
FitDeviceOpt = text_option("--device", "Which device of --db (if it holds several).")
FitPlatformOpt = text_option("--platform", "Peaks and bandwidth from this chip, not the ceilings.")
HoldoutOpt = parsed(
    int,
    "--holdout",
    _bounded("--holdout", "paradnn.api.simulation", "MAX_HOLDOUT", low=0),
    "Percent of configs held out (by config hash).",
)
# What each word of fit's --statistic and --from means, and of mxu-study's --dataflow.
NOTES = {
    "median": "its median step time",
    "min": "its fastest sample: shared hosts",
    "runs": "a measured sweep",
    "ops": "the op micro-benchmarks of `paradnn ops`",
    "os": "output-stationary",
    "ws": "weight-stationary",
    "is": "input-stationary",
}
STATISTIC, SOURCE = choice("--statistic", STATISTICS), choice("--from", SOURCES)
StatisticOpt = words_option(str, "--statistic", STATISTIC, "What is fitted: {values}.", notes=NOTES)
SourceOpt = words_option(str, "--from", SOURCE, "What is fitted on: {values}.", notes=NOTES)
HoldoutOpsOpt = text_option(
    "--holdout-ops",
    "--from ops: ops held out, comma-separated (default matmul-4096,conv2d-II; '' none).",
)
BatchOpt = parsed(
    int, "--batch", _bounded("--batch", "paradnn.sim.studies", "MAX_BATCH"), "Batch of the CNNs."
)
DATAFLOW = choice("--dataflow", DATAFLOWS)
DataflowOpt = words_option(str, "--dataflow", DATAFLOW, "Dataflow: {values}.", notes=NOTES)
HostDbOpt = parsed(
    str | None,
    "--db",
    path("--db"),
    "Database whose host profile of this host the step model uses (default: paradnn.db when "
    "it exists).",
)


def _csv(path: str | None) -> None:
    """--csv checked before any work: a file that can be written, in an existing folder."""
    if path is not None:
        from paradnn import paths

        paths.output_file("--csv", path)


def _platform(platform: str | None) -> str:
    if platform is None:
        raise ConfigError("--platform", ABSENT, "required: a platform id or a chip .toml file")
    return platform


@app.command()
@takes(prediction=PREDICTION)
def step(
    family: FamilyArg = None,
    assignments: AssignmentsArg = None,
    platform: StepPlatformOpt = None,
    preset: PresetOpt = None,
    chips: ChipsOpt = 1,
    topology: TopologyOpt = None,
    loader_rate: LoaderRateOpt = None,
    loader_serial: LoaderSerialOpt = False,
    precision_policy: ByPolicyOpt = None,
    host_profile: StepHostProfileOpt = None,
    db: HostDbOpt = None,
    fmt: FormatOpt = Format.table,
    csv_path: CsvOpt = None,
    *,
    prediction: dict[str, Any],
) -> None:
    """One config (FAMILY key=value …) or every run of a preset on a platform: predicted step
    time with its breakdown, utilization, bottleneck, memory fit, and the all-reduce of
    --chips N. The step model says which host profile it used."""
    from paradnn.validate import parse_assignments

    _csv(csv_path)
    values = parse_assignments(assignments or [], what=f"{family} config")
    names = _platforms(platform)
    precision, model = prediction["precision"], prediction["model"]
    options: dict[str, Any] = {
        **prediction,
        **{"preset": preset, "chips": chips, "topology": topology, "loader_rate": loader_rate},
        **{"loader_overlapped": not loader_serial, "host_profile": host_profile, "db": db},
    }
    if len(names) == 1 and precision_policy is None:
        rows = api.simulate(names[0], family, values, **options)
        title = f"predicted on {names[0]} ({model} model): {len(rows)} configs"
    else:
        rows = api.simulate_platforms(names, family, values, policy=precision_policy, **options)
        words = _const("paradnn.api.simulation", "precision_policy")
        policy = words(precision, precision_policy, rows)
        title = f"predicted on {len(names)} platforms ({model} model; {policy}): {len(rows)} rows"
    used = next((r["host_profile"] for r in rows if r.get("host_profile")), None)
    if model == "step" and fmt is Format.table:
        from paradnn.cli.sim_tables import STEP_DETAIL, breakdown_table, breakdowns_table

        hidden = (*STEP_DETAIL, "host_profile")
        narrow = [{k: v for k, v in r.items() if k not in hidden} for r in rows]
        emit(narrow, title, fmt, None)
        predicted = [r for r in rows if r.get("predicted_step_s") is not None]
        if len(rows) == 1 and predicted:
            out.print(breakdown_table(rows[0]))
        elif predicted and len(names) > 1 and len(rows) == len(names):  # a config, N chips
            out.print(breakdowns_table(predicted))
        if used:
            out.print(escape(used))
        for label in _bands(rows):
            out.print(escape(f"predicted: {label}"))
        if csv_path:
            emit(rows, title, Format.csv, csv_path)
        return
    emit(rows, title, fmt, csv_path)
    if fmt is Format.table:
        for label in _bands(rows):
            out.print(escape(f"predicted: {label}"))
    elif used:  # the rows carry it; a person reading stderr too
        print(used, file=sys.stderr)


def _bands(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The error band of each kind of chip the rows were predicted on, once each (the rows'
    `band_label`, `errorbands.Band.label`: the wording the report uses)."""
    return list(dict.fromkeys(str(r["band_label"]) for r in rows if r.get("band_label")))


def _platforms(platform: str | None) -> list[str]:
    """`--platform a,b,c`: the platforms, in order (one table over all of them)."""
    names = [p.strip() for p in _platform(platform).split(",")]
    if len(names) > 1 and not all(names):
        raise ConfigError("--platform", platform, "a comma-separated list of platform ids or files")
    return names if len(names) > 1 else [_platform(platform)]


@app.command()
@takes(prediction=PREDICTION)
def scaling(
    family: Annotated[str, typer.Argument(help="Model family (`paradnn families`).")],
    assignments: AssignmentsArg = None,
    platform: PlatformOpt = None,
    max_chips: MaxChipsOpt = 1024,
    fmt: FormatOpt = Format.table,
    csv_path: CsvOpt = None,
    *,
    prediction: dict[str, Any],
) -> None:
    """Predicted weak scaling of one config: step time, all-reduce and efficiency at 1, 2, 4 …
    --max-chips chips, with the topology's bisection bandwidth. The step-time model by default,
    so its 1-chip time is `simulate step`'s."""
    from paradnn.validate import parse_assignments

    _csv(csv_path)
    values = parse_assignments(assignments or [], what=f"{family} config")
    p = {**prediction, "optimizer": prediction["optimizer"] or "rmsprop"}
    rows = api.simulate_scaling(_platform(platform), family, values, max_chips=max_chips, **p)
    title = f"predicted weak scaling of {family} on {platform} ({p['model']} model)"
    emit(rows, title, fmt, csv_path)


@app.command("mxu-study")
def mxu_study(
    batch: BatchOpt = 8,
    dataflow: DataflowOpt = "ws",
    fmt: FormatOpt = Format.table,
    csv_path: CsvOpt = None,
) -> None:
    """Seed 001's MXU-size argument: utilization of 1×256², 4×128² and 16×64² arrays on CNNs."""
    _csv(csv_path)
    rows = api.simulate_mxu_study(batch, dataflow)
    title = f"MXU size study (prediction; compute-only, {dataflow.upper()}, 65,536 MACs each)"
    emit(rows, title, fmt, csv_path)


@app.command("precision-study")
def precision_study(fmt: FormatOpt = Format.table, csv_path: CsvOpt = None) -> None:
    """bf16 vs fp16 vs fp32 inputs to a matmul (fp32 accumulation), error against float64."""
    _csv(csv_path)
    rows = api.simulate_precision_study()
    title = "Matmul error vs float64, inputs rounded, fp32 accumulation (emulated)"
    emit(rows, title, fmt, csv_path)


@app.command()
def validate(
    db: DbOpt = DEFAULT_DB,
    platform: ValidatePlatformOpt = None,
    model: ModelOpt = "step",
    include_noisy: NoisyOpt = False,
    host_profile: RunsHostProfileOpt = None,
    fmt: FormatOpt = Format.table,
    csv_path: CsvOpt = None,
) -> None:
    """Predict every ok run measured in --db and compare: error per run and per family (the
    step-time model by default, the one `fit` fits, each run with the host profile stored
    for its host). The report's "Predicted vs measured" section prints the same numbers."""
    _csv(csv_path)
    found = api.simulate_validate(
        db, platform, model=model, include_noisy=include_noisy, host_profile=host_profile
    )
    title = f"predicted vs measured ({model} model): {len(found.rows)} runs from {db}"
    emit(found.rows, title, fmt, csv_path, found.summary)
    if fmt is Format.table:
        for used in dict.fromkeys(r["host_profile"] for r in found.rows if r.get("host_profile")):
            out.print(escape(str(used)))  # which host profile (the step model's rows name it)
    elif found.host_profile:  # the JSON/CSV stays data; a person reading stderr sees which
        print(found.host_profile, file=sys.stderr)


@app.command()
def fit(
    db: DbOpt = DEFAULT_DB,
    out_path: FitOutOpt = None,
    device: FitDeviceOpt = None,
    platform: FitPlatformOpt = None,
    holdout: HoldoutOpt = 30,
    statistic: StatisticOpt = "median",
    source: SourceOpt = "runs",
    holdout_ops: HoldoutOpsOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Fit a device's step-time parameters (per-kernel overhead, efficiency-curve constants,
    achieved bandwidth) from its measured runs in --db, on the configs outside the held-out
    part, and write a chip file; the error is shown on both parts. With --from ops, its GEMM
    parameters from the op micro-benchmarks, held out by op name; what they do not constrain
    keeps its base value, and the output says so."""
    res = api.simulate_fit(
        db,
        out_path,
        device=device,
        platform=platform,
        holdout=holdout,
        statistic=statistic,
        source=source,
        holdout_ops=holdout_ops,
    )
    if fmt is Format.json:
        import json

        shown = {k: v for k, v in res.as_dict().items() if k != "rows"}
        sys.stdout.write(json.dumps(shown, indent=1, default=str) + "\n")
        return
    if fmt is Format.csv:
        sys.stdout.write(tables.to_csv(res.rows))
        return
    from paradnn.cli.sim_tables import sim_table

    p = res.params
    from paradnn.sim.stepparams import FITTED

    rows = [{"parameter": k, "value": p[k]} for k in (*FITTED, "source")]
    if res.from_ops:
        rows = _ops_param_rows(res)
        out.print(
            sim_table(
                rows, title=f"fitted step-time parameters of {res.device_name}", width=out.width
            )
        )
    else:
        _print_identified(res)
    split = f"config hash mod 100 < {holdout}"
    if res.from_ops:
        split = "ops " + (", ".join(res.holdout_ops or ()) or "none")
    what = "op" if res.from_ops else "family"
    out.print(
        sim_table(
            res.summary,
            title=f"error per {what}: {res.fitted_runs} {'op rows' if what == 'op' else 'runs'}"
            f" fitted, {res.holdout_runs} held out ({split})",
            width=out.width,
        )
    )
    for w in res.warnings:
        out.print(f"Warning: {w}", markup=False)
    if out_path:
        shown = escape(out_path)
        out.print(f"Wrote [bold]{shown}[/]: use it as `--platform {shown}`.")


def _print_identified(res: SimFit) -> None:
    """From runs: which regime each run was in, and per parameter what the runs identified."""
    from paradnn.cli.sim_tables import sim_table

    counts = ", ".join(f"{v} {k}" for k, v in (res.regimes or {}).items())
    runs = [
        {
            "family": r["family"],
            "precision": r["precision"],
            "config": r["config"],
            "split": r["split"],
            "regime": r["regime"],
            "measured_s": r["measured_s"],
            "predicted_s": r["predicted_s"],
            "ape": r["ape"],
        }
        for r in res.rows
    ]
    out.print(
        sim_table(
            runs,
            title=f"each run's regime at the fitted parameters (fitted: {counts})",
            width=out.width,
        )
    )
    shown = []
    for r in res.identified or ():
        if r["status"] == "identified":
            runs = f"{r['runs']} run" + ("" if r["runs"] == 1 else "s")
            how = f"95 % [{r['low']:.4g}, {r['high']:.4g}] from {runs}"
            how += f"; at its {r['at_bound']} bound" if r["at_bound"] else ""
        else:
            how = r["reason"]
        shown.append(
            {
                "parameter": r["parameter"],
                "value": r["value"],
                "prior": r["prior"],
                "status": r["status"],
                "interval or why": how,
            }
        )
    out.print(
        sim_table(
            shown,
            title=f"fitted step-time parameters of {res.device_name}: what the runs identified",
            width=out.width,
        )
    )
    out.print(f"source: {res.params['source']}", markup=False)


def _ops_param_rows(res: SimFit) -> list[dict[str, Any]]:
    """--from ops: each GEMM parameter, its value, and fitted (± as a factor) or kept (why)."""
    p, rows = res.params, []
    fitted, kept = res.fitted or {}, res.kept or {}
    for k in ("kernel_overhead_s", "k_half", "bw_efficiency"):
        rows.append({"parameter": k, "value": p[k], "how": _how(fitted, kept, k)})
    for table in ("efficiency", "conv_efficiency"):
        for prec, v in p[table].items():
            k = f"{table}.{prec}"
            how = _how(fitted, kept, k) if k in fitted or k in kept else "base (not measured)"
            rows.append({"parameter": k, "value": v, "how": how})
    return rows


def _how(fitted: dict[str, float], kept: dict[str, str], key: str) -> str:
    if key in fitted:
        return f"fitted (±×{fitted[key]:.3g})"
    return f"kept at base: {kept.get(key, '')}"


def emit(
    rows: Sequence[dict[str, Any]],
    title: str,
    fmt: Format,
    csv_path: str | None,
    summary: Sequence[dict[str, Any]] | None = None,
) -> None:
    """Predictions as a table, CSV or JSON on stdout, and as CSV to `csv_path` too."""
    if csv_path:
        from pathlib import Path

        Path(csv_path).write_text(tables.to_csv(rows))
    if fmt is Format.csv:
        sys.stdout.write(tables.to_csv(rows))
    elif fmt is Format.json:
        import json

        data: Any = [dict(r) for r in rows]
        if summary is not None:
            data = {"rows": data, "summary": [dict(r) for r in summary]}
        sys.stdout.write(json.dumps(data, indent=1, default=str) + "\n")
    else:
        from paradnn.cli.sim_tables import sim_table

        out.print(sim_table(rows, title=title, width=out.width))
        if summary is not None:
            model = next((str(r["model"]) for r in summary if r.get("model")), "")
            title = "median absolute % error per family (prediction" + (
                f", {model} model)" if model else ")"
            )
            out.print(sim_table(summary, title=title, width=out.width))
    if csv_path:
        out.print(f"Wrote [bold]{escape(csv_path)}[/].")
