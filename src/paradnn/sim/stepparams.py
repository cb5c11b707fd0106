"""A device's step-time parameters (`steptime`): defaults by device kind, a chip file's
``[id.step]`` table, or what `fit` fitted from a measured sweep. Torch-free."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from paradnn.errors import ConfigError
from paradnn.platforms.datasheets import Platform
from paradnn.sim.gemmlib import SIMT_TILES, TC_RULES, TC_TILES

# Streaming multiprocessors / compute units, for wave quantization (vendor datasheets).
UNITS = {
    "titan-x-pascal": 28,
    "p100-sxm2": 56,
    "p100-pcie": 56,
    "v100-sxm2": 80,
    "v100-pcie": 80,
    "radeon-vii": 60,
    "a100-40gb-sxm": 108,
    "a100-80gb-sxm": 108,
    "h100-sxm": 132,
    "h200-sxm": 132,
    "b200-hgx": 148,
    "mi300x": 304,
}
# GPUs whose fastest GEMM kernels load through TMA (Hopper, Blackwell): an operand whose rows are
# not 16-byte aligned falls back to the pre-Hopper mma.sync kernels at about 2/3 of the tensor-core
# peak (FlashAttention-3 §2 for Hopper; Blackwell assumed alike). `gemmlib.alignment_efficiency`.
TMA_GPUS = ("h100-sxm", "h200-sxm", "b200-hgx")
NARROW_KERNEL_TMA = 2.0 / 3.0
CONV_LAYOUTS = ("nchw", "nhwc")
PARAM_KEYS = (
    "kernel_overhead_s",
    "efficiency",
    "k_half",
    "bw_efficiency",
    "tile",
    "units",
    "fast_conv",
    "host_s_per_step",
    "host_s_per_example",
    "sync_latency_s",
    "tc_align",
    "tc_fallback",
    "tc_rule",
    "align_exponent",
    "narrow_kernel",
    "tiles",
    "host_scale",
    "conv_efficiency",
    "conv_layout",
    "cache_bytes",
    "cache_gain",
    "source",
)
FITTED = (
    "kernel_overhead_s",
    "efficiency",
    "k_half",
    "bw_efficiency",
    "host_scale",
    "cache_gain",
    "conv_efficiency",
)
# A CPU's cache, when nothing better is known (an assumption: the last-level cache a server core
# sees, e.g. one 32 MiB L3 of an AMD EPYC CCD or a Xeon's share): a chip file's
# ``[id.step] cache_bytes`` replaces it.
CPU_CACHE_BYTES = 32 * 2**20
CPU_CACHE_GAIN = 3.0  # cache ÷ DRAM bandwidth a core sees (an assumption; `sim.fit` fits it)


@dataclass(frozen=True)
class StepParams:
    """A device's step-time parameters; ``source`` says whether they are defaults (assumptions,
    by device kind) or fitted (`sim.fit`, with the sweep and split they were fitted on)."""

    kernel_overhead_s: float
    efficiency: Mapping[str, float]  # precision → best fraction of peak; "default" for the rest
    k_half: float
    bw_efficiency: float
    tile: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # precision → (m, n)
    units: int | None = None
    fast_conv: float = 1.0
    host_s_per_step: float = 0.0
    host_s_per_example: float = 0.0
    sync_latency_s: float = 0.0
    # Tensor cores and alignment (`gemmlib`). ``tc_rule = "strict"`` (cuBLAS < 11.0, cuDNN <
    # 7.6.3, the seeds' era): a 16-bit GEMM takes the tensor cores only when m, n and k are
    # multiples of `tc_align`, otherwise it runs on the vector units at `tc_fallback` × the fp32
    # peak: 1, because the frameworks compute a 16-bit GEMM with fp32 accumulation (PyTorch's
    # THCudaBlas_Hgemm, "Simulated Hgemm": cublasGemmEx(..., CUDA_R_32F compute); its cuDNN RNNs
    # promote the math precision of fp16 to float, `promote_rnn_math_type`), and the paired
    # fp16 FMA (2× on P100/V100) exists only with fp16 accumulation (cublasHgemm); a cuDNN
    # convolution pads its channels to the multiple instead (`steptime`); `tc_align` 0 or 1: no
    # such rule.
    # ``"graded"`` (cuBLAS ≥ 11.0): always on the tensor cores, at `gemmlib.pad_efficiency` ×
    # `gemmlib.alignment_efficiency(a, exponent=align_exponent, narrow_kernel=narrow_kernel)`
    # for rows aligned to only a bytes.
    tc_align: int = 0
    tc_fallback: float = 1.0
    tc_rule: str = "graded"
    align_exponent: float = 1.0
    narrow_kernel: float = 1.0
    # precision → the tiles the library chooses among (`gemmlib.choose_tile`); empty: the one
    # fixed `tile` (a CPU's register tile).
    tiles: Mapping[str, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    # The host's dispatch costs (`hostprofile.HostProfile`) × this: 1 takes the profile as it is;
    # `sim.fit` fits it where a sweep says the profile's host is faster or slower.
    host_scale: float = 1.0
    # A convolution's GEMM reaches this × E_prec, per precision ("default" for the rest): direct
    # and implicit-GEMM convolution kernels (oneDNN's on few channels, cuDNN's) run below the
    # large-matmul rate `calibrate` measures; `simulate fit` and `fit --from ops` measure it.
    conv_efficiency: Mapping[str, float] = field(default_factory=lambda: {"default": 1.0})
    # The activations' memory format: cuDNN runs tensor-core convolutions in NHWC and transposes
    # NCHW tensors (PyTorch's default) in and out around each (NVIDIA's Convolutional Layers
    # User's Guide, "Tensor Layouts in Memory"): memory-bound passes the step pays.
    conv_layout: str = "nchw"
    # A kernel whose working set fits in ``cache_bytes`` moves it at ``cache_gain`` × the memory
    # bandwidth (partly, in proportion, when it fits partly): small convolutions and recurrent
    # cells on a CPU are not charged DRAM bandwidth. None: no cache term (GPUs, TPUs).
    cache_bytes: float | None = None
    cache_gain: float = 1.0
    source: str = "defaults"

    def eff(self, precision: str) -> float:
        e = self.efficiency
        return float(e.get(precision, e.get("default", next(iter(e.values()), 1.0))))

    def conv_eff(self, precision: str) -> float:
        c = self.conv_efficiency
        return float(c.get(precision, c.get("default", 1.0)))

    def tiles_of(self, precision: str) -> tuple[tuple[int, int], ...]:
        """The candidate tiles for ``precision``; the fixed `tile_of` when none are given."""
        got = self.tiles.get(precision, self.tiles.get("default"))
        return tuple(got) if got else (self.tile_of(precision),)

    def tile_of(self, precision: str) -> tuple[int, int]:
        t = self.tile
        got = t.get(precision, t.get("default"))
        return (1, 1) if got is None else (int(got[0]), int(got[1]))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["efficiency"] = dict(self.efficiency)
        d["tile"] = {k: list(v) for k, v in self.tile.items()}
        d["tiles"] = {k: [list(t) for t in v] for k, v in self.tiles.items()}
        d["conv_efficiency"] = dict(self.conv_efficiency)
        return d


def defaults(plat: Platform) -> StepParams:
    """Default parameters by device kind: assumptions of the order published microbenchmarks
    report, not fitted to any table (docs/simulate.md lists them). A chip file's ``[id.step]``
    table, or `sim.fit`, replaces them."""
    kind = plat.kind
    if kind == "gpu":
        return StepParams(
            # the device's own cost per kernel (start-up, tail, the gap between two kernels); the
            # host's launch and dispatch run on the host timeline (`hostprofile`)
            kernel_overhead_s=5e-6,
            efficiency={"fp32": 0.85, "tf32": 0.7, "default": 0.7},  # SGEMM / tensor-core GEMM
            k_half=32.0,
            bw_efficiency=0.8,  # STREAM-like copy ÷ datasheet bandwidth
            tile={"fp32": (128, 128), "default": (128, 256)},  # the largest of `tiles`
            tiles={"fp32": SIMT_TILES, "default": TC_TILES},
            units=UNITS.get(plat.id),
            # no Winograd assumed: which algorithm cuDNN picks, and its rate, is measured
            # (`conv_efficiency` from `simulate fit` or `fit --from ops`); 2.25 in a chip file
            # offers Winograd F(2×2,3×3) (36 → 16 multiplies per 2×2 outputs) per convolution
            fast_conv=1.0,
            # a convolution's GEMM below the large-matmul rate (assumptions until a fit or
            # `fit --from ops` measures them): on the vector units 0.9 (seed 002 Fig. 7: a V100
            # reaches 92 % of its fp32 peak on Table 4's convolutions, 97 % on its matmuls;
            # ParaDnn's narrower layers less), on the tensor cores 0.6 (seed 002: V100's
            # tensor-core convolutions well below its matmuls; issue 42: fits on the 19 H100 runs
            # settle near 0.62)
            conv_efficiency={"fp32": 0.9, "default": 0.6},
            sync_latency_s=10e-6,
            tc_align=8,
            tc_rule="graded",
            narrow_kernel=NARROW_KERNEL_TMA if plat.id in TMA_GPUS else 1.0,
            source=f"defaults for a {kind} (assumptions, not fitted)",
        )
    if kind == "tpu":
        return StepParams(
            kernel_overhead_s=1e-6,  # XLA: fused ops, per-op dispatch on the core's sequencer
            efficiency={"default": 0.9},  # on top of the systolic cycle count
            k_half=0.0,  # the systolic fill is in the cycle count
            bw_efficiency=0.8,
            sync_latency_s=10e-6,
            source=f"defaults for a {kind} (assumptions, not fitted)",
        )
    return StepParams(
        # per kernel inside the compute library (thread-pool fork/join, primitive set-up); the
        # eager op's Python and dispatcher work is on the host timeline (`hostprofile`)
        kernel_overhead_s=3e-6,
        efficiency={"default": 0.8},
        k_half=16.0,
        bw_efficiency=0.7,
        tile={"default": (6, 16)},  # an AVX2 SGEMM micro-kernel's register tile
        units=None,
        sync_latency_s=10e-6,
        cache_bytes=CPU_CACHE_BYTES,
        cache_gain=CPU_CACHE_GAIN,
        source=f"defaults for a {kind} (assumptions, not fitted)",
    )


def parse_params(pid: str, data: Mapping[str, Any], base: StepParams) -> StepParams:
    """A chip file's ``[id.step]`` table over ``base``; one line naming a bad key or value."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{pid}.step", data, "must be a table of step-time parameters")
    out: dict[str, Any] = {}
    for key, v in data.items():
        where = f"{pid}.step.{key}"
        if key not in PARAM_KEYS:
            raise ConfigError(where, v, "unknown key; allowed: " + ", ".join(PARAM_KEYS))
        if key == "efficiency":
            if not isinstance(v, Mapping) or not v:
                raise ConfigError(where, v, "must be a table precision = fraction in (0, 1]")
            out[key] = {str(p): _number(f"{where}.{p}", x, 0.0, 1.0) for p, x in v.items()}
        elif key == "tile":
            if not isinstance(v, Mapping):
                raise ConfigError(where, v, "must be a table precision = [m, n]")
            tiles = {}
            for p, t in v.items():
                ok = isinstance(t, list) and len(t) == 2
                ok = ok and all(isinstance(x, int) and not isinstance(x, bool) for x in t)
                if not ok or not all(1 <= x <= 65536 for x in t):
                    raise ConfigError(f"{where}.{p}", t, "must be [m, n], integers in [1, 65536]")
                tiles[str(p)] = (t[0], t[1])
            out[key] = tiles
        elif key == "tiles":
            out[key] = _tiles(where, v)
        elif key == "conv_efficiency":
            if isinstance(v, Mapping):
                if not v:
                    raise ConfigError(where, v, "must be a number or a table precision = fraction")
                out[key] = {str(p): _number(f"{where}.{p}", x, 0.0, 1.0) for p, x in v.items()}
            else:
                out[key] = {"default": _number(where, v, 0.0, 1.0)}
        elif key in ("tc_rule", "conv_layout"):
            allowed = TC_RULES if key == "tc_rule" else CONV_LAYOUTS
            if v not in allowed:
                raise ConfigError(where, v, "must be one of " + ", ".join(allowed))
            out[key] = v
        elif key == "align_exponent":
            out[key] = _number(where, v, 0.0, 8.0, low_ok=True)
        elif key == "narrow_kernel":
            out[key] = _number(where, v, 0.0, 1.0)
        elif key in ("units", "tc_align"):
            low = 0 if key == "tc_align" else 1
            if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 1 << 20:
                raise ConfigError(where, v, f"must be an integer in [{low}, 1048576]")
            out[key] = v
        elif key == "tc_fallback":
            out[key] = _number(where, v, 0.0, 64.0)
        elif key == "host_scale":
            out[key] = _number(where, v, 0.0, 1000.0)
        elif key == "cache_bytes":
            out[key] = _number(where, v, 0.0, 1e15)
        elif key == "cache_gain":
            out[key] = _number(where, v, 1.0, 1000.0, low_ok=True)
        elif key == "source":
            if not isinstance(v, str) or len(v) > 2000:
                raise ConfigError(where, v, "must be a string of at most 2000 characters")
            out[key] = v
        elif key == "bw_efficiency":
            out[key] = _number(where, v, 0.0, 1.0)
        elif key == "fast_conv":
            out[key] = _number(where, v, 1.0, 16.0, low_ok=True)
        else:
            out[key] = _number(where, v, 0.0, 1e6 if key == "k_half" else 10.0, low_ok=True)
    return replace(base, **out)


def _tiles(where: str, v: Any) -> dict[str, tuple[tuple[int, int], ...]]:
    if not isinstance(v, Mapping) or not v:
        raise ConfigError(where, v, "must be a table precision = [[m, n], ...]")
    out = {}
    for p, ts in v.items():
        ok = isinstance(ts, list) and bool(ts)
        ok = ok and all(isinstance(t, list) and len(t) == 2 for t in ts)
        ok = ok and all(
            isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 65536
            for t in ts
            for x in t
        )
        if not ok:
            raise ConfigError(
                f"{where}.{p}", ts, "must be a list of [m, n] tiles, integers in [1, 65536]"
            )
        out[str(p)] = tuple((t[0], t[1]) for t in ts)
    return out


def _number(where: str, v: Any, low: float, high: float, *, low_ok: bool = False) -> float:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or v > high or v < low or (v == low and not low_ok):
        lo = "[" if low_ok else "("
        raise ConfigError(where, v, f"must be a number in {lo}{low:g}, {high:g}]")
    return float(v)
