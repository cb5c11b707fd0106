"""The step-time model: a training step as the sum of visible terms, with a device's few physical
parameters (`StepParams`) that `sim.fit` can fit from a measured sweep (docs/simulate.md).

Per lowered GEMM (`families.lowering`), repeated ``count`` times:

    t = max(compute, memory) + count × kernel_overhead_s
    compute = FLOPs ÷ (peak × E_prec × q_tile × q_wave × k ÷ (k + k_half))
    memory  = bytes ÷ (bandwidth × bw_efficiency)

* ``E_prec`` — the best fraction of the peak a large GEMM reaches at that precision;
* ``q_tile``, ``q_wave`` — tile quantization (m, n rounded up to the kernel's tile) and wave
  quantization (tiles rounded up to a multiple of the device's parallel units): small and badly
  shaped GEMMs waste part of the machine; on a chip with systolic arrays the SCALE-Sim cycle
  count (`systolic`) plays both roles;
* ``k ÷ (k + k_half)`` — the pipeline fill and epilogue of a GEMM with a short reduction: a fixed
  cost per output element, equivalent to ``k_half`` extra steps of the reduction loop.

Where a backend would use a fast convolution (a 3×3, stride-1 convolution; Winograd F(2×2,3×3):
``fast_conv`` × fewer multiplies, and the transformed input and output tiles written and read
once more), the cheaper of the two algorithms is taken, as cuDNN's heuristics do.

Beside the GEMMs: elementwise traffic around each GEMM output (`traffic.ELEMENTWISE_PASSES`) and
its kernels; the optimizer's traffic and kernels (one per parameter tensor); under a low precision
the fp32 master weights (the weights cast down and the gradients cast up every step: 12 bytes a
parameter); a host/input term (``host_s_per_step + host_s_per_example × examples``; zero until a
measured infeed feeds it); and the data-parallel all-reduce of the fp32 gradients: α–β over the
links, its HBM traffic (every byte sent is read, received and reduced: 3 bytes of HBM traffic a
byte sent), and a synchronisation latency per gradient tensor. On a chip with several cores
(TPU v2/v3: two) the per-chip batch is split across the cores, each core a replica.

Every term is a prediction (``kind = "prediction"``); parameters say where they came from
(``StepParams.source``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.families.lowering import Op, lower
from paradnn.families.shapes import Conv2d, Gemm, Recurrent
from paradnn.precisions import itemsize
from paradnn.sim import rounding as prec
from paradnn.sim import traffic as mem
from paradnn.sim.chip import Chip
from paradnn.sim.interconnect import MAX_CHIPS, Topology, allreduce, default_topology
from paradnn.sim.stepparams import StepParams, defaults
from paradnn.sim.systolic import Arrays, array_cycles
from paradnn.validate import int_at_least

KIND = "prediction"
MASTER_BYTES_PER_PARAM = 12  # fp32 → low cast of the weight (4 + 2), low → fp32 gradient (2 + 4)
HBM_BYTES_PER_SENT_BYTE = 3  # all-reduce: read to send, write received, read both to reduce
SPLIT_K_MIN = 256  # shortest reduction chunk a split-K GEMM gives one unit
WINOGRAD_TILE_EXPANSION = 4  # F(2×2,3×3): a 4×4 transformed tile per 2×2 outputs
# Elementwise kernels launched per forward GEMM output, forward and backward (an assumption, like
# the passes: FC bias + ReLU and their gradients; CNN BatchNorm + ReLU (+ residual) and theirs;
# RNN gate nonlinearities per step are inside the cell's fused call).
ELEMENTWISE_KERNELS = {"gemm": 4, "conv2d": 6, "recurrent": 4, "attention": 4}
OPTIMIZER_KERNELS = {"sgd": 1, "momentum": 2, "rmsprop": 4}  # per parameter tensor, unfused


def params_of(chip: Chip) -> StepParams:
    return chip.step if chip.step is not None else defaults(chip.platform)


# ---------------------------------------------------------------------------------------------
# The plan: what a config costs, independent of the fitted parameters, as arrays.


@dataclass(frozen=True)
class Plan:
    """Per GEMM (arrays of equal length): seconds at the peak after quantization, reduction depth,
    bytes, kernels; the Winograd alternative (NaN when not eligible); and the non-GEMM bytes and
    kernels of the step. `evaluate` turns it into times with any `StepParams`."""

    layer: tuple[str, ...]
    phase: tuple[str, ...]
    shape: tuple[tuple[int, int, int], ...]
    peak_s: np.ndarray  # FLOPs ÷ (peak × q_tile × q_wave), or systolic cycles ÷ clock
    quant: np.ndarray  # q_tile × q_wave (systolic: useful MACs ÷ PE-cycles)
    fallback: np.ndarray  # bool: a 16-bit GEMM off the tensor cores (misaligned shape)
    k: np.ndarray
    bytes: np.ndarray
    kernels: np.ndarray
    fast_peak_s: np.ndarray
    fast_bytes: np.ndarray
    elementwise_bytes: float
    elementwise_kernels: float
    optimizer_bytes: float
    optimizer_kernels: float
    master_bytes: float
    master_kernels: float
    examples: int
    flops: int
    precision: str
    tensors: int  # parameter tensors (weights and biases), one all-reduce each


def _quantization(m: int, n: int, k: int, tile: tuple[int, int], units: int | None) -> float:
    """q_tile × q_wave of an (m, n, k) GEMM; with fewer tiles than units the reduction is split
    (split-K, as cuBLAS does) into chunks of at least `SPLIT_K_MIN` to fill the machine."""
    tm, tn = tile
    tiles_m, tiles_n = -(-m // tm), -(-n // tn)
    q = (m * n) / (tiles_m * tm * tiles_n * tn)
    if units:
        tiles = tiles_m * tiles_n
        if tiles < units:
            tiles *= max(1, min(units // tiles, k // SPLIT_K_MIN))
        q *= tiles / (-(-tiles // units) * units)
    return q


def _off_tensor_cores(op: Op, chip: Chip, precision: str, sp: StepParams) -> bool:
    a = sp.tc_align
    if a <= 1 or chip.platform.kind != "gpu" or precision not in ("fp16", "bf16"):
        return False
    if chip.platform.peak("fp32") is None:
        return False
    return bool(op.m % a or op.n % a or op.k % a)


def _op_peak(op: Op, chip: Chip, precision: str, sp: StepParams) -> tuple[float, float, bool]:
    arrays: Arrays | None = chip.arrays
    if arrays is not None:
        cycles = array_cycles(op.m, op.n, op.k, arrays, chip.dataflow) * op.count
        return cycles / chip.clock(precision), op.macs / (cycles * arrays.macs), False
    if _off_tensor_cores(op, chip, precision, sp):
        q = _quantization(op.m, op.n, op.k, sp.tile_of("fp32"), sp.units)
        rate = min(chip.peak(precision), chip.peak("fp32") * sp.tc_fallback)
        return op.flops / (rate * q), q, True
    q = _quantization(op.m, op.n, op.k, sp.tile_of(precision), sp.units)
    return op.flops / (chip.peak(precision) * q), q, False


def _fast_eligible(s: Any) -> bool:
    return isinstance(s, Conv2d) and s.kernel == 3 and s.stride == 1 and s.groups == 1


def build_plan(
    family: str, cfg: Any, chip: Chip, precision: str, optimizer: str, sp: StepParams
) -> Plan:
    fam = families.get(family)
    size = itemsize(precision)
    shapes = fam.shapes(cfg)
    layer, phase, shp = [], [], []
    peak_s, quant, ks, nbytes, kern, fpeak, fbytes = [], [], [], [], [], [], []
    fallback = []
    ew_bytes = ew_kernels = 0.0
    tensors = 0
    flops = 0
    for s in shapes:
        fast = _fast_eligible(s) and sp.fast_conv > 1.0
        for op in lower(s):
            t, q, off = _op_peak(op, chip, precision, sp)
            fallback.append(off)
            layer.append(op.layer)
            phase.append(op.phase)
            shp.append((op.m, op.n, op.k))
            peak_s.append(t)
            quant.append(q)
            ks.append(op.k)
            b = mem.op_bytes(op, size)
            nbytes.append(b)
            kern.append(op.count)
            flops += op.flops
            if fast:
                maps = s.batch * (s.in_ch + s.out_ch) * s.out_h * s.out_w
                fpeak.append(t / sp.fast_conv)
                fbytes.append(b + 2 * WINOGRAD_TILE_EXPANSION * maps * size)
            else:
                fpeak.append(math.nan)
                fbytes.append(math.nan)
        if isinstance(s, Gemm):
            out = s.m * s.n
        elif isinstance(s, Conv2d):
            out = s.batch * s.out_ch * s.out_h * s.out_w
        elif isinstance(s, Recurrent):
            out = s.seq * s.batch * s.gates * s.hidden
        else:  # pragma: no cover - the Shape union is closed
            continue
        ew_bytes += mem.elementwise_bytes(out, s.kind, size)
        ew_kernels += ELEMENTWISE_KERNELS.get(s.kind, 4)
        if s.weights:
            tensors += 2 if s.kind != "attention" else 0
    params = fam.params(cfg)
    low = precision != "fp32" and precision != "tf32"
    fused = chip.platform.kind == "tpu"  # XLA fuses the optimizer and the casts
    opt_bytes = float(mem.optimizer_bytes(params, optimizer))  # refuses an unknown optimizer
    opt_kernels = 0.0 if fused else float(tensors * OPTIMIZER_KERNELS[optimizer])
    return Plan(
        layer=tuple(layer),
        phase=tuple(phase),
        shape=tuple(shp),
        peak_s=np.array(peak_s, dtype=float),
        quant=np.array(quant, dtype=float),
        fallback=np.array(fallback, dtype=bool),
        k=np.array(ks, dtype=float),
        bytes=np.array(nbytes, dtype=float),
        kernels=np.array(kern, dtype=float),
        fast_peak_s=np.array(fpeak, dtype=float),
        fast_bytes=np.array(fbytes, dtype=float),
        elementwise_bytes=float(ew_bytes),
        elementwise_kernels=0.0 if fused else ew_kernels,
        optimizer_bytes=opt_bytes,
        optimizer_kernels=opt_kernels,
        master_bytes=float(MASTER_BYTES_PER_PARAM * params) if low else 0.0,
        master_kernels=0.0 if (fused or not low) else float(2 * tensors),
        examples=fam.examples_per_step(cfg),
        flops=flops,
        precision=precision,
        tensors=max(1, tensors),
    )


@dataclass(frozen=True)
class Terms:
    """The step's terms in seconds (one core or chip); `gemm_s` includes nothing but GEMMs."""

    gemm_compute_s: float
    gemm_memory_s: float
    gemm_s: float  # Σ max(compute, memory) per GEMM, the faster algorithm where there is a choice
    kernels: float
    overhead_s: float  # kernels × kernel_overhead_s
    elementwise_s: float
    optimizer_s: float
    master_weights_s: float
    host_s: float
    fast_conv_ops: int

    @property
    def total_s(self) -> float:
        return (
            self.gemm_s
            + self.overhead_s
            + self.elementwise_s
            + self.optimizer_s
            + self.master_weights_s
            + self.host_s
        )


def evaluate(plan: Plan, sp: StepParams, bandwidth: float) -> Terms:
    """The plan's terms with parameters ``sp`` on a memory of ``bandwidth`` bytes/s."""
    best = np.where(plan.fallback, sp.eff("fp32"), sp.eff(plan.precision))
    eff = best * plan.k / (plan.k + sp.k_half)
    bw = bandwidth * sp.bw_efficiency
    compute = plan.peak_s / eff
    memory = plan.bytes / bw
    direct = np.maximum(compute, memory)
    fast_c = plan.fast_peak_s / eff
    fast_m = plan.fast_bytes / bw
    fast = np.maximum(fast_c, fast_m)
    use_fast = np.isfinite(fast) & (fast < direct)
    t = np.where(use_fast, fast, direct)
    kernels = (
        float(plan.kernels.sum())
        + plan.elementwise_kernels
        + plan.optimizer_kernels
        + plan.master_kernels
    )
    return Terms(
        gemm_compute_s=float(np.where(use_fast, fast_c, compute).sum()),
        gemm_memory_s=float(np.where(use_fast, fast_m, memory).sum()),
        gemm_s=float(t.sum()),
        kernels=kernels,
        overhead_s=kernels * sp.kernel_overhead_s,
        elementwise_s=plan.elementwise_bytes / bw,
        optimizer_s=plan.optimizer_bytes / bw,
        master_weights_s=plan.master_bytes / bw,
        host_s=sp.host_s_per_step + sp.host_s_per_example * plan.examples,
        fast_conv_ops=int(use_fast.sum()),
    )


# ---------------------------------------------------------------------------------------------
# Whole steps, one or many chips.


def core_chip(chip: Chip) -> tuple[Chip, int]:
    """(one core of ``chip``, cores): a chip whose matrix units sit in several cores is, for the
    step, that many replicas, each with its share of the peak and of the memory bandwidth."""
    mxu = chip.platform.mxu
    if mxu is None or mxu.cores <= 1:
        return chip, 1
    c = mxu.cores
    plat = replace(
        chip.platform,
        mxu=replace(mxu, cores=1),
        peak_dense={k: v / c for k, v in chip.platform.peak_dense.items()},
        mem_bandwidth=chip.platform.mem_bandwidth / c,
        memory_bytes=None if chip.memory_bytes is None else chip.memory_bytes / c,
    )
    return replace(chip, platform=plat), c


@dataclass(frozen=True)
class StepTime:
    kind: str
    family: str
    config: dict[str, Any]
    platform: str
    origin: str
    params_source: str
    precision: str
    chips: int
    cores_per_chip: int
    batch_per_core: int | None
    topology: str | None
    terms: Terms
    allreduce_link_s: float
    allreduce_hbm_s: float
    allreduce_latency_s: float
    comm_s: float
    predicted_step_s: float
    flops_per_chip: int
    utilization: float
    examples_per_s: float
    bottleneck: str
    plan: Plan = field(repr=False)
    input_s: float | None = None  # the measured infeed's seconds per step (None: not given)

    def row(self) -> dict[str, Any]:
        t = self.terms
        return {
            "kind": self.kind,
            "family": self.family,
            "config": self.config,
            "platform": self.platform,
            "precision": self.precision,
            "chips": self.chips,
            "topology": self.topology,
            "predicted_step_s": self.predicted_step_s,
            "gemm_s": t.gemm_s,
            "gemm_compute_s": t.gemm_compute_s,
            "gemm_memory_s": t.gemm_memory_s,
            "kernels": t.kernels,
            "overhead_s": t.overhead_s,
            "elementwise_s": t.elementwise_s,
            "optimizer_s": t.optimizer_s,
            "master_weights_s": t.master_weights_s,
            "host_s": t.host_s,
            "input_s": self.input_s,
            "comm_s": self.comm_s,
            "allreduce_link_s": self.allreduce_link_s,
            "allreduce_hbm_s": self.allreduce_hbm_s,
            "allreduce_latency_s": self.allreduce_latency_s,
            "fast_conv_ops": t.fast_conv_ops,
            "cores_per_chip": self.cores_per_chip,
            "batch_per_core": self.batch_per_core,
            "utilization": self.utilization,
            "bottleneck": self.bottleneck,
            "examples_per_s": self.examples_per_s,
            "flops_per_chip": self.flops_per_chip,
            "origin": self.origin,
            "params_source": self.params_source,
        }


def _split_batch(fam: Any, cfg: Any, cores: int) -> tuple[Any, int | None]:
    batch = getattr(cfg, "batch", None)
    if cores <= 1 or not isinstance(batch, int) or batch % cores:
        return cfg, batch if cores <= 1 else None
    try:
        return fam.config({**cfg.__dict__, "batch": batch // cores}), batch // cores
    except ConfigError:  # e.g. a CNN whose BatchNorm needs two values per core
        return cfg, None


def predict_step(
    family: str,
    config: Mapping[str, Any] | Any,
    chip: Chip,
    precision: str = "bf16",
    *,
    optimizer: str = "rmsprop",
    chips: int = 1,
    topology: Topology | None = None,
    params: StepParams | None = None,
    loader_examples_per_s: float | None = None,
    loader_overlapped: bool = True,
) -> StepTime:
    """The predicted training step, term by term. ``config`` is the per-chip config (weak
    scaling, as `model.predict`); a multi-core chip splits its batch across its cores. With
    ``loader_examples_per_s`` (a host loader's measured rate per chip, docs/infeed.md) the
    infeed is fed in as `model.input_step` does: the slower of step and infeed when the loader
    prefetches (``loader_overlapped``), else their sum; ``input_s`` says how long it needs."""
    fam = families.get(family)
    cfg = config if isinstance(config, fam.config_cls) else fam.config(dict(config))
    int_at_least("--chips", chips, 1, MAX_CHIPS)
    if topology is not None and topology.chips != chips:
        raise ConfigError(
            "--topology", topology.label(), f"has {topology.chips} chips but --chips is {chips}"
        )
    chip.peak(precision)
    sp = params or params_of(chip)
    core, cores = core_chip(chip)
    core_cfg, per_core = _split_batch(fam, cfg, cores)
    if core_cfg is cfg and cores > 1:  # batch not divisible: the chip as one, folds split
        core, cores = chip, 1
    plan = build_plan(family, core_cfg, core, precision, optimizer, sp)
    terms = evaluate(plan, sp, core.mem_bandwidth)
    link_s = hbm_s = lat_s = 0.0
    topo_label = None
    grad = fam.params(cfg) * prec.GRADIENT_BYTES
    bw = core.mem_bandwidth * sp.bw_efficiency
    replicas = chips * cores
    if replicas > 1:
        sync = sp.sync_latency_s * plan.tensors
        sent = 0.0
        if chips > 1:
            link = chip.require_link()
            topo = topology or default_topology(chip.topology_kind, chips)
            topo_label = topo.label()
            ar = allreduce(grad, topo, link)
            link_s = ar.bandwidth_s
            lat_s += ar.latency_s * plan.tensors
            sent += ar.bytes_sent_per_chip
        if cores > 1:  # the cores of a chip reduce through its memory
            sent += 2 * (cores - 1) / cores * grad
        hbm_s = HBM_BYTES_PER_SENT_BYTE * sent / (bw * cores)
        lat_s += sync
    comm = max(link_s, hbm_s) + lat_s
    step = terms.total_s + comm
    input_s = None
    starved = False
    if loader_examples_per_s is not None:
        from paradnn.sim.model import input_step

        step, input_s, starved = input_step(
            step, fam.examples_per_step(cfg), loader_examples_per_s, loader_overlapped
        )
    flops = plan.flops * cores
    util = flops / (step * chip.peak(precision))
    parts = {
        "compute": terms.gemm_compute_s,
        "memory": terms.gemm_memory_s + terms.elementwise_s + terms.optimizer_s,
        "overhead": terms.overhead_s,
        "host": terms.host_s,
        "interconnect": comm,
    }
    if starved:
        parts["input"] = float("inf")
    return StepTime(
        kind=KIND,
        family=family,
        config=dict(cfg.__dict__),
        platform=chip.id,
        origin=chip.origin,
        params_source=sp.source,
        precision=precision,
        chips=chips,
        cores_per_chip=cores,
        batch_per_core=per_core,
        topology=topo_label,
        terms=terms,
        allreduce_link_s=link_s,
        allreduce_hbm_s=hbm_s,
        allreduce_latency_s=lat_s,
        comm_s=comm,
        predicted_step_s=step,
        flops_per_chip=flops,
        utilization=util,
        examples_per_s=fam.examples_per_step(cfg) * chips / step,
        bottleneck=max(parts, key=lambda k: parts[k]),
        plan=plan,
        input_s=input_s,
    )


def multichip_overhead(
    family: str,
    config: Mapping[str, Any],
    chip: Chip,
    precision: str,
    chips: int,
    *,
    optimizer: str = "rmsprop",
    topology: Topology | None = None,
    params: StepParams | None = None,
) -> float:
    """Share of the ``chips``-chip step that one chip's step does not have (weak scaling):
    ``(t_N − t_1) ÷ t_N``."""
    one = predict_step(family, config, chip, precision, optimizer=optimizer, params=params)
    many = predict_step(
        family,
        config,
        chip,
        precision,
        optimizer=optimizer,
        chips=chips,
        topology=topology,
        params=params,
    )
    return (many.predicted_step_s - one.predicted_step_s) / many.predicted_step_s
