"""A host's dispatch costs: what eager PyTorch's host side spends per op, per autograd node, per
optimizer tensor and per kernel launch, so the step-time model can run the host and the device
as two timelines (docs/simulate.md, issue 35). Torch-free: `paradnn calibrate` measures a
profile (`paradnn.measure.hostprofile`) and stores it; a chip/host file can carry another.

The defaults are assumptions, not measurements (``source = "defaults"``): a few microseconds of
Python and dispatcher work per eager op and per autograd node, and a CUDA launch of about 5 µs
(the order of magnitude PyTorch's own overhead benchmarks and the Daydream/Habitat papers
report, shared/reference/host-model.md). Measure your host's with `paradnn calibrate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
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
        )


_CPU = HostProfile(
    forward_op_s=8e-6,
    autograd_node_s=10e-6,
    optimizer_tensor_s=MappingProxyType({"loop": 25e-6, "foreach": 3e-6, "fused": 2e-6}),
    optimizer_step_s=20e-6,
    sync_s=0.0,
    kernel_launch_s=None,
    source="defaults",
)
DEFAULTS: Mapping[str, HostProfile] = MappingProxyType(
    {
        "cpu": _CPU,
        # the same Python and dispatcher work, plus a CUDA launch per kernel and a real sync
        "cuda": replace(_CPU, kernel_launch_s=5e-6, sync_s=15e-6, device_type="cuda"),
    }
)


def default(device_type: str) -> HostProfile:
    """The assumed profile for a device kind (cpu, or anything with launches: cuda)."""
    return DEFAULTS["cpu" if device_type == "cpu" else "cuda"]
