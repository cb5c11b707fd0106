"""The systolic model against the reference note's SCALE-Sim numbers (modelling.md §1.4, §1.7)
and the lowering against the families' analytic FLOPs."""

import pytest

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.families.lowering import lower, lower_all
from paradnn.sim import systolic
from paradnn.sim.studies import DESIGNS, mxu_study, utilization
from paradnn.sim.systolic import Arrays, array_cycles, gemm_cycles
from paradnn.sim.topologies import RESNET50, resnet50_forward

from conftest import TINY


@pytest.mark.parametrize(
    ("mnk", "array", "dataflow", "cycles"),
    [
        ((8, 8, 8), 8, "os", 21),
        ((17, 9, 33), 8, "os", 281),
        ((17, 9, 33), 8, "ws", 389),
        ((17, 9, 33), 8, "is", 464),
        ((3136, 64, 64), 32, "ws", 12919),
        ((2916, 64, 576), 32, "os", 117391),
    ],
)
def test_closed_forms_match_scalesim(mnk, array, dataflow, cycles):
    assert gemm_cycles(*mnk, array, array, dataflow) == cycles


@pytest.mark.parametrize(
    ("mnk", "array", "dataflow", "util"),
    [((3136, 64, 64), 32, "ws", 0.9710), ((2916, 64, 576), 32, "os", 0.8942)],
)
def test_overall_utilization_matches_scalesim(mnk, array, dataflow, util):
    a = Arrays(array, array)
    cycles = gemm_cycles(*mnk, array, array, dataflow)
    assert systolic.utilization(*mnk, cycles, a) == pytest.approx(util, abs=5e-5)


def test_one_array_of_many_is_the_single_array_formula():
    a = Arrays(8, 8, per_core=1, cores=1)
    assert array_cycles(17, 9, 33, a, "ws") == gemm_cycles(17, 9, 33, 8, 8, "ws")
    # Ten WS folds over four arrays: the busiest array runs ceil(10/4) = 3 folds of 39 cycles.
    assert array_cycles(17, 9, 33, Arrays(8, 8, 2, 2), "ws") == 3 * 39 - 1


def test_resnet50_topology_is_scalesims():
    assert len(RESNET50) == 54
    macs = sum(op.macs for op in resnet50_forward(1))
    assert macs / 1e9 == pytest.approx(3.48, abs=0.005)
    conv1 = resnet50_forward(1)[0]
    assert (conv1.m, conv1.n, conv1.k) == (110 * 110, 64, 147)


@pytest.mark.parametrize(
    ("batch", "dataflow", "expected"),
    [
        (1, "ws", (12.1, 21.3, 32.6)),
        (8, "ws", (34.1, 46.2, 55.1)),
        (32, "ws", (42.4, 52.9, 59.5)),
        (8, "os", (23.1, 45.9, 68.4)),
    ],
)
def test_mxu_size_table_of_the_reference_note(batch, dataflow, expected):
    ops = resnet50_forward(batch)
    got = tuple(round(100 * utilization(ops, d, dataflow), 1) for d in DESIGNS)
    assert got == expected


def test_mxu_study_favours_four_128_arrays_on_every_cnn():
    rows = mxu_study(8)
    assert rows[0]["1×256×256"] == pytest.approx(0.341, abs=5e-4)
    for r in rows:
        assert r["kind"] == "prediction"
        assert r["1×256×256"] < r["4×128×128"] < r["16×64×64"] <= 1.0
        assert r["4×128×128 / 1×256×256"] > 1.3


@pytest.mark.parametrize("family", ["fc", "cnn", "rnn"])
@pytest.mark.parametrize("which", ["tiny", "default"])
def test_lowered_flops_equal_the_analytic_train_flops(family, which):
    fam = families.get(family)
    cfg = fam.config(TINY[family]) if which == "tiny" else fam.default_config()
    assert sum(op.flops for op in lower_all(fam.shapes(cfg))) == fam.train_flops(cfg)
    fwd = sum(op.flops for s in fam.shapes(cfg) for op in lower(s, train=False))
    assert fwd == sum(s.fwd_flops() for s in fam.shapes(cfg))


@pytest.mark.parametrize("family", families.names())
def test_every_family_and_real_model_lowers_to_its_train_flops(family):
    """Rectangular kernels (Inception, Deep Speech 2) and attention included."""
    fam = families.get(family)
    cfg = fam.default_config()
    assert sum(op.flops for op in lower_all(fam.shapes(cfg))) == fam.train_flops(cfg)


def test_transformer_attention_lowers_to_its_train_flops():
    if "transformer" not in families.names():
        pytest.skip("no transformer family")
    fam = families.get("transformer")
    cfg = fam.default_config()
    assert sum(op.flops for op in lower_all(fam.shapes(cfg))) == fam.train_flops(cfg)


def test_every_recurrent_cell_lowers_consistently():
    fam = families.get("rnn")
    for cell in ("rnn", "gru", "lstm"):
        for length in (1, 4):
            cfg = fam.config(dict(TINY["rnn"], cell=cell, length=length))
            assert sum(o.flops for o in lower_all(fam.shapes(cfg))) == fam.train_flops(cfg)


def test_bad_dataflow_and_array_are_one_line_errors():
    with pytest.raises(ConfigError, match="dataflow = 'xs': must be one of os, ws, is"):
        gemm_cycles(4, 4, 4, 8, 8, "xs")
    with pytest.raises(ConfigError, match=r"arrays\.rows"):
        Arrays(0, 8)
    with pytest.raises(ConfigError, match=r"gemm\.m"):
        gemm_cycles(0, 4, 4, 8, 8)


@pytest.mark.parametrize(
    ("mnk", "dataflow", "eff"),
    [
        ((16, 16, 5), "os", 1.0),  # 16×16 on an 8×8 array: 2×2 full folds
        ((17, 9, 33), "os", 153 / 384),  # Sr×Sc = 17×9 over ceil(17/8)·8 × ceil(9/8)·8 = 24×16
        ((17, 9, 33), "ws", 297 / 640),  # Sr×Sc = 33×9 over ceil(33/8)·8 × ceil(9/8)·8 = 40×16
    ],
)
def test_mapping_efficiency_is_used_pes_over_folded_pes(mnk, dataflow, eff):
    assert systolic.mapping_efficiency(*mnk, 8, 8, dataflow) == pytest.approx(eff)


def test_array_cycles_default_to_the_weight_stationary_dataflow():
    a = Arrays(8, 8)
    # (17, 9, 33) on one 8×8 array: 389 cycles weight-stationary (SCALE-Sim, above)
    assert array_cycles(17, 9, 33, a) == array_cycles(17, 9, 33, a, "ws") == 389


def test_a_repeated_gemm_has_the_utilization_of_one():
    from paradnn.families.lowering import Op

    a = Arrays(8, 8)
    once = utilization([Op("l", "fwd", 17, 9, 33)], a)
    assert utilization([Op("l", "fwd", 17, 9, 33, count=4)], a) == pytest.approx(once)
