"""benchmarks/host_floor.py (issue 42): the derivation recovers a known host profile from
host-bound runs the model itself timed, says which figures no run identifies, and leaves the
CNN runs out of the fit."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from paradnn.sim import chip as chips
from paradnn.sim import hostprofile as hp
from paradnn.sim import steptime as st

ROOT = Path(__file__).resolve().parents[1]
TRUTH = dict(step_s=0.9e-3, autograd_node_s=20e-6, cast_s=40e-6, scaler_s=0.3e-3, rnn_call_s=0.8e-3)


@pytest.fixture(scope="module")
def hf():
    path = ROOT / "benchmarks" / "host_floor.py"
    spec = importlib.util.spec_from_file_location("host_floor", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop(spec.name, None)


def _runs(truth, precisions=("fp32", "bf16", "fp16")):
    base = hp.default("cuda")
    prof = replace(base, forward_op_s=1.25 * truth["autograd_node_s"], **truth)
    chip = chips.load("h100-sxm")
    cfgs = [("fc", {"layers": n, "nodes": w, "batch": 32}) for n in (1, 2, 4) for w in (64, 256)]
    cfgs += [("rnn", {"layers": 1, "embed": e, "length": 10, "batch": 16}) for e in (50, 100)]
    cfgs += [("cnn", {"blocks": 1, "filters": 8, "image": 32, "batch": 2})]
    out = []
    for fam, cfg in cfgs:
        for prec in precisions:
            if fam != "fc" and prec == "fp16":
                continue
            p = st.predict_step(fam, cfg, chip, prec, host=prof)
            out.append(
                {"family": fam, "config": cfg, "precision": prec, "measured_s": p.predicted_step_s}
            )
    return out


def test_the_derivation_recovers_the_profile_the_runs_were_timed_with(hf):
    d = hf.derive(_runs(TRUTH), ("fc", "rnn"))
    for k, v in TRUTH.items():
        assert d["fitted"][k] == pytest.approx(v, rel=0.03), k
    assert d["not_identified"] == []
    assert {g["family"] for g in d["groups"]} == {"fc", "rnn"}  # the CNN is the check
    p = d["profile"]
    assert p.forward_op_s == pytest.approx(1.25 * p.autograd_node_s)
    assert p.launches_included and p.source == "file"
    text = hf.toml_of(p, "how")
    back = hp.parse(tomllib.loads(text), "derived")
    assert back.step_s == pytest.approx(p.step_s, rel=1e-3) and back.launches_included


def test_a_figure_no_run_needs_is_not_identified(hf):
    d = hf.derive(_runs(TRUTH, precisions=("fp32",)), ("fc",))
    assert set(d["not_identified"]) == {"cast_s", "scaler_s", "rnn_call_s"}
    assert d["fitted"]["step_s"] == pytest.approx(TRUTH["step_s"], rel=0.03)
    base = hp.default("cuda")  # what no run identifies keeps the default's value
    assert d["profile"].scaler_s == base.scaler_s and d["profile"].rnn_call_s == base.rnn_call_s
