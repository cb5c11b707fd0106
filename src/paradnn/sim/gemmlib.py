"""What today's GEMM libraries do with one GEMM shape on a GPU (issue 42): which tile they run
it with, and what a shape whose rows are not aligned to the tensor cores' loads costs.

**Tile choice.** cuBLAS and cuDNN hold kernels for several thread-block tiles and pick, per
shape, the one that finishes first: a large tile reuses each loaded element more (its main loop
moves ``tm + tn`` elements per ``tm · tn`` multiply-adds) and is the most efficient on a large
GEMM, but a small or skinny GEMM has too few large tiles to fill the SMs (wave quantization), so
a smaller tile wins there. `choose_tile` does the same: for each candidate tile the share of the
machine it keeps busy (tile quantization × wave quantization, split-K when there are fewer tiles
than SMs) × its own efficiency relative to the largest tile (its reuse, ``tm·tn ÷ (tm + tn)``,
over the largest tile's: a smaller tile's main loop is load-bound in proportion), and the best
one. The candidates are the tiles NVIDIA lists as typical for cuBLAS.

**Tensor cores by alignment.** Before cuBLAS 11.0 / cuDNN 7.6.3 a 16-bit GEMM used the tensor
cores only when its dimensions were multiples of 8 elements (16 bytes); since, always, "but most
efficient" when the rows are 16-byte aligned. A row stride aligned to only ``a`` bytes forces
kernels that load ``a`` bytes at a time instead of 16 (CUTLASS's alignment variants), and on
Hopper and later it also rules out the TMA + wgmma kernels (a TMA descriptor's strides must be
multiples of 16 bytes), leaving the pre-Hopper ``mma.sync`` kernels, which reach about 2/3 of the
tensor-core peak. `alignment_efficiency` is that, continuous and monotone in ``a``: the load
width ``(a ÷ 16)^exponent`` times the narrower kernel class, which ramps in over the first
halving. `pad_efficiency` is the share of the reduction that is real work when it is padded up to
whole 16-byte vectors (``K ÷ ceil16B(K)``). Which library rule a device follows is its step
parameters' ``tc_rule`` (``strict`` for the seeds' era, ``graded`` for today's).

Sources (docs/simulate.md lists them): NVIDIA, *Matrix Multiplication Background User's Guide*
(DU-09799-001, 2023), §2.2 "Tensor Core Requirements" and §2.3 "Typical Tile Dimensions in cuBLAS
and Performance"; NVIDIA, *Convolutional Layers User's Guide* (channels divisible by 8 for FP16,
4 for TF32); CUDA driver API ``cuTensorMapEncodeTiled`` (global strides multiples of 16 bytes);
Shah et al., *FlashAttention-3* (2024), §2 (``mma.sync`` at about 2/3 of H100's tensor-core
peak); NVIDIA/cutlass#75 (tensor-core kernels want 128-bit aligned accesses). Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

VECTOR_BYTES = 16  # the widest load a tensor-core kernel issues per thread (128 bits)
# NVIDIA's typical cuBLAS tensor-core tiles (Matrix Multiplication Background §2.3), most
# efficient first: a tie goes to the earlier one.
TC_TILES: tuple[tuple[int, int], ...] = (
    (256, 128),
    (128, 256),
    (128, 128),
    (256, 64),
    (64, 256),
    (128, 64),
    (64, 128),
    (64, 64),
)
# cuBLAS's SIMT (fp32, no tensor cores) SGEMM kernels come in the same family of block tiles,
# topping out at 128 × 128 (its `sgemm_128x128`, `sgemm_128x64`, `sgemm_64x64` kernels).
SIMT_TILES: tuple[tuple[int, int], ...] = ((128, 128), (128, 64), (64, 128), (64, 64))
SPLIT_K_MIN = 256  # shortest reduction chunk a split-K GEMM gives one unit
TC_RULES = ("graded", "strict")
# A precision runs on matrix units when its peak is at least this × the fp32 (vector) peak:
# V100 fp16 8×, A100 bf16 16×, H100 tf32 7.4×; P100's and Radeon VII's packed fp16 (2×) is
# vector math.
MATRIX_UNIT_RATIO = 4.0


def intensity(tile: tuple[int, int]) -> float:
    """Multiply-adds per element a tile's main loop loads: ``tm · tn ÷ (tm + tn)``."""
    tm, tn = tile
    return tm * tn / (tm + tn)


@dataclass(frozen=True)
class TileChoice:
    """The tile a library runs an (m, n, k) GEMM with, and what it costs: the share of the
    issued work that is real (tile quantization), the share of the SMs' waves it fills (wave
    quantization, after split-K), and the tile's own efficiency relative to the largest."""

    tile: tuple[int, int]
    q_tile: float
    q_wave: float
    tile_efficiency: float
    split_k: int

    @property
    def quant(self) -> float:
        return self.q_tile * self.q_wave * self.tile_efficiency


def quantization(
    m: int, n: int, k: int, tile: tuple[int, int], units: int | None
) -> tuple[float, float, int]:
    """(q_tile, q_wave, split-K factor) of an (m, n, k) GEMM on ``tile``: with fewer tiles than
    units the reduction is split (as cuBLAS does) into chunks of at least `SPLIT_K_MIN`."""
    tm, tn = tile
    tiles_m, tiles_n = -(-m // tm), -(-n // tn)
    q_tile = (m * n) / (tiles_m * tm * tiles_n * tn)
    if not units:
        return q_tile, 1.0, 1
    tiles = tiles_m * tiles_n
    split = 1
    if tiles < units:
        split = max(1, min(units // tiles, k // SPLIT_K_MIN))
        tiles *= split
    return q_tile, tiles / (-(-tiles // units) * units), split


def choose_tile(
    m: int, n: int, k: int, tiles: Sequence[tuple[int, int]], units: int | None
) -> TileChoice:
    """The candidate tile with the highest q_tile × q_wave × tile efficiency (a tie: the
    earlier, larger one), as a library's heuristic picks the fastest kernel for the shape."""
    if not tiles:
        raise ValueError("no candidate tiles")
    best_reuse = max(intensity(t) for t in tiles)
    best: TileChoice | None = None
    for t in tiles:
        q_tile, q_wave, split = quantization(m, n, k, t, units)
        got = TileChoice(tuple(t), q_tile, q_wave, intensity(t) / best_reuse, split)  # type: ignore[arg-type]
        if best is None or got.quant > best.quant * (1 + 1e-9):
            best = got
    assert best is not None
    return best


def alignment_bytes(dims: Iterable[int], itemsize: int, vector: int = VECTOR_BYTES) -> int:
    """The largest power-of-two byte alignment (at most ``vector``) every row of the operands
    has: the gcd of each row stride in bytes with ``vector``."""
    a = vector
    for d in dims:
        a = math.gcd(a, int(d) * itemsize)
    return max(a, 1)


def alignment_efficiency(
    a: float, *, vector: float = VECTOR_BYTES, exponent: float = 1.0, narrow_kernel: float = 1.0
) -> float:
    """Efficiency of a tensor-core GEMM whose rows are aligned to only ``a`` bytes, relative to
    a 16-byte aligned one: ``(a ÷ vector)^exponent`` (narrower loads) × ``narrow_kernel`` (the
    kernel class such rows force: 2/3 on Hopper, no TMA + wgmma), the latter ramping in over the
    first halving ``log2(vector ÷ a) ∈ [0, 1]``. Continuous and non-decreasing in ``a``; 1 at
    ``a ≥ vector``."""
    if a >= vector:
        return 1.0
    a = max(float(a), 1e-9)
    short = math.log2(vector / a)
    return float((a / vector) ** exponent * narrow_kernel ** min(1.0, short))


def pad_efficiency(k: int, granule: int) -> float:
    """The real share of a reduction of ``k`` padded up to a multiple of ``granule``."""
    if granule <= 1 or k <= 0:
        return 1.0
    return k / (-(-k // granule) * granule)


def row_dims(phase: str, m: int, n: int, k: int) -> tuple[int, int]:
    """The two dimensions that are row strides of a lowered training GEMM's operands (the batch
    dimension never is): forward and data-gradient read rows of k and n elements; the
    weight-gradient (k, n, batch) reads rows of m and n (`families.lowering`)."""
    return (m, n) if phase == "wgrad" else (n, k)


def on_matrix_units(peak: float | None, fp32_peak: float | None) -> bool:
    """Whether a precision's peak is a matrix-unit (tensor-core) rate on this chip."""
    return bool(peak and fp32_peak and peak >= MATRIX_UNIT_RATIO * fp32_peak)
