"""The chip the simulator models: a platform (datasheet entry, a user's TOML, or this machine's
measured ceilings) plus what the simulator needs beyond a datasheet: the dataflow of its matrix
units and its chip-to-chip links.

A user file uses the platform database's keys (docs/platforms.md) plus these, all optional:

    dataflow = "ws"              # os | ws | is, for chips with an `mxu` table
    link_bw = 62e9               # bytes/s per link, one direction
    links = 4                    # links per chip
    link_latency_s = 1e-6        # per hop (α)
    topology = "torus2d"         # ring | biring | torus2d | torus3d: how its chips connect
    [ID.step]                    # step-time parameters (sim.stepparams; `simulate fit` writes it)
    kernel_overhead_s = 5e-6
    efficiency = { fp32 = 0.85 }
    [ID.host]                    # the host's dispatch costs (sim.hostprofile; docs/simulate.md)
    forward_op_s = 8e-6
    autograd_node_s = 10e-6
    optimizer_tensor_s = { loop = 25e-6, foreach = 3e-6, fused = 2e-6 }
    optimizer_step_s = 20e-6
    sync_s = 15e-6
    kernel_launch_s = 5e-6

Any other key is rejected with one line naming it.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from paradnn.errors import ConfigError
from paradnn.platforms import datasheets
from paradnn.platforms.datasheets import Platform
from paradnn.sim.hostprofile import HostProfile, check_bounds
from paradnn.sim.interconnect import KINDS as TOPOLOGY_KINDS
from paradnn.sim.interconnect import Link
from paradnn.sim.stepparams import StepParams, defaults, parse_params
from paradnn.sim.systolic import DATAFLOWS, Arrays

SIM_KEYS = ("dataflow", "link_bw", "links", "link_latency_s", "topology", "step", "host")
MAX_LINKS = 1024  # links per chip: today's chips have 4 to 18 (docs/limits.md)
MAX_LATENCY_S = 1.0  # per hop; a microsecond is typical
DEFAULT_LATENCY_S = 1e-6  # scaling-book: T_min ≈ 1 µs per ICI hop (modelling.md §2.6)

# Chip-to-chip links of the database's platforms (modelling.md §2.6 and §3.1 note 3): bytes/s per
# link and direction, links per chip, topology, source. The database stores per-chip aggregates
# or prose; these are the per-link figures the α–β model needs.
LINKS: dict[str, tuple[float, int, str, str]] = {
    "tpu-v2": (496e9 / 8, 4, "torus2d", "CACM20: 4 ICI links × 496 Gbit/s per direction"),
    "tpu-v3": (656e9 / 8, 4, "torus2d", "CACM20: 4 ICI links × 656 Gbit/s per direction"),
    "tpu-v4": (45e9, 6, "torus3d", "scaling-book tpus.md: 4.5e10 B/s one-way per link, 6 links"),
    "tpu-v5e": (45e9, 4, "torus2d", "scaling-book tpus.md: 4.5e10 B/s one-way per link, 4 ports"),
    "tpu-v5p": (90e9, 6, "torus3d", "scaling-book tpus.md: 9e10 B/s one-way per link, 6 links"),
    "tpu-v6e": (90e9, 4, "torus2d", "scaling-book tpus.md: 9e10 B/s one-way per link, 4 ports"),
}


@dataclass(frozen=True)
class Chip:
    """A platform as the simulator sees it; ``origin`` says where its figures came from."""

    platform: Platform
    origin: str  # "datasheet", "file PATH" or "measured ceilings (...)"
    dataflow: str = "ws"
    link: Link | None = None
    links: int | None = None
    topology_kind: str = "ring"
    link_source: str | None = None
    # Measured matmul FLOP/s by square size n, per precision (`paradnn calibrate` tries several
    # sizes); a chip without matrix units uses it for GEMMs of other sizes. None: datasheet peak.
    gemm_rates: dict[str, tuple[tuple[int, float], ...]] | None = None
    # Step-time parameters (`sim.steptime`): from the file's [ID.step] table or a fit; None:
    # the defaults for the device's kind.
    step: StepParams | None = None
    # The host's dispatch costs from the file's [ID.host] table; None: the caller's (the
    # local measured profile or the defaults, `api.simulation.host_profile`).
    host: HostProfile | None = None

    def gemm_rate(self, precision: str, m: int, n: int, k: int) -> float:
        """FLOP/s of one (m, n, k) GEMM: the measured rate at the square size of equal volume
        (cube root of m·n·k), interpolated log-log between calibrated sizes; below the smallest
        size the first segment's slope continues (capped at linear), above the largest the best
        rate holds. The chip's peak when no curve was measured for this precision."""
        curve = (self.gemm_rates or {}).get(precision)
        best = self.peak(precision)
        if not curve:
            return best
        size = max(1.0, (m * n * k) ** (1 / 3))
        sizes = [math.log(x) for x, _ in curve]
        rates = [math.log(r) for _, r in curve]
        x = math.log(size)
        if len(curve) == 1 or x >= sizes[-1]:
            return min(best, curve[-1][1]) if x >= sizes[-1] else curve[0][1]
        if x <= sizes[0]:
            slope = min(1.0, max(0.0, (rates[1] - rates[0]) / (sizes[1] - sizes[0])))
            return math.exp(rates[0] + slope * (x - sizes[0]))
        for i in range(1, len(sizes)):
            if x <= sizes[i]:
                t = (x - sizes[i - 1]) / (sizes[i] - sizes[i - 1])
                return math.exp(rates[i - 1] + t * (rates[i] - rates[i - 1]))
        return curve[-1][1]  # pragma: no cover - covered by the first test

    @property
    def id(self) -> str:
        return self.platform.id

    @property
    def arrays(self) -> Arrays | None:
        m = self.platform.mxu
        return None if m is None else Arrays(m.rows, m.cols, m.per_core, m.cores)

    @property
    def memory_bytes(self) -> float | None:
        return self.platform.memory_bytes

    @property
    def mem_bandwidth(self) -> float:
        return self.platform.mem_bandwidth

    def peak(self, precision: str) -> float:
        """Dense peak FLOP/s for ``precision``; one line naming what the chip has otherwise."""
        p = self.platform.peak(precision)
        if p is None:
            have = ", ".join(
                k for k in ("fp32", "tf32", "bf16", "fp16") if k in self.platform.peak_dense
            )
            raise ConfigError(
                "precision", precision, f"{self.id} has no dense {precision} peak; it has {have}"
            )
        return p

    def clock(self, precision: str) -> float | None:
        """Matrix-unit clock (Hz) the dense peak of ``precision`` implies, so that predicted
        utilization is relative to that peak (TPU v2: 0.70 GHz, its published clock)."""
        if self.platform.mxu is None:
            return None
        return self.platform.mxu.implied_clock(self.peak(precision))

    def require_link(self) -> Link:
        if self.link is None:
            raise ConfigError(
                "--chips",
                self.id,
                "this chip has no per-link interconnect figures: give link_bw (and links) in a "
                "platform file",
            )
        return self.link


def from_platform(plat: Platform, origin: str = "datasheet") -> Chip:
    """A database entry, with the per-link figures from `LINKS` (TPUs) or, for GPUs, the
    vendor's aggregate NVLink/Infinity Fabric bandwidth halved per direction on a ring."""
    if plat.id in LINKS:
        bw, n, kind, src = LINKS[plat.id]
        return Chip(plat, origin, "ws", Link(bw, DEFAULT_LATENCY_S), n, kind, src)
    if plat.interconnect_bw is not None:
        agg = plat.interconnect_bw / 1e9
        src = f"{plat.id} interconnect_bw {agg:g} GB/s aggregate ÷ 2 per direction"
        link = Link(plat.interconnect_bw / 2, DEFAULT_LATENCY_S)
        return Chip(plat, origin, "ws", link, 1, "ring", src)
    return Chip(plat, origin)


def load(name: str, option: str = "--platform") -> Chip:
    """A database id or a unique prefix of one (`datasheets.resolve`: `v100` → v100-sxm2), or a
    path to a TOML file describing a (possibly hypothetical) chip. A bad name is one line
    naming `option`, the name and what is allowed (ConfigError); an ambiguous prefix names
    the ids it matches."""
    db_ids = [p.id for p in datasheets.all_platforms()]
    allowed = "must be one of " + ", ".join(db_ids) + " (or a unique prefix) or a .toml file"
    if not isinstance(name, str) or not name or not name.isprintable() or len(name) > 4096:
        raise ConfigError(option, name, allowed)
    if name in db_ids:
        return from_platform(datasheets.get(name))
    if name.endswith(".toml") or Path(name).is_file():
        return load_file(name)
    near = datasheets.prefixed(name)
    if len(near) == 1:
        return from_platform(datasheets.get(near[0]))
    raise ConfigError(option, name, datasheets.ambiguous(near) if near else allowed)


def load_file(path: str | Path) -> Chip:
    pid, data = datasheets.read_table(path)
    extra = {k: data.pop(k) for k in SIM_KEYS if k in data}
    for key in data:
        if key not in datasheets.ALLOWED:
            allowed = ", ".join((*datasheets.ALLOWED, *SIM_KEYS))
            raise ConfigError(f"{pid}.{key}", data[key], "unknown key; allowed: " + allowed)
    plat = datasheets.parse_entry(pid, data, require_sources=False)
    _check_clock(plat)
    chip = from_platform(plat, origin=f"file {path}")
    dataflow = extra.get("dataflow", chip.dataflow)
    if dataflow not in DATAFLOWS:
        raise ConfigError(f"{pid}.dataflow", dataflow, "must be one of " + ", ".join(DATAFLOWS))
    kind = extra.get("topology", chip.topology_kind)
    if kind not in TOPOLOGY_KINDS:
        raise ConfigError(f"{pid}.topology", kind, "must be one of " + ", ".join(TOPOLOGY_KINDS))
    link, links, source = chip.link, chip.links, chip.link_source
    if "link_bw" in extra or "link_latency_s" in extra:
        bw = _positive(pid, "link_bw", extra.get("link_bw", link.bandwidth if link else None))
        lat = _positive(
            pid, "link_latency_s", extra.get("link_latency_s", DEFAULT_LATENCY_S), zero=True
        )
        if lat > MAX_LATENCY_S:
            raise ConfigError(f"{pid}.link_latency_s", lat, f"must be ≤ {MAX_LATENCY_S:g} s")
        link, source = Link(bw, lat), f"file {path}"
    if "links" in extra:
        links = extra["links"]
        if isinstance(links, bool) or not isinstance(links, int) or not 1 <= links <= MAX_LINKS:
            raise ConfigError(f"{pid}.links", links, f"must be an integer in [1, {MAX_LINKS}]")
    step = None
    if "step" in extra:
        step = parse_params(pid, extra["step"], defaults(plat))
        if "source" not in extra["step"]:
            step = replace(step, source=f"file {path}")
    host = None
    if "host" in extra:
        where = f"{path}: {pid}.host"
        host = HostProfile.from_mapping(
            {"source": "file", **_table(extra["host"], where)}, where=where
        )
        check_bounds(host, where)
    return replace(
        chip,
        dataflow=dataflow,
        topology_kind=kind,
        link=link,
        links=links,
        link_source=source,
        step=step,
        host=host,
    )


def _table(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ConfigError(where, v, "a table of the host profile's fields")
    return v


def _check_clock(plat: Platform) -> None:
    """A what-if chip's peaks must be what its arrays and clock deliver (±5 %): otherwise the
    cycle model and the utilization would disagree about the same chip."""
    if plat.mxu is None or plat.clock_hz is None:
        return
    expected = plat.mxu.flop_per_cycle() * plat.clock_hz
    for prec, peak in plat.peak_dense.items():
        if prec in ("fp32", "tf32", "bf16", "fp16") and abs(peak / expected - 1) > 0.05:
            raise ConfigError(
                f"{plat.id}.peak_dense.{prec}",
                peak,
                f"must be 2·rows·cols·per_core·cores·clock_hz = {expected:.4g} FLOP/s (±5%)",
            )


def _positive(pid: str, key: str, v: Any, zero: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= datasheets.MAX_FIGURE
    if not ok or v < 0 or (v == 0 and not zero):  # abs(nan) <= x is False: NaN fails too
        raise ConfigError(
            f"{pid}.{key}",
            v,
            f"must be a {'non-negative' if zero else 'positive'} number "
            f"≤ {datasheets.MAX_FIGURE:g}",
        )
    return float(v)


def from_ceilings(rows: list[dict[str, Any]], device_name: str) -> Chip | None:
    """This machine as a chip built from its *measured* ceilings (`paradnn calibrate`): the best
    matmul FLOP/s per precision as the peak, the best copy bandwidth as memory bandwidth. Not
    datasheet figures, and labelled so. None without a matmul and a copy/triad ceiling. A row
    without a value (calibrate's budget stopped below a ceiling-sized matmul) is no ceiling."""
    mine = [r for r in rows if r.get("device_name") == device_name and r.get("value") is not None]
    peaks: dict[str, float] = {}
    for r in mine:
        if r["kind"] == "matmul" and r.get("precision"):
            peaks[r["precision"]] = max(peaks.get(r["precision"], 0.0), float(r["value"]))
    bw = max((float(r["value"]) for r in mine if r["kind"] in ("copy", "triad")), default=None)
    if not peaks or bw is None:
        return None
    when = max(str(r.get("measured_at", "")) for r in mine)[:10] or str(_dt.date.today())
    kind = "cpu" if all(str(r.get("device", "cpu")).startswith("cpu") for r in mine) else "gpu"
    entry = {
        "name": f"{device_name} (measured ceilings)",
        "vendor": "measured",
        "kind": kind,
        "peak_dense": peaks,
        "mem_bandwidth": bw,
        "sources": {"calibrate": f"paradnn calibrate on {device_name}, {when}"},
        "notes": "measured ceilings (large-matmul FLOP/s, copy bandwidth), not datasheet figures",
    }
    plat = datasheets.parse_entry("measured", entry)
    curves = _size_curves(mine)
    origin = f"measured ceilings ({device_name}, {when})"
    if curves:
        origin += "; matmul rate by size"
    return Chip(plat, origin, gemm_rates=curves or None)


def _size_curves(rows: list[dict[str, Any]]) -> dict[str, tuple[tuple[int, float], ...]]:
    """Per precision, the matmul FLOP/s at each size the newest `calibrate` run tried; kept
    only with two or more sizes, since one point is just the peak."""
    import json

    out: dict[str, tuple[tuple[int, float], ...]] = {}
    newest: dict[str, str] = {}
    for r in rows:
        p = r.get("precision")
        when = str(r.get("measured_at", ""))
        if r.get("kind") != "matmul" or not p or when < newest.get(p, ""):
            continue
        detail = r.get("detail") or {}
        detail = json.loads(detail) if isinstance(detail, str) else detail
        points = []
        for n, d in (detail.get("sizes") or {}).items():
            rate = d.get("flop_per_s") if isinstance(d, dict) else d
            if rate and float(rate) > 0:
                points.append((int(n), float(rate)))
        newest[p] = when
        if len(points) >= 2:
            out[p] = tuple(sorted(points))
        else:
            out.pop(p, None)
    return out
