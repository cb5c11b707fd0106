"""Rendering result rows for people (rich tables) and for scripts (CSV, JSON). Torch-free."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from paradnn.axes import AXES, STUDY
from paradnn.formatting import duration
from paradnn.formatting import nbytes as _bytes
from paradnn.formatting import pct as _pct
from paradnn.formatting import si as _si
from paradnn.formatting import times as _x
from paradnn.records import Status, hyperparameter_columns
from paradnn.utilization import BEATEN_LEGEND, BEATEN_MARK, flagged

si = _si  # for other modules (the CLI's families table)

STATUS_STYLE = {
    Status.OK: "green",
    Status.NAN: "yellow",
    Status.UNSUPPORTED: "dim",
    Status.INVALID: "red",
    Status.OOM: "magenta",
    Status.PREDICTED_OOM: "magenta",
    Status.TIMEOUT: "red",
    Status.CRASHED: "red",
}
SCALAR_SKIP = ("samples", "env", "energy", "load")


def compact_config(cfg: dict[str, Any]) -> str:
    batch = f" batch={cfg['batch']}" if "batch" in cfg else ""  # a model of your own has none
    return " ".join(f"{k}={v}" for k, v in cfg.items() if k != "batch") + batch


def step_ci(row: dict[str, Any]) -> float | None:
    """The step time's CI figure (quality.step_ci): what `±` means for a step time everywhere."""
    from paradnn.measure.quality import step_ci as figure

    return figure(row)


def ci_text(rel: float | None) -> str:
    """The one way a 95% CI is printed (bench, results, run, scale, compare): ` ±x.x%`
    (quality.ci_words; a step time's is `step_ci`); empty when there is no interval."""
    from paradnn.measure.quality import ci_words

    words = ci_words(rel)
    return f" {words}" if words else ""


def _ms(row: dict[str, Any]) -> str:
    med = row.get("step_time_s")
    if med is None:
        return "—"
    return f"{med * 1e3:.3g}" + ci_text(step_ci(row))


def quality_cell(row: dict[str, Any]) -> str:
    q = row.get("quality")
    if q == "noisy":
        return "[yellow]noisy[/]"
    return "good" if q == "good" else "—"


def _precision_cell(row: dict[str, Any]) -> str:
    return row["precision"] + (" [yellow]emu[/]" if row.get("emulated") else "")


def _energy_requested(r: dict[str, Any]) -> bool:
    why = (r.get("nulls") or {}).get("energy_j")
    return r.get("energy_j") is not None or (why is not None and not why.startswith("not_req"))


def _energy_null(r: dict[str, Any], col: str) -> str:
    why = (r.get("nulls") or {}).get(col) or (r.get("nulls") or {}).get("energy_j") or ""
    return f"n/a ({why.split(':')[0]})" if why else "—"


def _energy_cells(r: dict[str, Any]) -> tuple[str, str]:
    """Average W and J per sample of the run's device, or `n/a (reason code)`."""
    if r.get("energy_j") is None:
        cell = _energy_null(r, "energy_j")
        return cell, cell
    w, jps = r.get("avg_power_w"), r.get("energy_per_sample_j")
    return f"{w:.3g}", ("—" if jps is None else f"{jps:.3g}")


def energy_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per measured run (J, W, J/sample, method) and one per reason energy is null."""
    lines, reasons = [], {}
    for r in rows:
        if r.get("energy_j") is not None:
            idle = r.get("idle_power_w")
            lines.append(
                f"energy: {r['energy_j']:.4g} J over {r['energy_window_s']:.3g} s = "
                f"{r['avg_power_w']:.4g} W"
                + (
                    f", {r['energy_per_sample_j']:.3g} J/sample, {r['samples_per_j']:.3g} samples/J"
                    if r.get("energy_per_sample_j") is not None
                    else ""
                )
                + f" ({r['energy_method']}, {r['energy_scope']}"
                + (f"; idle {idle:.3g} W" if idle is not None else "")
                + ")"
            )
        elif _energy_requested(r):
            why = (r.get("nulls") or {}).get("energy_j", "unknown")
            reasons[why] = reasons.get(why, 0) + 1
    for why, n in reasons.items():
        lines.append(f"energy: n/a{f' for {n} runs' if n > 1 else ''} ({why})")
    return lines


def _attempt_cell(r: dict[str, Any]) -> str:
    """The attempt number; ' chosen' on the attempt compare and the report use (`results`)."""
    return f"{r.get('attempt') or 1}" + (" chosen" if r.get("attempt_choice") else "")


def identity_value(v: Any) -> str:
    """An identity value as a cell: yes/no, `—` when not set; a device or sweep named `[x]`
    stays `[x]`."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return "—" if v is None else escape(str(v))


# Which run a row is, beyond its config: a table shows the fields whose value differs between
# its rows and names the shared ones once above it (`split_identity`). Every study axis of
# paradnn.axes with a record column is one, so an axis added there shows up here without more
# code.
IDENTITY_FIRST = ("device_name", "sweep", "family")
IDENTITY_LAST = ("threads", "attempt", "status", "quality")
IDENTITY_HEADERS = {
    "device_name": "device",
    "precision": "prec",
    "optimizer": "opt",
    "data_source": "data",
    "loader_workers": "loader workers",
    "prefetch_factor": "prefetch",
    "persistent_workers": "persistent",
    "pin_memory": "pinned",
    "cudnn_benchmark": "cudnn benchmark",
}
# What a row stored before its field existed means (a column added later reads null): an
# axis's default, unless the axis is null where it measures nothing (a loader's settings).
IDENTITY_DEFAULTS = {a.field: a.default for a in AXES if a.column and a.when is None}
# Shared values not worth a word above a table: the ordinary run of each axis that enters the
# run key only when set (a single-process torch run on device data, ...).
QUIET_SHARED = {
    a.field: identity_value(a.default)
    for a in STUDY
    if a.column and a.keyed == "when_set" and a.when is None
}


def identity_fields() -> tuple[str, ...]:
    middle = tuple(a.field for a in AXES if a.column)
    return tuple(dict.fromkeys((*IDENTITY_FIRST, *middle, *IDENTITY_LAST)))


def identity_cell(r: dict[str, Any], name: str) -> str:
    """A row's value of an identity field as the table prints it (`—`: not set)."""
    if name == "precision":
        return _precision_cell(r)
    if name == "attempt":
        return _attempt_cell(r)
    if name == "status":
        status = r.get("status")
        return f"[{STATUS_STYLE.get(status, 'white')}]{status}[/]"
    if name == "quality":
        return quality_cell(r)
    if name == "data_source":
        return _infeed_cells(r)[0]  # `pipeline w2`: the loader's workers with the source
    v = r.get(name)
    return identity_value(IDENTITY_DEFAULTS.get(name) if v is None else v)


def split_identity(rows: Sequence[dict[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """(identity fields whose value differs between the rows, {field: value} of those every row
    shares). One row differs from nothing: its fields that are set are all `shared`."""
    varying, shared = [], {}
    for name in identity_fields():
        values = {identity_cell(r, name) for r in rows}
        if len(values) > 1:
            varying.append(name)
        elif values and (v := next(iter(values))) != "—":
            shared[name] = v
    return varying, shared


def family_shared_config(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{family: the hyperparameters all its rows have with one value}, for each family with
    two rows or more: named once above a table instead of in every row's config."""
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(str(r.get("family")), []).append(
            r.get("config") if isinstance(r.get("config"), dict) else {}
        )
    shared = {}
    for fam, cfgs in by.items():
        if len(cfgs) < 2:
            continue
        first = cfgs[0]
        pair = PAIRS.get(fam, ())  # the config column always shows its depth×width
        same = {
            k: v
            for k, v in first.items()
            if k not in pair and all(c.get(k, object()) == v for c in cfgs[1:])
        }
        if same:
            shared[fam] = same
    return shared


def shared_line(shared: dict[str, str], config: dict[str, dict[str, Any]] | None = None) -> str:
    """`all rows: prec fp32 · mode eager · …`: what a table's hidden columns hold, and the
    hyperparameters each family's rows share (`fc: input=1000 output=200`; the family's name
    left out when it is the only one)."""
    parts = [
        f"{IDENTITY_HEADERS.get(k, k)} {v}" for k, v in shared.items() if QUIET_SHARED.get(k) != v
    ]
    for fam, cfg in (config or {}).items():
        words = " ".join(f"{k}={v}" for k, v in cfg.items())
        parts.append(escape(words if len(config or {}) == 1 else f"{fam}: {words}"))
    return "all rows: " + " · ".join(parts) if parts else ""


# The compact config column (`fc 4x2048 b256`): each family's depth×width pair, then the other
# fields by a short name (`b` batch, `in` input, …; "" the value alone, for a word such as
# `lstm`). A field not named here (a family of one's own) keeps `name=value`.
PAIRS = {
    "fc": ("layers", "nodes"),
    "cnn": ("blocks", "filters"),
    "rnn": ("layers", "embed"),
    "transformer": ("layers", "d_model"),
    "deepspeech2": ("layers", "hidden"),
}
SHORT = {
    "batch": "b",
    "input": "in",
    "output": "out",
    "image": "img",
    "length": "len",
    "vocab": "voc",
    "heads": "h",
    "ffn": "ffn",
    "frames": "fr",
    "block": "",
    "cell": "",
}


def short_config(family: str | None, cfg: dict[str, Any], skip: Any = ()) -> str:
    """A config in a few characters: `4x2048 in1000 b256`; the fields in `skip` (named above
    the table) left out. Every field's value is there: --format csv has them by name."""
    pair = PAIRS.get(str(family))
    cfg = {k: v for k, v in cfg.items() if k not in skip or k in (pair or ())}
    words = []
    if pair and all(k in cfg for k in pair):
        words.append(f"{cfg.pop(pair[0])}x{cfg.pop(pair[1])}")
    batch = cfg.pop("batch", None)
    for k, v in cfg.items():
        if k in SHORT and not isinstance(v, bool):
            words.append(f"{SHORT[k]}{v}")
        else:
            words.append(f"{k}={v}")
    if batch is not None:
        words.append(f"b{batch}")
    return escape(" ".join(words))


def config_cell(r: dict[str, Any], skip: Any = (), with_family: bool = False) -> str:
    """A row's compact config (`short_config`), after its family's name when asked."""
    cfg = r.get("config") if isinstance(r.get("config"), dict) else {}
    text = short_config(r.get("family"), cfg, skip)
    return f"{escape(str(r.get('family')))} {text}".strip() if with_family else text


def config_legend(
    rows: Sequence[dict[str, Any]], skip: dict[str, dict[str, Any]] | None = None
) -> str | None:
    """The line that reads the compact config: each family's pair, and the short names its
    cells use (the fields in `skip`, named above the table, are not in them)."""
    fams = list(dict.fromkeys(str(r.get("family")) for r in rows))
    pairs = [f"{f} {'×'.join(PAIRS[f])}" for f in fams if f in PAIRS]
    keys = {
        k
        for r in rows
        if isinstance(r.get("config"), dict)
        for k in r["config"]
        if k not in (skip or {}).get(str(r.get("family")), {})
    }
    names = [f"{v} {k}" for k, v in SHORT.items() if v and k in keys]
    if not pairs and not names:
        return None
    return "config: " + ", ".join([*pairs, *names])


def _compile_cell(r: dict[str, Any]) -> str:
    """Seconds compiling the step cost: torch.compile cold / warm cache, or XLA's compile."""
    cold, warm = r.get("compile_cold_s"), r.get("compile_warm_s")
    if cold is not None:
        return f"{cold:.3g}" + ("" if warm is None else f" / {warm:.3g}")
    if r.get("xla_compile_s") is not None:
        return f"{r['xla_compile_s']:.3g}"
    return "—"


# (header, cell, drop, optional) of the measured columns, in order; a column no row has a
# value for is left out and named under the table. `drop`: the order in which they are left
# out when the terminal is narrow (lower first; None: never); `optional`: also left out to keep
# each row on one line (`fit.choose`).
MEASURED = (
    ("params", lambda r: _si(r.get("params") or r.get("params_analytic")), 3, True),
    ("FLOP/step", lambda r: _si(r.get("flops_per_step")), 2, True),
    ("step ms (±95% CI)", _ms, None, False),
    ("examples/s", lambda r: _si(r.get("examples_per_s")), 8, False),
    ("FLOP/s", lambda r: _si(r.get("achieved_flops")), 1, True),
    ("util", lambda r: _util(r), 9, False),
    ("compile s (cold / warm)", _compile_cell, 4, True),
)
# When an identity column is left out on a narrow terminal (the config, the family and the
# status never are): after the measured detail, before examples/s.
IDENTITY_DROP = {"id": 7, "quality": 10, "attempt": 6, "threads": 5}


def rich_table(
    rows: Sequence[dict[str, Any]], title: str | None = None, width: int | None = None
) -> Table:
    """Runs as a table no wider than `width` (a terminal's columns; None: no limit): the
    config in its compact form (`fc 4x2048 b256`), the identity fields that differ between
    the rows (mode, threads, data, backend, attempt, …; the shared ones and the hyperparameters
    each family's rows share named once above the table) and the measured columns that have a
    value in some row. Numbers are never wrapped or cut: a column that does not fit is left out
    and named under the table (`fit`)."""
    from paradnn.cli import fit

    varying, shared = split_identity(rows)
    if len(rows) <= 1:  # one run: its identity in the table, as `bench` always showed it
        keep = ("family", "precision", "status", "quality")
        varying = [
            k for k in identity_fields() if k in keep or any(_non_default(r, k) for r in rows)
        ]
        shared = {}
    same_cfg = family_shared_config(rows)
    line = shared_line(shared, same_cfg)
    with_id = any(r.get("id") is not None for r in rows)
    with_energy = any(_energy_requested(r) for r in rows)
    with_infeed = any((r.get("data_source") or "device") != "device" for r in rows)
    measured = [m for m in MEASURED if not rows or any(m[1](r) != "—" for r in rows)]
    empty = [m[0] for m in MEASURED if m not in measured and m[0] != "compile s (cold / warm)"]
    # the family joins the config (`fc 2x64 b32`) when the rows are of several
    in_config = "family" in varying
    first = [k for k in varying if k in IDENTITY_FIRST and k != "family"]
    rest = [k for k in varying if k not in IDENTITY_FIRST]
    configs = [config_cell(r, same_cfg.get(r.get("family"), {}), in_config) for r in rows]
    cfg_col = len(rows) < 2 or any(configs) or in_config
    if len(rows) <= 1 and "family" in varying:  # one run: the family keeps its own column
        first, in_config = ["family", *first], False
        configs = [config_cell(r, {}, False) for r in rows]
    cols: list[fit.Column] = []

    # the identity columns a narrow terminal may leave out: after the measured detail when
    # they tell rows apart (from the right), first when there is one run (they go above it)
    movable = [k for k in (*first, *rest) if k not in ("status", "family")]
    base = -len(movable) if len(rows) <= 1 else max(IDENTITY_DROP.values())

    def ident(k: str) -> fit.Column:
        drop = IDENTITY_DROP.get(k)
        if k in movable and (drop is None or len(rows) <= 1):
            drop = base + len(movable) - movable.index(k)
        cells = tuple(identity_cell(r, k) for r in rows)
        return fit.Column(IDENTITY_HEADERS.get(k, k), cells, drop=drop)

    if with_id:
        cells = tuple(str(r.get("id")) for r in rows)
        cols.append(fit.Column("id", cells, "right", number=True, drop=IDENTITY_DROP["id"]))
    cols += [ident(k) for k in first]
    if cfg_col:
        cols.append(fit.Column("config", tuple(c or "(shared)" for c in configs)))
    cols += [ident(k) for k in rest]
    for h, f, drop, optional in measured:
        cells = tuple(f(r) for r in rows)
        cols.append(fit.Column(h, cells, "right", number=True, drop=drop, optional=optional))
    if with_energy:
        w, jps = zip(*(_energy_cells(r) for r in rows), strict=True) if rows else ((), ())
        cols.append(fit.Column("W", tuple(w), "right", number=True, drop=5, optional=True))
        cols.append(fit.Column("J/sample", tuple(jps), "right", number=True, drop=5))
    if with_infeed:
        cells = tuple(_infeed_cells(r)[1] for r in rows)
        cols.append(fit.Column("infeed", cells, "right", number=True, drop=6))
    if len(rows) == 1 and width is not None:  # one run: what does not fit goes above it
        names = {IDENTITY_HEADERS.get(k, k): k for k in movable}
        moved = [c for c in fit.choose(cols, width)[1] if c.header in names]
        cols = [c for c in cols if c not in moved]
        above = {names[c.header]: c.cells[0] for c in moved}
        line = "\n".join(x for x in (line, shared_line(above).replace("all rows:", "run:")) if x)
    notes = []
    if empty and rows:
        notes.append("no value in any row: " + ", ".join(empty))
    if not rows:
        notes.append("no runs")
    if cfg_col and (legend := config_legend(rows, same_cfg)):
        notes.append(legend)
    if beaten := ceiling_legend(rows):
        notes.append(beaten)
    return fit.table(
        cols,
        width,
        title="\n".join(x for x in (title, line) if x) or None,
        caption="\n".join(notes) or None,
    )


def ceiling_legend(rows: Sequence[dict[str, Any]]) -> str | None:
    """The footnote of the beaten-ceiling mark, when some row carries it (utilization.py)."""
    return escape(BEATEN_LEGEND) if any(flagged(r) for r in rows) else None


def _non_default(r: dict[str, Any], name: str) -> bool:
    """A field a single run sets away from the ordinary run (a mode, a backend, procs, …)."""
    if name in ("attempt",):
        return (r.get("attempt") or 1) > 1
    if name in IDENTITY_DEFAULTS:
        return identity_cell(r, name) != identity_value(IDENTITY_DEFAULTS[name])
    return False


def _infeed_cells(r: dict[str, Any]) -> tuple[str, str]:
    """The data source (with the loader's workers) and the infeed share (docs/infeed.md);
    `input-bound` when the loader alone is slower than the model alone."""
    source = r.get("data_source") or "device"
    if source == "pipeline" and r.get("loader_workers") is not None:
        source += f" w{r['loader_workers']}"
    share = r.get("infeed_share")
    cell = "" if share is None else f"{share:.0%}"
    if r.get("input_bound"):
        cell += " [red]input-bound[/]"
    return source, cell


def _util(r: dict[str, Any]) -> str:
    """Against the measured ceiling when there is one (marked when the run beat it), else the
    datasheet peak (marked)."""
    if r.get("utilization_measured") is not None:
        return _pct(r["utilization_measured"]) + (f" {BEATEN_MARK}" if flagged(r) else "")
    if r.get("utilization_datasheet") is not None:
        return _pct(r["utilization_datasheet"]) + " ds"
    return "—"


def to_csv(rows: Sequence[dict[str, Any]]) -> str:
    """Scalar columns; JSON columns (config, flags, nulls) as JSON text; samples, env and the
    energy detail left out (use --format json for those)."""
    buf = io.StringIO()
    if not rows:
        return ""
    # one column per hyperparameter (batch, nodes, ...) after the config JSON, in first-seen order
    hp = [_hyperparameters(r) for r in rows]
    hp_cols = list(dict.fromkeys(k for h in hp for k in h))
    cols = [c for c in rows[0] if c not in SCALAR_SKIP]
    at = cols.index("config") + 1 if "config" in cols else len(cols)
    cols = cols[:at] + hp_cols + cols[at:]
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r, h in zip(rows, hp, strict=True):
        w.writerow(
            {
                **{
                    c: json.dumps(v) if isinstance(v, (dict, list)) else v
                    for c, v in r.items()
                    if c in cols
                },
                **h,
            }
        )
    return buf.getvalue()


def _hyperparameters(r: dict[str, Any]) -> dict[str, Any]:
    cfg = r.get("config")
    return hyperparameter_columns(cfg, r) if isinstance(cfg, (dict, str)) and cfg else {}


# `results`/`bench` --format json: a versioned object (docs/api.md, "JSON export").
# Version 1 replaced the bare list of rows of paradnn ≤ 0.1.0 (that list is now `rows`).
EXPORT_FORMAT = "paradnn-results"
EXPORT_VERSION = 1
MACHINE_FIELDS = (
    "hostname",
    "device",
    "cpu_model",
    "cpu_count",
    "threads",
    "gpu_name",
    "gpu_memory_bytes",
    "os",
    "python",
    "torch",
    "cuda",
    "cudnn",
    "driver",
    "paradnn",
)


def machines(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct machines (environment fingerprints) the rows were measured on: host, device
    and software versions from each row's stored environment, with how many rows each has."""
    seen: dict[Any, dict[str, Any]] = {}
    for r in rows:
        env = r.get("env") if isinstance(r.get("env"), dict) else {}
        key = r.get("fingerprint") or json.dumps(env, sort_keys=True, default=str)
        if key not in seen:
            seen[key] = {
                "fingerprint": r.get("fingerprint"),
                **{f: env.get(f) for f in MACHINE_FIELDS if env.get(f) is not None},
                "rows": 0,
            }
        seen[key]["rows"] += 1
    return list(seen.values())


def export(
    rows: Sequence[dict[str, Any]],
    *,
    table: str = "runs",
    db: str | None = None,
    store_schema: int | None = None,
) -> dict[str, Any]:
    """The JSON export: format and version, the exporting paradnn, the database and its schema,
    the machines the rows were measured on, and the rows (as `results` reads them)."""
    from datetime import UTC, datetime

    from paradnn import __version__

    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "paradnn": __version__,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "db": db,
        "store_schema": store_schema,
        "table": table,
        "machines": machines(rows),
        "rows": list(rows),
    }


def to_json(rows: Sequence[dict[str, Any]], **meta: Any) -> str:
    """`export(rows, **meta)` as indented JSON text."""
    return json.dumps(export(rows, **meta), indent=1, default=str)


def _records(df: Any) -> list[dict[str, Any]]:
    """DataFrame rows as JSON-safe dicts (NaN becomes null)."""
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in df.to_dict("records")
    ]


def comparison_json(c: Any, slower: Any = None) -> str:
    doc = c.as_dict()  # the library's Comparison.as_dict(): one source for both
    if slower is not None:
        doc["slower_than_threshold"] = _records(slower)
    return json.dumps(doc, indent=1, default=str)


def _x_ci(v: Any, lo: Any, hi: Any) -> str:
    """A speedup with its 95% CI in the one form every table uses (`ci_text`): `1.23× ±4.1%`,
    the ± how far the interval reaches from the speedup on its wider side, as for a step time
    (its ends: --format csv/json)."""
    if v is None or v != v:
        return "—"
    if lo is None or hi is None or lo != lo or hi != hi or not v:
        return _x(v)
    return _x(v) + ci_text(reach(v, lo, hi))


def reach(v: float, lo: float, hi: float) -> float | None:
    """How far [lo, hi] reaches from v on its wider side, over v (quality.ci_gap_rel): the one
    `±` of every interval a table prints."""
    from paradnn.measure.quality import ci_gap_rel

    return ci_gap_rel(v, lo, hi)


_CALL_STYLE = {"faster": "green", "slower": "red", "no detectable change": "dim"}


def _call(call: Any) -> str:
    style = _CALL_STYLE.get(str(call))
    return f"[{style}]{call}[/]" if style else str(call)


def noisy_note(c: Any) -> str | None:
    """How many noisy runs a comparison left out (or kept), and their reasons."""
    n = sum(c.noisy_left_out.values())
    reasons = "; ".join(f"{k} ({v})" for k, v in list(c.noisy_reasons.items())[:3])
    if n:
        per = ", ".join(f"{k}: {v}" for k, v in c.noisy_left_out.items())
        runs = "run" if n == 1 else "runs"
        return f"{n} noisy {runs} left out ({per}): {reasons}. --include-noisy keeps them."
    if c.include_noisy and c.noisy_reasons:
        return f"Noisy runs kept (--include-noisy): {reasons}."
    return None


def speedup_summary(c: Any, width: int | None = None) -> Table:
    """Per family: configs, the calls, the geomean speedup with its CI and its spread; the
    spread's columns are left out first on a narrow terminal (and named under the table)."""
    from paradnn.cli import fit

    recs = c.summary.to_dict("records")
    if not recs:
        cols = [fit.Column("family", ("(no configuration ran ok in both groups)",))]
    else:
        no_change = tuple(
            str(r["no_change"]) + (f" (+{r['no_interval']} no CI)" if r["no_interval"] else "")
            for r in recs
        )
        spread = (("median", "median", 4), ("p90", "p90", 1), ("min", "min", 2), ("max", "max", 3))

        def num(header: str, cells: Any, drop: int | None = None) -> fit.Column:
            return fit.Column(header, tuple(cells), "right", number=True, drop=drop)

        cols = [
            fit.Column("family", tuple(str(r["family"]) for r in recs)),
            num("configs", (str(r["n"]) for r in recs), 5),
            num("faster", (str(r["faster"]) for r in recs)),
            num("slower", (str(r["slower"]) for r in recs)),
            num("no change", no_change, 6),
            num(
                "geomean (±95% CI)",
                (_x_ci(r["geomean"], r["geomean_ci_low"], r["geomean_ci_high"]) for r in recs),
            ),
            *(num(h, (_x(r.get(k)) for r in recs), d) for h, k, d in spread),
        ]
    notes = []
    overall = c.overall()
    if overall:
        notes.append(f"geomean: {overall['geomean_call']}")
        if overall.get("emulated"):
            k = overall["emulated"]
            notes.append(f"{k} config{'' if k == 1 else 's'} with an emulated run (†)")
    if noisy := noisy_note(c):
        notes.append(noisy)
    return fit.table(
        cols,
        width,
        title=f"{c.by}: speedup of {c.b} over {c.a} ({c.metric}; 95% bootstrap CI)",
        caption="; ".join(notes) or None,
    )


GROUP_HEADER = 12  # a group's name longer than this (a database's path) is `A`/`B` in a header


def speedup_pairs(c: Any, limit: int, width: int | None = None) -> Table:
    """The slowest and fastest matched configs (all of them when there are few), with every
    identity column that differs between them; the ones that do not are in the title, with
    the hyperparameters each family's configs share. Numbers are never cut: a column that
    does not fit is left out and named under the table."""
    from paradnn.analysis.frames import ordered
    from paradnn.cli import fit

    p = ordered(c.pairs, "speedup", ["family", "config_key"])  # equal speedups by name
    shown = p if len(p) <= 2 * limit else p.iloc[list(range(limit)) + list(range(-limit, 0))]
    varying, same = c.shown_identity()
    recs = shown.to_dict("records")
    runs = [{"family": r["family"], "config": json.loads(r["config_key"])} for r in recs]
    families = {str(r["family"]) for r in runs}
    common = family_shared_config(runs)
    title = f"per config ({len(shown)} of {len(p)}; --format csv for all)"
    line = shared_line(
        {**({"family": escape(next(iter(families)))} if len(families) == 1 else {})}
        | {k: escape(v) for k, v in same.items()},
        common,
    )
    if line:
        title += "\n" + line
    head_a, head_b = escape(str(c.a)), escape(str(c.b))
    if max(len(str(c.a)), len(str(c.b))) > GROUP_HEADER:  # a path as a header: named above
        head_a, head_b = "A", "B"
        title += f"\nA: {escape(str(c.a))} · B: {escape(str(c.b))}"
    marks_a = [" †" if r.get("emulated_a") else "" for r in recs]
    marks_b = [" †" if r.get("emulated_b") else "" for r in recs]

    def num(header: str, cells: Any, drop: int | None = None, optional: bool = False) -> Any:
        return fit.Column(header, tuple(cells), "right", True, drop, optional)

    cols = [
        fit.Column(
            "config",
            tuple(
                config_cell(r, common.get(str(r["family"]), {}), len(families) > 1) for r in runs
            ),
        ),
        *(
            fit.Column(k, tuple(escape(str(r[k])) for r in recs), drop=2 + i)
            for i, k in enumerate(varying)
        ),
        num("params", (_si(r.get("params")) for r in recs), 1, True),
        num(head_a, (_si(r["value_a"]) + m for r, m in zip(recs, marks_a, strict=True))),
        num(head_b, (_si(r["value_b"]) + m for r, m in zip(recs, marks_b, strict=True))),
        num(
            "speedup (±95% CI)",
            (_x_ci(r["speedup"], r.get("ci_low"), r.get("ci_high")) for r in recs),
        ),
        fit.Column("call", tuple(_call(r.get("call", "")) for r in recs)),
    ]
    notes = []
    if legend := config_legend(runs, common):
        notes.append(legend)
    if any(marks_a) or any(marks_b):
        notes.append("† emulated: a low precision run without native hardware support")
    return fit.table(cols, width, title=title, caption="\n".join(notes) or None)


def config_label(r: dict[str, Any], varying: Sequence[str]) -> str:
    """A compared config in one line: family, compact config, the identity values that vary."""
    parts = [str(r["family"]), compact_config(json.loads(r["config_key"]))]
    return " ".join(parts + [f"{k}={r[k]}" for k in varying])


def slower_lines(c: Any, slower: Any, on: str = "config", limit: int = 20) -> list[str]:
    """One line per config (or the geomean) that failed --fail-if-slower."""
    if on == "geomean":
        return [
            "geomean "
            + _x_ci(r["geomean"], r["geomean_ci_low"], r["geomean_ci_high"])
            + ("" if r["basis"] == "interval" else f" — {r['basis']}")
            for r in slower.to_dict("records")
        ]
    varying = c.shown_identity()[0]
    lines = [
        config_label(r, varying)
        + ": "
        + _x_ci(r["speedup"], r["ci_low"], r["ci_high"])
        + ("" if r["basis"] == "interval" else f" — {r['basis']}")
        for r in slower.head(limit).to_dict("records")
    ]
    if len(slower) > limit:
        lines.append(f"… and {len(slower) - limit} more (--format json lists them)")
    return lines


def dry_run_table(
    rows: Sequence[dict[str, Any]],
    title: str | None = None,
    total_s: float | None = None,
    width: int | None = None,
    caption: str | None = None,
) -> Table:
    """A dry run: `fits` is `no` when even the lower bound exceeds the device (the run is
    stored `predicted_oom`), `unlikely` when only the best estimate does (it runs), else `yes`;
    a run `db` holds already shows its status instead of a time (a resumed run skips it).
    `caption` replaces the line of totals (a large sweep's come from a sample)."""
    from paradnn.cli import fit

    total = 0.0
    floors = False
    stored = 0
    fits_cells, when_cells = [], []
    for r in rows:
        fits = {True: "[green]yes[/]", False: "[magenta]no[/]", None: "?"}[r["fits"]]
        if r["fits"] and r.get("fits_estimate") is False:
            fits = "[yellow]unlikely[/]"
        fits_cells.append(fits)
        total += r["est_time_s"]
        floors |= r["est_time_is_floor"]
        if r.get("stored"):
            stored += 1
            when_cells.append(f"[dim]stored: {r['stored']}[/]")
        else:
            when_cells.append(("≥ " if r["est_time_is_floor"] else "") + duration(r["est_time_s"]))
    total = total if total_s is None else total_s
    todo = len(rows) - stored
    done = f"{stored} of {len(rows)} stored already (skipped on resume); " if stored else ""
    what = f"estimated total {'≥ ' if floors else ''}{duration(total)}" if todo else "nothing to do"
    same = family_shared_config(rows)
    several = len({r["family"] for r in rows}) > 1
    configs = tuple(config_cell(r, same.get(r["family"], {}), several) for r in rows)
    memory = tuple(
        f"{_bytes(r['predicted_mem_bytes'])} (≥ {_bytes(r['predicted_mem_lower_bytes'])})"
        for r in rows
    )

    def num(header: str, cells: Any, drop: int | None = None, opt: bool = False) -> Any:
        return fit.Column(header, tuple(cells), "right", True, drop, opt)

    # family, precision and optimizer: a column when they differ, else named above
    ident = {"family": "family", "precision": "prec", "optimizer": "opt"}
    values = {k: {str(r[k]) for r in rows} for k in ident}
    alike = {k: next(iter(v)) for k, v in values.items() if len(v) == 1 and len(rows) > 1}
    cols = [
        *(
            fit.Column(h, tuple(escape(str(r[k])) for r in rows), drop=3 + i)
            for i, (k, h) in enumerate(ident.items())
            if k not in alike and not (k == "family" and several)
        ),
        fit.Column("config", configs),
        num("params", (_si(r["params"]) for r in rows), 1, True),
        num("FLOP/step", (_si(r["flops_per_step"]) for r in rows), 2, True),
        num("memory (≥ lower)", memory, 4),
        fit.Column("fits", tuple(fits_cells)),
        num("est. time", when_cells),
    ]
    notes = [caption or done + what]
    if legend := config_legend(rows, same):
        notes.append(legend)
    line = shared_line({k: escape(v) for k, v in alike.items()}, same)
    return fit.table(
        cols,
        width,
        title="\n".join(x for x in (title, line) if x) or None,
        caption="\n".join(notes),
    )


def _us(v: Any) -> str:
    """Seconds as microseconds, '—' for a figure not measured."""
    return "—" if v is None else f"{v * 1e6:.3g}"


def _side_cells(table: str, r: dict[str, Any]) -> list[str]:
    if table == "host_profile":
        return [
            str(r.get("id") or ""),
            str(r.get("host") or r.get("device_name") or ""),
            str(r.get("device") or ""),
            *(_us(r.get(k)) for k in HOST_FIGURES),
            str(r.get("quality") or r.get("status") or ""),
            str(r.get("measured_at") or "")[:19],
        ]
    if table == "ceilings":
        unit = r.get("unit", "")
        status = r.get("status") or Status.OK
        value = _si(r["value"], unit) if r.get("value") is not None else f"— ({status})"
        return [
            r["kind"],
            r.get("precision") or "",
            value,
            *ceiling_path(r),
            r["device_name"],
            str(r.get("measured_at", ""))[:19],
        ]
    if table == "ops":
        t = r.get("time_s")
        return [
            r["name"],
            r["precision"],
            r["pass"],
            str(r.get("threads") or ""),
            r["status"],
            _si(r.get("flops")),
            "—" if t is None else f"{t * 1e3:.4g}",
            _si(r.get("achieved_flops"), "FLOP/s"),
            _pct(r.get("utilization_datasheet")),
            _pct(r.get("utilization_measured")) + (f" {BEATEN_MARK}" if flagged(r) else ""),
        ]
    t = r.get("device_time_s")
    return [
        str(r.get("run_id", "")),
        r["op"],
        str(r.get("shapes", ""))[:60],
        str(r.get("dtype")),
        str(r["calls"]),
        "—" if t is None else f"{t * 1e3:.4g}",
        _si(r.get("flops")),
        _bytes(r.get("bytes")),
        _si(r.get("achieved_flops"), "FLOP/s"),
        "—" if r.get("intensity") is None else f"{r['intensity']:.3g}",
    ]


HOST_FIGURES = (
    "forward_op_s",
    "autograd_node_s",
    "optimizer_loop_s",
    "optimizer_foreach_s",
    "optimizer_fused_s",
    "optimizer_step_s",
    "sync_s",
    "kernel_launch_s",
    "step_s",
    "cast_s",
    "rnn_call_s",
    "scaler_s",
)
SIDE_COLUMNS = {
    "host_profile": (
        "id",
        "host",
        "device",
        "fwd op",
        "node",
        "loop",
        "foreach",
        "fused",
        "step()",
        "sync",
        "launch",
        "train step",
        "cast",
        "RNN call",
        "scaler",
        "quality",
        "measured",
    ),
    "ceilings": ("kind", "prec", "ceiling", "path", "shape", "device", "measured"),
    "ops": (
        "op",
        "prec",
        "pass",
        "threads",
        "status",
        "FLOPs",
        "ms",
        "achieved",
        "util (sheet)",
        "util (measured)",
    ),
    "op_profile": (
        "run",
        "op",
        "shapes",
        "dtype",
        "calls",
        "ms/step",
        "FLOPs",
        "bytes",
        "achieved",
        "FLOP/B",
    ),
}


def ceiling_path(r: dict[str, Any]) -> tuple[str, str]:
    """(path, shape) that set a compute ceiling (measure/mathpaths.py); a row from before the
    paths timed torch.mm alone, square, at its best size. Bandwidth rows: none."""
    detail = r.get("detail") if isinstance(r.get("detail"), dict) else {}
    if r.get("kind") != "matmul":
        return "", ""
    if detail.get("path"):
        return str(detail["path"]), str(detail.get("shape_label") or "")
    n = detail.get("best_size")
    return "matmul (only)", (f"{n}×{n}×{n}" if n else "")


# The columns of each side table that hold numbers (never wrapped) and those never left out
# on a narrow terminal (the others go from the right).
SIDE_NUMBERS = {
    "host_profile": {"id", *SIDE_COLUMNS["host_profile"][3:15]},
    "ceilings": {"ceiling"},
    "ops": {"threads", "FLOPs", "ms", "achieved", "util (sheet)", "util (measured)"},
    "op_profile": {"run", "calls", "ms/step", "FLOPs", "bytes", "achieved", "FLOP/B"},
}
SIDE_KEPT = {
    "host_profile": {"id", "host"},
    "ceilings": {"kind", "prec", "ceiling"},
    "ops": {"op", "prec", "pass", "ms"},
    "op_profile": {"op", "ms/step"},
}


# Left out first on a narrow terminal (before the others, which go from the right).
SIDE_FIRST = ("measured", "device", "quality", "shape", "path")


def _side_drop(table: str, header: str, i: int) -> int:
    if header in SIDE_FIRST:
        return SIDE_FIRST.index(header) - len(SIDE_FIRST)
    return len(SIDE_COLUMNS[table]) - i


def side_table(
    table: str, rows: Sequence[dict[str, Any]], title: str | None = None, width: int | None = None
) -> Table:
    """Ceilings, op benchmarks, per-op profiles or host profiles, no wider than `width`."""
    from paradnn.cli import fit

    cells = [_side_cells(table, r) for r in rows]
    heads = SIDE_COLUMNS[table]
    cols = [
        fit.Column(
            h,
            tuple(escape(c[i]) if h not in SIDE_NUMBERS[table] else c[i] for c in cells),
            "right" if h in SIDE_NUMBERS[table] else "left",
            number=h in SIDE_NUMBERS[table],
            drop=None if h in SIDE_KEPT[table] else _side_drop(table, h, i),
        )
        for i, h in enumerate(heads)
    ]
    caption = None
    if table == "host_profile":
        caption = (
            "µs per unit: forward call, autograd node, optimizer tensor (loop, foreach, fused), "
            "step() call, sync, launch, training step once, autocast cast, recurrent call, "
            "GradScaler; — not measured (the reason: -f json, nulls)"
        )
    if table == "ops":
        caption = ceiling_legend(rows)
    return fit.table(cols, width, title=title, caption=caption, title_justify="center")


PLATFORM_COLUMNS = (
    ("id", "id"),
    ("kind", "kind"),
    ("fp32_tflops", "fp32"),
    ("tf32_tflops", "tf32"),
    ("bf16_tflops", "bf16"),
    ("fp16_tflops", "fp16"),
    ("fp8_tflops", "fp8"),
    ("bf16_sparse_tflops", "bf16 sparse"),
    ("memory_gb", "mem GB"),
    ("bandwidth_gbs", "GB/s"),
    ("ridge_flop_per_byte", "ridge FLOP/B"),
    ("tdp_w", "TDP W"),
    ("sources", "sources"),
)


def platforms_table(rows: Sequence[dict[str, Any]], width: int | None = None) -> Table:
    """The platform database, no wider than `width` (the sources go first, then from the
    right; the id, kind and fp32 peak stay)."""
    from paradnn.cli import fit

    kept = {"id", "kind", "fp32"}
    cols = [
        fit.Column(
            header,
            tuple(
                "—" if r.get(k) is None else f"{r[k]:g}" if isinstance(r[k], float) else str(r[k])
                for r in rows
            ),
            "left" if header in ("id", "kind", "sources") else "right",
            number=header not in ("id", "kind", "sources"),
            drop=None if header in kept else len(PLATFORM_COLUMNS) - i,
        )
        for i, (k, header) in enumerate(PLATFORM_COLUMNS)
    ]
    return fit.table(
        cols,
        width,
        title="platform database: datasheet peaks in TFLOP/s (dense unless marked)",
        title_justify="center",
    )
