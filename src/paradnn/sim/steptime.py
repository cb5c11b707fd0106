"""The step-time model: a training step as the sum of visible terms, with a device's few physical
parameters (`StepParams`) that `sim.fit` can fit from a measured sweep (docs/simulate.md).

Per lowered GEMM (`families.lowering`), repeated ``count`` times:

    t = max(compute, memory) + count × kernel_overhead_s
    compute = FLOPs ÷ (peak × E_prec × q_tile × q_wave × k ÷ (k + k_half))
    memory  = bytes ÷ (bandwidth × bw_efficiency)

* ``E_prec`` — the best fraction of the peak a large GEMM reaches at that precision;
* ``q_tile``, ``q_wave`` — tile quantization (m, n rounded up to the kernel's tile) and wave
  quantization (tiles rounded up to a multiple of the device's parallel units): small and badly
  shaped GEMMs waste part of the machine. On a GPU the tile is the one a library would choose
  among its candidates for the shape (`gemmlib.choose_tile`, times the tile's own efficiency),
  and a tensor-core GEMM whose rows are not 16-byte aligned pays `gemmlib`'s graded alignment
  and padding penalties (``tc_rule = "graded"``, today's libraries) or leaves the tensor cores
  (``"strict"``, before CUDA 11); on a chip with systolic arrays the SCALE-Sim cycle count
  (`systolic`) plays these roles;
* ``k ÷ (k + k_half)`` — the pipeline fill and epilogue of a GEMM with a short reduction: a fixed
  cost per output element, equivalent to ``k_half`` extra steps of the reduction loop.

A convolution's GEMM runs at ``conv_efficiency`` (per precision) × the GEMM rate. Where a chip's
parameters offer a fast convolution (``fast_conv`` > 1: a 3×3, stride-1 convolution as Winograd
F(2×2,3×3), ``fast_conv`` × fewer multiplies, the transformed input and output tiles written and
read once more), the cheaper of the two algorithms is taken, as cuDNN's heuristics do; GPU
defaults offer none (the measured conv rate decides). Under a tensor-core precision with NCHW
activations (``conv_layout``) cuDNN transposes each convolution's input and output to NHWC and
back, forward and backward: memory-bound passes added to the layer's elementwise work. cuDNN's
recurrent layers run one pointwise kernel per time step forward and one backward besides their
GEMMs (`RECURRENT_STEP_KERNELS`).

Beside the GEMMs: elementwise traffic around each GEMM output (`traffic.ELEMENTWISE_PASSES`) and
its kernels; the optimizer's traffic and kernels (one per parameter tensor; its words per
parameter one pass when fused, every elementwise op's reads and writes under torch's loop and
foreach implementations, `optimizers.Optimizer.unfused_words_per_param`); under a low
precision the fp32 master weights (the weights cast down and the gradients cast up every step: 12
bytes a parameter); a host/input term (``host_s_per_step + host_s_per_example × examples``; zero
until a measured infeed feeds it); and the data-parallel all-reduce of the fp32 gradients: α–β
over the links, its HBM traffic (every byte sent is read, received and reduced: 3 bytes of HBM
traffic a byte sent), and a synchronisation latency per gradient tensor. On a chip with several
cores (TPU v2/v3: two) the per-chip batch is split across the cores, each core a replica.
On a TPU every layer's tensors are padded to XLA's 8 × 128 tiles (`xlalayout`), and a float32
model keeps fp32 tensors with the MXU at its default one-pass bf16 (policy ``fp32-storage``).

Every term is a prediction (``kind = "prediction"``); parameters say where they came from
(``StepParams.source``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from paradnn import families, optimizers
from paradnn.errors import ConfigError
from paradnn.families.lowering import Op, lower
from paradnn.families.shapes import Conv2d, Gemm, Recurrent
from paradnn.precisions import itemsize
from paradnn.sim import gemmlib, hostprofile, xlalayout
from paradnn.sim import rounding as prec
from paradnn.sim import timeline as tl
from paradnn.sim import traffic as mem
from paradnn.sim.chip import Chip
from paradnn.sim.hostprofile import OPTIMIZER_IMPLS, HostProfile
from paradnn.sim.interconnect import MAX_CHIPS, Topology, allreduce, default_topology
from paradnn.sim.stepparams import StepParams, defaults
from paradnn.sim.systolic import Arrays, array_cycles
from paradnn.validate import int_at_least, one_of

KIND = "prediction"
MASTER_BYTES_PER_PARAM = 12  # fp32 → low cast of the weight (4 + 2), low → fp32 gradient (2 + 4)
HBM_BYTES_PER_SENT_BYTE = 3  # all-reduce: read to send, write received, read both to reduce
SPLIT_K_MIN = gemmlib.SPLIT_K_MIN  # shortest reduction chunk a split-K GEMM gives one unit
WINOGRAD_TILE_EXPANSION = 4  # F(2×2,3×3): a 4×4 transformed tile per 2×2 outputs
# Elementwise kernels launched per forward GEMM output, forward and backward (an assumption, like
# the passes: FC bias + ReLU and their gradients; CNN BatchNorm + ReLU (+ residual) and theirs;
# RNN gate nonlinearities per step are inside the cell's fused call).
ELEMENTWISE_KERNELS = {"gemm": 4, "conv2d": 6, "recurrent": 4, "attention": 4}
OPTIMIZER_KERNELS = {"sgd": 1, "momentum": 2, "rmsprop": 4}  # per parameter tensor, unfused
# cuDNN's recurrent layers (the standard algorithm PyTorch calls): per time step, one pointwise
# kernel forward (gate nonlinearities and the state update) and one backward, besides the GEMMs.
RECURRENT_STEP_KERNELS = 2
# cuDNN's NCHW ↔ NHWC transposes around a tensor-core convolution: the input and the output of
# each GEMM phase (forward: x and y; data-gradient: dy and dx; weight-gradient: x and dy), each
# read and written once.
TRANSPOSE_PASSES_PER_PHASE = 2
# 16-bit: fp32 master weights (autocast), all 16-bit (.half()), or (bf16 on a TPU) every tensor
# in fp32 with the MXU at its default precision, one bf16 pass (Cloud TPU docs, "bfloat16": "By
# default, TPUs perform matrix multiplication operations with bfloat16 values and accumulations
# with IEEE float32 values"): what a float32 TensorFlow model trains as on a TPU.
POLICIES = ("mixed", "pure", "fp32-storage")


def optimizer_kernels(optimizer: str) -> int:
    """Kernels per parameter tensor of the unfused update; an optimizer this table does not know
    yet (`paradnn.optimizers.TABLE` grows): one, plus a read-modify-write per state copy."""
    got = OPTIMIZER_KERNELS.get(optimizer)
    return got if got is not None else 1 + 2 * optimizers.get(optimizer).state_copies


def device_type(chip: Chip) -> str:
    """The host profile's device kind for a chip: cpu, or cuda for anything eager launches to."""
    return "cpu" if chip.platform.kind == "cpu" else "cuda"


def default_impl(chip: Chip) -> str:
    """torch.optim's default: foreach on CUDA tensors, the per-parameter loop on a CPU (XLA
    fuses the update on a TPU)."""
    return {"cpu": "loop", "tpu": "fused"}.get(chip.platform.kind, "foreach")


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
    # Per GEMM its layer's index, and per layer its elementwise bytes and kernels and the
    # working set of its output (the cache term); the host's side of the step (`timeline`).
    # None (op micro-benchmarks, `opfit`): the GEMMs alone, no host timeline.
    group: np.ndarray | None = None
    layer_ew_bytes: np.ndarray | None = None
    layer_ew_kernels: np.ndarray | None = None
    layer_out_bytes: np.ndarray | None = None
    host: tl.HostPlan | None = None
    conv: np.ndarray | None = None  # bool per GEMM: a convolution's (``conv_efficiency``)
    params: int = 0
    policy: str = "mixed"
    # The optimizer's passes beyond one (loop and foreach run the update op by op) and the
    # working set they revisit: the largest tensor's state under the loop, the whole model's
    # under foreach (each op over every tensor before the next op).
    optimizer_extra_bytes: float = 0.0
    optimizer_extra_set: float = 0.0


def _quantization(m: int, n: int, k: int, tile: tuple[int, int], units: int | None) -> float:
    """q_tile × q_wave of an (m, n, k) GEMM on one tile (`gemmlib.quantization`: with fewer
    tiles than units the reduction is split, as cuBLAS does)."""
    q_tile, q_wave, _ = gemmlib.quantization(m, n, k, tile, units)
    return q_tile * q_wave


def _off_tensor_cores(op: Op, chip: Chip, precision: str, sp: StepParams) -> bool:
    """The strict (pre-CUDA 11) rule: a 16-bit GEMM with a dimension not a multiple of
    ``tc_align`` runs on the vector units."""
    a = sp.tc_align
    if sp.tc_rule != "strict" or a <= 1 or chip.platform.kind != "gpu":
        return False
    if precision not in ("fp16", "bf16") or chip.platform.peak("fp32") is None:
        return False
    return bool(op.m % a or op.n % a or op.k % a)


def tensor_core_alignment(op: Op, chip: Chip, precision: str, sp: StepParams) -> float:
    """Today's graded rule (`gemmlib`): a GEMM on a GPU's matrix units at its padding
    efficiency (the reduction padded to whole 16-byte vectors) × its alignment efficiency (the
    byte alignment its rows have); 1 off the matrix units, under the strict rule, or elsewhere."""
    plat = chip.platform
    if sp.tc_rule != "graded" or plat.kind != "gpu":
        return 1.0
    if not gemmlib.on_matrix_units(plat.peak(precision), plat.peak("fp32")):
        return 1.0
    size = itemsize(precision)
    a = gemmlib.alignment_bytes(gemmlib.row_dims(op.phase, op.m, op.n, op.k), size)
    granule = max(1, gemmlib.VECTOR_BYTES // size)
    eff = gemmlib.alignment_efficiency(
        a, exponent=sp.align_exponent, narrow_kernel=sp.narrow_kernel
    )
    return gemmlib.pad_efficiency(op.k, granule) * eff


def channel_pad_efficiency(conv: Conv2d, align: int) -> float:
    """The useful share of a convolution's tensor-core GEMM when cuDNN pads its input and
    output channels to multiples of ``align`` (cuDNN 7 Developer Guide §2.8.4.3, "Padding":
    for packed NCHW data whose channel dimension is not a multiple of 8, the library pads the
    tensors as needed to enable Tensor Core operations)."""
    if align <= 1:
        return 1.0
    pad = lambda c: align * math.ceil(c / align)  # noqa: E731 - one line, used twice
    cin = conv.in_ch // conv.groups
    cout = conv.out_ch // conv.groups
    return (cin / pad(cin)) * (cout / pad(cout))


def _op_peak(
    op: Op, chip: Chip, precision: str, sp: StepParams, conv: Conv2d | None = None
) -> tuple[float, float, bool]:
    """(seconds at the peak after quantization, that quantization, off the tensor cores).
    ``conv``: the convolution ``op`` lowers, if it is one (the strict rule pads its channels
    instead of leaving the tensor cores, where that is the faster algorithm)."""
    arrays: Arrays | None = chip.arrays
    if arrays is not None:
        cycles = array_cycles(op.m, op.n, op.k, arrays, chip.dataflow) * op.count
        return cycles / chip.clock(precision), op.macs / (cycles * arrays.macs), False
    if _off_tensor_cores(op, chip, precision, sp):
        q = gemmlib.choose_tile(op.m, op.n, op.k, sp.tiles_of("fp32"), sp.units).quant
        rate = min(chip.peak(precision), chip.peak("fp32") * sp.tc_fallback)
        off = op.flops / (rate * q)
        if conv is None:
            return off, q, True
        # cuDNN: the tensor cores on channels padded to the multiple, or the vector units,
        # whichever is faster at the parameters' efficiencies (an autotuner's choice: TF's
        # default, cudnn.benchmark in PyTorch's ImageNet scripts)
        q_tc = gemmlib.choose_tile(op.m, op.n, op.k, sp.tiles_of(precision), sp.units).quant
        q_tc *= channel_pad_efficiency(conv, sp.tc_align)
        on = op.flops / (chip.peak(precision) * q_tc)
        e_on = sp.eff(precision) * sp.conv_eff(precision)
        e_off = sp.eff("fp32") * sp.conv_eff("fp32")
        if on / e_on <= off / e_off:
            return on, q_tc, False
        return off, q, True
    q = gemmlib.choose_tile(op.m, op.n, op.k, sp.tiles_of(precision), sp.units).quant
    q *= tensor_core_alignment(op, chip, precision, sp)
    return op.flops / (chip.peak(precision) * q), q, False


def xla_padding(s: Any) -> tuple[float, float]:
    """(a layer's tensors, its output): padded ÷ real size under XLA's 8 × 128 tiling of TPU
    tensors (`xlalayout`), with the layer's rows its per-core batch (a convolution's or a
    recurrent step's) or a linear layer's rows, its features the channels or units. The
    tensors' factor weighs input and output by their sizes; the weights are taken as padded
    alike (a convolution's [.., C_in, C_out] kernel tiles the same channel dimensions)."""
    if isinstance(s, Conv2d):
        rows, f_in, f_out = s.batch, s.in_ch, s.out_ch
        n_in = s.batch * s.in_ch * s.in_h * s.in_w
        n_out = s.batch * s.out_ch * s.out_h * s.out_w
    elif isinstance(s, Recurrent):
        rows, f_in, f_out = s.batch, s.input, s.gates * s.hidden
        n_in, n_out = s.seq * s.batch * s.input, s.seq * s.batch * f_out
    else:
        rows, f_in, f_out = s.m, s.k, s.n
        n_in, n_out = s.m * s.k, s.m * s.n
    a, b = xlalayout.factor(rows, f_in), xlalayout.factor(rows, f_out)
    return (n_in * a + n_out * b) / (n_in + n_out), b


def _fast_eligible(s: Any) -> bool:
    return isinstance(s, Conv2d) and s.kernel == 3 and s.stride == 1 and s.groups == 1


def build_plan(
    family: str,
    cfg: Any,
    chip: Chip,
    precision: str,
    optimizer: str,
    sp: StepParams,
    *,
    host: HostProfile | None = None,
    policy: str = "mixed",
    optimizer_impl: str | None = None,
) -> Plan:
    """The step's GEMMs, its non-GEMM traffic and kernels, and its host side. ``policy``: under
    a 16-bit precision, ``mixed`` keeps fp32 master weights and optimizer state (autocast), and
    ``pure`` keeps weights, gradients and optimizer state in the 16-bit type (``model.half()``):
    no master copy, the optimizer's words at the 16-bit itemsize; ``fp32-storage`` (bf16 on a
    TPU) keeps every tensor in fp32 and runs the MXU at its bf16 rate, as XLA does for float32.
    On a TPU every layer's tensors are padded to XLA's 8 × 128 tiles (`xlalayout`)."""
    one_of("policy", policy, POLICIES)
    storage32 = policy == "fp32-storage"
    if storage32 and (chip.arrays is None or precision != "bf16"):
        raise ConfigError(
            "policy",
            policy,
            "only under bf16 on a chip with systolic matrix units (a TPU: float32 tensors "
            "through its MXU's default one-pass bf16)",
        )
    impl = optimizer_impl or default_impl(chip)
    one_of("optimizer implementation", impl, OPTIMIZER_IMPLS)
    fam = families.get(family)
    size = 4 if storage32 else itemsize(precision)
    shapes = fam.shapes(cfg)
    layer, phase, shp = [], [], []
    peak_s, quant, ks, nbytes, kern, fpeak, fbytes = [], [], [], [], [], [], []
    fallback, group, conv = [], [], []
    l_ew_bytes, l_ew_kernels, l_out = [], [], []
    tensors = 0
    flops = 0
    cpu = chip.platform.kind == "cpu"
    gpu = chip.platform.kind == "gpu"
    xla = chip.platform.kind == "tpu"
    transposes = (
        gpu
        and sp.conv_layout == "nchw"
        and gemmlib.on_matrix_units(chip.platform.peak(precision), chip.platform.peak("fp32"))
    )
    for i, s in enumerate(shapes):
        fast = _fast_eligible(s) and sp.fast_conv > 1.0
        pad_tensors, pad_out = xla_padding(s) if xla else (1.0, 1.0)
        for op in lower(s):
            t, q, off = _op_peak(op, chip, precision, sp, s if isinstance(s, Conv2d) else None)
            fallback.append(off)
            group.append(i)
            conv.append(isinstance(s, Conv2d))
            layer.append(op.layer)
            phase.append(op.phase)
            shp.append((op.m, op.n, op.k))
            peak_s.append(t)
            quant.append(q)
            ks.append(op.k)
            b = mem.op_bytes(op, size) * pad_tensors
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
        ew_bytes = float(mem.elementwise_bytes(out, s.kind, size)) * pad_out
        ew_kernels = float(ELEMENTWISE_KERNELS.get(s.kind, 4))
        if transposes and isinstance(s, Conv2d):  # NCHW ↔ NHWC around each GEMM phase
            phases = 3 if s.input_grad else 2
            maps = s.batch * (s.in_ch * s.in_h * s.in_w + s.out_ch * s.out_h * s.out_w)
            ew_bytes += TRANSPOSE_PASSES_PER_PHASE * phases * maps * size
            ew_kernels += 2 * phases
        if gpu and isinstance(s, Recurrent):  # cuDNN's pointwise kernel per time step
            ew_kernels = max(ew_kernels, float(RECURRENT_STEP_KERNELS * s.seq))
        l_ew_bytes.append(ew_bytes)
        l_ew_kernels.append(ew_kernels)
        l_out.append(float(out * size * pad_out))
        if s.weights:
            tensors += 2 if s.kind != "attention" else 0
    params = fam.params(cfg)
    low = precision not in ("fp32", "tf32") and not storage32
    pure = low and policy == "pure"
    fused = chip.platform.kind == "tpu"  # XLA fuses the optimizer and the casts
    # the optimizer's words at fp32 (mixed: fp32 master weights and state) or at the 16-bit
    # itemsize (pure); `traffic` refuses an unknown optimizer
    opt_bytes = float(mem.optimizer_bytes(params, optimizer))
    extra = float(mem.optimizer_bytes(params, optimizer, "fused" if fused else impl)) - opt_bytes
    if pure:
        opt_bytes *= size / 4
        extra *= size / 4
    largest = max((s.weights for s in shapes if s.weights), default=0)
    per_param = opt_bytes / params if params else 0.0
    extra_set = extra if impl == "foreach" else per_param * largest
    per_tensor = optimizer_kernels(optimizer)
    launches = tl.optimizer_launches(impl, per_tensor, tensors, params)
    opt_kernels = 0.0 if fused else float(launches)
    casts = low and not pure and not fused  # autocast: the weights cast down every step
    scaler = casts and precision == "fp16" and not cpu  # GradScaler reads its inf check
    hp = _host_plan(shapes, chip, host, impl, cpu, fused, casts, scaler)
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
        elementwise_bytes=float(sum(l_ew_bytes)),
        elementwise_kernels=0.0 if fused else float(sum(l_ew_kernels)),
        optimizer_bytes=opt_bytes,
        optimizer_kernels=opt_kernels,
        master_bytes=float(MASTER_BYTES_PER_PARAM * params) if low and not pure else 0.0,
        master_kernels=float(2 * tensors) if casts else 0.0,
        examples=fam.examples_per_step(cfg),
        flops=flops,
        precision=precision,
        tensors=max(1, tensors),
        group=np.array(group, dtype=int),
        layer_ew_bytes=np.array(l_ew_bytes, dtype=float),
        layer_ew_kernels=np.array(l_ew_kernels, dtype=float) * (0.0 if fused else 1.0),
        layer_out_bytes=np.array(l_out, dtype=float),
        host=hp,
        conv=np.array(conv, dtype=bool),
        params=params,
        policy=policy,
        optimizer_extra_bytes=extra,
        optimizer_extra_set=extra_set,
    )


def _host_plan(
    shapes: list[Any],
    chip: Chip,
    host: HostProfile | None,
    impl: str,
    cpu: bool,
    fused: bool,
    casts: bool,
    scaler: bool,
) -> tl.HostPlan:
    """The host side of the step (`timeline.layer_counts`): what PyTorch's modules dispatch
    for the shapes, once a step and per layer; none under XLA (``fused``)."""
    c = tl.layer_counts(shapes, cpu)
    on = 0.0 if fused else 1.0
    return tl.HostPlan(
        profile=host or hostprofile.default(device_type(chip)),
        mode="compiled" if fused else ("serial" if cpu else "async"),
        fwd_ops=c["calls"] * on,
        bwd_nodes=c["nodes"] * on,
        step_ops=on * tl.STEP_OPS,
        step_nodes=on * tl.STEP_NODES,
        cast_ops=float(c["casts"].sum()) if casts else 0.0,
        optimizer_impl=impl,
        optimizer_tensors=0 if fused else int(c["tensors"].sum()),
        waits=1 if scaler else 0,
        rnn_calls=c["rnn_calls"] * on,
        rnn_ops=c["rnn_ops"] * on,
        rnn_nodes=c["rnn_nodes"] * on,
        scaler=scaler,
        inner_launches=c["inner"],
    )


@dataclass(frozen=True)
class Terms:
    """The step's terms in seconds (one core or chip); `gemm_s` includes nothing but GEMMs. The
    device terms add up to ``device_s``; ``host_dispatch_s`` is the host's own work;
    ``timeline_s`` is when both have finished (`timeline.simulate`): about the larger of the two
    on a GPU, their sum on a CPU."""

    gemm_compute_s: float
    gemm_memory_s: float
    gemm_s: float  # Σ max(compute, memory) per GEMM, the faster algorithm where there is a choice
    kernels: float
    overhead_s: float  # kernels × kernel_overhead_s
    elementwise_s: float
    optimizer_s: float
    master_weights_s: float
    host_s: float  # host/input parameters (host_s_per_step + per example): serial
    fast_conv_ops: int
    host_dispatch_s: float = 0.0
    device_s: float = 0.0
    timeline_s: float = 0.0
    exposed_host_s: float = 0.0
    waits: int = 0
    bound: str = "device"

    @property
    def total_s(self) -> float:
        return self.timeline_s + self.host_s


def _cached(nbytes: np.ndarray, working_set: np.ndarray, sp: StepParams) -> np.ndarray:
    """Bytes as DRAM-equivalent bytes: a kernel whose working set fits in the cache moves it at
    ``cache_gain`` × the bandwidth. A working set beyond the cache streams from DRAM (a cyclic
    pass larger than an LRU cache hits nothing): a large GEMM is unchanged."""
    if not sp.cache_bytes or sp.cache_gain <= 1.0:
        return nbytes
    return np.where(working_set <= sp.cache_bytes, nbytes / sp.cache_gain, nbytes)


def evaluate(plan: Plan, sp: StepParams, bandwidth: float) -> Terms:
    """The plan's terms with parameters ``sp`` on a memory of ``bandwidth`` bytes/s, and the
    host and device timelines they make."""
    best = np.where(plan.fallback, sp.eff("fp32"), sp.eff(plan.precision))
    conv_eff = sp.conv_eff(plan.precision)
    if plan.conv is not None and conv_eff != 1.0:
        best = best * np.where(plan.conv, conv_eff, 1.0)
    eff = best * plan.k / (plan.k + sp.k_half)
    bw = bandwidth * sp.bw_efficiency
    reps = np.maximum(plan.kernels, 1.0)
    compute = plan.peak_s / eff
    memory = _cached(plan.bytes, plan.bytes / reps, sp) / bw
    direct = np.maximum(compute, memory)
    fast_c = plan.fast_peak_s / eff
    fast_m = _cached(plan.fast_bytes, plan.fast_bytes / reps, sp) / bw
    fast = np.maximum(fast_c, fast_m)
    use_fast = np.isfinite(fast) & (fast < direct)
    t = np.where(use_fast, fast, direct)
    kernels = (
        float(plan.kernels.sum())
        + plan.elementwise_kernels
        + plan.optimizer_kernels
        + plan.master_kernels
    )
    ko = sp.kernel_overhead_s
    opt_s = (
        float(_cached(np.array([plan.optimizer_bytes]), np.array([plan.optimizer_bytes]), sp)[0])
        / bw
    )
    if plan.optimizer_extra_bytes:
        extra = np.array([plan.optimizer_extra_bytes])
        opt_s += float(_cached(extra, np.array([plan.optimizer_extra_set]), sp)[0]) / bw
    master_s = (
        float(_cached(np.array([plan.master_bytes]), np.array([plan.master_bytes]), sp)[0]) / bw
    )
    if plan.layer_ew_bytes is not None and plan.layer_out_bytes is not None:
        layer_ew = _cached(plan.layer_ew_bytes, plan.layer_out_bytes, sp) / bw
    else:
        layer_ew = np.array([plan.elementwise_bytes / bw])
    ew_s = float(layer_ew.sum())
    device = float(t.sum()) + kernels * ko + ew_s + opt_s + master_s
    host_params = sp.host_s_per_step + sp.host_s_per_example * plan.examples
    if plan.host is None or plan.group is None or plan.layer_ew_kernels is None:
        lines = tl.Timelines(0.0, device, device, 0, "async")
    else:
        lines = tl.simulate(*_items(plan, sp, t, layer_ew, opt_s, master_s))
    return Terms(
        gemm_compute_s=float(np.where(use_fast, fast_c, compute).sum()),
        gemm_memory_s=float(np.where(use_fast, fast_m, memory).sum()),
        gemm_s=float(t.sum()),
        kernels=kernels,
        overhead_s=kernels * ko,
        elementwise_s=ew_s,
        optimizer_s=opt_s,
        master_weights_s=master_s,
        host_s=host_params,
        fast_conv_ops=int(use_fast.sum()),
        host_dispatch_s=lines.host_s,
        device_s=lines.device_s,
        timeline_s=lines.step_s,
        exposed_host_s=lines.exposed_host_s,
        waits=lines.waits,
        bound=lines.bound,
    )


def _items(
    plan: Plan,
    sp: StepParams,
    t: np.ndarray,
    layer_ew: np.ndarray,
    opt_s: float,
    master_s: float,
) -> tuple[tl.Items, str, float]:
    """The step as timeline items in issue order: the once-a-step ops, the casts, each layer's
    forward, each layer's backward in reverse, the optimizer (after the wait, if any)."""
    hp = plan.host
    assert hp is not None and plan.group is not None and plan.layer_ew_kernels is not None
    prof, scale = hp.profile, sp.host_scale
    ko = sp.kernel_overhead_s
    layers = len(layer_ew)
    fwd = np.array([p == "fwd" for p in plan.phase], dtype=bool)
    g = plan.group

    def per_layer(mask: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.bincount(g[mask], weights=w[mask], minlength=layers).astype(float)

    ew_k = plan.layer_ew_kernels / 2
    kf = per_layer(fwd, plan.kernels) + ew_k
    kb = per_layer(~fwd, plan.kernels) + ew_k
    df = per_layer(fwd, t) + kf * ko + layer_ew / 2
    db = per_layer(~fwd, t) + kb * ko + layer_ew / 2
    h = tl.host_seconds(hp, kf, kb, plan.master_kernels, plan.optimizer_kernels)
    cast_d = master_s + plan.master_kernels * ko
    opt_d = opt_s + plan.optimizer_kernels * ko
    host = scale * np.concatenate(
        [[h.step_s, h.casts_s], h.forward_s, h.backward_s[::-1], [h.optimizer_s]]
    )
    dev = np.concatenate([[0.0, cast_d], df, db[::-1], [opt_d]])
    kern = np.concatenate([[0.0, plan.master_kernels], kf, kb[::-1], [plan.optimizer_kernels]])
    wait = len(host) - 1 if hp.waits else None
    return tl.Items(host, dev, kern, wait), hp.mode, scale * prof.sync_s


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
    host_profile: str = "defaults"  # where the host's dispatch costs came from
    policy: str = "mixed"
    optimizer_impl: str | None = None

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
            "host_dispatch_s": t.host_dispatch_s,
            "device_s": t.device_s,
            "exposed_host_s": t.exposed_host_s,
            "timeline_bound": t.bound,
            "host_waits": t.waits,
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
            "host_profile": self.host_profile,
            "policy": self.policy,
            "optimizer_impl": self.optimizer_impl,
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
    host: HostProfile | None = None,
    policy: str = "mixed",
    optimizer_impl: str | None = None,
) -> StepTime:
    """The predicted training step, term by term. ``config`` is the per-chip config (weak
    scaling, as `model.predict`); a multi-core chip splits its batch across its cores. With
    ``loader_examples_per_s`` (a host loader's measured rate per chip, docs/infeed.md) the
    infeed is fed in as `model.input_step` does: the slower of step and infeed when the loader
    prefetches (``loader_overlapped``), else their sum; ``input_s`` says how long it needs.
    ``host``: the host's dispatch costs (None: `hostprofile.default` for the chip's kind);
    ``policy``: mixed or pure 16-bit, or fp32-storage (a float32 model on a TPU; `build_plan`);
    ``optimizer_impl``: loop, foreach or fused
    (None: torch's default for the device)."""
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
    prof = host or hostprofile.default(device_type(chip))
    plan = build_plan(
        family,
        core_cfg,
        core,
        precision,
        optimizer,
        sp,
        host=prof,
        policy=policy,
        optimizer_impl=optimizer_impl,
    )
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
        "host": terms.host_s + terms.exposed_host_s,
        "interconnect": comm,
    }
    if starved:
        parts["input"] = float("inf")
    bottleneck = max(parts, key=lambda k: parts[k])
    if terms.bound == "host" and not starved and terms.exposed_host_s >= comm:
        bottleneck = "host"  # the device waits for the host: its own terms do not set the step
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
        bottleneck=bottleneck,
        plan=plan,
        input_s=input_s,
        host_profile=prof.source,
        policy=policy,
        optimizer_impl=plan.host.optimizer_impl if plan.host else None,
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
