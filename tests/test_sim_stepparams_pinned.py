"""A chip file's step-time parameters pinned whole (sim.stepparams, sim.chip): every key of
``[id.step]`` with values on both sides of each of its bounds, of the wrong type, NaN and
infinite, each giving either the parsed value or the one-line refusal a user reads; the default
parameters of every platform in the database; chip files with every optional key, bad values
and their refusals (tests/pinned.py, tests/data/sim_pinned/stepparams.json)."""

from __future__ import annotations

import math
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

import pinned
from paradnn.errors import ConfigError
from paradnn.platforms import datasheets
from paradnn.sim import chip as chips
from paradnn.sim.stepparams import PARAM_KEYS, StepParams, defaults, parse_params

BAD = ["x", True, math.nan, math.inf, -math.inf, None, [1]]
NUMBERS = [-1, 0, 0.0, 1e-12, 0.5, 1, 1.0, 1.5, 7.99, 8, 8.01, 10, 10.5, 16, 16.01, 63.9, 64,
           64.5, 999, 1000, 1000.5, 1e6, 1e6 + 1, 1e15, 2e15, 1 << 20, (1 << 20) + 1]  # fmt: skip
VALUES = {
    "efficiency": [
        {"fp32": 0.5, "default": 1.0},
        {},
        {"fp16": 0.0},
        {"fp16": 1.01},
        0.5,
        {"bf16": True},
        {3: 0.25},
    ],
    "tile": [
        {"fp32": [64, 128]},
        {"x": [1, 65536]},
        {"x": [0, 8]},
        {"x": [8, 65537]},
        {"x": [8]},
        {"x": [8, 8, 8]},
        {"x": [True, 8]},
        {"x": [8.0, 8]},
        {"x": (8, 8)},
        [8, 8],
        {},
    ],
    "tiles": [
        {"fp32": [[64, 64], [128, 32]]},
        {},
        {"x": []},
        {"x": [[0, 1]]},
        {"x": [[1, 65537]]},
        {"x": [[1, 65536]]},
        {"x": [[1, 2, 3]]},
        {"x": [(1, 2)]},
        {"x": [[True, 2]]},
        {"x": [1, 2]},
        [[1, 2]],
        {"x": "64x64"},
    ],
    "conv_efficiency": [0.5, 1.0, 0.0, 1.5, {"fp16": 0.5}, {}, {"fp16": 0}, "x", True],
    "tc_rule": ["strict", "graded", "loose", 1, None],
    "conv_layout": ["nchw", "nhwc", "NCHW", None],
    "source": ["fitted on x", "", "y" * 2000, "y" * 2001, 3, None],
}


def _outcome(key: str, v) -> object:
    base = defaults(datasheets.get("v100-sxm2"))
    try:
        got = parse_params("chip", {key: v}, base)
    except ConfigError as e:
        return {"refused": str(e), "field": e.field if hasattr(e, "field") else None}
    changed = {k: getattr(got, k) for k in got.as_dict() if getattr(got, k) != getattr(base, k)}
    return {
        "value": getattr(got, key),
        "changed": sorted(changed),
        "type": type(getattr(got, key)).__name__,
    }


def test_every_key_on_both_sides_of_its_bounds():
    got = {}
    for key in PARAM_KEYS:
        vals = VALUES.get(key, NUMBERS + BAD)
        got[key] = [[repr(v), _outcome(key, v)] for v in vals]
    got["unknown"] = _outcome("speed", 1.0)
    try:
        parse_params("chip", [1, 2], defaults(datasheets.get("v100-sxm2")))
    except ConfigError as e:
        got["not-a-table"] = str(e)
    pinned.check("stepparams", got)


def test_defaults_of_every_platform_and_their_lookups():
    got = {}
    for p in datasheets.all_platforms():
        sp = defaults(p)
        got[p.id] = {
            "params": sp,
            "as_dict": sp.as_dict(),
            "eff": [sp.eff(x) for x in ("fp32", "tf32", "fp16", "bf16", "int8")],
            "conv": [sp.conv_eff(x) for x in ("fp32", "fp16", "bf16")],
            "tiles": [sp.tiles_of(x) for x in ("fp32", "fp16", "bf16")],
            "tile": [sp.tile_of(x) for x in ("fp32", "fp16", "bf16")],
        }
    bare = StepParams(1e-6, {}, 0.0, 1.0)
    got["bare"] = [bare.eff("fp32"), bare.conv_eff("fp16"), bare.tiles_of("x"), bare.tile_of("x")]
    first = StepParams(1e-6, {"fp16": 0.3, "bf16": 0.4}, 0.0, 1.0, tile={"fp16": (2, 3)})
    got["first"] = [first.eff("fp32"), first.eff("bf16"), first.tile_of("fp16"), first.tile_of("x")]
    pinned.check("stepparams_defaults", got)


CHIP = """[mychip]
name = "a chip"
vendor = "acme"
kind = "{kind}"
peak_dense = {{ {peaks} }}
memory_bytes = 16e9
mem_bandwidth = 1e12
{extra}
"""

HOST = (
    "forward_op_s = 5e-6\nautograd_node_s = 4e-6\noptimizer_step_s = 1e-5\nsync_s = 2e-5\n"
    "optimizer_tensor_s = { loop = 3e-6, foreach = 1e-6 }"
)
MXU = "mxu = { rows = 128, cols = 128, per_core = 1, cores = 2 }"
FILES = {
    "plain-gpu": ("gpu", ""),
    "plain-cpu": ("cpu", ""),
    "link": ("gpu", "link_bw = 5e10\nlink_latency_s = 2e-6\nlinks = 4\ntopology = \"torus2d\""),
    "link-bw-only": ("gpu", "link_bw = 5e10"),
    "latency-only": ("gpu", "interconnect_bw = 3e11\nlink_latency_s = 0"),
    "latency-max": ("gpu", "link_bw = 1e9\nlink_latency_s = 1.0"),
    "latency-over": ("gpu", "link_bw = 1e9\nlink_latency_s = 1.5"),
    "latency-negative": ("gpu", "link_bw = 1e9\nlink_latency_s = -1e-6"),
    "bw-zero": ("gpu", "link_bw = 0"),
    "bw-bool": ("gpu", "link_bw = true"),
    "bw-text": ("gpu", "link_bw = \"fast\""),
    "bw-nan": ("gpu", "link_bw = nan"),
    "links-0": ("gpu", "link_bw = 1e9\nlinks = 0"),
    "links-1": ("gpu", "link_bw = 1e9\nlinks = 1"),
    "links-float": ("gpu", "link_bw = 1e9\nlinks = 2.0"),
    "links-bool": ("gpu", "link_bw = 1e9\nlinks = true"),
    "links-many": ("gpu", "link_bw = 1e9\nlinks = 100000"),
    "dataflow-os": ("gpu", "dataflow = \"os\""),
    "dataflow-bad": ("gpu", "dataflow = \"xx\""),
    "topology-bad": ("gpu", "topology = \"mesh\""),
    "unknown-key": ("gpu", "speed = 3"),
    "step": ("gpu", "[mychip.step]\nk_half = 12.0\nunits = 7"),
    "step-sourced": ("gpu", "[mychip.step]\nk_half = 12.0\nsource = \"a fit\""),
    "step-bad": ("gpu", "[mychip.step]\nk_half = -1"),
    "step-not-table": ("gpu", "step = 3"),
    "host": ("gpu", "[mychip.host]\n" + HOST),
    "host-not-table": ("gpu", "host = 3"),
    "host-bad": ("gpu", "[mychip.host]\n" + HOST.replace("sync_s = 2e-5", "sync_s = -1")),
    "mxu": ("tpu", "clock_hz = 6.103515625e8\n" + MXU),
    "mxu-no-clock": ("tpu", MXU),
    "mxu-clock-zero": ("tpu", "clock_hz = 0\n" + MXU),
    "mxu-clock-off": ("tpu", "clock_hz = 3e9\n" + MXU),
}  # fmt: skip


def _load(tmp: Path, name: str, kind: str, extra: str) -> object:
    path = tmp / f"{name}.toml"
    peaks = "bf16 = 40e12" if kind == "tpu" else "fp32 = 10e12, bf16 = 40e12"
    path.write_text(CHIP.format(kind=kind, extra=extra, peaks=peaks))
    try:
        c = chips.load_file(path)
    except ConfigError as e:
        return {"refused": str(e).replace(str(tmp), "<tmp>")}
    out = pinned.plain(c)
    return {
        "chip": out,
        "id": c.id,
        "peak": [_try(lambda: c.peak("fp32")), _try(lambda: c.peak("bf16"))],
        "clock": [_try(lambda: c.clock("fp32")), _try(lambda: c.clock("bf16"))],
        "bw": c.mem_bandwidth,
        "memory": c.memory_bytes,
        "arrays": pinned.plain(c.arrays),
    }


def test_chip_files_pinned(tmp_path):
    got = {k: _load(tmp_path, k, *v) for k, v in FILES.items()}
    text = pinned.plain(got)
    text = {k: _relative(v, str(tmp_path)) for k, v in text.items()}
    pinned.check("chip_files", text)


def _relative(x, tmp: str):
    if isinstance(x, dict):
        return {k: _relative(v, tmp) for k, v in x.items()}
    if isinstance(x, list):
        return [_relative(v, tmp) for v in x]
    return x.replace(tmp, "<tmp>") if isinstance(x, str) else x


def test_database_chips_and_names():
    got = {}
    for p in datasheets.all_platforms():
        c = chips.load(p.id)
        got[p.id] = {"chip": c, "link": _try(c.require_link)}
    for name in ("v100", "tpu-v", "nope", "", "a\nb", "x" * 5000, 3):
        got[f"load {name!r:.20}"] = _try(lambda n=name: chips.load(n, "--chip").id)
    path = str(resources.files("paradnn") / "data" / "chips" / "v100-pcie.toml")
    got["by-path"] = chips.load(path).platform
    v = chips.load("v100-sxm2")
    got["peak-missing"] = _try(lambda: v.peak("bf16"))
    got["no-link"] = _try(replace(v, link=None).require_link)
    pinned.check("chips", got)


def _try(f):
    try:
        return {"ok": f()}
    except ConfigError as e:
        return {"refused": str(e)}


def test_refusal_is_a_config_error():
    with pytest.raises(ConfigError, match=r"mychip\.step\.units"):
        parse_params("mychip", {"units": 0}, defaults(datasheets.get("v100-sxm2")))
