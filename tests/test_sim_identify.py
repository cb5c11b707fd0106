"""Fits that know what the data can tell them (sim.identify, issue 42): each run's regime, host
parameters from host-bound runs and device parameters from device-bound ones, each reported as
identified (with its interval) or not (and why), and kept at its prior when not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from paradnn import families
from paradnn.sim import chip as chips
from paradnn.sim import fit as sim_fit
from paradnn.sim import identify
from paradnn.sim.steptime import build_plan, evaluate, params_of

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
QUICK_DB = ROOT / "benchmarks" / "data" / "gpu" / "h100-quick-2026-11-27.sqlite"
DEVICE_PARAMS = ("kernel_overhead_s", "k_half", "bw_efficiency")


def _samples(chip, truth, configs, precisions=("fp32", "bf16")):
    """Samples whose measured step is the model's own under ``truth``: a dataset in which the
    truth is known. Every second config is held out, by the split field."""
    out = []
    for i, (fam, cfg) in enumerate(configs):
        for prec in precisions:
            full = families.get(fam).config(cfg)
            plan = build_plan(fam, full, chip, prec, "rmsprop", params_of(chip))
            t = evaluate(plan, truth, chip.mem_bandwidth).total_s
            split = "holdout" if i % 4 == 3 else "fit"
            out.append(sim_fit.Sample(fam, cfg, prec, "rmsprop", "H100", t, split, plan))
    return out


TINY = [
    ("fc", {"layers": n, "nodes": w, "batch": b})
    for n in (2, 4)
    for w in (64, 256)
    for b in (32, 128)
]
# large enough that the device sets each step, not the GPU host's ~1.1 ms floor (issue 42)
BIG = [
    ("fc", {"layers": n, "nodes": w, "batch": b})
    for n in (2, 4)
    for w in (8192, 16384)
    for b in (8192, 16384)
]
BIG += [("cnn", {"filters": f, "batch": 128, "image": 224, "blocks": 2}) for f in (32, 64)]


def _truth(chip, **kw):
    base = params_of(chip)
    eff = {**base.efficiency, "fp32": 0.6, "bf16": 0.45}
    return replace(base, efficiency=eff, **kw)


def test_a_host_bound_dataset_leaves_the_device_at_its_priors_and_says_so():
    chip = chips.load("h100-sxm")
    base = params_of(chip)
    truth = _truth(chip, host_scale=3.0, kernel_overhead_s=2e-5)
    res = sim_fit.fit(chip, _samples(chip, truth, TINY))
    fitted = res.rows[res.rows["split"] == "fit"]
    assert set(fitted["regime"]) == {"host-bound"}
    assert res.regime_counts() == {"host-bound": len(fitted), "device-bound": 0, "mixed": 0}
    host = res.identified["host_scale"]
    assert host.status == "identified" and host.value == pytest.approx(3.0, rel=0.02)
    assert host.interval[0] < 3.0 < host.interval[1]
    for key in (*DEVICE_PARAMS, "efficiency.fp32", "efficiency.bf16"):
        rep = res.identified[key]
        assert rep.status == "not identified" and "no run in its regime" in rep.reason
        assert rep.value == rep.prior
    p = res.params
    assert p.eff("fp32") == base.eff("fp32") and p.eff("bf16") == base.eff("bf16")
    assert p.kernel_overhead_s == base.kernel_overhead_s and p.k_half == base.k_half


def test_a_device_bound_dataset_identifies_the_device_parameters():
    chip = chips.load("h100-sxm")
    truth = _truth(chip, conv_efficiency={"default": 0.7})
    res = sim_fit.fit(chip, _samples(chip, truth, BIG))
    fitted = res.rows[res.rows["split"] == "fit"]
    assert set(fitted["regime"]) == {"device-bound"}
    for key, want in (("efficiency.fp32", 0.6), ("efficiency.bf16", 0.45)):
        rep = res.identified[key]
        # the weak prior pulls a little where bandwidth and compute trade off (bf16 FCs)
        assert rep.status == "identified" and rep.value == pytest.approx(want, rel=0.05)
        assert rep.interval[0] <= want <= rep.interval[1] and rep.runs > 0
    conv = res.identified["conv_efficiency.fp32"]
    assert conv.status == "identified" and conv.value == pytest.approx(0.7, rel=0.05)
    # no run is host-bound: the host's scale is not identified, and stays at its prior
    host = res.identified["host_scale"]
    assert host.status == "not identified" and res.params.host_scale == 1.0
    held = res.rows[res.rows["split"] == "holdout"]
    assert len(held) and held["ape"].max() < 0.02


def test_a_parameter_at_its_bound_is_reported_as_such():
    chip = chips.load("h100-sxm")
    # measured faster than any efficiency ≤ 1 allows: E pins at its upper bound
    fast = _truth(chip)
    data = _samples(chip, fast, BIG, precisions=("fp32",))
    data = [replace(s, measured_s=s.measured_s * 0.5) for s in data]
    res = sim_fit.fit(chip, data, free=("efficiency",))
    rep = res.identified["efficiency.fp32"]
    assert rep.value == pytest.approx(1.0) and rep.at_bound == "upper"
    assert "at its upper bound" in rep.line()
    # the parameters this fit was not allowed to move say so
    assert res.identified["kernel_overhead_s"].status == "fixed"


def test_regimes_follow_the_two_timelines():
    chip = chips.load("h100-sxm")
    sp = params_of(chip)
    data = _samples(chip, sp, [TINY[0], BIG[-1]], precisions=("fp32",))

    def predict(p, idx):
        return [evaluate(data[i].plan, p, chip.mem_bandwidth).total_s for i in idx]

    assert identify.regimes(predict, sp, [0, 1]) == ["host-bound", "device-bound"]
    # a host 200× slower makes the big CNN wait for it too
    slow = replace(sp, host_scale=200.0)
    assert identify.regimes(predict, slow, [0, 1]) == ["host-bound", "host-bound"]


def test_the_quick_h100_sweep_leaves_every_device_efficiency_at_its_prior():
    """The shared H100 quick sweep (92 runs, nearly all on the host's floor): once fitted to a
    bf16 GEMM efficiency of 0.13; now only the host moves."""
    from paradnn.store import open_store

    chip = chips.load("h100-sxm")
    with open_store(str(QUICK_DB), readonly=True) as store:
        frame = store.frame()
    data = sim_fit.samples(frame, chip, holdout=0)
    res = sim_fit.fit(chip, data)
    base = params_of(chip)
    assert len(data) == 92 and res.regime_counts()["device-bound"] == 0
    for key, rep in res.identified.items():
        if rep.group == "device":
            assert rep.status == "not identified" and rep.value == rep.prior, key
    for prec in ("fp32", "bf16", "fp16"):
        assert res.params.eff(prec) == base.eff(prec)
    host = res.identified["host_scale"]
    assert host.status == "identified" and host.interval[0] <= host.value <= host.interval[1]
    # the CUDA defaults were derived from this host's floor (sim/hostprofile.CUDA_DERIVATION):
    # the runs confirm them rather than scale them 3-4x as they did the older defaults
    assert 0.7 < res.params.host_scale < 1.5


def test_simulate_fit_prints_regimes_and_writes_identifiability(capsys, tmp_path):
    out = tmp_path / "h100.toml"
    code, text, err = run_cli(
        capsys,
        *("simulate", "fit", "--db", str(QUICK_DB), "--platform", "h100-sxm"),
        *("--holdout", "0", "--out", str(out)),
    )
    assert code == 0, err
    assert "regime" in text and "host-bound" in text and "what the runs identified" in text
    assert "not identified" in text and "no run in its regime" in text
    toml = out.read_text()
    assert "# fitted runs by regime: host-bound 92, device-bound 0, mixed 0" in toml
    assert "#   efficiency.bf16 = 0.7 (prior 0.7): not identified: no run in its regime" in toml
    loaded = chips.load(str(out))
    assert loaded.step.eff("bf16") == params_of(chip := chips.load("h100-sxm")).eff("bf16")
    assert loaded.step.tiles_of("bf16") == params_of(chip).tiles_of("bf16")
    code, text, _ = run_cli(
        capsys, "simulate", "fit", "--db", str(QUICK_DB), "--platform", "h100-sxm", "-f", "json"
    )
    import json

    got = json.loads(text)
    assert got["regimes"]["host-bound"] > 0 and {r["status"] for r in got["identified"]} >= {
        "identified",
        "not identified",
    }
