"""The share of profiled step time in memory- and compute-bound ops (seed 000 §4.2), computed by
hand: the ridge of the measured roof (else the datasheet's), an op exactly at the ridge, ops
without FLOPs or bytes counted in their own shares, never dropped."""

from __future__ import annotations

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import breakdown as B

import synth

CFG = {"layers": 2, "nodes": 64, "batch": 32}
# measured roof of SynthCPU at fp32: 1e12 FLOP/s over 1e11 B/s -> ridge exactly 10 FLOP/byte
CEILINGS = pd.DataFrame(
    [
        {"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": 1e12},
        {"device_name": "SynthCPU", "kind": "matmul", "precision": "fp32", "value": 5e11},
        {"device_name": "SynthCPU", "kind": "copy", "precision": "fp32", "value": 1e11},
    ]
)


def _op(uid, op, t, flops, nbytes):
    return dict(run_uid=uid, op=op, shapes="[]", calls=1, device_time_s=t, flops=flops,
                bytes=nbytes)  # fmt: skip


def _profile(uid: str = "0:1") -> list[dict]:
    return [
        _op(uid, "aten::mm", 0.4, 1000, 10),  # intensity 100: compute-bound
        _op(uid, "aten::addmm", 0.2, 100, 10),  # exactly at the ridge (10): compute-bound
        _op(uid, "aten::add", 0.1, 99, 10),  # 9.9: just below, memory-bound
        _op(uid, "aten::relu", 0.1, 0, 40),  # bytes, no FLOPs counted
        _op(uid, "aten::copy_", 0.05, None, 40),  # FLOPs not counted at all
        _op(uid, "aten::view", 0.05, 0, 0),  # nothing counted
        _op(uid, "aten::cat", 0.1, 50, None),  # no bytes
        _op(uid, "aten::t", None, 0, 0),  # no time: counted as untimed, no share
    ]


def _data(ceilings=CEILINGS, platform="SynthCPU", family="fc", cfg=CFG, prof=None) -> A.Data:
    run = synth.row(family, cfg, 0.1, platform=platform)
    return A.from_frames([run], ceilings=ceilings, op_profile=pd.DataFrame(prof or _profile()))


def test_shares_split_at_the_measured_ridge_and_count_every_op():
    out = B.bound_shares(_data())
    assert list(out.columns) == B.BOUND_COLUMNS and len(out) == 1
    r = out.iloc[0]
    assert (r["roof"], r["ridge"]) == ("measured", 10.0)
    assert r["profiled_s"] == pytest.approx(1.0)
    assert r["compute_bound"] == pytest.approx(0.6)  # 0.4 + the op at the ridge (0.2)
    assert r["memory_bound"] == pytest.approx(0.1)
    assert r["no_flops"] == pytest.approx(0.1)
    assert r["unclassified"] == pytest.approx(0.2)  # copy_ 0.05 + view 0.05 + cat 0.1
    total = r[["memory_bound", "compute_bound", "no_flops", "unclassified"]].sum()
    assert total == pytest.approx(1.0)
    assert (r["ops"], r["untimed_ops"]) == (8, 1)
    assert pd.isna(r["reason"]) and pd.isna(r["seed_memory_bound"])  # fc: no seed figure


def test_an_op_at_the_ridge_is_compute_bound_and_just_below_is_memory_bound():
    assert B.bound_class(100, 10, 10.0) == "compute"
    assert B.bound_class(99, 10, 10.0) == "memory"
    assert B.bound_class(101, 10, 10.0) == "compute"
    assert B.bound_class(0, 10, 10.0) == "no_flops"
    for f, b in ((None, 10), (10, None), (10, 0), (float("nan"), 10), ("x", 10), (0, 0)):
        assert B.bound_class(f, b, 10.0) == "unclassified", (f, b)
    assert B.bound_class(100, 10, None) == "unclassified"  # no ridge to compare with


def test_the_datasheet_ridge_when_no_measured_roof_and_none_without_either():
    h100 = "NVIDIA H100 80GB HBM3"  # datasheet fp32: 67 TFLOP/s, 3.35 TB/s: ridge 20
    prof = [_op("0:1", "aten::mm", 0.3, 1000, 10), _op("0:1", "aten::add", 0.1, 150, 10)]
    r = B.bound_shares(_data(ceilings=None, platform=h100, prof=prof)).iloc[0]
    assert r["roof"] == "datasheet" and r["ridge"] == pytest.approx(67e12 / 3.35e12)
    # 15 FLOP/byte: memory-bound under the datasheet ridge (20), compute-bound under 10
    assert (r["memory_bound"], r["compute_bound"]) == (pytest.approx(0.25), pytest.approx(0.75))
    # a measured roof of only a bandwidth has no ridge: the datasheet's stays
    bw_only = CEILINGS[CEILINGS["kind"] == "copy"].assign(device_name=h100)
    assert B.bound_shares(_data(ceilings=bw_only, platform=h100, prof=prof)).iloc[0]["roof"] == (
        "datasheet"
    )
    r = B.bound_shares(_data(ceilings=None, prof=prof)).iloc[0]  # SynthCPU, no ceilings
    assert r["roof"] is None and pd.isna(r["ridge"])
    assert pd.isna(r["memory_bound"]) and pd.isna(r["compute_bound"])
    assert r["unclassified"] == pytest.approx(1.0) and "no roof" in r["reason"]


def test_the_seeds_figure_sits_beside_the_models_it_measured_only():
    img = {"batch": 2}
    for fam, want in (("resnet50", 0.13), ("transformer_base", 0.199)):
        run = synth.row(fam, img, 0.1)
        data = A.from_frames([run], ceilings=CEILINGS, op_profile=pd.DataFrame(_profile()))
        assert B.bound_shares(data).iloc[0]["seed_memory_bound"] == want
    assert B.SEED_MEMORY_BOUND == {"resnet50": 0.13, "transformer_base": 0.199}


def test_no_profile_no_time_and_no_ok_run_give_empty_or_null_shares():
    bare = A.from_frames([synth.row("fc", CFG, 0.1)])
    assert list(B.bound_shares(bare).columns) == B.BOUND_COLUMNS and B.bound_shares(bare).empty
    zero = [_op("0:1", "aten::mm", 0.0, 1000, 10)]
    r = B.bound_shares(_data(prof=zero)).iloc[0]
    assert pd.isna(r["memory_bound"]) and pd.isna(r["unclassified"])
    assert r["reason"] == "no profiled time"
    failed = synth.row("fc", CFG, None, status="oom")
    data = A.from_frames([failed], ceilings=CEILINGS, op_profile=pd.DataFrame(_profile()))
    assert B.bound_shares(data).empty
