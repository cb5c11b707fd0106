"""Low-precision rounding pinned whole (sim.rounding): bf16 and fp16 rounding of a vector of
edge values (ties, subnormals, overflow, NaN, signed zero) bit for bit; the matmul error study's
every field at three scales and at scale 0 (the bf16 and fp16 errors come from the rounded
inputs, pinned to 1 %; fp32's from the accumulation order, which a BLAS kernel chooses, held
only to its range) (tests/pinned.py, tests/data/sim_pinned/rounding.json)."""

from __future__ import annotations

import numpy as np

import pinned
from paradnn.sim import rounding as R

EDGES = [0.0, -0.0, 1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-11, 1 + 3 * 2**-11, 65504.0, 65520.0,
         65519.0, 1e5, -1e5, 6e-8, 2e-8, 3e-8, 1e-45, 3.4e38, float("inf"), -float("inf"),
         1.5, -2.75, 1 / 3, 1e-38]  # fmt: skip


def _bits(a: np.ndarray) -> list[int]:
    return np.asarray(a, dtype=np.float32).view(np.uint32).tolist()


def _study(errors):
    rows = []
    for e in errors:
        row = {**e.__dict__} if hasattr(e, "__dict__") else dict(e)
        fmt = row.get("fmt", row.get("format"))
        if fmt == "fp32":
            for k in ("rel_error", "max_rel_error"):
                assert 0 < row[k] < 1e-5, row  # fp32 accumulation: rounding-level error
                row[k] = "fp32 accumulation"
        rows.append(row)
    return rows


def test_rounding_and_study_pinned():
    x = np.array(EDGES, dtype=np.float32)
    nan = np.array([np.nan, -np.nan], dtype=np.float32)
    got = {
        "bf16": _bits(R.round_bf16(x)),
        "fp16": _bits(R.round_fp16(x)),
        "bf16-nan": np.isnan(R.round_bf16(nan)).tolist(),
        "fp16-nan": np.isnan(R.round_fp16(nan)).tolist(),
        "scalar": [
            R.round_bf16(1 + 3 * 2**-8).shape,
            float(R.round_fp16(1e5)),
            R.round_bf16(np.ones((2, 3))).shape,
        ],
        "rounders": [_bits(R.ROUNDERS[f](x[:6])) for f in ("fp32", "bf16", "fp16")],
        "errors": {str(s): _study(R.matmul_error(scale=s)) for s in (1e-3,)},
        "small": _study(R.matmul_error(8, 4, 16, seed=3)),
        "study": _study(R.precision_study()),
        "study-one": _study(R.precision_study((2.0,))),
    }
    with np.errstate(invalid="ignore"):  # 0/0: no exact product to be relative to
        zero = R.matmul_error(4, 4, 4, scale=0.0)
    got["zero"] = [(e.fmt, e.nonfinite, e.zero_inputs) for e in zero]
    pinned.check("rounding", got, rel=1e-2, abs_=1e-12)
