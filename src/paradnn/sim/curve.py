"""The weak-scaling curve under either model: the step-time model (`sim.steptime`, what
`simulate step` and `simulate fit` use, the default) or the bare roofline (`model.scaling`).
Apart from both so that neither model imports the other."""

from __future__ import annotations

from typing import Any

from paradnn.errors import ConfigError
from paradnn.sim.chip import Chip
from paradnn.sim.interconnect import bisection_bandwidth, chip_counts, default_topology
from paradnn.sim.model import KIND
from paradnn.sim.model import scaling as roofline_scaling
from paradnn.validate import int_at_least, one_of

MODELS = ("step", "roofline")  # every `simulate` command's --model


def check_options(model: str, overlap: float = 0.0, concurrent: bool = False) -> None:
    """--model is one of MODELS; --overlap and --concurrent are given only to the roofline."""
    one_of("--model", model, MODELS)
    if model != "step":
        return
    for flag, value in (("--overlap", overlap), ("--concurrent", concurrent)):
        if value:
            raise ConfigError(
                flag,
                value,
                "applies to --model roofline only: the step-time model adds the whole "
                "all-reduce to the step",
            )


def scaling(
    family: str,
    config: dict[str, Any] | Any,
    chip: Chip,
    precision: str = "bf16",
    *,
    max_chips: int = 1024,
    optimizer: str = "rmsprop",
    overlap: float = 0.0,
    concurrent: bool = False,
    model: str = "step",
) -> list[dict[str, Any]]:
    """Weak-scaling curve (per-chip batch fixed; chips 1, 2, 4 … ``max_chips``), each row
    naming its ``model``. The step-time model adds the all-reduce (links or HBM, plus latency
    per tensor) to the step whole: ``overlap`` and ``concurrent`` are the roofline's only."""
    one_of("--model", model, MODELS)
    if model == "roofline":
        rows = roofline_scaling(
            family,
            config,
            chip,
            precision,
            max_chips=max_chips,
            optimizer=optimizer,
            overlap=overlap,
            concurrent=concurrent,
        )
        return [{"kind": r["kind"], "model": model, **r} for r in rows]
    check_options(model, overlap, concurrent)
    from paradnn.sim.steptime import predict_step

    int_at_least("--max-chips", max_chips, 1, 1 << 20)
    rows, base = [], None
    for n in chip_counts(max_chips):
        s = predict_step(family, config, chip, precision, optimizer=optimizer, chips=n)
        base = base or s.predicted_step_s
        topo = default_topology(chip.topology_kind, n) if n > 1 else None
        rows.append(
            {
                "kind": KIND,
                "model": model,
                "chips": n,
                "topology": s.topology,
                "predicted_step_s": s.predicted_step_s,
                "allreduce_s": s.comm_s,  # a multi-core chip reduces its cores' gradients at 1
                "exposed_comm_s": s.comm_s,
                "speedup": n * base / s.predicted_step_s,
                "efficiency": base / s.predicted_step_s,
                "bisection_bytes_per_s": (
                    None if topo is None else bisection_bandwidth(topo, chip.require_link())
                ),
            }
        )
    return rows
