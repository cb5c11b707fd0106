"""`analysis.papers` pinned: what the databases measure of a seed's claim — which runs count
(family, kind of device, one process, precision, config), which utilization (datasheet, else
the measured ceiling), and every reason a claim gets when they cannot speak to it."""

from __future__ import annotations

import pytest

from paradnn import analysis as A
from paradnn.analysis import papers as P

import synth

RNN = {"layers": 1, "embed": 100, "length": 10, "vocab": 32}


@pytest.mark.parametrize(
    "device, kind",
    [
        ("cpu", "cpu"), ("CPU", "cpu"), ("cuda", "gpu"), ("cuda:3", "gpu"), ("gpu:0", "gpu"),
        ("rocm:1", "gpu"), ("HIP", "gpu"), ("tpu:0", "tpu"), ("tpu", "tpu"), ("mps", None),
        ("xla:0", None), ("", None), (None, None), (3, None), ("cpu:0:1", "cpu"),
    ],
)  # fmt: skip
def test_device_kind(device, kind):
    assert P.device_kind(device) == kind


def _rnn(batch, util, *, device="cpu", platform="SynthCPU", precision="fp32", **kw) -> dict:
    """One RNN run at `util` of the datasheet peak (unless `kw` says otherwise)."""
    kw.setdefault("utilization_datasheet", util)
    r = synth.row("rnn", {**RNN, "batch": batch}, util, device=device, platform=platform,
                  precision=precision, **kw)  # fmt: skip
    return r


def _data(rows) -> A.Data:
    return A.from_frames(rows)


def test_max_utilization_is_the_datasheet_maximum_in_percent_over_the_counted_runs():
    rows = [
        _rnn(16, 0.2),
        _rnn(64, 0.3, platform="OtherCPU"),
        _rnn(32, 0.9, procs=2),  # two processes: not counted
        _rnn(8, 0.95, device="cuda:0", platform="G"),  # another kind of device
        synth.row("fc", {"batch": 8}, 0.99),  # another family
        _rnn(128, 0.97, status="crashed"),  # not ok
    ]
    v, basis = P.max_utilization(_data(rows), "rnn", "cpu")
    assert v == pytest.approx(30.0)
    assert basis == "max over 2 rnn runs on OtherCPU, SynthCPU, of the datasheet peak"
    v, basis = P.max_utilization(_data(rows), "rnn", "gpu")
    assert v == pytest.approx(95.0) and basis == "max over 1 rnn runs on G, of the datasheet peak"


def test_one_process_is_a_procs_of_one_or_none():
    rows = [_rnn(16, 0.2, procs=1), _rnn(32, 0.4), _rnn(64, 0.8, procs=4)]
    rows[1]["procs"] = None
    v, basis = P.max_utilization(_data(rows), "rnn", "cpu")
    assert v == pytest.approx(40.0) and basis.startswith("max over 2 rnn runs")


def test_max_utilization_falls_back_to_the_measured_ceiling_and_says_so():
    rows = [_rnn(16, 0.2, utilization_datasheet=None, utilization_measured=0.6),
            _rnn(64, 0.3, utilization_datasheet=None, utilization_measured=0.5)]  # fmt: skip
    v, basis = P.max_utilization(_data(rows), "rnn", "cpu")
    assert v == pytest.approx(60.0)
    assert basis == (
        "max over 2 rnn runs on SynthCPU, of the measured matmul ceiling (no datasheet peak)"
    )


def test_max_utilization_without_runs_or_without_utilization_says_why():
    assert P.max_utilization(_data([]), "rnn", "cpu") == (
        None, "no rnn runs on a CPU in the databases"
    )  # fmt: skip
    assert P.max_utilization(_data([_rnn(16, 0.2)]), "rnn", "tpu") == (
        None, "no rnn runs on a TPU in the databases"
    )  # fmt: skip
    rows = [_rnn(16, 0.2, utilization_datasheet=None, utilization_measured=None)]
    assert P.max_utilization(_data(rows), "rnn", "cpu") == (
        None, "the rnn runs on a CPU have no utilization (no peak known)"
    )  # fmt: skip


def test_utilization_columns_in_order_and_an_empty_series_when_neither_has_a_value():
    import pandas as pd

    df = pd.DataFrame({"utilization_datasheet": [None, "x"], "utilization_measured": [0.5, 0.25]})
    vals, what = P._utilization(df)
    assert list(vals) == [0.5, 0.25] and what.startswith("of the measured matmul ceiling")
    df = pd.DataFrame({"utilization_datasheet": [0.1, None], "utilization_measured": [0.5, 0.2]})
    vals, what = P._utilization(df)
    assert list(vals) == [0.1] and what == "of the datasheet peak"
    vals, what = P._utilization(pd.DataFrame({"x": [1]}))
    assert len(vals) == 0 and what == "" and vals.dtype == float


def test_throughput_is_the_median_of_the_runs_holding_the_config_at_the_precision():
    rows = [
        _rnn(16, 0.2),
        _rnn(16, 0.4, hostname="b"),
        _rnn(16, 0.9, hostname="c", platform="Z"),
        _rnn(64, 0.5),  # another batch
        _rnn(16, 0.7, precision="bf16"),  # another precision
    ]
    x = [r["examples_per_s"] for r in rows]
    data = _data(rows)
    v, basis = P.throughput(data, "rnn", {"batch": 16}, "cpu", "fp32")
    assert v == pytest.approx(sorted(x[:3])[1]) and basis == "median of 3 runs on SynthCPU, Z"
    v, basis = P.throughput(data, "rnn", {"batch": 16, "embed": 100}, "cpu", "fp32", 10)
    assert v == pytest.approx(10 * sorted(x[:3])[1])
    v, basis = P.throughput(data, "rnn", {"batch": 64}, "cpu", "fp32")
    assert v == pytest.approx(x[3]) and basis == "1 run on SynthCPU"
    v, basis = P.throughput(data, "rnn", {"batch": 16}, "cpu", "bf16")
    assert v == pytest.approx(x[4]) and basis == "1 run on SynthCPU"
    v, _ = P.throughput(data, "rnn", {"batch": 16}, "cpu", None)  # any precision
    four = sorted(x[:3] + x[4:])
    assert v == pytest.approx((four[1] + four[2]) / 2)
    v, basis = P.throughput(data, "rnn", {}, "cpu", "fp32")  # any config
    four = sorted(x[:4])
    assert v == pytest.approx((four[1] + four[2]) / 2) and basis.startswith("median of 4 runs")


def test_throughput_says_why_it_has_no_number():
    data = _data([_rnn(16, 0.2)])
    assert P.throughput(data, "rnn", {"batch": 32}, "cpu", "fp32") == (
        None, "no rnn batch=32 fp32 run on a CPU here"
    )  # fmt: skip
    assert P.throughput(data, "rnn", {"batch": 16, "layers": 1}, "gpu", None) == (
        None, "no rnn batch=16 layers=1 run on a GPU here"
    )  # fmt: skip
    assert P.throughput(_data([]), "rnn", {}, "tpu", "bf16") == (
        None, "no rnn bf16 run on a TPU here"
    )  # fmt: skip
    rows = [_rnn(16, 0.2)]
    rows[0]["examples_per_s"] = None
    assert P.throughput(_data(rows), "rnn", {"batch": 16}, "cpu", "fp32") == (
        None, "the rnn batch=16 runs here have no throughput"
    )  # fmt: skip


def test_a_run_whose_config_is_no_mapping_holds_no_config():
    data = _data([_rnn(16, 0.2)])
    data.runs["config"] = ["not a mapping"]
    v, why = P.throughput(data, "rnn", {"batch": 16}, "cpu", "fp32")
    assert v is None and why.startswith("no rnn batch=16 fp32 run")


def test_measured_reads_the_claims_measure_table():
    rows = [_rnn(16, 0.2), _rnn(64, 0.6, device="cuda:0", platform="G")]
    data = _data(rows)
    assert P.measured(data, None) == (None, "not measurable here")
    assert P.measured(data, {}) == (None, "not measurable here")
    assert P.measured(data, {"kind": "none", "reason": "no host"}) == (None, "no host")
    assert P.measured(data, {"kind": "none"}) == (None, "not measurable here")
    assert P.measured(data, {"kind": "other", "reason": ""}) == (None, "not measurable here")
    v, basis = P.measured(data, {"kind": "max_util", "family": "rnn", "device": "gpu"})
    assert v == pytest.approx(60.0) and basis.startswith("max over 1 rnn runs on G")
    spec = {"kind": "max_util_ratio", "family": "rnn", "a": "gpu", "b": "cpu"}
    v, basis = P.measured(data, spec)
    assert v == pytest.approx(3.0)
    assert basis == (
        "max over 1 rnn runs on G, of the datasheet peak ÷ "
        "max over 1 rnn runs on SynthCPU, of the datasheet peak"
    )
    v, why = P.measured(data, {**spec, "a": "tpu"})
    assert v is None and why == "no rnn runs on a TPU in the databases"
    v, why = P.measured(data, {**spec, "b": "tpu"})
    assert v is None and why == "no rnn runs on a TPU in the databases"
    spec = {"kind": "throughput", "family": "rnn", "device": "cpu", "config": {"batch": 16}}
    v, basis = P.measured(data, {**spec, "precision": "fp32", "per_example": 10})
    assert v == pytest.approx(10 * rows[0]["examples_per_s"]) and basis == "1 run on SynthCPU"
    assert P.measured(data, {**spec, "precision": "bf16"}) == (
        None, "no rnn batch=16 bf16 run on a CPU here"
    )  # fmt: skip
    v, _ = P.measured(data, spec)  # no precision, no per_example: any precision, ×1
    assert v == pytest.approx(rows[0]["examples_per_s"])
    v, _ = P.measured(data, {"kind": "throughput", "family": "rnn", "device": "cpu"})
    assert v == pytest.approx(rows[0]["examples_per_s"])  # no config: every config


def test_a_ratio_over_a_zero_maximum_has_no_number():
    rows = [_rnn(16, 0.2), _rnn(64, 0.1, device="cuda:0", platform="G", utilization_datasheet=0)]
    spec = {"kind": "max_util_ratio", "family": "rnn", "a": "cpu", "b": "gpu"}
    v, why = P.measured(_data(rows), spec)
    assert v is None and why == "max over 1 rnn runs on G, of the datasheet peak"
