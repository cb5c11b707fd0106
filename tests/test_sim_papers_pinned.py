"""sim/papers.py pinned: the claims file's every refusal (field, value, what is allowed), every
field of a loaded claim, each `compute.kind`'s number against the step-time model called
directly, its basis in words, and the side-by-side rows: which number stands, which basis and
band it carries."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from paradnn.errors import ConfigError
from paradnn.families.lowering import Op
from paradnn.sim import errorbands as EB
from paradnn.sim import papers as P
from paradnn.sim.interconnect import parse_topology
from paradnn.sim.model import predict_op
from paradnn.sim.steptime import multichip_overhead, predict_step

# --- the claims file ------------------------------------------------------------------------

BASE = {
    "id": "x",
    "seed": "000",
    "where": "Fig. 1",
    "quote": "q 1",
    "quantity": "q",
    "unit": "%",
    "workload": "w",
    "line": 3,
    "value": 1,
    "compute": {"kind": "none", "reason": "r"},
}


def _toml(claims: list[dict]) -> str:
    def val(v):
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, list | tuple):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, float) and not math.isfinite(v):
            return "nan" if v != v else ("inf" if v > 0 else "-inf")
        return json.dumps(v, ensure_ascii=False)

    return "\n".join(
        "[[claim]]\n" + "".join(f"{k} = {val(v)}\n" for k, v in c.items()) for c in claims
    )


def _refused(claims: list[dict]) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        P.load(_toml(claims))
    return e.value


def test_a_claim_is_loaded_with_every_field():
    full = BASE | {
        "platforms": ["TPU", "GPU"],
        "measure": {"kind": "max_util", "family": "rnn", "device": "cpu"},
        "note": "n",
    }
    (c,) = P.load(_toml([full]))
    assert c == P.Claim(
        "x", "000", "Fig. 1", 3, "q 1", "q", "%", ("TPU", "GPU"), "w", 1.0,
        {"kind": "none", "reason": "r"}, {"kind": "max_util", "family": "rnn", "device": "cpu"},
        "n",
    )  # fmt: skip
    assert type(c.value) is float
    (c,) = P.load(_toml([BASE]))
    assert c.platforms == () and c.measure is None and c.note is None
    assert P.load("") == [] and P.load("[seeds]\n") == []


@pytest.mark.parametrize("key", ["id", "seed", "where", "quote", "quantity", "unit", "workload"])
@pytest.mark.parametrize("bad", [None, "", 5])
def test_every_text_field_must_be_a_non_empty_string(key, bad):
    second = dict(BASE, id="y")
    if bad is None:
        del second[key]
    else:
        second[key] = bad
    e = _refused([BASE, second])
    assert (e.field, e.value, e.allowed) == (f"claim[1].{key}", bad, "a non-empty string")


@pytest.mark.parametrize("bad", [True, "1", math.nan, math.inf, -math.inf, None, [1]])
def test_a_value_is_a_finite_number(bad):
    c = dict(BASE)
    if bad is None:
        del c["value"]
    else:
        c["value"] = bad
    e = _refused([c])
    assert e.field == "x.value" and e.allowed == "a finite number"
    assert e.value is bad or (e.value != e.value and bad != bad) or e.value == bad


@pytest.mark.parametrize("good", [0, -2.5, 7])
def test_any_finite_value_is_taken(good):
    (c,) = P.load(_toml([BASE | {"value": good}]))
    assert c.value == float(good)


@pytest.mark.parametrize("bad", [0, -1, "1", 1.0, None])
def test_a_line_is_a_whole_number_from_one(bad):
    c = dict(BASE)
    if bad is None:
        del c["line"]
    else:
        c["line"] = bad
    e = _refused([c])
    assert (e.field, e.value, e.allowed) == ("x.line", bad, "a line number ≥ 1")
    (ok,) = P.load(_toml([BASE | {"line": 1}]))
    assert ok.line == 1


def test_the_compute_table_names_a_known_kind_and_none_needs_its_reason():
    kinds = ", ".join(P.KINDS)
    e = _refused([BASE | {"compute": {"kind": "guess"}}])
    assert (e.field, e.value, e.allowed) == ("x.compute.kind", "guess", kinds)
    c = dict(BASE)
    del c["compute"]
    e = _refused([c])
    assert (e.field, e.value, e.allowed) == ("x.compute.kind", None, kinds)
    e = _refused([BASE | {"compute": {}}])
    assert (e.field, e.value, e.allowed) == ("x.compute.kind", None, kinds)
    e = _refused([BASE | {"compute": "none"}])  # a word, not a table: refused, no traceback
    assert (e.field, e.value, e.allowed) == ("x.compute.kind", "none", kinds)
    e = _refused([BASE | {"compute": ["none"]}])
    assert (e.field, e.value, e.allowed) == ("x.compute.kind", ["none"], kinds)
    e = _refused([BASE | {"compute": {"kind": "none"}}])
    assert (e.field, e.value, e.allowed) == (
        "x.compute.reason", None, "a reason it cannot be computed"
    )  # fmt: skip
    e = _refused([BASE | {"compute": {"kind": "none", "reason": ""}}])
    assert e.field == "x.compute.reason"
    for kind in P.KINDS[:-1]:  # the others need no reason here
        (c,) = P.load(_toml([BASE | {"compute": {"kind": kind}}]))
        assert c.compute == {"kind": kind}


def test_a_measure_table_names_a_measurable_kind():
    kinds = ", ".join(P.MEASURE_KINDS)
    e = _refused([BASE | {"measure": {"kind": "speedup"}}])
    assert (e.field, e.value, e.allowed) == ("x.measure.kind", "speedup", kinds)
    e = _refused([BASE | {"measure": {}}])
    assert (e.field, e.value, e.allowed) == ("x.measure.kind", None, kinds)
    e = _refused([BASE | {"measure": "none"}])  # a word, not a table
    assert (e.field, e.value, e.allowed) == ("x.measure.kind", "none", kinds)
    for kind in P.MEASURE_KINDS:
        (c,) = P.load(_toml([BASE | {"measure": {"kind": kind}}]))
        assert c.measure == {"kind": kind}


def test_an_id_appears_once():
    e = _refused([BASE, dict(BASE, id="y"), dict(BASE, quote="other")])
    assert (e.field, e.value, e.allowed) == ("claim[2].id", "x", "unique (it appears twice)")


def test_the_shipped_file_names_its_three_seeds():
    got = P.seeds()
    assert sorted(got) == ["000", "001", "002"]
    assert got["000"].startswith("Benchmarking TPU, GPU, and CPU Platforms for Deep Learning")
    assert got["001"].startswith("A Domain-Specific Supercomputer")
    assert P._text("paper_claims.toml").startswith("#") or "[[claim]]" in P._text(
        "paper_claims.toml"
    )


# --- labels and bands -----------------------------------------------------------------------


def test_a_side_is_labelled_by_platform_precision_policy_and_chips():
    assert P._label({"platform": "tpu-v2", "precision": "bf16"}) == "tpu-v2 bf16"
    assert P._label({"platform": "data:v100-pcie", "precision": "fp16"}) == "v100-pcie fp16"
    assert P._label({"platform": "v", "precision": "fp16", "policy": "mixed"}) == "v fp16"
    assert P._label({"platform": "v", "precision": "fp16", "policy": "pure"}) == "v fp16 (pure)"
    assert P._label({"platform": "t", "precision": "bf16", "chips": 1}) == "t bf16"
    assert P._label({"platform": "t", "precision": "bf16", "chips": 4}) == "t bf16 ×4"
    spec = {"platform": "t", "precision": "bf16", "chips": 4, "topology": "torus2d:2x2"}
    assert P._label(spec) == "t bf16 ×4 torus2d:2x2"
    assert P._label({**spec, "chips": 1}) == "t bf16"
    assert P._label({**spec, "policy": "fp32-storage"}) == "t bf16 (fp32-storage) ×4 torus2d:2x2"


def test_a_topology_is_parsed_only_when_named():
    assert P._topology({}) is None and P._topology({"topology": ""}) is None
    assert P._topology({"topology": "torus2d:2x2"}) == parse_topology("torus2d:2x2")


def test_chips_from_the_database_or_the_files_shipped_beside_the_claims():
    assert P._chip("tpu-v2").id == "tpu-v2" and P._chip("tpu-v2").origin == "datasheet"
    v = P._chip("data:v100-pcie")
    assert v.id == "v100-pcie" and v.origin.startswith("file ")
    assert P._kind({"platform": "data:xeon-8163-12c"}) == "cpu"
    assert P._kind({"platform": "tpu-v3"}) == "tpu" and P._kind({"platform": "v100"}) == "gpu"


def test_band_text_and_a_rows_band(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": 1, "bands": {"tpu": {"p90": 0.5, "n": 3}}}), "utf-8")
    bands = EB.read(path)
    assert (
        P.band_text(["tpu", "gpu", "tpu"], bands) == "tpu: ±50.0% (p90, n = 3); gpu: not validated"
    )
    assert P.band_text((), bands) == "" and P.band_text([]) == ""
    assert P.band_text(["gpu"]) == EB.read().short(["gpu"])
    pred = P.Estimate(2.0, "predicted", "b", ("tpu",))
    assert P._band(pred, bands) == "tpu: ±50.0% (p90, n = 3)"
    assert P._band(P.Estimate(2.0, "predicted", "b"), bands) == (
        "not validated (not the step-time model)"
    )
    assert P._band(P.Estimate(2.0, "measured here", "b", ("tpu",)), bands) == ""
    assert P._band(P.Estimate(None, "cannot compute", "b", ("tpu",)), bands) == ""


@pytest.mark.parametrize(
    "v, text",
    [(0.123456, "0.123"), (999.4, "999"), (-999.9, "-1e+03"), (1000, "1,000"),
     (1234567.8, "1,234,568"), (-2500.5, "-2,500"), (12.5, "12.5")],
)  # fmt: skip
def test_fmt(v, text):
    assert P._fmt(v) == text


# --- predictions, kind by kind --------------------------------------------------------------

FC = {"layers": 2, "nodes": 64, "input": 100, "output": 10, "batch": 32}
FC2 = {"layers": 4, "nodes": 128, "input": 100, "output": 10, "batch": 64}
V100 = {"platform": "v100-sxm2", "precision": "fp16"}
TPU = {"platform": "tpu-v2", "precision": "bf16", "chips": 4, "topology": "torus2d:2x2"}


def _claim(compute: dict, **kw) -> P.Claim:
    return P.Claim("c", "000", "w", 1, "q", "q", "x", (), "fc", 1.0, compute, **kw)


def _x(fam, cfg, spec, **kw) -> float:
    topo = parse_topology(spec["topology"]) if spec.get("topology") else None
    return predict_step(
        fam, cfg, P._chip(spec["platform"]), spec["precision"], chips=int(spec.get("chips", 1)),
        topology=topo, policy=spec.get("policy", "mixed"), **kw,
    ).examples_per_s  # fmt: skip


def test_throughput_is_the_models_rate_times_per_example():
    p = P.Predictor({})
    spec = {"kind": "throughput", "family": "fc", "config": FC, **V100}
    e = p.predict(_claim(spec))
    assert e == P.Estimate(
        pytest.approx(_x("fc", FC, V100)), "predicted", "step-time model, fc on v100-sxm2 fp16",
        ("gpu",),
    )  # fmt: skip
    e = p.predict(_claim(spec | {"per_example": 7}))
    assert e.value == pytest.approx(7 * _x("fc", FC, V100))
    policy = p.predict(_claim(spec | {"policy": "pure"}))
    assert policy.value == pytest.approx(_x("fc", FC, V100 | {"policy": "pure"}))
    assert policy.basis == "step-time model, fc on v100-sxm2 fp16 (pure)"


def test_step_is_cached_per_family_config_and_side():
    p = P.Predictor({})
    a = p.step("fc", FC, V100)
    assert p.step("fc", dict(reversed(list(FC.items()))), dict(V100)) is a
    assert p.step("fc", FC2, V100) is not a and p.step("fc", FC, TPU) is not a
    assert len(p._steps) == 3
    many = p.step("fc", FC, TPU)
    assert many.chips == 4 and many.topology is not None


def test_speedup_divides_side_a_by_side_b():
    a = {"family": "fc", "config": FC, **TPU}
    b = {"family": "fc", "config": FC, **V100}
    e = P.Predictor({}).predict(_claim({"kind": "speedup", "a": a, "b": b}))
    assert e.value == pytest.approx(_x("fc", FC, TPU) / _x("fc", FC, V100))
    assert e.basis == "step-time model, fc: tpu-v2 bf16 ×4 torus2d:2x2 ÷ v100-sxm2 fp16"
    assert e.devices == ("tpu", "gpu") and e.source == "predicted"


def test_geomean_speedup_is_the_geometric_mean_of_the_pairs():
    pairs = [
        {"a": {"family": "fc", "config": FC, **TPU}, "b": {"family": "fc", "config": FC, **V100}},
        {"a": {"family": "fc", "config": FC2, **TPU}, "b": {"family": "fc", "config": FC2, **V100}},
    ]
    e = P.Predictor({}).predict(_claim({"kind": "geomean_speedup", "pairs": pairs}))
    r = [_x("fc", c, TPU) / _x("fc", c, V100) for c in (FC, FC2)]
    assert e.value == pytest.approx(math.sqrt(r[0] * r[1]))
    assert e.basis == (
        "step-time model, geometric mean over fc, fc: tpu-v2 bf16 ×4 torus2d:2x2 ÷ v100-sxm2 fp16"
    )
    assert e.devices == ("tpu", "gpu")


def test_multichip_overhead_is_a_percentage():
    c = {"kind": "multichip_overhead", "family": "fc", "config": FC, **TPU}
    e = P.Predictor({}).predict(_claim(c))
    want = multichip_overhead("fc", FC, P._chip("tpu-v2"), "bf16", 4,
                              topology=parse_topology("torus2d:2x2"))  # fmt: skip
    assert e.value == pytest.approx(100 * want) and e.devices == ("tpu",)
    assert e.basis == "step-time model, (t_N − t_1) ÷ t_N on tpu-v2 bf16 ×4 torus2d:2x2"


def test_scaling_efficiency_is_one_chips_step_over_n_chips_in_percent():
    c = {"kind": "scaling_efficiency", "family": "fc", "config": FC, **TPU}
    p = P.Predictor({})
    e = p.predict(_claim(c))
    one = predict_step("fc", FC, P._chip("tpu-v2"), "bf16", chips=1)
    many = predict_step("fc", FC, P._chip("tpu-v2"), "bf16", chips=4,
                        topology=parse_topology("torus2d:2x2"))  # fmt: skip
    assert e.value == pytest.approx(100 * one.predicted_step_s / many.predicted_step_s)
    assert e.basis == (
        f"step-time model, weak scaling t_1 ÷ t_N on tpu-v2 bf16 ×4 torus2d:2x2 ({many.topology})"
    )
    assert e.devices == ("tpu",)


def _util(cfg, spec) -> float:
    topo = parse_topology(spec["topology"]) if spec.get("topology") else None
    return predict_step("fc", cfg, P._chip(spec["platform"]), spec["precision"],
                        chips=int(spec.get("chips", 1)), topology=topo).utilization  # fmt: skip


def test_max_util_ranges_over_the_given_configs_that_match_where():
    p = P.Predictor({"fc": [FC, FC2, {**FC, "layers": 8}]})
    c = {"kind": "max_util", "family": "fc", **V100}
    e = p.predict(_claim(c))
    assert e.value == pytest.approx(
        100 * max(_util(x, V100) for x in (FC, FC2, {**FC, "layers": 8}))
    )
    assert e.basis == "step-time model, max over 3 of the given configs on v100-sxm2 fp16"
    e = p.predict(_claim(c | {"where": {"layers_min": 4}}))
    assert e.value == pytest.approx(100 * max(_util(x, V100) for x in (FC2, {**FC, "layers": 8})))
    assert (
        e.basis
        == "step-time model, max over 2 of the given configs with layers≥4 on v100-sxm2 fp16"
    )
    e = p.predict(_claim(c | {"where": {"layers": 2, "batch": 32}}))
    assert e.value == pytest.approx(100 * _util(FC, V100))
    assert "max over 1 of the given configs with layers=2 batch=32 on" in e.basis
    e = p.predict(_claim(c | {"where": {"layers": 3}}))
    assert e == P.Estimate(
        None, "cannot compute", "no fc configs to range over (0 of the given configs with layers=3)"
    )  # fmt: skip
    none = P.Predictor({}).predict(_claim(c))
    assert (
        none.value is None and none.basis == "no fc configs to range over (0 of the given configs)"
    )


def test_max_util_ratio_divides_the_two_maxima():
    p = P.Predictor({"fc": [FC, FC2]})
    c = {"kind": "max_util_ratio", "family": "fc", "a": TPU, "b": V100}
    e = p.predict(_claim(c))
    a = max(_util(x, TPU) for x in (FC, FC2))
    b = max(_util(x, V100) for x in (FC, FC2))
    assert e.value == pytest.approx(a / b) and e.devices == ("tpu", "gpu")
    assert e.basis == (
        "step-time model, max utilization tpu-v2 bf16 ×4 torus2d:2x2 ÷ v100-sxm2 fp16 "
        "(step-time model, max over 2 of the given configs)"
    )
    e = P.Predictor({}).predict(_claim(c))
    assert e.value is None and e.basis == "no fc configs to range over (0 of the given configs)"
    e = P.Predictor({"fc": [FC]}).predict(_claim(c | {"b": {**V100, "where": {"layers": 9}}}))
    assert e.value is None
    assert e.basis == "no fc configs to range over (0 of the given configs with layers=9)"


def test_max_util_ratio_over_a_zero_maximum_is_no_number(monkeypatch):
    p = P.Predictor({"fc": [FC]})
    real = p._max_util
    monkeypatch.setattr(
        p, "_max_util", lambda c: (0.0, "zero", []) if c["platform"] == "v100-sxm2" else real(c)
    )
    e = p.predict(_claim({"kind": "max_util_ratio", "family": "fc", "a": TPU, "b": V100}))
    assert e == P.Estimate(None, "cannot compute", "zero")


def test_max_speedup_and_the_share_faster_over_matched_configs():
    p = P.Predictor({"fc": [FC, FC2]})
    c = {"kind": "max_speedup", "family": "fc", "a": TPU, "b": V100}
    r = [_x("fc", x, TPU) / _x("fc", x, V100) for x in (FC, FC2)]
    e = p.predict(_claim(c))
    assert e.value == pytest.approx(max(r)) and e.devices == ("tpu", "gpu")
    assert e.basis == (
        "step-time model, max over 2 of the given configs: tpu-v2 bf16 ×4 torus2d:2x2 ÷ "
        "v100-sxm2 fp16"
    )
    e = p.predict(_claim(c | {"a_batch_factor": 2}))
    r2 = [_x("fc", {**x, "batch": 2 * x["batch"]}, TPU) / _x("fc", x, V100) for x in (FC, FC2)]
    assert e.value == pytest.approx(max(r2)) and e.basis.endswith(" (a at twice b's batch)")
    e = p.predict(_claim(c | {"a_batch_factor": 1}))
    assert e.value == pytest.approx(max(r)) and not e.basis.endswith("batch)")
    s = p.predict(_claim(c | {"kind": "share_faster"}))
    assert s.value == pytest.approx(100 * sum(v > 1 for v in r) / 2)
    assert s.basis == (
        "step-time model, share of 2 of the given configs faster on tpu-v2 bf16 ×4 torus2d:2x2 "
        "than v100-sxm2 fp16"
    )
    back = p.predict(_claim(c | {"kind": "share_faster", "a": V100, "b": TPU}))
    assert back.value == pytest.approx(100 * sum(v < 1 for v in r) / 2)
    for kind in ("max_speedup", "share_faster"):
        e = P.Predictor({}).predict(_claim(c | {"kind": kind}))
        assert e.value is None
        assert e.basis == "no fc configs to range over (0 of the given configs)"


def test_the_share_counts_only_strictly_faster_configs(monkeypatch):
    p = P.Predictor({"fc": [FC, FC2, {**FC, "layers": 8}, {**FC, "layers": 3}]})
    speed = iter([1.0, 2.0, 0.5, 1.5])
    monkeypatch.setattr(p, "_pair", lambda fam, x, c: next(speed))
    e = p.predict(_claim({"kind": "share_faster", "family": "fc", "a": TPU, "b": V100}))
    assert e.value == 50.0


def test_a_config_the_model_refuses_is_skipped_in_a_range(monkeypatch):
    p = P.Predictor({"fc": [FC, FC2, {**FC, "layers": 8}]})

    def fn(c):
        if c["layers"] == 4:
            raise ConfigError("x", 1, "y")
        return float(c["layers"])

    vals, what = p.over("fc", {}, fn)
    assert vals == [2.0, 8.0] and what == "2 of the given configs"
    with pytest.raises(ValueError):
        p.over("fc", {}, lambda c: float("x"))


def test_without_given_configs_a_range_is_the_table2_sample():
    p = P.Predictor()
    cfgs, what = p.configs("fc")
    assert len(cfgs) == P.TABLE2_SAMPLE and what == f"{P.TABLE2_SAMPLE} Table 2 fc configs (LHS)"
    assert cfgs == P._sample_configs("fc") and cfgs is not P._sample_configs("fc")
    cfgs[0]["batch"] = -1
    assert P._sample_configs("fc")[0]["batch"] != -1  # a copy: the cache is never changed
    assert P._sample_configs("nope") == []
    got, what = P.Predictor({"fc": [FC]}).configs("fc")
    assert got == [FC] and what == "the given configs"
    assert P.Predictor({"fc": [FC]}).configs("cnn") == ([], "the given configs")


def test_holds_reads_key_equals_and_key_min():
    assert P._holds({"layers": 4}, "layers", 4) and not P._holds({"layers": 4}, "layers", 5)
    assert P._holds({"layers": 4}, "layers_min", 4) and P._holds({"layers": 5}, "layers_min", 4)
    assert not P._holds({"layers": 3}, "layers_min", 4)
    assert not P._holds({"layers": "9"}, "layers_min", 4) and not P._holds({}, "layers_min", 0)
    assert P._holds({"x": 2.5}, "x_min", 2) and not P._holds({}, "layers", 4)
    assert P._holds({}, "layers", None)


def test_op_speedup_is_the_roofline_of_one_gemm_on_each_chip():
    c = {"kind": "op_speedup", "m": 64, "n": 512, "k": 256, "a": "tpu-v3", "b": "tpu-v2",
         "precision": "bf16"}  # fmt: skip
    e = P.Predictor({}).predict(_claim(c))

    def t(chip, m):
        o = predict_op(Op("op", "fwd", m, 512, 256), P._chip(chip), "bf16")
        return max(o.compute_s, o.memory_s)

    assert e.value == pytest.approx(t("tpu-v2", 64) / t("tpu-v3", 64))
    assert e.basis == "roofline of one GEMM 64×512×256: tpu-v3 ÷ tpu-v2" and e.devices == (
        "tpu",
        "tpu",
    )
    e = P.Predictor({}).predict(_claim(c | {"a_batch_factor": 2, "b": "a100-80gb-sxm"}))
    assert e.value == pytest.approx(2 * t("a100-80gb-sxm", 64) / t("tpu-v3", 128))
    assert e.basis == (
        "roofline of one GEMM 64×512×256: tpu-v3 ÷ a100-80gb-sxm (tpu-v3 at 2× the rows)"
    )
    assert e.devices == ("tpu", "gpu")


def test_op_speedup_takes_the_slower_of_compute_and_memory():
    # a thin GEMM is memory-bound, a square one compute-bound: both terms must be read
    for m, n, k in ((1, 4096, 4096), (4096, 4096, 4096)):
        c = {"kind": "op_speedup", "m": m, "n": n, "k": k, "a": "tpu-v3", "b": "a100-80gb-sxm",
             "precision": "bf16"}  # fmt: skip
        e = P.Predictor({}).predict(_claim(c))
        oa = predict_op(Op("op", "fwd", m, n, k), P._chip("tpu-v3"), "bf16")
        ob = predict_op(Op("op", "fwd", m, n, k), P._chip("a100-80gb-sxm"), "bf16")
        want = max(ob.compute_s, ob.memory_s) / max(oa.compute_s, oa.memory_s)
        assert e.value == pytest.approx(want)


def test_bandwidth_ratio_is_the_datasheets():
    e = P.Predictor({}).predict(_claim({"kind": "bandwidth_ratio", "a": "tpu-v3", "b": "tpu-v2"}))
    assert e.value == pytest.approx(
        P._chip("tpu-v3").mem_bandwidth / P._chip("tpu-v2").mem_bandwidth
    )
    assert e.basis == "memory bandwidth tpu-v3 ÷ tpu-v2 (datasheet; a memory-bound op's speedup)"
    assert e.devices == () and e.source == "predicted"


def test_mxu_study_statistics_of_a_design_or_the_ratio():
    from paradnn.sim.studies import mxu_study

    rows = mxu_study(batch=8)
    p = P.Predictor({})
    for stat, fn in (("min", min), ("max", max), ("median", statistics.median)):
        e = p.predict(_claim({"kind": "mxu_study", "design": "4×128×128", "stat": stat}))
        assert e.value == pytest.approx(100 * fn(r["4×128×128"] for r in rows))
        assert e.basis == (
            f"systolic cycle model (MXU study), {stat} over {len(rows)} workloads, batch 8"
        )
        assert e.devices == ()
    e = p.predict(_claim({"kind": "mxu_study", "design": "ratio", "stat": "max"}))
    assert e.value == pytest.approx(max(r["4×128×128 / 1×256×256"] for r in rows))
    rows4 = mxu_study(batch=4)
    e = p.predict(_claim({"kind": "mxu_study", "design": "1×256×256", "stat": "min", "batch": 4}))
    assert e.value == pytest.approx(100 * min(r["1×256×256"] for r in rows4))
    assert e.basis.endswith(", batch 4")
    e = p.predict(_claim({"kind": "mxu_study", "design": "2×2×2", "stat": "min"}))
    assert e == P.Estimate(None, "cannot compute", "the MXU study has no 2×2×2 design")


def test_predict_none_and_a_refused_config():
    p = P.Predictor({})
    assert p.predict(_claim({"kind": "none", "reason": "no host model"})) == P.Estimate(
        None, "cannot compute", "no host model"
    )
    bad = {"kind": "throughput", "family": "fc", "config": {**FC, "layers": -1}, **V100}
    e = p.predict(_claim(bad))
    with pytest.raises(ConfigError) as err:
        predict_step("fc", {**FC, "layers": -1}, P._chip("v100-sxm2"), "fp16")
    assert e == P.Estimate(None, "cannot compute", f"the model refused it: {err.value}")


# --- side by side ---------------------------------------------------------------------------


def _c(cid: str, compute: dict, value: float = 2.0, measure: dict | None = None) -> P.Claim:
    return P.Claim(cid, "000", "Fig. 1", 5, "q", "qty", "ex/s", ("A", "B"), "fc", value,
                   compute, measure)  # fmt: skip


THRU = {"kind": "throughput", "family": "fc", "config": FC, **V100}


def test_compare_puts_a_measured_number_first_and_keeps_the_prediction():
    measured = P.Estimate(3.0, "measured here", "1 run on X")
    got = P.compare([_c("m", THRU, measure={"kind": "throughput"})], lambda c: measured, {})
    (row,) = got
    assert row.paradnn is measured and row.predicted.source == "predicted"
    assert row.predicted.value == pytest.approx(_x("fc", FC, V100))
    assert row.ratio == pytest.approx(1.5)


def test_compare_says_why_a_claim_was_not_measured():
    why = P.Estimate(None, "cannot compute", "no fc runs on a GPU")
    claims = [
        _c("a", THRU, measure={"kind": "throughput"}),
        _c("b", THRU, measure={"kind": "none"}),
        _c("c", THRU),
        _c("d", {"kind": "none", "reason": "r"}, measure={"kind": "max_util"}),
    ]
    a, b, c, d = P.compare(claims, lambda c: why, {})
    base = "step-time model, fc on v100-sxm2 fp16"
    assert a.paradnn.basis == f"{base}; not measured here: no fc runs on a GPU"
    assert a.paradnn is a.predicted and a.paradnn.source == "predicted"
    assert b.paradnn.basis == base and c.paradnn.basis == base
    assert d.paradnn.basis == "r; not measured here: no fc runs on a GPU"
    assert d.paradnn.value is None and d.ratio is None
    (e,) = P.compare([_c("e", THRU, measure={"kind": "throughput"})], lambda c: None, {})
    assert e.paradnn.basis == base
    (f,) = P.compare([_c("f", THRU, measure={"kind": "throughput"})], None, {})
    assert f.paradnn.basis == base


def test_compare_without_configs_shares_one_predictor():
    claims = [_c("a", THRU)]
    P.compare(claims)
    assert P._shared() is P._shared()
    assert any(k[0] == "fc" for k in P._shared()._steps)


def test_a_ratio_needs_both_numbers():
    est = P.Estimate(4.0, "predicted", "b")
    assert P.Row(_c("a", THRU, value=2.0), est, est).ratio == 2.0
    assert P.Row(_c("a", THRU, value=0.0), est, est).ratio is None
    none = P.Estimate(None, "cannot compute", "b")
    assert P.Row(_c("a", THRU, value=2.0), none, none).ratio is None
    zero = P.Estimate(0.0, "predicted", "b")
    assert P.Row(_c("a", THRU, value=2.0), zero, zero).ratio == 0.0


def test_records_hold_every_column_and_a_measured_rows_prediction(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"schema": 1, "bands": {"gpu": {"p90": 0.25}}}), "utf-8")
    bands = EB.read(path)
    pred = P.Estimate(1234.5, "predicted", "model", ("gpu",))
    meas = P.Estimate(3.0, "measured here", "1 run on X")
    none = P.Estimate(None, "cannot compute", "why")
    rows = [
        P.Row(_c("p", THRU), pred, pred),
        P.Row(_c("m", THRU, value=4.0), meas, pred),
        P.Row(_c("n", THRU), none, none),
        P.Row(_c("q", THRU), meas, none),
    ]
    p, m, n, q = P.rows_frame_records(rows, bands)
    assert p == {
        "claim": "p", "seed": "000", "where": "Fig. 1, line 5", "quantity": "qty",
        "platforms": "A vs B", "workload": "fc", "unit": "ex/s", "paper": 2.0,
        "paradnn": 1234.5, "source": "predicted", "ratio": 617.25,
        "error band": "gpu: ±25.0% (p90)", "basis": "model",
    }  # fmt: skip
    assert m["paradnn"] == 3.0 and m["source"] == "measured here" and m["ratio"] == 0.75
    assert m["error band"] == ""
    assert m["basis"] == "1 run on X; predicted for the paper's platform: 1,234 ex/s"
    assert n["paradnn"] is None and n["ratio"] is None and n["basis"] == "why"
    assert n["error band"] == ""
    assert q["basis"] == "1 run on X"
    (d,) = P.rows_frame_records([P.Row(_c("p", THRU), pred, pred)])
    assert d["error band"] == P.band_text(["gpu"])


def test_a_claims_document_without_seeds_or_claims_has_none(monkeypatch):
    monkeypatch.setattr(P, "_document", lambda: {})
    assert P.seeds() == {} and P.load() == []
    monkeypatch.setattr(P, "_document", lambda: {"seeds": {"9": {"title": "T"}}})
    assert P.seeds() == {"9": "T"}


def test_compare_ranges_over_the_given_configs_else_the_table2_sample():
    claim = _c("u", {"kind": "max_util", "family": "fc", **V100})
    (given,) = P.compare([claim], None, {"fc": [FC]})
    assert (
        given.paradnn.basis == "step-time model, max over 1 of the given configs on v100-sxm2 fp16"
    )
    assert given.paradnn.value == pytest.approx(100 * _util(FC, V100))
    (sample,) = P.compare([claim])
    assert sample.paradnn.basis == (
        f"step-time model, max over {P.TABLE2_SAMPLE} of {P.TABLE2_SAMPLE} Table 2 fc configs "
        "(LHS) on v100-sxm2 fp16"
    )
