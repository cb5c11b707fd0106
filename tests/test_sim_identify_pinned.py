"""sim/identify.py pinned on a small analytic model whose truth is known: the fitted parameters,
their moves in and out of StepParams, elasticities, each run's regime at both edges of its
thresholds, every report's fields and line, and the staged fit's rounds and runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from paradnn.sim import identify as I
from paradnn.sim.stepparams import StepParams

BASE = StepParams(
    kernel_overhead_s=1e-5,
    efficiency={"fp32": 0.5, "default": 0.4},
    k_half=3.0,
    bw_efficiency=0.8,
    conv_efficiency={"default": 0.9, "bf16": 0.7},
    cache_gain=2.0,
    host_scale=1.0,
)


# -- Param, expand, apply, device_scaled -----------------------------------------------------


def test_a_param_s_key_group_value_bounds_and_width():
    e = I.Param("efficiency", "fp32")
    assert e.key == "efficiency.fp32" and e.group == "device" and e.value(BASE) == 0.5
    assert I.Param("efficiency", "fp16").value(BASE) == 0.4  # the default entry
    assert I.Param("efficiency").value(BASE) == 0.4 and I.Param("efficiency").key == "efficiency"
    assert I.Param("conv_efficiency", "bf16").value(BASE) == 0.7
    assert I.Param("conv_efficiency").value(BASE) == 0.9
    assert I.Param("k_half").value(BASE) == 4.0  # fitted as k_half + 1
    h = I.Param("host_scale")
    assert h.key == "host_scale" and h.group == "host" and h.value(BASE) == 1.0
    assert type(I.Param("cache_gain").value(BASE)) is float
    assert I.Param("k_half").bounds() == (1.0, 1e5 + 1.0)
    assert h.bounds() == (1e-2, 1e2) and e.bounds() == (1e-3, 1.0)
    assert h.width() == pytest.approx(math.log(4.0)) and e.width() == pytest.approx(math.log(1.5))
    assert I.Param("cache_gain").width() == pytest.approx(math.log(2.0))


def test_expand_gives_per_precision_params_in_sorted_order():
    got = I.expand(
        ["host_scale", "efficiency", "k_half", "conv_efficiency"], ["fp32", "bf16"], ["fp16"]
    )
    assert got == [
        I.Param("host_scale"),
        I.Param("efficiency", "bf16"),
        I.Param("efficiency", "fp32"),
        I.Param("k_half"),
        I.Param("conv_efficiency", "fp16"),
    ]
    assert I.expand(["conv_efficiency"], ["fp32"]) == []
    with pytest.raises(ValueError, match=r"^tile is not a fitted step parameter$"):
        I.expand(["efficiency", "tile"], ["fp32"])


def test_apply_moves_each_param_to_its_natural_value():
    params = [
        I.Param("efficiency", "fp32"),
        I.Param("efficiency", "bf16"),
        I.Param("conv_efficiency"),
        I.Param("k_half"),
        I.Param("host_scale"),
    ]
    sp = I.apply(BASE, params, [0.6, 0.3, 0.5, 11, 2])
    assert dict(sp.efficiency) == {"fp32": 0.6, "default": 0.4, "bf16": 0.3}
    assert dict(sp.conv_efficiency) == {"default": 0.5, "bf16": 0.7}
    assert sp.k_half == 10.0 and sp.host_scale == 2.0 and type(sp.host_scale) is float
    assert type(sp.efficiency["fp32"]) is float
    assert sp.kernel_overhead_s == BASE.kernel_overhead_s and sp.bw_efficiency == 0.8
    assert dict(BASE.efficiency) == {"fp32": 0.5, "default": 0.4}  # the original unchanged
    for p, v in zip(params, [0.6, 0.3, 0.5, 11, 2], strict=True):
        assert p.value(sp) == v
    assert I.apply(BASE, [], []) == BASE
    with pytest.raises(ValueError):
        I.apply(BASE, params, [1.0])


def test_device_scaled_slows_every_device_term_by_the_factor():
    sp = I.device_scaled(BASE, 2.0)
    assert dict(sp.efficiency) == {"fp32": 0.25, "default": 0.2}
    assert sp.bw_efficiency == 0.4 and sp.kernel_overhead_s == 2e-5
    assert (
        sp.host_scale == 1.0
        and sp.k_half == 3.0
        and dict(sp.conv_efficiency)
        == {
            "default": 0.9,
            "bf16": 0.7,
        }
    )


# -- a known model ---------------------------------------------------------------------------

# run i: host seconds, compute seconds at efficiency 1, kernels
RUNS = np.array(
    [
        [5e-3, 1e-4, 10],  # host-bound
        [4e-3, 2e-4, 20],  # host-bound
        [1e-4, 8e-3, 30],  # device-bound
        [1e-4, 2e-2, 40],  # device-bound
        [2e-4, 1e-2, 200],  # device-bound
    ]
)


def predict(sp: StepParams, idx) -> np.ndarray:
    h, c, k = RUNS[list(idx)].T
    return np.maximum(h * sp.host_scale, c / sp.eff("fp32") + k * sp.kernel_overhead_s)


def _truth(**kw) -> StepParams:
    params = [I.Param(n, "fp32" if n == "efficiency" else None) for n in kw]
    return I.apply(BASE, params, list(kw.values()))


def test_log_prediction_is_floored_above_zero():
    got = I._log_pred(lambda sp, idx: [0.0, -1.0, math.e], BASE, [0, 1, 2])
    assert got[0] == pytest.approx(math.log(1e-300)) and got[1] == got[0]
    assert got[2] == pytest.approx(1.0)


def test_elasticities_are_the_log_slopes_per_run_and_parameter():
    params = [I.Param("host_scale"), I.Param("efficiency", "fp32"), I.Param("kernel_overhead_s")]
    J = I.elasticities(predict, BASE, params, [0, 2, 4])
    assert J.shape == (3, 3)
    at = np.log(predict(BASE, [0, 2, 4]))
    for j, p in enumerate(params):
        moved = I.apply(BASE, [p], [p.value(BASE) * math.exp(I.STEP)])
        want = (np.log(predict(moved, [0, 2, 4])) - at) / I.STEP
        assert J[:, j] == pytest.approx(want)
    assert J[0, 0] == pytest.approx(1.0) and J[1, 0] == 0.0  # host-bound, device-bound
    assert J[1, 1] < -0.9 and J[0, 1] == 0.0
    assert I.elasticities(predict, BASE, [], [0, 1]).shape == (2, 0)
    assert I.elasticities(predict, BASE, params, []).shape == (0, 3)


def test_regimes_of_the_known_runs_and_of_none():
    assert I.regimes(predict, BASE, [0, 1, 2, 3, 4]) == ["host-bound"] * 2 + ["device-bound"] * 3
    assert I.regimes(predict, BASE, []) == []
    slow = I.apply(BASE, [I.Param("host_scale")], [1000.0])
    assert I.regimes(predict, slow, [2, 3]) == ["host-bound", "host-bound"]


def _shares(monkeypatch, host, dev):
    """Fake log predictions: 0 at BASE, ``host`` × STEP with the host's cost moved, ``dev`` ×
    STEP with the device's (STEP 0.5: the elasticities are exactly the numbers given)."""
    monkeypatch.setattr(I, "STEP", 0.5)

    def fake(predict, sp, idx):
        if sp.host_scale != BASE.host_scale:
            return np.asarray(host, dtype=float) * 0.5
        if sp.kernel_overhead_s != BASE.kernel_overhead_s:
            return np.asarray(dev, dtype=float) * 0.5
        return np.zeros(len(idx))

    monkeypatch.setattr(I, "_log_pred", fake)
    return I.regimes(predict, BASE, list(range(len(host))))


def test_a_regime_s_share_at_and_beside_each_threshold(monkeypatch):
    host = [1.0, 1.0, 1.0, 3.0, 3.0, 3.0, 0.0, -1.0, 1.0]
    dev = [3.0, 2.9, 3.1, 1.0, 1.1, 0.9, 0.0, 1.0, -1.0]
    assert _shares(monkeypatch, host, dev) == [
        "device-bound",  # 0.75: at the device threshold
        "mixed",
        "device-bound",
        "host-bound",  # 0.25: at the host threshold
        "mixed",
        "host-bound",
        "mixed",  # no elasticity at all: half and half
        "device-bound",  # a negative elasticity counts as none
        "host-bound",
    ]


def test_a_tiny_elasticity_sum_is_judged_by_its_share(monkeypatch):
    assert _shares(monkeypatch, [1e-13, 4e-13, 2e-12], [4e-13, 1e-13, 6e-12]) == [
        "mixed",  # 5e-13 in all: at most 1e-12, half and half
        "mixed",
        "device-bound",  # 8e-12: its share, 0.75
    ]


# -- reports ---------------------------------------------------------------------------------


def test_an_identified_report_s_line_and_dict():
    r = I.Report(
        "efficiency.fp32",
        "device",
        0.51234,
        0.5,
        "identified",
        "fitted on 3 runs",
        (0.4, 0.61),
        1,
        "upper",
    )
    assert r.line() == (
        "efficiency.fp32 = 0.5123: identified from 1 run, 95 % interval [0.4, 0.61]; "
        "at its upper bound"
    )
    two = I.Report("k", "host", 2.0, 1.0, "identified", "x", None, 2)
    assert two.line() == "k = 2: identified from 2 runs, 95 % interval [2, 2]"
    assert r.as_dict() == {
        "parameter": "efficiency.fp32",
        "group": "device",
        "value": 0.51234,
        "prior": 0.5,
        "status": "identified",
        "reason": "fitted on 3 runs",
        "low": 0.4,
        "high": 0.61,
        "runs": 1,
        "at_bound": "upper",
    }
    d = two.as_dict()
    assert d["low"] is None and d["high"] is None and d["at_bound"] is None and d["runs"] == 2


def test_a_kept_or_fixed_report():
    kept = I._kept(I.Param("k_half"), BASE, "no run where it matters")
    assert kept == I.Report(
        "k_half", "device", 3.0, 3.0, "not identified", "no run where it matters; kept at its prior"
    )
    assert kept.interval is None and kept.runs == 0 and kept.at_bound is None
    assert kept.line() == (
        "k_half = 3 (prior 3): not identified: no run where it matters; kept at its prior"
    )
    fixed = I.fixed_reports(BASE, [I.Param("host_scale"), I.Param("efficiency", "fp32")], "why")
    assert fixed == {
        "host_scale": I.Report("host_scale", "host", 1.0, 1.0, "fixed", "why"),
        "efficiency.fp32": I.Report("efficiency.fp32", "device", 0.5, 0.5, "fixed", "why"),
    }
    assert (
        I._natural(I.Param("k_half"), 5.0) == 4.0 and I._natural(I.Param("cache_gain"), 5.0) == 5.0
    )


def test_data_se_is_the_schur_complement_of_the_information():
    assert I._data_se(np.array([[4.0]]), 0) == pytest.approx(0.5)
    info = np.array([[4.0, 1.0], [1.0, 2.0]])
    assert I._data_se(info, 0) == pytest.approx(1 / math.sqrt(4.0 - 1.0 / 2.0))
    assert I._data_se(info, 1) == pytest.approx(1 / math.sqrt(2.0 - 1.0 / 4.0))
    assert I._data_se(np.array([[1.0, 1.0], [1.0, 1.0]]), 0) > 1e5  # indistinguishable
    assert I._data_se(np.array([[0.0]]), 0) == math.inf
    three = np.diag([1.0, 4.0, 9.0])
    assert [I._data_se(three, j) for j in range(3)] == pytest.approx([1.0, 0.5, 1 / 3])


# -- a stage ---------------------------------------------------------------------------------


def _meas(truth: StepParams) -> np.ndarray:
    return predict(truth, range(len(RUNS)))


def test_a_stage_with_nothing_free_or_no_run():
    sp, reps, cost, status = I._stage(predict, _meas(BASE), [2, 3], [], BASE, BASE)
    assert sp == BASE and reps == {} and cost == 0.0 and status == "nothing to fit"
    free = [I.Param("efficiency", "fp32")]
    moved = I.apply(BASE, free, [0.9])
    sp, reps, cost, status = I._stage(predict, _meas(BASE), [], free, moved, BASE)
    assert sp.eff("fp32") == 0.5 and cost == 0.0 and status == "nothing to fit"  # back to prior
    assert reps["efficiency.fp32"].reason == "no run in its regime; kept at its prior"
    assert reps["efficiency.fp32"].status == "not identified"


def test_a_stage_fits_what_the_runs_see_and_keeps_the_rest():
    truth = _truth(efficiency=0.55, kernel_overhead_s=2e-5)
    free = [I.Param("efficiency", "fp32"), I.Param("kernel_overhead_s"), I.Param("bw_efficiency")]
    sp, reps, cost, status = I._stage(predict, _meas(truth), [2, 3, 4], free, BASE, BASE)
    e, k, bw = reps["efficiency.fp32"], reps["kernel_overhead_s"], reps["bw_efficiency"]
    assert e.status == "identified" and e.value == pytest.approx(0.55, rel=0.02)
    assert e.prior == 0.5 and e.group == "device" and e.reason == "fitted on 3 runs"
    assert e.runs == 3 and e.at_bound is None
    assert e.interval[0] < 0.55 < e.interval[1] and e.interval[1] < 1.0
    assert k.status == "identified" and k.value == pytest.approx(2e-5, rel=0.1) and k.runs == 1
    assert bw == I.Report(
        "bw_efficiency",
        "device",
        0.8,
        0.8,
        "not identified",
        "no run where it matters; kept at its prior",
    )
    assert sp.eff("fp32") == pytest.approx(0.55, rel=0.02) and sp.bw_efficiency == 0.8
    assert 0.0 < cost < 1.0 and isinstance(status, str) and status != "nothing to fit"


def test_a_stage_starts_from_the_prior_not_from_where_it_is():
    truth = _truth(efficiency=0.55)
    free = [I.Param("efficiency", "fp32")]
    far = I.apply(BASE, free, [0.002])  # a start the prior overrides
    sp, reps, _, _ = I._stage(predict, _meas(truth), [2, 3, 4], free, far, BASE)
    assert reps["efficiency.fp32"].prior == 0.5
    assert sp.eff("fp32") == pytest.approx(0.55, rel=0.02)


def test_a_stage_reports_a_parameter_at_its_bound():
    fast = I.apply(BASE, [I.Param("kernel_overhead_s")], [1e-8])
    meas = _meas(fast) * 0.4  # faster than an efficiency of 1 allows
    free = [I.Param("efficiency", "fp32")]
    sp, reps, _, _ = I._stage(predict, meas, [2, 3], free, fast, fast)
    e = reps["efficiency.fp32"]
    assert sp.eff("fp32") == pytest.approx(1.0)
    assert e.at_bound == "upper" and e.value == pytest.approx(1.0) and e.interval[1] == 1.0
    assert e.line().endswith("; at its upper bound")


def test_two_parameters_the_runs_cannot_tell_apart_go_back_to_their_priors():
    def twin(sp, idx):  # only their product matters
        c = RUNS[list(idx), 1]
        return c / sp.eff("fp32") * (sp.bw_efficiency / 0.8) ** -1

    meas = twin(_truth(efficiency=0.4), range(len(RUNS)))
    free = [I.Param("efficiency", "fp32"), I.Param("bw_efficiency")]
    sp, reps, cost, status = I._stage(twin, meas, [2, 3, 4], free, BASE, BASE)
    dropped = [r for r in reps.values() if r.status == "not identified"]
    assert dropped and dropped[0].reason == (
        "the 3 runs cannot tell it from the other parameters; kept at its prior"
    )
    for r in dropped:
        assert r.value == r.prior and r.interval is None
    # one goes back, then the other is fitted alone and fits the product
    assert len(dropped) == 1
    left = next(r for r in reps.values() if r.status == "identified")
    assert left.reason == "fitted on 3 runs" and status != "nothing to fit" and cost >= 0.0
    assert I.Param(*dropped[0].key.split(".")).value(sp) == dropped[0].prior


def test_a_parameter_the_runs_pin_only_loosely_says_how_loosely():
    def loose(sp, idx):  # the overhead is a small share of every run: weakly seen
        c, k = RUNS[list(idx), 1], RUNS[list(idx), 2]
        return c + 2.0 * k * sp.kernel_overhead_s

    meas = loose(BASE, range(len(RUNS))) * np.array([1.0, 1.0, 1.1, 0.9, 1.0])
    free = [I.Param("kernel_overhead_s")]
    sp, reps, cost, status = I._stage(loose, meas, [2, 3], free, BASE, BASE)
    r = reps["kernel_overhead_s"]
    assert r.status == "not identified" and sp.kernel_overhead_s == 1e-5
    assert r.reason.startswith("the 2 runs pin it only within ×")
    assert r.reason.endswith("; kept at its prior")
    assert cost == 0.0 and status == "nothing to fit"
    factor = float(r.reason.split("×")[1].split(";")[0])
    assert 1.5 < factor < 1e3


# -- the staged fit --------------------------------------------------------------------------


def test_the_staged_fit_takes_the_host_from_host_bound_runs_and_the_device_from_the_rest():
    truth = _truth(host_scale=1.5, efficiency=0.6)
    allowed = [I.Param("host_scale"), I.Param("efficiency", "fp32"), I.Param("bw_efficiency")]
    res = I.fit_staged(predict, _meas(truth), BASE, allowed)
    assert res.regimes == ["host-bound"] * 2 + ["device-bound"] * 3
    assert res.used == {"host": [0, 1], "device": [2, 3, 4]}
    h, e = res.reports["host_scale"], res.reports["efficiency.fp32"]
    assert h.status == "identified" and h.value == pytest.approx(1.5, rel=0.01) and h.runs == 2
    assert h.reason == "fitted on 2 runs" and h.group == "host"
    assert e.status == "identified" and e.value == pytest.approx(0.6, rel=0.01) and e.runs == 3
    assert res.reports["bw_efficiency"].status == "not identified"
    assert set(res.reports) == {"host_scale", "efficiency.fp32", "bw_efficiency"}
    assert res.params.host_scale == pytest.approx(1.5, rel=0.01)
    assert res.rounds == 1
    # the cost is the two stages' objectives together, each at its fitted values
    host_cost = _objective(
        [I.Param("host_scale")], [res.params.host_scale], res_meas := _meas(truth), [0, 1], BASE
    )
    dev_cost = _objective(
        [I.Param("efficiency", "fp32")], [res.params.eff("fp32")], res_meas, [2, 3, 4], BASE
    )
    assert host_cost > 0 and dev_cost > 0
    assert res.cost == pytest.approx(host_cost + dev_cost, rel=1e-6)
    assert res.status.startswith("host: ") and "; device: " in res.status


def test_without_a_host_parameter_mixed_runs_inform_the_device():
    runs = np.array([[1e-3, 1e-3, 1], [1e-4, 1e-2, 1], [1e-4, 2e-2, 1]])  # one mixed

    def pr(sp, idx):
        h, c, k = runs[list(idx)].T
        return h * sp.host_scale + c / sp.eff("fp32") + k * sp.kernel_overhead_s

    meas = pr(_truth(efficiency=0.6), range(3))
    dev = [I.Param("efficiency", "fp32")]
    assert I.regimes(pr, BASE, [0, 1, 2]) == ["mixed", "device-bound", "device-bound"]
    res = I.fit_staged(pr, meas, BASE, dev)
    assert res.used == {"host": [], "device": [0, 1, 2]}
    assert res.reports["efficiency.fp32"].reason == "fitted on 3 runs"
    assert res.status.startswith("host: nothing to fit; device: ")
    res = I.fit_staged(pr, meas, BASE, dev, mixed_informs_device=False)
    assert res.used["device"] == [1, 2]
    both = [I.Param("host_scale"), *dev]
    res = I.fit_staged(pr, meas, BASE, both)
    assert res.used["device"] == [1, 2] and res.used["host"] == []
    assert res.reports["host_scale"].reason == "no run in its regime; kept at its prior"
    res = I.fit_staged(pr, meas, BASE, both, mixed_informs_device=True)
    assert res.used["device"] == [0, 1, 2]


def test_the_stages_repeat_while_a_run_changes_regime():
    # at the prior every run is host-bound; the fitted host (× 0.01) leaves the device's
    truth = _truth(host_scale=0.05, efficiency=0.5)
    allowed = [I.Param("host_scale"), I.Param("efficiency", "fp32")]
    heavy = RUNS.copy()
    heavy[:, 0] *= 1000

    def pr(sp, idx):
        h, c, k = heavy[list(idx)].T
        return np.maximum(h * sp.host_scale, c / sp.eff("fp32") + k * sp.kernel_overhead_s)

    meas = pr(truth, range(len(heavy)))
    assert I.regimes(pr, BASE, range(5)) == ["host-bound"] * 5
    res = I.fit_staged(pr, meas, BASE, allowed)
    assert 1 < res.rounds <= I.MAX_ROUNDS
    assert res.regimes == I.regimes(pr, res.params, list(range(5)))
    assert "device-bound" in res.regimes


def test_the_staged_fit_stops_after_max_rounds(monkeypatch):
    calls = []
    flips = iter(range(100))

    def fake_regimes(predict, sp, idx):
        calls.append(1)
        label = I.REGIMES[next(flips) % 3]  # a new regime every call
        return [label for _ in idx]

    monkeypatch.setattr(I, "regimes", fake_regimes)
    res = I.fit_staged(predict, _meas(BASE), BASE, [])
    assert res.rounds == I.MAX_ROUNDS == 4 and len(calls) == 1 + 2 * 4
    assert res.reports == {} and res.cost == 0.0
    assert res.status == "host: nothing to fit; device: nothing to fit"


def _objective(params, values, meas, idx, prior: StepParams) -> float:
    """The fit's documented objective: each run's log error in units of RESIDUAL_SCALE and
    each parameter's log distance from its prior in units of its width, soft-L1 beyond
    ROBUST_AT (scipy's cost: ½ f² Σ 2(√(1 + (r/f)²) − 1))."""
    sp = I.apply(prior, params, values)
    data = (np.log(predict(sp, idx)) - np.log(meas[idx])) / I.RESIDUAL_SCALE
    prior_r = [
        (math.log(v) - math.log(p.value(prior))) / p.width()
        for p, v in zip(params, values, strict=True)
    ]
    r = np.concatenate([data, prior_r])
    f = I.ROBUST_AT
    return float(0.5 * f**2 * np.sum(2 * (np.sqrt(1 + (r / f) ** 2) - 1)))


def test_a_stage_s_values_minimise_its_objective_and_its_intervals_are_the_posterior_s():
    truth = _truth(efficiency=0.55, kernel_overhead_s=2e-5)
    free = [I.Param("efficiency", "fp32"), I.Param("kernel_overhead_s")]
    meas, idx = _meas(truth), [2, 3, 4]
    sp, reps, cost, _ = I._stage(predict, meas, idx, free, BASE, BASE)
    values = [p.value(sp) for p in free]
    best = _objective(free, values, meas, idx, BASE)
    assert cost == pytest.approx(best, rel=1e-6)
    for j in range(2):
        for step in (1 - 5e-4, 1 + 5e-4):
            moved = list(values)
            moved[j] *= step
            assert _objective(free, moved, meas, idx, BASE) > best
    # the posterior's standard errors: the runs' information (their log residual scatter, at
    # least NOISE_FLOOR) beside the prior's, in log space
    J = I.elasticities(predict, sp, free, idx)
    r = np.log(predict(sp, idx)) - np.log(meas[idx])
    scatter = max(I.NOISE_FLOOR, math.sqrt(float(np.sum(r**2)) / (3 - 2)))
    width = np.array([p.width() for p in free])
    cov = np.linalg.inv(J.T @ J / scatter**2 + np.diag(1 / width**2))
    se = np.sqrt(np.diag(cov))
    for j, p in enumerate(free):
        rep = reps[p.key]
        assert rep.value == pytest.approx(values[j], rel=1e-12)
        assert rep.interval == pytest.approx(
            (values[j] * math.exp(-I.Z95 * se[j]), values[j] * math.exp(I.Z95 * se[j])), rel=1e-6
        )


def test_a_value_near_its_lower_bound_is_not_at_it_and_one_past_it_is():
    fast = I.apply(BASE, [I.Param("kernel_overhead_s")], [1e-8])
    free = [I.Param("efficiency", "fp32")]
    for truth, bound in ((0.002, None), (0.0008, "lower")):
        meas = predict(I.apply(fast, free, [truth]), range(len(RUNS)))
        sp, reps, _, _ = I._stage(predict, meas, [2, 3, 4], free, fast, fast)
        e = reps["efficiency.fp32"]
        assert e.status == "identified" and e.at_bound == bound
        assert e.value == pytest.approx(max(truth, 1e-3), rel=0.01) == sp.eff("fp32")
        assert e.interval[0] < e.value < e.interval[1]


def test_a_run_where_a_parameter_moves_the_step_exactly_the_threshold_counts(monkeypatch):
    exact = np.array([[1.0], [I.MATTERS], [0.0]])  # elasticities: 1, exactly 0.05, none
    monkeypatch.setattr(I, "elasticities", lambda predict, sp, params, idx: exact)
    free = [I.Param("efficiency", "fp32")]
    _, reps, _, _ = I._stage(predict, _meas(BASE), [2, 3, 4], free, BASE, BASE)
    assert reps["efficiency.fp32"].status == "identified" and reps["efficiency.fp32"].runs == 2
