"""The seeds' quantitative claims (``paradnn/data/paper_claims.toml``) and the step-time model's
prediction of each on the paper's own platform, for the report's "The papers beside paradnn".

Torch-free and store-free: a claim says how to predict it (its ``compute`` table); what the
result databases measure of it is computed in `paradnn.analysis.papers` and handed in by the
caller (`compare`). A claim the model cannot speak to keeps its reason and is never dropped.
Every number here is a prediction of `sim.steptime.predict_step` (or the systolic MXU study),
each with the validated error band of its kind of device where `sim/error_bands.json` exists.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.sim import chip as sim_chip
from paradnn.sim import errorbands
from paradnn.sim.chip import Chip
from paradnn.sim.interconnect import Topology, parse_topology
from paradnn.sim.steptime import multichip_overhead, predict_step

# A sweep-level claim (a maximum, a share) ranges over a Latin-hypercube sample of the `paper`
# preset (Table 2's whole space): the seeds' maxima are over that space, and the model's cost
# does not grow with a config's size.
TABLE2_PRESET = "paper"
TABLE2_SAMPLE = 60  # configs per family
KINDS = (
    "throughput",
    "speedup",
    "geomean_speedup",
    "multichip_overhead",
    "scaling_efficiency",
    "max_util",
    "max_util_ratio",
    "max_speedup",
    "share_faster",
    "op_speedup",
    "bandwidth_ratio",
    "mxu_study",
    "none",
)
MEASURE_KINDS = ("throughput", "max_util", "max_util_ratio", "none")


@dataclass(frozen=True)
class Claim:
    """One number a seed states, where it states it, and how paradnn predicts/measures it."""

    id: str
    seed: str
    where: str  # section / figure / table
    line: int  # line of the seed's text file where the quote starts
    quote: str
    quantity: str
    unit: str
    platforms: tuple[str, ...]
    workload: str
    value: float
    compute: Mapping[str, Any]
    measure: Mapping[str, Any] | None = None
    note: str | None = None


@dataclass(frozen=True)
class Estimate:
    """paradnn's number for a claim: ``value`` None with ``reason`` when it has none."""

    value: float | None
    source: str  # "measured here" | "predicted" | "cannot compute"
    basis: str  # what it rests on, or why there is no number
    devices: tuple[str, ...] = ()  # device kinds (cpu/gpu/tpu) a prediction rests on


def _text(name: str) -> str:
    return (resources.files("paradnn") / "data" / name).read_text(encoding="utf-8")


@functools.cache
def _document() -> dict[str, Any]:
    return tomllib.loads(_text("paper_claims.toml"))


def seeds() -> dict[str, str]:
    """Seed id → title."""
    return {k: v["title"] for k, v in _document().get("seeds", {}).items()}


def load(text: str | None = None) -> list[Claim]:
    """The claims file (or ``text`` in its format), checked: every claim has an id, a seed, a
    number, a quote with its place, and a known way to compute (or a reason it cannot)."""
    doc = _document() if text is None else tomllib.loads(text)
    out, seen = [], set()
    for i, c in enumerate(doc.get("claim", [])):
        where = f"claim[{i}]"
        for key in ("id", "seed", "where", "quote", "quantity", "unit", "workload"):
            if not isinstance(c.get(key), str) or not c[key]:
                raise ConfigError(f"{where}.{key}", c.get(key), "a non-empty string")
        v = c.get("value")
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise ConfigError(f"{c['id']}.value", v, "a finite number")
        if not isinstance(c.get("line"), int) or c["line"] < 1:
            raise ConfigError(f"{c['id']}.line", c.get("line"), "a line number ≥ 1")
        comp = c.get("compute")
        kind = comp.get("kind") if isinstance(comp, dict) else comp  # a table, else refused
        if not isinstance(comp, dict) or kind not in KINDS:
            raise ConfigError(f"{c['id']}.compute.kind", kind, ", ".join(KINDS))
        if kind == "none" and not comp.get("reason"):
            raise ConfigError(f"{c['id']}.compute.reason", None, "a reason it cannot be computed")
        meas = c.get("measure")
        kind = meas.get("kind") if isinstance(meas, dict) else meas
        if meas is not None and (not isinstance(meas, dict) or kind not in MEASURE_KINDS):
            raise ConfigError(f"{c['id']}.measure.kind", kind, ", ".join(MEASURE_KINDS))
        if c["id"] in seen:
            raise ConfigError(f"{where}.id", c["id"], "unique (it appears twice)")
        seen.add(c["id"])
        out.append(
            Claim(
                c["id"],
                c["seed"],
                c["where"],
                c["line"],
                c["quote"],
                c["quantity"],
                c["unit"],
                tuple(c.get("platforms", ())),
                c["workload"],
                float(v),
                comp,
                meas,
                c.get("note"),
            )
        )
    return out


# --- error bands -------------------------------------------------------------------------------


def band_text(devices: Sequence[str], bands: errorbands.Bands | None = None) -> str:
    """The validated error band of the step-time model on each device kind a prediction rests
    on (`errorbands.Bands.short`: the one wording of a band), '' for none."""
    if not devices:
        return ""
    return (bands if bands is not None else errorbands.read()).short(devices)


# --- predictions ---------------------------------------------------------------------------------


@functools.cache
def _chip(spec: str) -> Chip:
    """A database id, or ``data:NAME`` for a chip file shipped beside the claims (the seeds'
    PCIe GPUs, their Xeon, one TPU v2 core)."""
    if spec.startswith("data:"):
        name = spec.removeprefix("data:")
        path = resources.files("paradnn") / "data" / "chips" / f"{name}.toml"
        return sim_chip.load_file(str(path))
    return sim_chip.load(spec)


def _kind(spec: Mapping[str, Any]) -> str:
    return _chip(spec["platform"]).platform.kind


def _label(spec: Mapping[str, Any]) -> str:
    s = f"{spec['platform'].removeprefix('data:')} {spec['precision']}"
    if spec.get("policy", "mixed") != "mixed":
        s += f" ({spec['policy']})"
    if spec.get("chips", 1) > 1:
        s += f" ×{spec['chips']}" + (f" {spec['topology']}" if spec.get("topology") else "")
    return s


def _topology(spec: Mapping[str, Any]) -> Topology | None:
    return parse_topology(spec["topology"]) if spec.get("topology") else None


class Predictor:
    """Step-time predictions with a cache: a sweep-level claim ranges over the same configs on
    the same platform as the next one."""

    def __init__(self, configs: Mapping[str, Sequence[Mapping[str, Any]]] | None = None):
        self._configs = configs
        self._steps: dict[tuple, Any] = {}

    def configs(self, family: str) -> tuple[list[dict[str, Any]], str]:
        """The configs a sweep-level claim ranges over, and what they are."""
        if self._configs is not None:
            return [dict(c) for c in self._configs.get(family, [])], "the given configs"
        return _sample_configs(family), f"{TABLE2_SAMPLE} Table 2 {family} configs (LHS)"

    def step(self, family: str, config: Mapping[str, Any], spec: Mapping[str, Any]) -> Any:
        key = (family, *(json.dumps(dict(x), sort_keys=True) for x in (config, spec)))
        if key not in self._steps:
            chips = int(spec.get("chips", 1))
            self._steps[key] = predict_step(
                family,
                config,
                _chip(spec["platform"]),
                spec["precision"],
                chips=chips,
                topology=_topology(spec),
                policy=spec.get("policy", "mixed"),
            )
        return self._steps[key]

    def throughput(self, spec: Mapping[str, Any]) -> float:
        s = self.step(spec["family"], spec.get("config", {}), spec)
        return s.examples_per_s * spec.get("per_example", 1)

    def over(
        self, family: str, where: Mapping[str, Any], fn: Callable[[dict[str, Any]], float]
    ) -> tuple[list[float], str]:
        """``fn`` over the family's configs that match ``where`` (``key = value``, or
        ``key_min = value`` for key ≥ value); configs the model refuses are skipped."""
        cfgs, what = self.configs(family)
        cfgs = [c for c in cfgs if all(_holds(c, k, v) for k, v in where.items())]
        vals = []
        for c in cfgs:
            try:
                vals.append(fn(c))
            except ConfigError:
                continue
        cond = " ".join(
            f"{k.removesuffix('_min')}≥{v}" if k.endswith("_min") else f"{k}={v}"
            for k, v in where.items()
        )
        return vals, f"{len(vals)} of {what}" + (f" with {cond}" if cond else "")

    def predict(self, claim: Claim) -> Estimate:
        c = claim.compute
        kind = c["kind"]
        if kind == "none":
            return Estimate(None, "cannot compute", c["reason"])
        try:
            value, basis, devices = getattr(self, "_" + kind)(c)
        except ConfigError as e:  # a config the model refuses: say so, never drop the claim
            return Estimate(None, "cannot compute", f"the model refused it: {e}")
        if value is None:
            return Estimate(None, "cannot compute", basis)
        return Estimate(value, "predicted", basis, tuple(devices))

    # one method per `compute.kind`: (value, basis, device kinds)

    def _throughput(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        return self.throughput(c), f"step-time model, {c['family']} on {_label(c)}", [_kind(c)]

    def _speedup(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        a, b = c["a"], c["b"]
        v = self.throughput(a) / self.throughput(b)
        return v, f"step-time model, {a['family']}: {_label(a)} ÷ {_label(b)}", [_kind(a), _kind(b)]

    def _geomean_speedup(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        ratios = [self.throughput(p["a"]) / self.throughput(p["b"]) for p in c["pairs"]]
        fams = ", ".join(p["a"]["family"] for p in c["pairs"])
        a, b = c["pairs"][0]["a"], c["pairs"][0]["b"]
        basis = f"step-time model, geometric mean over {fams}: {_label(a)} ÷ {_label(b)}"
        return statistics.geometric_mean(ratios), basis, [_kind(a), _kind(b)]

    def _multichip_overhead(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        v = multichip_overhead(
            c["family"],
            c["config"],
            _chip(c["platform"]),
            c["precision"],
            int(c["chips"]),
            topology=_topology(c),
        )
        return 100 * v, f"step-time model, (t_N − t_1) ÷ t_N on {_label(c)}", [_kind(c)]

    def _scaling_efficiency(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        one = self.step(c["family"], c["config"], {**c, "chips": 1, "topology": None})
        many = self.step(c["family"], c["config"], c)
        basis = f"step-time model, weak scaling t_1 ÷ t_N on {_label(c)} ({many.topology})"
        return 100 * one.predicted_step_s / many.predicted_step_s, basis, [_kind(c)]

    def _max_util(self, c: Mapping[str, Any]) -> tuple[float | None, str, list[str]]:
        fam = c["family"]
        vals, what = self.over(fam, c.get("where", {}), lambda x: self.step(fam, x, c).utilization)
        if not vals:
            return None, f"no {fam} configs to range over ({what})", []
        return 100 * max(vals), f"step-time model, max over {what} on {_label(c)}", [_kind(c)]

    def _max_util_ratio(self, c: Mapping[str, Any]) -> tuple[float | None, str, list[str]]:
        fam = c["family"]
        a, ba, _ = self._max_util({**c["a"], "family": fam})
        b, bb, _ = self._max_util({**c["b"], "family": fam})
        if a is None or b is None or b == 0:
            return None, ba if a is None else bb, []
        basis = f"step-time model, max utilization {_label(c['a'])} ÷ {_label(c['b'])} ({bb})"
        return a / b, basis.replace(f" on {_label(c['b'])}", ""), [_kind(c["a"]), _kind(c["b"])]

    def _pair(self, fam: str, x: dict[str, Any], c: Mapping[str, Any]) -> float:
        """Throughput of config ``x`` on side a (batch × a_batch_factor) over side b."""
        fa = int(c.get("a_batch_factor", 1))
        xa = {**x, "batch": x["batch"] * fa} if fa != 1 else x
        ta = self.step(fam, families.get(fam).config(xa).__dict__, c["a"]).examples_per_s
        return ta / self.step(fam, x, c["b"]).examples_per_s

    def _max_speedup(self, c: Mapping[str, Any]) -> tuple[float | None, str, list[str]]:
        fam = c["family"]
        vals, what = self.over(fam, c.get("where", {}), lambda x: self._pair(fam, x, c))
        if not vals:
            return None, f"no {fam} configs to range over ({what})", []
        twice = " (a at twice b's batch)" if c.get("a_batch_factor", 1) != 1 else ""
        basis = f"step-time model, max over {what}: {_label(c['a'])} ÷ {_label(c['b'])}{twice}"
        return max(vals), basis, [_kind(c["a"]), _kind(c["b"])]

    def _share_faster(self, c: Mapping[str, Any]) -> tuple[float | None, str, list[str]]:
        fam = c["family"]
        vals, what = self.over(fam, c.get("where", {}), lambda x: self._pair(fam, x, c))
        if not vals:
            return None, f"no {fam} configs to range over ({what})", []
        share = 100 * sum(v > 1 for v in vals) / len(vals)
        basis = f"step-time model, share of {what} faster on {_label(c['a'])} than {_label(c['b'])}"
        return share, basis, [_kind(c["a"]), _kind(c["b"])]

    def _op_speedup(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        from paradnn.families.lowering import Op
        from paradnn.sim.model import predict_op

        f = int(c.get("a_batch_factor", 1))
        a, b = _chip(c["a"]), _chip(c["b"])
        pa = predict_op(Op("op", "fwd", c["m"] * f, c["n"], c["k"]), a, c["precision"])
        pb = predict_op(Op("op", "fwd", c["m"], c["n"], c["k"]), b, c["precision"])
        ta, tb = max(pa.compute_s, pa.memory_s), max(pb.compute_s, pb.memory_s)
        basis = f"roofline of one GEMM {c['m']}×{c['n']}×{c['k']}: {c['a']} ÷ {c['b']}"
        if f != 1:
            basis += f" ({c['a']} at {f}× the rows)"
        return f * tb / ta, basis, [a.platform.kind, b.platform.kind]

    def _bandwidth_ratio(self, c: Mapping[str, Any]) -> tuple[float, str, list[str]]:
        a, b = _chip(c["a"]), _chip(c["b"])
        basis = f"memory bandwidth {c['a']} ÷ {c['b']} (datasheet; a memory-bound op's speedup)"
        return a.mem_bandwidth / b.mem_bandwidth, basis, []

    def _mxu_study(self, c: Mapping[str, Any]) -> tuple[float | None, str, list[str]]:
        from paradnn.sim.studies import mxu_study

        rows = mxu_study(batch=int(c.get("batch", 8)))
        if c["design"] == "ratio":
            key = next(k for k in rows[0] if " / " in k)
            vals, scale = [r[key] for r in rows], 1.0
        else:
            if c["design"] not in rows[0]:  # the study's columns: "4×128×128" (count×rows×cols)
                return None, f"the MXU study has no {c['design']} design", []
            vals, scale = [r[c["design"]] for r in rows], 100.0
        stat = {"min": min, "max": max, "median": statistics.median}[c["stat"]]
        basis = (
            f"systolic cycle model (MXU study), {c['stat']} over {len(vals)} workloads, "
            f"batch {c.get('batch', 8)}"
        )
        return scale * stat(vals), basis, []


def _holds(config: Mapping[str, Any], key: str, value: Any) -> bool:
    if key.endswith("_min"):
        have = config.get(key.removesuffix("_min"))
        return isinstance(have, int | float) and have >= value
    return config.get(key) == value


@functools.cache
def _sample_configs_all() -> dict[str, list[dict[str, Any]]]:
    """A fixed (seed 0) Latin-hypercube sample of the `paper` preset, TABLE2_SAMPLE per family."""
    from paradnn.sweep import parse

    text = (resources.files("paradnn") / "sweeps" / f"{TABLE2_PRESET}.toml").read_text("utf-8")
    text += f'\n[sampling]\nmethod = "lhs"\nn = {TABLE2_SAMPLE}\nseed = 0\n'
    sweep = parse(text, label=f"{TABLE2_PRESET}.toml + lhs", source="<papers>", name="table2-lhs")
    out: dict[str, list[dict[str, Any]]] = {}
    for s in sweep.specs():
        out.setdefault(s.family, []).append(dict(s.config))
    return out


def _sample_configs(family: str) -> list[dict[str, Any]]:
    return [dict(c) for c in _sample_configs_all().get(family, [])]


# --- side by side --------------------------------------------------------------------------------


@functools.cache
def _shared() -> Predictor:
    """One predictor per process: predictions do not depend on the databases, so a second
    report (or test) reuses the first one's step times."""
    return Predictor()


@dataclass(frozen=True)
class Row:
    claim: Claim
    paradnn: Estimate  # what the table shows as paradnn's number
    predicted: Estimate  # the model's number for the paper's platform (also when measured)

    @property
    def ratio(self) -> float | None:
        v = self.paradnn.value
        return None if v is None or not self.claim.value else v / self.claim.value


def compare(
    claims: Sequence[Claim],
    measured: Callable[[Claim], Estimate | None] | None = None,
    configs: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[Row]:
    """Each claim beside paradnn's number: ``measured(claim)`` (an Estimate with source
    "measured here", or None) where the databases hold it, else the prediction; a claim with
    neither keeps its reason. ``configs`` (family → configs) replaces paper-sample's configs for
    the sweep-level claims."""
    p = Predictor(configs) if configs is not None else _shared()
    rows = []
    for c in claims:
        pred = p.predict(c)
        m = measured(c) if measured is not None else None
        if m is not None and m.value is not None:
            rows.append(Row(c, m, pred))
            continue
        if m is not None and c.measure is not None and c.measure.get("kind") != "none":
            pred = replace(pred, basis=f"{pred.basis}; not measured here: {m.basis}")
        rows.append(Row(c, pred, pred))
    return rows


def rows_frame_records(
    rows: Sequence[Row], bands: errorbands.Bands | None = None
) -> list[dict[str, Any]]:
    """One plain record per row (the section's table and CSV); ``bands``: the validated error
    bands (default: sim/error_bands.json)."""
    bands = bands if bands is not None else errorbands.read()
    out = []
    for r in rows:
        c, e = r.claim, r.paradnn
        basis = e.basis
        if e.source != "predicted" and r.predicted.value is not None:
            basis += f"; predicted for the paper's platform: {_fmt(r.predicted.value)} {c.unit}"
        out.append(
            {
                "claim": c.id,
                "seed": c.seed,
                "where": f"{c.where}, line {c.line}",
                "quantity": c.quantity,
                "platforms": " vs ".join(c.platforms),
                "workload": c.workload,
                "unit": c.unit,
                "paper": c.value,
                "paradnn": e.value,
                "source": e.source,
                "ratio": r.ratio,
                "error band": _band(e, bands),
                "basis": basis,
            }
        )
    return out


def _band(e: Estimate, bands: errorbands.Bands) -> str:
    """A prediction's band; a measured number or a missing one has none."""
    if e.source != "predicted":
        return ""
    return band_text(e.devices, bands) if e.devices else "not validated (not the step-time model)"


def _fmt(v: float) -> str:
    return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
