"""A host's dispatch costs: what eager PyTorch's host side spends once a training step, per op,
per autograd node, per optimizer tensor, per autocast cast, per fused recurrent call and per
kernel launch, so the step-time model can run the host and the device as two timelines
(docs/simulate.md, issues 35 and 42). Torch-free: `paradnn calibrate` measures a profile
(`paradnn.measure.hostprofile`) and stores it; a chip/host file can carry another.

The defaults are assumptions, not measurements (``source = "defaults"``, said wherever they are
used). On a CPU: a few microseconds of Python and dispatcher work per eager op and per autograd
node (the order of magnitude PyTorch's own overhead benchmarks and the Daydream/Habitat papers
report, shared/reference/host-model.md, and this project's CPU measurements). On a GPU: the
figures issue 42 derived from an H100 host (a plain PyTorch loop timed on 66 configurations:
~1.1 ms fixed a step, ~0.19 ms a fp32 FC layer, ~0.33 ms a bf16 one), split over the units of
one FC layer as `CUDA_DERIVATION` says. Measure your host's with `paradnn calibrate`.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from paradnn.errors import ConfigError

OPTIMIZER_IMPLS = ("loop", "foreach", "fused")
SOURCES = ("measured", "defaults", "file")


@dataclass(frozen=True)
class HostProfile:
    """Host seconds per unit of dispatch work on one host (and, for launches, one device kind).

    ``optimizer_tensor_s`` maps an optimizer implementation (``loop``: a Python loop over the
    parameters; ``foreach``: multi-tensor ops; ``fused``: one kernel per chunk) to its host
    seconds per parameter tensor; ``optimizer_step_s`` is the fixed cost of one ``step()`` call.
    ``kernel_launch_s`` is None on a CPU, where the host runs the kernels itself (one timeline).

    The once-a-step and per-call figures (issue 42) are None where not measured; the model then
    composes them from the per-op figures (docs/simulate.md): ``step_s`` the fixed host seconds
    of one training step (zero_grad, the loss forward and backward, the backward() call, the
    optimizer's step() call, the autocast region); ``cast_s`` one autocast cast (its copy
    forward and its backward node); ``rnn_call_s`` one fused recurrent module call (cuDNN or
    oneDNN), forward and backward; ``scaler_s`` mixed fp16's GradScaler once a step, its wait
    for the device included. ``launches_included``: the per-op figures were measured on the
    device that launches the kernels, so they already hold their launches (the model adds
    ``kernel_launch_s`` per kernel only to a profile measured without them).
    """

    forward_op_s: float
    autograd_node_s: float
    optimizer_tensor_s: Mapping[str, float]
    optimizer_step_s: float
    sync_s: float
    kernel_launch_s: float | None = None
    source: str = "defaults"  # measured | defaults | file
    host: str | None = None  # the CPU model it was measured on
    device_type: str = "cpu"  # the device whose launches it timed (cpu: none)
    measured_at: str | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)  # samples, CI, sizes: provenance
    step_s: float | None = None
    cast_s: float | None = None
    rnn_call_s: float | None = None
    scaler_s: float | None = None
    launches_included: bool = False

    def optimizer_s(self, impl: str, tensors: int) -> float:
        """Host seconds of one optimizer step over `tensors` parameter tensors."""
        per = self.optimizer_tensor_s.get(impl)
        if per is None:
            per = self.optimizer_tensor_s.get("loop", 0.0)
        return self.optimizer_step_s + tensors * per

    def as_dict(self) -> dict[str, Any]:
        d = {f: getattr(self, f) for f in self.__dataclass_fields__}
        d["optimizer_tensor_s"] = dict(self.optimizer_tensor_s)
        d["detail"] = dict(self.detail)
        return d

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any], *, where: str = "host profile") -> HostProfile:
        """Validate a stored or file profile: one ConfigError naming the field."""
        if not isinstance(m, Mapping):
            raise ConfigError(where, type(m).__name__, "a table of the profile's fields")
        known = set(cls.__dataclass_fields__)
        for k in m:
            if k not in known:
                raise ConfigError(f"{where}: {k}", m[k], f"one of {', '.join(sorted(known))}")

        def seconds(name: str, v: Any) -> float:
            if isinstance(v, bool) or not isinstance(v, int | float) or not (0 <= v < math.inf):
                raise ConfigError(f"{where}: {name}", v, "seconds, a finite number ≥ 0")
            return float(v)

        def optional(name: str) -> float | None:
            v = m.get(name)
            return None if v is None else seconds(name, v)

        for name in ("forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s"):
            if name not in m:
                raise ConfigError(f"{where}: {name}", None, "seconds, a finite number ≥ 0")
        opt = m.get("optimizer_tensor_s")
        if not isinstance(opt, Mapping) or not opt:
            raise ConfigError(
                f"{where}: optimizer_tensor_s",
                opt,
                f"a table of {', '.join(OPTIMIZER_IMPLS)} → seconds per parameter tensor",
            )
        per: dict[str, float] = {}
        for impl, v in opt.items():
            if impl not in OPTIMIZER_IMPLS:
                raise ConfigError(
                    f"{where}: optimizer_tensor_s", impl, f"one of {', '.join(OPTIMIZER_IMPLS)}"
                )
            per[impl] = seconds(f"optimizer_tensor_s.{impl}", v)
        source = m.get("source", "file")
        if source not in SOURCES:
            raise ConfigError(f"{where}: source", source, f"one of {', '.join(SOURCES)}")
        device_type = m.get("device_type", "cpu")
        if device_type not in ("cpu", "cuda"):
            raise ConfigError(f"{where}: device_type", device_type, "cpu or cuda")
        launch = m.get("kernel_launch_s")
        included = m.get("launches_included", False)
        if not isinstance(included, bool):
            raise ConfigError(f"{where}: launches_included", included, "true or false")
        return cls(
            forward_op_s=seconds("forward_op_s", m["forward_op_s"]),
            autograd_node_s=seconds("autograd_node_s", m["autograd_node_s"]),
            optimizer_tensor_s=MappingProxyType(per),
            optimizer_step_s=seconds("optimizer_step_s", m["optimizer_step_s"]),
            sync_s=seconds("sync_s", m["sync_s"]),
            kernel_launch_s=None if launch is None else seconds("kernel_launch_s", launch),
            source=str(source),
            host=None if m.get("host") is None else str(m["host"]),
            device_type=str(device_type),
            measured_at=None if m.get("measured_at") is None else str(m["measured_at"]),
            detail=MappingProxyType(dict(m.get("detail") or {})),
            step_s=optional("step_s"),
            cast_s=optional("cast_s"),
            rnn_call_s=optional("rnn_call_s"),
            scaler_s=optional("scaler_s"),
            launches_included=included,
        )


# The CPU defaults: the order of magnitude this project's 2-core VM measured (docs/simulate.md:
# 5–13 µs a forward call, 4–9 µs an autograd node, 20–50 µs a loop Adam tensor, rated noisy).
_CPU = HostProfile(
    forward_op_s=8e-6,
    autograd_node_s=5e-6,
    optimizer_tensor_s=MappingProxyType({"loop": 25e-6, "foreach": 3e-6, "fused": 2e-6}),
    optimizer_step_s=20e-6,
    sync_s=0.0,
    kernel_launch_s=None,
    source="defaults",
)
# The GPU defaults are derived, not measured here: issue 42 reports, for one H100 80GB HBM3 host
# (16-core Xeon VM, torch 2.11.0+cu130) timed by a plain PyTorch loop over 66 configurations of
# the paper's space, ~1.1 ms fixed a step plus ~0.19 ms a fp32 FC layer and ~0.33 ms a bf16 one.
# Split over one FC layer's units (2 calls, 5 autograd nodes, 2 optimizer tensors, 2 casts:
# `timeline.LAYER_COUNTS["gemm"]`) with two assumptions: a foreach optimizer tensor costs 5 µs
# (a list entry of a multi-tensor op, not a launch of its own) and a forward call 1.25 nodes
# (the Python module call on top of the same dispatch and launch). A loop optimizer tensor is
# four calls (the update's ops, each dispatched from Python); fused, one list entry. Measured on
# the device, every figure holds its kernels' launches (``launches_included``); the launch and
# sync figures are the order of magnitude PyTorch's overhead benchmarks report. The once-a-step
# part is the fixed cost. The issue reported no figure for a recurrent module's call or
# for GradScaler: those two are derived from the shared H100 quick sweep (the same host, paradnn
# at d3775b8: its 68 host-bound FC and RNN runs) by benchmarks/host_floor.py, a least-squares
# fit of the model's host coefficients to the measured steps (rounded; the fit found 1.23 ms
# and 0.49 ms, and 1.17 ms, 25 µs and 53 µs for the three figures above).
CUDA_DERIVATION: Mapping[str, Any] = MappingProxyType(
    {
        "source": "issue 42: one H100 80GB HBM3 host (16-core Xeon VM, torch 2.11.0+cu130), "
        "a plain PyTorch loop timed on 66 configurations of the paper's space",
        "fixed_s": 1.1e-3,
        "fc_layer_fp32_s": 0.19e-3,
        "fc_layer_bf16_s": 0.33e-3,
        "fc_layer_units": {"calls": 2, "nodes": 5, "tensors": 2, "casts": 2},
        "foreach_tensor_s": 5e-6,
        "call_per_node": 1.25,
        "loop_calls_per_tensor": 4,
        "rnn_call_s": 1.2e-3,
        "scaler_s": 0.5e-3,
        "rnn_and_scaler_source": "benchmarks/host_floor.py on h100-quick-2026-11-27.sqlite "
        "(68 host-bound FC and RNN runs of the same H100 host)",
    }
)


def _cuda_defaults(d: Mapping[str, Any] = CUDA_DERIVATION) -> HostProfile:
    """The GPU defaults from `CUDA_DERIVATION`, computed as its comment says."""
    u = d["fc_layer_units"]
    per_layer = d["fc_layer_fp32_s"] - u["tensors"] * d["foreach_tensor_s"]
    node = per_layer / (u["calls"] * d["call_per_node"] + u["nodes"])
    call = d["call_per_node"] * node
    return HostProfile(
        forward_op_s=call,
        autograd_node_s=node,
        optimizer_tensor_s=MappingProxyType(
            {
                "loop": d["loop_calls_per_tensor"] * call,
                "foreach": d["foreach_tensor_s"],
                "fused": 0.5 * d["foreach_tensor_s"],
            }
        ),
        optimizer_step_s=_CPU.optimizer_step_s,
        sync_s=15e-6,
        kernel_launch_s=5e-6,
        source="defaults",
        device_type="cuda",
        detail=MappingProxyType({"derived": dict(d)}),
        step_s=d["fixed_s"],
        cast_s=(d["fc_layer_bf16_s"] - d["fc_layer_fp32_s"]) / u["casts"],
        rnn_call_s=d["rnn_call_s"],
        scaler_s=d["scaler_s"],
        launches_included=True,
    )


DEFAULTS: Mapping[str, HostProfile] = MappingProxyType({"cpu": _CPU, "cuda": _cuda_defaults()})


def default(device_type: str) -> HostProfile:
    """The assumed profile for a device kind (cpu, or anything with launches: cuda)."""
    return DEFAULTS["cpu" if device_type == "cpu" else "cuda"]


# ---------------------------------------------------------------------------------------------
# Where a profile comes from: a stored row (`paradnn calibrate`), a file, or the defaults.

ROW_OPTIMIZER = {"loop": "optimizer_loop_s", "foreach": "optimizer_foreach_s"}
ROW_OPTIMIZER["fused"] = "optimizer_fused_s"
MAX_HOST_S = 1.0  # seconds per op, node, tensor or launch: a figure past it is a unit mistake


REQUIRED = ("forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s")
ROW_FIGURES = ("step_s", "cast_s", "rnn_call_s", "scaler_s")


def from_row(row: Mapping[str, Any], *, where: str = "host_profile row") -> HostProfile:
    """A stored `host_profile` row (the store's columns, `paradnn results --table host_profile
    --format json`) as a measured HostProfile; an implementation measured as NULL is left out
    of ``optimizer_tensor_s`` (its reason stays in ``detail['nulls']``), a once-a-step or
    per-call figure measured as NULL is composed by the model, and a per-op figure measured as
    NULL (its ladder failed) is the device kind's default, named in ``detail['assumed']``."""
    if not isinstance(row, Mapping):
        raise ConfigError(where, type(row).__name__, "a row of the host_profile table")
    per = {impl: row[col] for impl, col in ROW_OPTIMIZER.items() if row.get(col) is not None}
    detail = dict(row.get("detail") or {}) if isinstance(row.get("detail"), Mapping) else {}
    detail.update(
        {
            k: row[k]
            for k in ("id", "hostname", "quality", "quality_reasons", "nulls", "threads")
            if row.get(k) is not None
        }
    )
    kind = row.get("device_type") or "cpu"
    fallback = default(kind)  # a kind from_mapping refuses is refused there, by name
    assumed = {k: getattr(fallback, k) for k in REQUIRED if row.get(k) is None and k in row}
    if not per and "optimizer_loop_s" in row:
        per = dict(fallback.optimizer_tensor_s)
        assumed["optimizer_tensor_s"] = per
    if assumed:
        detail["assumed"] = {**detail.get("assumed", {}), **assumed}
    return HostProfile.from_mapping(
        {
            **{k: row.get(k) for k in REQUIRED},
            **assumed,
            "optimizer_tensor_s": per,
            "kernel_launch_s": row.get("kernel_launch_s"),
            **{k: row.get(k) for k in ROW_FIGURES},
            "launches_included": bool(row.get("launches_included") or False),
            "source": "measured",
            "host": row.get("host"),
            "device_type": kind,
            "measured_at": row.get("measured_at"),
            "detail": detail,
        },
        where=where,
    )


def newest_for(rows: Sequence[Mapping[str, Any]], hostname: str) -> Mapping[str, Any] | None:
    """The newest usable (status ok) stored profile of `hostname`, or None."""
    mine = [r for r in rows if r.get("hostname") == hostname and r.get("status", "ok") == "ok"]
    return max(
        mine, key=lambda r: (str(r.get("measured_at") or ""), r.get("id") or 0), default=None
    )


def _read(path: Path) -> Any:
    try:
        text = path.read_text("utf-8")
    except OSError as e:
        raise ConfigError("--host-profile", str(path), f"cannot be read: {e.strerror}") from None
    except (UnicodeDecodeError, ValueError):
        raise ConfigError("--host-profile", str(path), "cannot be read: must be UTF-8") from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as e:
            raise ConfigError("--host-profile", str(path), f"is not valid JSON ({e})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError("--host-profile", str(path), f"is not valid TOML ({e})") from None


def parse(data: Any, where: str) -> HostProfile:
    """A profile from what a file holds: the HostProfile fields at the top (TOML or JSON); a
    `[host]` table; a chip/host file's one `[ID]` table with its `[ID.host]`; or a stored row
    or a list of them (`paradnn results --table host_profile -f json`: its newest ok row)."""
    if isinstance(data, Mapping) and isinstance(data.get("rows"), list):
        data = data["rows"]  # the results export's envelope
    if isinstance(data, list):
        ok = [r for r in data if isinstance(r, Mapping) and r.get("status", "ok") == "ok"]
        if not ok:
            raise ConfigError(where, f"{len(data)} rows", "a list with an ok host_profile row")
        return _file_source(from_row(ok[-1], where=where))
    if not isinstance(data, Mapping):
        raise ConfigError(where, type(data).__name__, "a table of the host profile's fields")
    if "forward_op_s" in data and "optimizer_loop_s" in data:  # one stored row
        return _file_source(from_row(data, where=where))
    if "host" in data and isinstance(data["host"], Mapping):
        return HostProfile.from_mapping(data["host"], where=f"{where}: host")
    tables = [(k, v) for k, v in data.items() if isinstance(v, Mapping)]
    if (
        "forward_op_s" not in data
        and len(tables) == 1
        and isinstance(tables[0][1].get("host"), Mapping)
    ):
        pid, table = tables[0]
        return HostProfile.from_mapping(table["host"], where=f"{where}: {pid}.host")
    return HostProfile.from_mapping(data, where=where)


def _file_source(p: HostProfile) -> HostProfile:
    """A profile measured elsewhere, read from a file: its figures stay, its origin is kept."""
    return replace(p, source="file", detail=MappingProxyType({**p.detail, "measured": True}))


def load_file(path: str | Path) -> HostProfile:
    """The host profile in a file (`--host-profile FILE`): TOML or JSON (see `parse`). Bad
    input is one ConfigError naming the file and the field."""
    p = Path(path)
    if not str(path) or not p.is_file():
        raise ConfigError("--host-profile", str(path), "a TOML or JSON file of a host profile")
    profile = parse(_read(p), f"--host-profile {path}")
    check_bounds(profile, f"--host-profile {path}")
    origin = {**profile.detail, "origin": f"--host-profile {path}"}  # for `describe`'s line
    return replace(profile, detail=MappingProxyType(origin))


def check_bounds(p: HostProfile, where: str) -> None:
    """Each figure below `MAX_HOST_S` (a microsecond figure written as seconds is caught)."""
    figures = {
        "forward_op_s": p.forward_op_s,
        "autograd_node_s": p.autograd_node_s,
        "optimizer_step_s": p.optimizer_step_s,
        "sync_s": p.sync_s,
        "kernel_launch_s": p.kernel_launch_s,
        **{k: getattr(p, k) for k in ROW_FIGURES},
        **{f"optimizer_tensor_s.{k}": v for k, v in p.optimizer_tensor_s.items()},
    }
    for name, v in figures.items():
        if v is not None and v > MAX_HOST_S:  # None: not measured
            raise ConfigError(f"{where}: {name}", v, f"seconds ≤ {MAX_HOST_S:g} (1e-5 is 10 µs)")


def for_device(p: HostProfile, device_type: str) -> HostProfile:
    """`p` for a target of `device_type`: a profile measured on a CPU-only host lends its Python,
    dispatcher, autograd and optimizer costs to a GPU target, whose launch and sync it could not
    measure: those come from the defaults, named in ``detail['assumed']``. A CPU target has no
    launches (None) and no device to wait for (0)."""
    if device_type == "cpu":
        if p.kernel_launch_s is None and p.sync_s == 0:
            return p
        return replace(p, kernel_launch_s=None, sync_s=0.0, device_type="cpu")
    if p.kernel_launch_s is not None:
        return p
    d = default(device_type)
    assumed = {"kernel_launch_s": d.kernel_launch_s, "sync_s": d.sync_s}
    return replace(
        p,
        kernel_launch_s=d.kernel_launch_s,
        sync_s=d.sync_s,
        device_type="cuda",
        detail=MappingProxyType(
            {**p.detail, "assumed": {**p.detail.get("assumed", {}), **assumed}}
        ),
    )


def describe(p: HostProfile, origin: str | None = None) -> str:
    """One line: which profile a prediction used, and where it came from."""
    if p.source == "defaults":
        basis = "derived from issue 42's H100 host, " if p.detail.get("derived") else ""
        return (
            f"host profile: the assumed defaults for {p.device_type} ({basis}docs/simulate.md; "
            "`paradnn calibrate --host-only` measures this host's)"
        )
    bits = [p.host or "host not named"]
    if p.measured_at:
        bits.append(str(p.measured_at)[:10])
    if p.detail.get("quality") == "noisy":
        bits.append("noisy")
    where = f" from {origin}" if origin else ""
    kind = "measured," if p.source == "measured" else "read"
    line = f"host profile: {kind}{where} ({', '.join(bits)})"
    assumed = p.detail.get("assumed") or {}
    if assumed:
        names = " and ".join(n.removesuffix("_s").replace("kernel_", "") for n in assumed)
        line += f"; {names} assumed ({p.device_type} defaults)"
    return line
