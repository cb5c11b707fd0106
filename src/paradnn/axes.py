"""The study axes: every run option a sweep can vary, each declared once (torch-free).

An axis is a `RunOptions` field whose values a study compares (precision, execution mode, N
data-parallel processes, data source, backend, ...). Its declaration says everything the rest
of paradnn needs to know about it, and nothing else repeats it:

- the field, the sweep file's key and the command line's flag (`mode`, `modes`, `--mode`);
- what it accepts (words, from their registry, or an integer range, or a flag) and its default,
  which RunOptions checks (`check`) and the options' help lists (`help_text`);
- when it enters the run key: always, or only when it is not its default (`keyed`), and the
  other values under which it changes what is measured at all (`when`: a DataLoader's
  settings only for data_source = pipeline);
- the record column that stores it (`column`; None: the record's `flags` say what ran).

The command line's options (one value for `bench`, several for `run`: cli/options.py), the sweep
file's keys (sweep/file.py), the run key (`RunOptions.key_fields`), the tables' identity columns
and `compare --by` are made from this table. A new axis is a declaration here, a field of
RunOptions (config.py), the code that applies it, its record column and migration, and docs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from paradnn import backends
from paradnn.errors import ConfigError
from paradnn.optimizers import IMPLEMENTATIONS, OPTIMIZERS
from paradnn.precisions import POLICIES, PRECISIONS, effective_policy
from paradnn.validate import int_at_least, one_of

# Execution modes (docs/modes.md): eager, or torch.compile's forward+loss under one of its modes.
# `reduce-overhead` captures CUDA graphs: `unsupported` (with the reason) on a CPU.
MODES = ("eager", "compile", "max-autotune", "reduce-overhead")
# Data sources (docs/infeed.md): `device` synthetic tensors made once on the device (ParaDnn's
# synthetic input, the default); `host` pinned host tensors copied to the device every step
# (non_blocking); `pipeline` JPEG images and token files written by paradnn to a local cache,
# decoded and augmented by a torch DataLoader every step.
DATA_SOURCES = ("device", "host", "pipeline")
# Data-parallel runs (docs/scaling.md): N processes, how the model is replicated, and whether
# the batch is per rank (weak scaling) or split across the ranks (strong scaling).
STRATEGIES = ("ddp", "fsdp")
SCALINGS = ("weak", "strong")
MAX_PROCS = 4096  # ranks of one run on one machine (docs/limits.md); torchrun spans machines
MAX_LOADER_WORKERS = 256  # DataLoader processes of one run (docs/limits.md)
MAX_PREFETCH = 64  # batches each loader worker keeps ready

Values = Mapping[str, Any]  # a run's axis values by field (a missing one: its default)


@dataclass(frozen=True)
class Axis:
    """One study axis. `words` lists the values a word axis accepts (a function: a registry
    may grow, PARADNN_BACKENDS); an integer axis has `low`/`high`; a flag is a bool."""

    field: str  # the RunOptions field
    key: str  # the sweep file's key: a list of values, every one run
    flag: str  # the command line's option (a bool's also has its --no- form)
    what: str  # what it is, for the help (its values and default are added from the rest)
    default: Any
    doc: str  # where docs/ explain it
    words: Callable[[], tuple[str, ...]] | None = None
    low: int | None = None
    high: int | None = None
    notes: Mapping[str, str] = field(default_factory=dict)  # a word -> what it means
    short: str | None = None  # -p
    comma: bool = False  # the command line's list form is comma-separated (--procs 1,2)
    keyed: str = "when_set"  # "always": in every run key; "when_set": only off its default
    when: Callable[[Values], bool] | None = None  # measured only where this holds (else unset)
    effective: Callable[[Any, Values], Any] | None = None  # the value a run has in effect
    column: str | None = None  # the record field that stores it (None: the record's flags)

    @property
    def kind(self) -> type:
        return type(self.default)

    def allowed(self) -> tuple[Any, ...] | None:
        """Every value it accepts, when they can be listed (a word's or a flag's)."""
        if self.words is not None:
            return self.words()
        return (True, False) if self.kind is bool else None

    def check(self, value: Any) -> None:
        """One line naming the field, the value and what is allowed, when `value` is not one."""
        if self.words is not None:
            one_of(self.field, value, self.words())
        elif self.kind is bool:
            if not isinstance(value, bool):
                raise ConfigError(self.field, value, "must be true or false")
        else:
            int_at_least(self.field, value, self.low or 0, self.high)

    def value_in(self, values: Values) -> Any:
        """This axis' value in effect in a run of `values`: its default where it measures
        nothing (`when` fails), else the value as the run applies it (`effective`)."""
        if self.when is not None and not self.when(_with_defaults(values)):
            return self.default
        value = values.get(self.field, self.default)
        return self.effective(value, _with_defaults(values)) if self.effective else value

    def in_key(self, values: Values) -> bool:
        """Whether this axis enters the run key of a run of `values`."""
        if self.when is not None and not self.when(_with_defaults(values)):
            return False
        return self.keyed == "always" or self.value_in(values) != self.default

    def help_text(self, many: bool = False) -> str:
        """The option's help: what it is, every value it accepts, its doc and default."""
        if not many:
            given = f"Default: {self.shown_default()}."
        elif self.comma or self.kind is bool:  # one list in one value, or one switch
            given = "Default: the sweep's."
        else:
            given = "Repeatable; default: the sweep's."
        return (
            f"{self.what}{': ' + self.listing() if self.listing() else ''} ({self.doc}). " + given
        )

    def filter_help(self) -> str:
        """The help of a filter on stored runs (`results --mode compile`)."""
        listing = self.listing() or "on or off"
        return f"Only runs of this {self.field.replace('_', ' ')}: {listing}."

    def listing(self) -> str:
        """`a (what a is), b or c`: every accepted word, each with its note; a range."""
        allowed = self.allowed()
        if allowed is None:
            high = "" if self.high is None else f" to {self.high}"
            return f"{self.low}{high}" + (", comma-separated" if self.comma else "")
        return "" if self.kind is bool else listing(allowed, self.notes)

    def shown_default(self) -> str:
        if self.kind is bool:
            return "on" if self.default else "off"
        return str(self.default)


def listing(words: Iterable[Any], notes: Mapping[str, str] | None = None) -> str:
    """`a (what a is), b or c`: every word, each with its note (a help's list of values)."""
    said = [f"{w} ({notes[w]})" if notes and w in notes else str(w) for w in words]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]


def _with_defaults(values: Values) -> Values:
    return {**DEFAULTS, **values}


def _procs(values: Values) -> bool:
    return bool(values["procs"] > 1)


def _pipeline(values: Values) -> bool:
    return bool(values["data_source"] == "pipeline")


def _policy(value: Any, values: Values) -> Any:
    return effective_policy(values["precision"], value)


_LOADER = "the DataLoader's; for data_source pipeline"
# Precision and optimizer come first: a sweep runs precision-major, then by optimizer, then by
# the other axes in this order (sweep/file.py).
PRECISION = Axis(
    "precision",
    "precisions",
    "--precision",
    "Numeric precision",
    "fp32",
    "docs/precision.md",
    words=lambda: PRECISIONS,
    notes={"tf32": "TF32 matmuls; fp32 means TF32 off", "bf16": "autocast", "fp16": "autocast"},
    short="-p",
    keyed="always",
    column="precision",
)
OPTIMIZER = Axis(
    "optimizer",
    "optimizers",
    "--optimizer",
    "Optimizer",
    "rmsprop",
    "docs/optimizers.md",
    words=lambda: OPTIMIZERS,
    notes={"rmsprop": "ParaDnn's"},
    keyed="always",
    column="optimizer",
)
# The order is the analysis' (a comparison pairs runs that are equal along every other axis,
# its identity columns in this order) and a sweep's (its combinations, in itertools.product
# order).
STUDY: tuple[Axis, ...] = (
    Axis(
        "mode",
        "modes",
        "--mode",
        "Execution mode",
        "eager",
        "docs/modes.md",
        words=lambda: MODES,
        notes={"reduce-overhead": "CUDA graphs"},
        keyed="always",
        column="mode",
    ),
    Axis(
        "backend",
        "backends",
        "--backend",
        "The framework that builds and runs the step",
        "torch",
        "docs/jax.md",
        words=backends.names,
        notes={"jax": "the same model on JAX/XLA"},
        column="backend",
    ),
    Axis(
        "procs",
        "procs",
        "--procs",
        "Data-parallel processes (ranks), one run each",
        1,
        "docs/scaling.md",
        low=1,
        high=MAX_PROCS,
        comma=True,
        column="procs",
    ),
    Axis(
        "strategy",
        "strategies",
        "--strategy",
        "How procs > 1 ranks hold the model",
        "ddp",
        "docs/scaling.md",
        words=lambda: STRATEGIES,
        notes={"ddp": "DistributedDataParallel", "fsdp": "FSDP2 fully_shard"},
        when=_procs,
        column="strategy",
    ),
    Axis(
        "scaling",
        "scalings",
        "--scaling",
        "The batch of procs > 1 ranks",
        "weak",
        "docs/scaling.md",
        words=lambda: SCALINGS,
        notes={"weak": "batch per rank", "strong": "the batch split across the ranks"},
        when=_procs,
        column="scaling",
    ),
    Axis(
        "precision_policy",
        "precision_policies",
        "--precision-policy",
        "Where 16-bit numbers live",
        "mixed",
        "docs/optimizers.md",
        words=lambda: POLICIES,
        notes={
            "mixed": "fp32 master weights, autocast",
            "pure": "16-bit weights, gradients and optimizer state; bf16/fp16 only",
        },
        effective=_policy,
        column="precision_policy",
    ),
    Axis(
        "data_source",
        "data_sources",
        "--data",
        "Where each step's batch comes from",
        "device",
        "docs/infeed.md",
        words=lambda: DATA_SOURCES,
        notes={
            "device": "synthetic, made once on the device",
            "host": "pinned host tensors copied each step",
            "pipeline": "JPEG/token files through a DataLoader",
        },
        column="data_source",
    ),
    Axis(
        "loader_workers",
        "loader_workers",
        "--loader-workers",
        f"DataLoader num_workers, 0 in-process ({_LOADER})",
        2,
        "docs/infeed.md",
        low=0,
        high=MAX_LOADER_WORKERS,
        when=_pipeline,
        column="loader_workers",
    ),
    Axis(
        "pin_memory",
        "pin_memory",
        "--pin-memory",
        f"Page-locked batches, CUDA only ({_LOADER})",
        True,
        "docs/infeed.md",
        when=_pipeline,
        column="pin_memory",
    ),
    Axis(
        "prefetch_factor",
        "prefetch_factors",
        "--prefetch-factor",
        f"Batches each loader worker keeps ready ({_LOADER})",
        2,
        "docs/infeed.md",
        low=1,
        high=MAX_PREFETCH,
        when=_pipeline,
        column="prefetch_factor",
    ),
    Axis(
        "persistent_workers",
        "persistent_workers",
        "--persistent-workers",
        f"Keep the loader workers across epochs ({_LOADER})",
        True,
        "docs/infeed.md",
        when=_pipeline,
        column="persistent_workers",
    ),
    Axis(
        "cudnn_benchmark",
        "cudnn_benchmark",
        "--cudnn-benchmark",
        "cuDNN's autotuner times each convolution's algorithms and keeps the fastest "
        "(torch.backends.cudnn.benchmark; CUDA only)",
        True,
        "docs/modes.md",
        column="cudnn_benchmark",
    ),
    Axis(
        "optimizer_impl",
        "optimizer_impls",
        "--optimizer-impl",
        "torch.optim's implementation",
        "auto",
        "docs/optimizers.md",
        words=lambda: IMPLEMENTATIONS,
        notes={"auto": "torch's choice: foreach on CUDA, the loop on CPU", "fused": "no RMSprop"},
    ),
)
AXES: tuple[Axis, ...] = (PRECISION, OPTIMIZER, *STUDY)
BY_FIELD: Mapping[str, Axis] = {a.field: a for a in AXES}
DEFAULTS: Mapping[str, Any] = {a.field: a.default for a in AXES}
# The DataLoader's settings: they change what is measured only for data_source = pipeline.
LOADER_SETTINGS = tuple(a.field for a in STUDY if a.when is _pipeline)


def get(name: str) -> Axis:
    """The axis of RunOptions field `name`; one ConfigError naming the axes otherwise."""
    if name not in BY_FIELD:
        raise ConfigError("axis", name, "must be one of " + ", ".join(BY_FIELD))
    return BY_FIELD[name]


def measured(values: Values) -> dict[str, Any]:
    """`values` with each axis that measures nothing there at its default (the loader's
    settings without a pipeline, a strategy on one process): two combinations that differ
    only there are one run."""
    full = _with_defaults(values)
    unset = {a.field for a in AXES if a.when is not None and not a.when(full)}
    return {name: BY_FIELD[name].default if name in unset else v for name, v in values.items()}


def in_effect(values: Values) -> dict[str, Any]:
    """`values` as a run has them in effect: `measured`, and each value as the run applies it
    (fp32's `pure` precision policy is `mixed`)."""
    return {name: BY_FIELD[name].value_in(values) for name in values}


__all__ = [
    "AXES",
    "BY_FIELD",
    "DATA_SOURCES",
    "DEFAULTS",
    "LOADER_SETTINGS",
    "MODES",
    "OPTIMIZER",
    "PRECISION",
    "SCALINGS",
    "STRATEGIES",
    "STUDY",
    "Axis",
    "get",
    "in_effect",
    "listing",
    "measured",
]
