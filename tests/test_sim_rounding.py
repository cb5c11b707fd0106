"""bf16 emulation: exact rounding cases, agreement with torch's conversion, and the seed's
argument (a 7-bit mantissa with fp32 accumulation is accurate; fp16's exponent is the risk)."""

import numpy as np
import pytest
import torch

from paradnn.errors import ConfigError
from paradnn.precisions import itemsize
from paradnn.sim.rounding import BYTES, matmul_error, precision_study, round_bf16


def _f(bits: int) -> np.float32:
    return np.array([bits], dtype=np.uint32).view(np.float32)[0]


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (1.0, 1.0),
        (1 + 2**-8, 1.0),  # halfway, ties to the even mantissa (…0)
        (1 + 3 * 2**-8, 1 + 2**-6),  # halfway, the even neighbour is above
        (1 + 2**-8 + 2**-20, 1 + 2**-7),  # just above halfway rounds up
        (1 + 2**-8 - 2**-20, 1.0),  # just below halfway rounds down
        (-(1 + 3 * 2**-8), -(1 + 2**-6)),
        (0.0, 0.0),
        (float("inf"), float("inf")),
    ],
)
def test_round_to_nearest_even(x, expected):
    assert float(round_bf16(np.float32(x))) == expected


def test_special_values():
    out = round_bf16(np.array([np.nan, -0.0, np.finfo(np.float32).max, _f(0x7F7F7FFF)]))
    assert np.isnan(out[0])
    assert out[1] == 0 and np.signbit(out[1])
    assert np.isinf(out[2])  # past bf16's largest finite value: rounds to inf
    assert out[3] == _f(0x7F7F0000)  # bf16's largest finite value stays
    assert np.isnan(round_bf16(_f(0x7FFFFFFF)))  # a NaN whose payload would carry into inf


def test_agrees_with_torch_bfloat16():
    rng = np.random.default_rng(1)
    with np.errstate(over="ignore"):
        scaled = (rng.standard_normal(20000) * 10.0 ** rng.integers(-40, 40, 20000)).astype(
            np.float32
        )
    patterns = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([scaled, patterns])
    assert x.dtype == np.float32
    ref = torch.from_numpy(x.copy()).to(torch.bfloat16).float().numpy()
    got = round_bf16(x)
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    assert same.all()


def test_bf16_matmul_error_is_set_by_its_mantissa():
    by = {e.fmt: e for e in matmul_error(scale=1.0)}
    assert by["fp32"].rel_error < 1e-6
    assert 1e-4 < by["bf16"].rel_error < 2**-7  # a few units of bf16's 2^-8 rounding
    assert by["fp16"].rel_error < by["bf16"].rel_error  # 10 mantissa bits beat 7 …


def test_fp16_range_fails_where_bf16_does_not():
    big = {e.fmt: e for e in matmul_error(scale=1e5)}
    assert big["fp16"].nonfinite > 0 and big["fp16"].rel_error is None  # … until range matters
    assert big["bf16"].nonfinite == 0 and big["bf16"].rel_error < 2**-7
    tiny = {e.fmt: e for e in matmul_error(scale=1e-6)}
    assert tiny["fp16"].zero_inputs > 0 and tiny["fp16"].rel_error > tiny["bf16"].rel_error
    assert tiny["bf16"].zero_inputs == 0


def test_study_rows_and_widths():
    rows = precision_study()
    assert {r["format"] for r in rows} == {"fp32", "bf16", "fp16"}
    assert [r["mantissa_bits"] for r in rows[:3]] == [23, 7, 10]
    assert BYTES == {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}
    with pytest.raises(ConfigError, match="precision = 'fp64'"):
        itemsize("fp64")
