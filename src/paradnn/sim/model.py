"""Predict one training step of a workload on a chip, or on a data-parallel machine of chips.

Per lowered GEMM (`lowering`): compute time from the systolic cycle model when the chip has
matrix units (`systolic`; clock from the datasheet or implied by the peak), else FLOPs ÷ peak;
memory time from bytes ÷ bandwidth (`memory`). The predicted time of an op is its roofline lower
bound; the serial sum is reported as an upper bound. Non-GEMM traffic (optimizer, elementwise) is
added as memory time. With ``chips > 1`` the config's batch is the per-chip batch (weak scaling,
as the TPU supercomputer scales), every chip holds the model, and the fp32 gradients are
all-reduced once per step; the step is compute plus the all-reduce that backward does not hide.

Everything here is a prediction and is labelled so (`Prediction.kind`).
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from typing import Any

from paradnn import families
from paradnn.config import RunOptions, RunSpec, with_fields
from paradnn.errors import ConfigError
from paradnn.families.lowering import Op, lower
from paradnn.families.shapes import Conv2d, Gemm, Recurrent
from paradnn.precisions import itemsize
from paradnn.sim import rounding as prec
from paradnn.sim import traffic as mem
from paradnn.sim.chip import Chip
from paradnn.sim.interconnect import (
    MAX_CHIPS,
    AllReduce,
    Topology,
    allreduce,
    default_topology,
    step_time,
)
from paradnn.sim.systolic import array_cycles
from paradnn.validate import int_at_least

KIND = "prediction"


@dataclass(frozen=True)
class OpPrediction:
    layer: str
    phase: str
    m: int
    n: int
    k: int
    count: int
    flops: int
    bytes: int
    compute_s: float
    memory_s: float
    array_utilization: float | None  # systolic: useful MACs ÷ (cycles × PEs); None otherwise

    @property
    def time_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Prediction:
    kind: str
    family: str
    config: dict[str, Any]
    platform: str
    origin: str
    precision: str
    chips: int
    topology: str | None
    flops_per_chip: int
    compute_s: float  # sum of GEMM compute times
    memory_s: float  # sum of all memory times (GEMMs, elementwise, optimizer)
    step_lower_s: float  # roofline per op, summed
    step_upper_s: float  # serial per op, summed, plus the whole all-reduce
    allreduce_s: float | None
    exposed_comm_s: float
    predicted_step_s: float  # lower bound + exposed all-reduce
    utilization: float  # FLOPs ÷ (predicted step × peak)
    bottleneck: str  # compute, memory, interconnect or input (a loader rate was given)
    examples_per_s: float
    memory: dict[str, Any]
    ops: tuple[OpPrediction, ...] = field(repr=False)
    # the host/input term (docs/infeed.md): seconds per step the infeed needs, from a measured
    # loader rate; None when no rate was given (the device is fed for free, as in ParaDnn)
    input_s: float | None = None

    def row(self) -> dict[str, Any]:
        """A flat row (no per-op list) for tables, CSV and JSON."""
        d = asdict(self)
        d.pop("ops")
        fits = d.pop("memory")
        d.update({f"mem_{k}": v for k, v in fits.items()})
        return d


def input_step(
    model_s: float, examples: int, loader_examples_per_s: float, overlapped: bool = True
) -> tuple[float, float, bool]:
    """The host/input term (docs/infeed.md): (step, infeed seconds per step, input-bound).

    The infeed needs `examples / loader_examples_per_s` per step (the rate of the loader
    drained alone, measured). Loader workers prefetch while the device computes, so the step
    is the slower of the two (`overlapped`); loading in the training process itself (0
    workers) runs in series with the step: their sum. Input-bound when the infeed is the
    slower side."""
    if not loader_examples_per_s or loader_examples_per_s <= 0:
        raise ConfigError("loader_examples_per_s", loader_examples_per_s, "must be > 0")
    infeed = examples / loader_examples_per_s
    step = max(model_s, infeed) if overlapped else model_s + infeed
    return step, infeed, infeed > model_s


def predict_op(op: Op, chip: Chip, precision: str) -> OpPrediction:
    peak = chip.peak(precision)
    nbytes = mem.op_bytes(op, itemsize(precision))
    arrays = chip.arrays
    if arrays is not None:
        cycles = array_cycles(op.m, op.n, op.k, arrays, chip.dataflow) * op.count
        compute = cycles / chip.clock(precision)
        util = op.macs / (cycles * arrays.macs)
    else:
        rate = chip.gemm_rate(precision, op.m, op.n, op.k) if chip.gemm_rates else peak
        compute, util = op.flops / rate, None
    memory = nbytes / chip.mem_bandwidth
    return OpPrediction(
        op.layer, op.phase, op.m, op.n, op.k, op.count, op.flops, nbytes, compute, memory, util
    )


def _other_bytes(shapes: list, params: int, optimizer: str, itemsize: int) -> int:
    total = mem.optimizer_bytes(params, optimizer)
    for s in shapes:
        if isinstance(s, Gemm):
            out = s.m * s.n
        elif isinstance(s, Conv2d):
            out = s.batch * s.out_ch * s.out_h * s.out_w
        elif isinstance(s, Recurrent):
            out = s.seq * s.batch * s.gates * s.hidden
        else:  # pragma: no cover
            continue
        total += mem.elementwise_bytes(out, s.kind, itemsize)
    return total


@functools.cache
def _run_options(precision: str, optimizer: str, policy: str) -> RunOptions:
    """A predicted run's options (checked once per combination: a sweep's predictions share a
    few, and each check costs as much as a third of a prediction)."""
    run = {"precision": precision, "optimizer": optimizer, "precision_policy": policy}
    return with_fields(None, "prediction", run)


def predict(
    family: str,
    config: dict[str, Any] | Any,
    chip: Chip,
    precision: str = "bf16",
    *,
    optimizer: str = "rmsprop",
    chips: int = 1,
    topology: Topology | None = None,
    overlap: float = 0.0,
    concurrent: bool = False,
    loader_examples_per_s: float | None = None,
    loader_overlapped: bool = True,
    policy: str = "mixed",
) -> Prediction:
    """A predicted training step of ``family`` ``config`` (a mapping or a config object) on
    ``chips`` of ``chip``. With ``loader_examples_per_s`` (a host loader's measured rate, per
    chip) the step includes the host/input term (`input_step`) and may be input-bound;
    ``policy`` (mixed or pure 16-bit) sizes the memory it needs. Bad input raises
    ConfigError before any work."""
    fam = families.get(family)
    cfg = config if isinstance(config, fam.config_cls) else fam.config(dict(config))
    int_at_least("--chips", chips, 1, MAX_CHIPS)
    if topology is not None and topology.chips != chips:
        raise ConfigError(
            "--topology", topology.label(), f"has {topology.chips} chips but --chips is {chips}"
        )
    peak = chip.peak(precision)
    size = itemsize(precision)
    shapes = fam.shapes(cfg)
    ops = tuple(predict_op(op, chip, precision) for s in shapes for op in lower(s))
    params = fam.params(cfg)
    other_s = _other_bytes(shapes, params, optimizer, size) / chip.mem_bandwidth
    compute = sum(o.compute_s for o in ops)
    memory_s = sum(o.memory_s for o in ops) + other_s
    lower_s = sum(o.time_s for o in ops) + other_s
    upper_s = sum(o.compute_s + o.memory_s for o in ops) + other_s
    flops = sum(o.flops for o in ops)

    ar: AllReduce | None = None
    exposed = 0.0
    topo_label = None
    if chips > 1:
        link = chip.require_link()
        topo = topology or default_topology(chip.topology_kind, chips)
        topo_label = topo.label()
        ar = allreduce(params * prec.GRADIENT_BYTES, topo, link, concurrent=concurrent)
        backward = sum(o.time_s for o in ops if o.phase != "fwd")
        _, exposed = step_time(lower_s, backward, ar, overlap=overlap)
    step = lower_s + exposed
    gemm_bound = "compute" if compute >= memory_s else "memory"
    bottleneck = "interconnect" if exposed > max(compute, memory_s) else gemm_bound
    input_s = None
    if loader_examples_per_s is not None:
        step, input_s, starved = input_step(
            step, fam.examples_per_step(cfg), loader_examples_per_s, loader_overlapped
        )
        bottleneck = "input" if starved else bottleneck
    spec = RunSpec(family, dict(cfg.__dict__), _run_options(precision, optimizer, policy))
    cap = mem.capacity(spec, chip.memory_bytes)
    return Prediction(
        kind=KIND,
        family=family,
        config=dict(cfg.__dict__),
        platform=chip.id,
        origin=chip.origin,
        precision=precision,
        chips=chips,
        topology=topo_label,
        flops_per_chip=flops,
        compute_s=compute,
        memory_s=memory_s,
        step_lower_s=lower_s,
        step_upper_s=upper_s + (0.0 if ar is None else ar.time_s),
        allreduce_s=None if ar is None else ar.time_s,
        exposed_comm_s=exposed,
        predicted_step_s=step,
        utilization=flops / (step * peak),
        bottleneck=bottleneck,
        examples_per_s=fam.examples_per_step(cfg) * chips / step,
        memory=cap.as_dict(),
        ops=ops,
        input_s=input_s,
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
) -> list[dict[str, Any]]:
    """Weak-scaling curve: per-chip batch fixed, chips 1, 2, 4 … ``max_chips``; efficiency is
    the one-chip step time over the N-chip step time (1.0 = perfect linear speedup)."""
    from paradnn.sim.interconnect import bisection_bandwidth, chip_counts

    int_at_least("--scaling", max_chips, 1, 1 << 20)
    rows = []
    base = None
    for n in chip_counts(max_chips):
        p = predict(
            family,
            config,
            chip,
            precision,
            optimizer=optimizer,
            chips=n,
            overlap=overlap,
            concurrent=concurrent,
        )
        base = base or p.predicted_step_s
        topo = default_topology(chip.topology_kind, n) if n > 1 else None
        rows.append(
            {
                "kind": KIND,
                "chips": n,
                "topology": p.topology,
                "predicted_step_s": p.predicted_step_s,
                "allreduce_s": p.allreduce_s,
                "exposed_comm_s": p.exposed_comm_s,
                "speedup": n * base / p.predicted_step_s,
                "efficiency": base / p.predicted_step_s,
                "bisection_bytes_per_s": (
                    None if topo is None else bisection_bandwidth(topo, chip.require_link())
                ),
            }
        )
    return rows
