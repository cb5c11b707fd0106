"""Number formats for the what-if model: byte widths, and a bf16 emulation to show what a 7-bit
mantissa does to a matmul (seed 001: "reducing the matrix multiplication input mantissa size from
fp32's 23 bits to 7 bits did not hurt accuracy"; products and sums stay fp32).

`round_bf16` rounds fp32 to the nearest bf16 value, ties to even, on the bit pattern: that is
what hardware conversion (and torch's `.to(torch.bfloat16)`) does. NaN stays NaN; values past
bf16's largest finite value round to ±inf, as IEEE rounding requires.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paradnn import precisions

BYTES = {name: p.itemsize for name, p in precisions.TABLE.items()}  # paradnn.precisions' table
# Explicit mantissa (fraction) bits and exponent bits; tf32 is stored as fp32 but multiplied with
# a 10-bit mantissa.
MANTISSA_BITS = {"fp32": 23, "tf32": 10, "bf16": 7, "fp16": 10}
EXPONENT_BITS = {"fp32": 8, "tf32": 8, "bf16": 8, "fp16": 5}
GRADIENT_BYTES = 4  # mixed precision keeps fp32 master weights, so gradients are fp32


def round_bf16(x: np.ndarray | float) -> np.ndarray:
    """fp32 values rounded to bf16 (round to nearest, ties to even), returned as float32."""
    a = np.asarray(x, dtype=np.float32)
    flat = np.atleast_1d(a)
    bits = flat.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32).copy()
    out[np.isnan(flat)] = np.float32("nan")  # rounding could carry a NaN's payload into inf
    return out.reshape(a.shape)


def round_fp16(x: np.ndarray | float) -> np.ndarray:
    """fp32 values through IEEE fp16 and back (numpy's conversion is round-to-nearest-even)."""
    with np.errstate(over="ignore"):
        return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)


ROUNDERS = {"fp32": lambda a: np.asarray(a, dtype=np.float32), "bf16": round_bf16}
ROUNDERS["fp16"] = round_fp16


@dataclass(frozen=True)
class MatmulError:
    """How far a matmul with inputs rounded to ``fmt`` (fp32 accumulation) lands from float64."""

    fmt: str
    scale: float
    rel_error: float | None  # ‖C − C_exact‖_F / ‖C_exact‖_F; None when the result is not finite
    max_rel_error: float | None  # worst element, relative to the largest exact element
    nonfinite: int  # elements that became inf/NaN (fp16's 5-bit exponent overflowing)
    zero_inputs: int  # nonzero inputs flushed to zero (underflow)


def matmul_error(
    m: int = 64, n: int = 64, k: int = 256, *, scale: float = 1.0, seed: int = 0
) -> list[MatmulError]:
    """C = A @ B with A, B ~ N(0, scale²): inputs rounded to fp32, bf16 and fp16, products
    accumulated in fp32 (as the MXU and tensor cores do), compared with a float64 reference."""
    rng = np.random.default_rng(seed)
    a64 = rng.standard_normal((m, k)) * scale
    b64 = rng.standard_normal((k, n)) * scale
    exact = a64 @ b64
    norm, peak = np.linalg.norm(exact), np.max(np.abs(exact))
    out = []
    for fmt, rnd in ROUNDERS.items():
        a, b = rnd(a64.astype(np.float32)), rnd(b64.astype(np.float32))
        with np.errstate(over="ignore", invalid="ignore"):
            c = (a @ b).astype(np.float64)
        finite = bool(np.all(np.isfinite(c)))
        zeros = int(np.sum((a == 0) & (a64 != 0)) + np.sum((b == 0) & (b64 != 0)))
        out.append(
            MatmulError(
                fmt=fmt,
                scale=scale,
                rel_error=float(np.linalg.norm(c - exact) / norm) if finite else None,
                max_rel_error=float(np.max(np.abs(c - exact)) / peak) if finite else None,
                nonfinite=int(np.sum(~np.isfinite(c))),
                zero_inputs=zeros,
            )
        )
    return out


def precision_study(scales: tuple[float, ...] = (1.0, 1e-6, 1e5)) -> list[dict[str, object]]:
    """Rows for `paradnn simulate precision-study`: unit-scale inputs (mantissa matters),
    tiny ones (fp16 underflows) and large ones (fp16 overflows; bf16 keeps fp32's range)."""
    rows = []
    for s in scales:
        for e in matmul_error(scale=s):
            rows.append(
                {
                    "inputs_scale": s,
                    "format": e.fmt,
                    "mantissa_bits": MANTISSA_BITS[e.fmt],
                    "exponent_bits": EXPONENT_BITS[e.fmt],
                    "rel_error": e.rel_error,
                    "max_rel_error": e.max_rel_error,
                    "nonfinite_outputs": e.nonfinite,
                    "flushed_inputs": e.zero_inputs,
                }
            )
    return rows
