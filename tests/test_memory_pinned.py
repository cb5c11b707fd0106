"""paradnn.memory's small functions pinned whole (issue 46, item 6): `copies` over its whole
truth table, `check`'s two refusals and its bound, `predict`'s five refusals by field name, and
the pure-16-bit halving in whole bytes. From the seed-12 fresh sample's memory survivors."""

from __future__ import annotations

import pytest

from paradnn import families, memory
from paradnn.errors import ConfigError

FC = families.get("fc").config({"layers": 2, "nodes": 64, "input": 32, "output": 10, "batch": 8})


@pytest.mark.parametrize(
    ("device_type", "procs", "scaling", "want"),
    [
        ("cpu", 1, "weak", 1),
        ("cpu", 2, "weak", 2),
        ("cpu", 7, "weak", 7),
        ("cpu", 2, "strong", 1),
        ("cpu", 1, "strong", 1),
        ("cuda", 4, "weak", 1),  # a GPU rank has its own GPU, whatever the scaling
        ("cuda", 4, "strong", 1),
        ("cuda", 1, "weak", 1),
    ],
)
def test_copies_truth_table(device_type, procs, scaling, want):
    assert memory.copies(device_type, procs, scaling) == want


def test_copies_defaults_are_one_rank_under_weak_scaling():
    assert memory.copies("cpu") == 1
    assert memory.copies("cpu", 3) == 3  # weak by default: each rank holds the whole config
    assert memory.copies("cuda", 3) == 1


def _estimate():
    return memory.predict("fc", FC, "fp32", "sgd", device_type="cpu")


def test_check_takes_no_headroom_and_refuses_a_negative_one_in_words():
    est = _estimate()
    got = memory.check(est, 10 * est.lower_bound, "host memory", headroom=0.0)
    assert got.headroom == 0.0 and got.fits is True and got.copies == 1
    with pytest.raises(ValueError) as e:
        memory.check(est, 10, "host memory", headroom=-0.1)
    assert str(e.value) == "headroom = -0.1: must be ≥ 0, or a fitting config may be skipped"


def test_check_refuses_fewer_than_one_copy_in_words():
    est = _estimate()
    assert memory.check(est, None, "GPU memory", copies=1).copies == 1
    with pytest.raises(ValueError) as e:
        memory.check(est, None, "GPU memory", copies=0)
    assert str(e.value) == "copies = 0: must be ≥ 1"


@pytest.mark.parametrize(
    ("kw", "field", "value"),
    [
        ({"precision": "fp64"}, "precision", "fp64"),
        ({"optimizer": "lion"}, "optimizer", "lion"),
        ({"device_type": "tpu"}, "device_type", "tpu"),
        ({"policy": "half"}, "precision_policy", "half"),
        ({"implementation": "triton"}, "optimizer_impl", "triton"),
    ],
)
def test_predict_names_the_refused_field(kw, field, value):
    args = {"precision": "fp32", "optimizer": "sgd", **kw}
    precision, optimizer = args.pop("precision"), args.pop("optimizer")
    with pytest.raises(ConfigError) as e:
        memory.predict("fc", FC, precision, optimizer, **args)
    assert e.value.field == field and e.value.value == value
    assert str(e.value).startswith(f"{field} = {value!r}")


def test_pure_16_bit_halves_the_fp32_step_in_whole_bytes():
    """model.half(): the fp32 step's saved tensors, floor and buffers halved, as ints."""
    f32 = memory.predict("fc", FC, "fp32", "sgd", device_type="cpu")
    pure = memory.predict("fc", FC, "bf16", "sgd", device_type="cpu", policy="pure")
    assert type(pure.activations) is int and pure.activations == f32.activations // 2
    assert type(pure.activations_floor) is int
    assert pure.activations_floor == f32.activations_floor // 2
