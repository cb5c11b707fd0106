"""Sweep files: which models to measure, at which precisions, and how, as one TOML file.

    name = "paper-fc"             # optional; default: the file stem
    description = "..."           # optional
    precisions = ["fp32", "bf16"] # default ["fp32"]; any of paradnn.config.PRECISIONS, or
                                  # "native": every low precision the device runs natively
    optimizers = ["rmsprop"]      # default ["rmsprop"]; any of paradnn.optimizers.OPTIMIZERS
    modes = ["eager"]             # study axes (paradnn.axes), each optional: every value
                                  # is run; paradnn.axes says which values are allowed

    [sampling]                    # optional; default method = "grid" (every combination)
    method = "lhs"                # "grid", "random" or "lhs" (Latin hypercube over the axes)
    n = 200                       # random/lhs: configs per family (capped at the grid size)
    seed = 0                      # random/lhs

    [filters]                     # optional; analytic counts, so no model is built
    max_params = 1e9              # skip configs with more trainable parameters
    max_flops_per_step = 1e15     # skip configs whose training step needs more FLOPs

    [timing]                      # optional overrides of TimingPolicy's fields
    min_time_s = 0.3

    [executor]                    # optional: where the runs execute (docs/cluster.md)
    kind = "ray"                  # local (default), ray or slurm; fields of ExecutorSettings

    [families.fc]                 # one table per family: its grid
    layers = "4..128 x2"          # a range string (paradnn.space.parse_range), numeric axes only
    nodes = [32, "128..512 x2"]   # a list (of values and ranges), or a single value
    input = 2000                  # axes left out span the family's paper_space (Table 2)

    [[runs]]                      # optional explicit configs, appended after the families
    family = "fc"
    config = { layers = 4, nodes = 256 }   # fields left out take the family's defaults

    [[runs]]                      # a model of your own (docs/own-model.md)
    model = "mypkg.models:small"  # a factory: () -> (module, make_batch[, loss])

Rules, all checked by `load` before anything runs; every error is one `SweepError` line naming
the file, the dotted key, the value and what is allowed:

* Unknown keys, sections, families and axes are errors (a typo never becomes a default).
* Each axis value must make a valid config with the family's defaults for the other fields.
  A grid point that is invalid only as a combination (a CNN with batch 1 and a 1×1 last feature
  map) is skipped and counted in `Sweep.skipped_invalid`; an invalid `[[runs]]` entry is an error.
* Filters apply to the families' grids, not to `[[runs]]` (those were asked for by name), and
  after sampling: `n` counts drawn configs, `Sweep.skipped_filtered` those filtered out.
* Duplicate axis values, precisions and configs are kept once, at their first position.
* `specs()` orders runs precision-major, then optimizer, then the study axes (in
  itertools.product order), then config, so a partial run covers
  every model; configs go family by family in file order, each grid in itertools.product order
  over the config fields (random/lhs keep their random order), then the `[[runs]]`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import re
import tomllib
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paradnn import families
from paradnn.axes import AXES, BY_FIELD, STUDY, in_effect, measured
from paradnn.config import ExecutorSettings, RunOptions, RunSpec, TimingPolicy, with_fields
from paradnn.errors import ABSENT, ConfigError, ParadnnError, line, shown
from paradnn.families.base import Family
from paradnn.optimizers import OPTIMIZERS
from paradnn.precisions import NATIVE, PRECISIONS
from paradnn.space import parse_range
from paradnn.sweep.sampling import METHODS, Sampling
from paradnn.validate import SEED_MAX, coerce, from_mapping, huge_integer, one_of, plain_text

# Per family. Bigger grids are nearly always a typo in a range (and would take seconds and
# hundreds of MB just to list); sample them with method = "random" or "lhs" instead.
MAX_CONFIGS = 100_000
# Per sweep: configs × precisions × optimizers, counted from the axis sizes before any grid is
# expanded (docs/limits.md). At one second a run that is more than a day, and listing it with
# --dry-run takes minutes; a bigger study is several sweeps.
MAX_RUNS = 100_000
MAX_DESCRIPTION = 1000
TOP_KEYS = (
    "name", "description", *(a.key for a in AXES),
    "sampling", "filters", "timing", "executor", "families", "runs",
)  # fmt: skip

_ABSENT = ABSENT  # "this error has no value to show"
HUGE_ALLOWED = "too long to read; no number in a sweep file needs over 19 digits (docs/limits.md)"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TOML_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_TOML_WHERE = re.compile(r" \(at (line \d+, column \d+|end of document)\)$")


class SweepError(ConfigError):
    """A sweep cannot be used. One line: the file, the dotted key, the value, what is allowed."""

    def __init__(self, where: str, value: object, allowed: str) -> None:
        self.field, self.value, self.allowed = where, value, allowed
        ParadnnError.__init__(self, line(where, value, allowed))


@dataclass(frozen=True)
class Filters:
    """Upper bounds on a config's analytic size; infinity means no bound."""

    max_params: float = math.inf
    max_flops_per_step: float = math.inf

    def keeps(self, family: Family, cfg: Any) -> bool:
        # train_flops walks every layer's shape: only pay for it when a bound is set.
        if self.max_params < math.inf and family.params(cfg) > self.max_params:
            return False
        return not (
            self.max_flops_per_step < math.inf and family.train_flops(cfg) > self.max_flops_per_step
        )


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: its configs and how to run them. `specs()` expands it into runs."""

    name: str
    description: str
    source: str  # the file path; "<preset>" for shipped presets, "<string>"/"<dict>" otherwise
    configs: tuple[tuple[str, Mapping[str, Any]], ...]  # (family, full config), deduplicated
    precisions: tuple[str, ...] = ("fp32",)
    optimizers: tuple[str, ...] = ("rmsprop",)
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    sampling: Sampling = field(default_factory=Sampling)
    filters: Filters = field(default_factory=Filters)
    skipped_invalid: int = 0  # grid points that make no valid model as a combination
    skipped_filtered: int = 0  # grid points over a [filters] bound
    # Study axes the file sets: (RunOptions field, its values): (("mode", ("eager", "compile")),)
    axes: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    executor: ExecutorSettings | None = None  # [executor]: where it runs (CLI options override)

    def specs(
        self,
        precisions: Sequence[str] | None = None,
        optimizers: Sequence[str] | None = None,
        axes: Mapping[str, Sequence[Any]] | None = None,
        options: RunOptions | None = None,
    ) -> list[RunSpec]:
        """Every config at every precision, optimizer and study-axis value (overrides replace
        the file's; `axes` is keyed by RunOptions field), precision-major so a partial run
        covers all models. Each run's options are `options` (default: the sweep's timing) with
        its axis values in place, as the run has them in effect (paradnn.axes.in_effect)."""
        base = options or with_fields(None, "sweep", {"timing": self.timing})
        precs = _override("precision", precisions, PRECISION_WORDS) or self.precisions
        opts = _override("optimizer", optimizers, OPTIMIZERS) or self.optimizers
        study = dict(self.axes)
        for name, values in (axes or {}).items():
            if name not in STUDY_FIELDS:
                raise ConfigError("axis", name, "must be one of " + ", ".join(STUDY_FIELDS))
            for v in values or ():
                BY_FIELD[name].check(v)  # one line naming the field, value and choices
            if values:
                study[name] = tuple(dict.fromkeys(values))
        combos = [dict(zip(study, v, strict=True)) for v in itertools.product(*study.values())]
        combos = _unique(measured(c) for c in combos)  # docs/infeed.md
        for combo in combos:  # values valid alone may clash together (host data on 2 ranks)
            dataclasses.replace(base, **combo)
        _check_runs(_At(self.name), len(self.configs) * len(precs) * len(opts) * len(combos))
        per_precision = {  # fp32's pure twin is its mixed run: once (paradnn.axes)
            p: combos if p == NATIVE else _unique(_at_precision(c, p) for c in combos)
            for p in precs
        }
        return [
            RunSpec(fam, cfg, _options(base, p, o, combo), native=p == NATIVE)
            for p in precs
            for o in opts
            for combo in per_precision[p]
            for fam, cfg in self.configs
        ]


STUDY_FIELDS = tuple(a.field for a in STUDY)


def _unique(combos: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({repr(c): c for c in combos}.values())


def _at_precision(combo: dict[str, Any], precision: str) -> dict[str, Any]:
    """A combination as a run of `precision` has it in effect (fp32's pure policy is mixed)."""
    effect = in_effect({**combo, "precision": precision})
    return {k: v for k, v in effect.items() if k in combo}


def _options(base: RunOptions, precision: str, optimizer: str, combo: dict[str, Any]) -> RunOptions:
    """One run's options: `base` with its precision (a native placeholder's is replaced
    later), optimizer and axis values."""
    chosen = {} if precision == NATIVE else {"precision": precision}
    return dataclasses.replace(base, **chosen, optimizer=optimizer, **combo)


def load(source: str | os.PathLike[str] | Mapping[str, Any], *, name: str | None = None) -> Sweep:
    """Load a sweep from a file path, TOML text or an already-parsed mapping.

    A `str` is a path when it is one line and ends in `.toml` or names an existing file;
    otherwise it is TOML text. `name` is used when the sweep sets none (default: the file stem,
    or "sweep")."""
    if isinstance(source, Mapping):
        return parse(source, label="<dict>", source="<dict>", name=name or "sweep")
    if isinstance(source, str) and not _looks_like_path(source):
        return parse(source, label="<string>", source="<string>", name=name or "sweep")
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SweepError(str(path), _ABSENT, "cannot read: a sweep file must be UTF-8") from None
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise SweepError(str(path), _ABSENT, f"cannot read: {reason}") from None
    return parse(text, label=str(path), source=str(path), name=name or path.stem)


def parse(data: str | Mapping[str, Any], *, label: str, source: str, name: str) -> Sweep:
    """Validate and expand TOML text or a parsed mapping. `label` names the input in error
    messages, `source` becomes `Sweep.source`, `name` applies when the sweep sets none."""
    doc = _decode(data, label) if isinstance(data, str) else data
    top = _At(label)
    if not isinstance(doc, Mapping):
        raise top.error(doc, "must be a table of sweep settings")
    _known_keys(top, doc, TOP_KEYS)
    family_tables = _table(top / "families", doc.get("families", {}))
    runs = doc.get("runs", [])
    if not isinstance(runs, list | tuple):
        raise (top / "runs").error(runs, "must be an array of tables, written [[runs]]")
    if not family_tables and not runs:
        raise top.error(_ABSENT, "has no runs: add a [families.NAME] table or [[runs]] entries")

    # Cheap settings first, so a typo there is reported before a big grid is expanded.
    sweep_name = _name(top / "name", doc["name"]) if "name" in doc else name
    description = _string(top / "description", doc.get("description", ""))
    precisions = _choices(top / "precisions", doc.get("precisions", ["fp32"]), PRECISION_WORDS)
    optimizers = _choices(top / "optimizers", doc.get("optimizers", ["rmsprop"]), OPTIMIZERS)
    study = tuple(
        (a.field, _axis_values(top / a.key, a.field, doc[a.key])) for a in STUDY if a.key in doc
    )
    timing = _timing(top / "timing", doc.get("timing", {}))
    executor = _executor(top / "executor", doc["executor"]) if "executor" in doc else None
    sampling = _sampling(top / "sampling", doc.get("sampling", {}))
    filters = _filters(top / "filters", doc.get("filters", {}))

    # Count first, from the axis sizes: a sweep too big to run is refused before expanding.
    grids = {
        fam: _family_grid(top / "families" / fam, fam, table, sampling)
        for fam, table in family_tables.items()
    }
    planned = sum(count for _, _, count in grids.values()) + len(runs)
    combos = math.prod(len(values) for _, values in study)
    _check_runs(top, planned * len(precisions) * len(optimizers) * combos)
    configs: list[tuple[str, dict[str, Any]]] = []
    invalid = filtered = 0
    for fam, (family, axes, _) in grids.items():
        got, bad, cut = _family_configs(family, axes, sampling, filters)
        configs += [(fam, cfg) for cfg in got]
        invalid, filtered = invalid + bad, filtered + cut
    configs += [_run(top / "runs" / i, entry) for i, entry in enumerate(runs)]
    unique: dict[tuple[str, tuple[tuple[str, Any], ...]], tuple[str, dict[str, Any]]] = {}
    for fam, cfg in configs:
        unique.setdefault((fam, tuple(cfg.items())), (fam, cfg))

    return Sweep(
        name=sweep_name,
        description=description,
        source=source,
        configs=tuple(unique.values()),
        precisions=precisions,
        optimizers=optimizers,
        timing=timing,
        sampling=sampling,
        filters=filters,
        skipped_invalid=invalid,
        skipped_filtered=filtered,
        axes=study,
        executor=executor,
    )


@dataclass(frozen=True)
class _At:
    """A place in the sweep, for messages: `paper.toml: families.fc.layers`, `…: runs[2]`."""

    label: str
    path: str = ""

    def __truediv__(self, key: object) -> _At:
        if isinstance(key, int) and not isinstance(key, bool):
            return _At(self.label, f"{self.path}[{key}]")
        return _At(self.label, f"{self.path}.{_key(key)}" if self.path else _key(key))

    def __str__(self) -> str:
        return f"{self.label}: {self.path}" if self.path else self.label

    def error(self, value: object, allowed: str) -> SweepError:
        return SweepError(str(self), value, allowed)

    def from_config_error(self, e: ConfigError, family: str) -> SweepError:
        """Re-home a family's `fc.layers = 0: …` at this place in the file."""
        return (self / e.field.removeprefix(f"{family}.")).error(e.value, e.allowed)


def _key(key: object) -> str:
    """A key as TOML writes it: bare when it can be, else quoted with escapes (so one line)."""
    if not isinstance(key, str):
        return shown(key)
    if _BARE_KEY.fullmatch(key):
        return key
    cut = key if len(key) <= 40 else key[:40] + "..."
    return '"' + "".join(map(_toml_char, cut)) + '"'


def _toml_char(c: str) -> str:
    if c in _TOML_ESCAPES:
        return _TOML_ESCAPES[c]
    if c.isprintable():
        return c
    return f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and (text.endswith(".toml") or os.path.isfile(text))


def _decode(text: str, label: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_WHERE.search(msg)
        where, why = (f"{label}: {m[1]}", msg[: m.start()]) if m else (label, msg)
        raise SweepError(where, _ABSENT, f"invalid TOML: {why}") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more than 4300 digits
        if where := huge_integer(text):
            raise SweepError(f"{label}: {where}", _ABSENT, HUGE_ALLOWED) from None
        raise SweepError(label, _ABSENT, f"invalid TOML: {e}") from None


def _known_keys(at: _At, table: Mapping[Any, Any], allowed: Sequence[str], what: str = "") -> None:
    for key, value in table.items():
        if key not in allowed:
            kind = what or ("unknown section" if isinstance(value, Mapping) else "unknown key")
            raise (at / key).error(value, f"{kind}; allowed: " + ", ".join(allowed))


def _table(at: _At, value: object) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise at.error(value, "must be a table")
    return value


def _string(at: _At, value: object) -> str:
    if not (isinstance(value, str) and value.isprintable() and len(value) <= MAX_DESCRIPTION):
        raise at.error(
            value, f"must be a printable one-line string of at most {MAX_DESCRIPTION} characters"
        )
    return value


def _name(at: _At, value: object) -> str:
    if not plain_text(value, 100):
        raise at.error(value, "must be non-empty printable ASCII of at most 100 characters")
    return value  # type: ignore[return-value]


def _integer(at: _At, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise at.error(value, f"must be an integer in [{low}, {high}]")
    return value


def _check_runs(at: _At, runs: int) -> None:
    if runs > MAX_RUNS:
        raise at.error(
            _ABSENT,
            f"expands to {runs:,} runs (configs × precisions × optimizers × study axes); at most "
            f"{MAX_RUNS:,} per sweep: narrow the axes, sample them ([sampling] method = "
            "'random' or 'lhs') or split the sweep",
        )


PRECISION_WORDS = (*PRECISIONS, NATIVE)


def _choices(at: _At, value: object, allowed: Sequence[str]) -> tuple[str, ...]:
    listed = isinstance(value, list | tuple)
    items = value if listed else [value]
    if not items or not (listed or isinstance(value, str)):
        raise at.error(value, "must be a non-empty list of: " + ", ".join(allowed))
    for i, item in enumerate(items):
        if item not in allowed:
            raise (at / i if listed else at).error(item, "must be one of " + ", ".join(allowed))
    return tuple(dict.fromkeys(items))


def _axis_values(at: _At, name: str, value: object) -> tuple[Any, ...]:
    """A study axis' values, each checked as paradnn.axes declares it, deduplicated in order."""
    items = value if isinstance(value, list | tuple) else [value]
    if not items or isinstance(value, Mapping):
        raise at.error(value, f"must be a non-empty list of {name} values")
    for i, item in enumerate(items):
        try:
            BY_FIELD[name].check(item)
        except ConfigError as e:
            where = at / i if isinstance(value, list | tuple) else at
            raise where.error(item, e.allowed) from None
    return tuple(dict.fromkeys(items))


def _override(what: str, values: Sequence[str] | None, allowed: Sequence[str]) -> tuple[str, ...]:
    for v in values or ():
        one_of(what, v, allowed)
    return tuple(dict.fromkeys(values or ()))


def _sampling(at: _At, value: object) -> Sampling:
    table = _table(at, value)
    _known_keys(at, table, ("method", "n", "seed"))
    method = table.get("method", "grid")
    if method not in METHODS:
        raise (at / "method").error(method, "must be one of " + ", ".join(METHODS))
    if method == "grid":
        for key in ("n", "seed"):
            if key in table:
                raise (at / key).error(table[key], "only used with method = 'random' or 'lhs'")
        return Sampling()
    if "n" not in table:
        raise (at / "n").error(
            _ABSENT, f"is required with method = {method!r} (configs per family)"
        )
    n = _integer(at / "n", table["n"], 1, MAX_CONFIGS)
    return Sampling(method, n, _integer(at / "seed", table.get("seed", 0), 0, SEED_MAX))


def _filters(at: _At, value: object) -> Filters:
    table = _table(at, value)
    _known_keys(at, table, [f.name for f in dataclasses.fields(Filters)])
    for key, bound in table.items():
        ok = isinstance(bound, int | float) and not isinstance(bound, bool) and bound > 0
        if not ok:
            raise (at / key).error(bound, "must be a number > 0")
    return Filters(**table)


def _timing(at: _At, value: object) -> TimingPolicy:
    table = _table(at, value)
    _known_keys(at, table, [f.name for f in dataclasses.fields(TimingPolicy)])
    for key, number in table.items():
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise (at / key).error(number, "must be a number")
        if isinstance(number, int) and abs(number) > 2**53:
            raise (at / key).error(number, "is too large")
    try:
        return from_mapping(TimingPolicy, table, prefix="timing.")
    except ConfigError as e:  # TimingPolicy names its fields timing.X, as the file does
        raise _At(at.label, e.field).error(e.value, e.allowed) from None


def _executor(at: _At, value: object) -> ExecutorSettings:
    table = _table(at, value)
    _known_keys(at, table, [f.name for f in dataclasses.fields(ExecutorSettings)])
    try:
        return ExecutorSettings(**table)
    except ConfigError as e:  # named as the CLI names it; the file's key is the field's name
        key = {"executor": "kind", "slurm_folder": "folder"}.get(e.field, e.field)
        raise (at / key).error(e.value, e.allowed) from None


def _family_grid(
    at: _At, fam: Any, value: object, sampling: Sampling
) -> tuple[Family, dict[str, tuple[Any, ...]], int]:
    """The family, its axes (each value checked alone) and how many points sampling takes
    from them, counted without expanding the grid."""
    if fam not in families.names():
        raise at.error(_ABSENT, "unknown family; allowed: " + ", ".join(families.names()))
    family = families.get(fam)
    table = _table(at, value)
    fields = [f.name for f in family.fields()]
    _known_keys(at, table, fields, "unknown axis")
    hints = typing.get_type_hints(family.config_cls)
    axes = {
        name: _axis(at / name, family, name, hints[name], table[name])
        if name in table
        else tuple(family.paper_space[name])
        for name in fields
        if name in table or name in family.paper_space
    }
    lengths = [len(v) for v in axes.values()]
    count = sampling.count(lengths)
    if count > MAX_CONFIGS:
        raise at.error(
            _ABSENT,
            f"expands to {count:,} configs; at most {MAX_CONFIGS:,} per family: narrow the "
            "axes or sample them ([sampling] method = 'random' or 'lhs')",
        )
    return family, axes, count


def _family_configs(
    family: Family, axes: dict[str, tuple[Any, ...]], sampling: Sampling, filters: Filters
) -> tuple[list[dict[str, Any]], int, int]:
    """The family's grid points that make valid models and pass the filters, and how many of
    the sampled points did not (invalid, filtered)."""
    fields = [f.name for f in family.fields()]
    lengths = [len(v) for v in axes.values()]
    out: list[dict[str, Any]] = []
    invalid = filtered = 0
    for point in sampling.points(lengths):
        values = {name: vals[i] for name, vals, i in zip(axes, axes.values(), point, strict=True)}
        # The config class runs the same checks as family.config, without from_mapping's
        # per-call type-hint lookup (values are already coerced): ~50× faster on big grids.
        try:
            cfg = family.config_cls(**values)
        except ConfigError:
            invalid += 1
            continue
        if filters.keeps(family, cfg):
            out.append({name: getattr(cfg, name) for name in fields})
        else:
            filtered += 1
    return out, invalid, filtered


def _axis(at: _At, family: Family, name: str, hint: Any, raw: object) -> tuple[Any, ...]:
    """An axis' values: each one alone (other fields at their defaults) must be a valid config."""
    listed = isinstance(raw, list | tuple)
    items = raw if isinstance(raw, list | tuple) else [raw]
    if not items:
        raise at.error(raw, "must list at least one value")
    numeric = hint in (int, float)
    values: list[tuple[_At, Any, str]] = []  # (where, value, the range it came from)
    for i, item in enumerate(items):
        here = at / i if listed else at
        if isinstance(item, str) and numeric:
            values += [(here, v, f" (in range {item!r})") for v in _range(here, item)]
        elif isinstance(item, int | float | str):
            values.append((here, item, ""))
        else:
            expected = "a number or a range string" if numeric else "a value"
            raise here.error(item, f"must be {expected}, not a {type(item).__name__}")
    checked: dict[tuple[type, Any], Any] = {}  # keyed by type too: 1, 1.0 and True differ
    for here, v, origin in values:
        if (type(v), v) not in checked:
            try:
                bounds = getattr(family.config_cls, "LIMITS", {}).get(name)
                cfg = family.config_cls(**{name: coerce(str(here), v, hint, bounds)})
            except ConfigError as e:
                raise here.error(e.value, e.allowed + origin) from None
            checked[type(v), v] = getattr(cfg, name)
    return tuple(dict.fromkeys(checked.values()))


def _range(at: _At, text: str) -> tuple[int, ...]:
    try:
        return parse_range(text, field=str(at))
    except ConfigError as e:
        raise at.error(text, e.allowed) from None


def _run(at: _At, value: object) -> tuple[str, dict[str, Any]]:
    """One explicit config: unlike a grid point, an invalid one is an error."""
    table = _table(at, value)
    _known_keys(at, table, ("family", "config", "model"))
    if "model" in table:  # a model of your own: model = "package.module:factory"
        if "family" in table or "config" in table:
            raise (at / "model").error(table["model"], "stands alone: no family or config with it")
        try:
            cfg = families.get(families.USER).config({"model": table["model"]})
        except ConfigError as e:
            raise (at / "model").error(table["model"], e.allowed) from None
        return families.USER, {"model": cfg.model}
    if "family" not in table:
        raise (at / "family").error(_ABSENT, "is required; one of " + ", ".join(families.names()))
    fam = table["family"]
    if fam not in families.names():
        raise (at / "family").error(fam, "must be one of " + ", ".join(families.names()))
    family = families.get(fam)
    config = _table(at / "config", table.get("config", {}))
    fields = [f.name for f in family.fields()]
    _known_keys(at / "config", config, fields, "unknown field")
    try:
        cfg = family.config(config)
    except ConfigError as e:
        raise (at / "config").from_config_error(e, fam) from None
    return fam, {name: getattr(cfg, name) for name in fields}
