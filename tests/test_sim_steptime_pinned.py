"""The step-time model pinned whole (sim.steptime): for representative steps — each family, GPU
(today's graded tensor-core rule and the seed era's strict rule with Winograd), TPU (two cores,
XLA padding, fp32 storage, a board), CPU (cache term, loop optimizer), 16-bit mixed and pure,
every optimizer implementation, a fed infeed, a batch the cores cannot split — every field of
the prediction, its terms and its plan (tests/pinned.py, tests/data/sim_pinned/steptime.json).
The properties the model must have are in test_sim_steptime.py; this file catches any change
to a number, a label or a choice the properties leave free."""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from types import SimpleNamespace

import pytest

import pinned
from paradnn import families
from paradnn.errors import ConfigError
from paradnn.families.shapes import Conv2d
from paradnn.sim import chip as chips
from paradnn.sim import steptime as st
from paradnn.sim.interconnect import Topology
from paradnn.sim.stepparams import defaults


def _file(name: str) -> chips.Chip:
    return chips.load_file(str(resources.files("paradnn") / "data" / "chips" / name))


FC = {"layers": 2, "nodes": 200, "input": 100, "output": 10, "batch": 24}
CNN = {"blocks": 1, "filters": 12, "image": 16, "output": 3, "batch": 6}
RNN = {"layers": 1, "embed": 24, "length": 5, "vocab": 50, "batch": 8, "cell": "lstm"}
BIG = {"layers": 2, "nodes": 2048, "input": 1024, "output": 1000, "batch": 512}
TRF = {"layers": 1, "d_model": 64, "heads": 2, "ffn": 2, "length": 16, "vocab": 40, "batch": 4}


def _cases() -> dict[str, st.StepTime]:
    v100, a100 = chips.load("v100-sxm2"), chips.load("a100-40gb-sxm")
    seed, tpu, cpu = _file("v100-pcie.toml"), chips.load("tpu-v2"), _file("xeon-8163-12c.toml")
    cached = replace(defaults(cpu.platform), cache_bytes=2e5, cache_gain=3.0, k_half=7.0)
    host = replace(defaults(v100.platform), host_s_per_step=1e-4, host_s_per_example=1e-6)
    sync = replace(defaults(a100.platform), sync_latency_s=2e-6, units=None, fast_conv=2.0)
    p = st.predict_step
    return {
        "fc-v100-fp32": p("fc", FC, v100, "fp32"),
        "fc-v100-fp16-mixed-momentum": p("fc", FC, v100, "fp16", optimizer="momentum"),
        "fc-v100-fp16-pure-sgd": p("fc", FC, v100, "fp16", optimizer="sgd", policy="pure"),
        "fc-v100-bf16-loop": p("fc", FC, a100, "bf16", optimizer_impl="loop"),
        "fc-a100-fp16-fused": p("fc", FC, a100, "fp16", optimizer_impl="fused"),
        "fc-v100-host-terms": p("fc", FC, v100, "fp32", params=host),
        "fc-v100-fed-overlapped": p("fc", FC, v100, "fp32", loader_examples_per_s=1e4),
        "fc-v100-fed-serial": p(
            "fc", FC, v100, "fp32", loader_examples_per_s=1e4, loader_overlapped=False
        ),
        "fc-v100-fed-fast": p("fc", FC, v100, "fp32", loader_examples_per_s=1e12),
        "fc-a100-4chips": p("fc", FC, a100, "fp16", chips=4, params=sync),
        "fc-misaligned-fp16": p("fc", {**FC, "nodes": 101, "input": 33}, v100, "fp16"),
        "fc-seed-strict-fp16": p("fc", {**FC, "nodes": 101, "input": 33}, seed, "fp16"),
        "fc-seed-aligned-fp16": p(
            "fc", {**FC, "nodes": 128, "input": 64, "batch": 32}, seed, "fp16"
        ),
        "cnn-v100-fp32": p("cnn", CNN, v100, "fp32"),
        "cnn-v100-fp16": p("cnn", CNN, v100, "fp16"),
        "cnn-seed-fp32-winograd": p("cnn", {**CNN, "filters": 32, "image": 32}, seed, "fp32"),
        "cnn-seed-fp16-padded": p("cnn", CNN, seed, "fp16"),
        "cnn-a100-winograd-params": p("cnn", CNN, a100, "fp32", params=sync),
        "cnn-tpu-bf16": p("cnn", CNN, tpu, "bf16"),
        "cnn-tpu-fp32-storage": p("cnn", CNN, tpu, "bf16", policy="fp32-storage"),
        "cnn-tpu-odd-batch": p("cnn", {**CNN, "batch": 5}, tpu, "bf16"),
        "cnn-tpu-board": p("cnn", CNN, tpu, "bf16", chips=4, topology=Topology("torus2d", (2, 2))),
        "cnn-tpu-8chips-default-topology": p("cnn", CNN, tpu, "bf16", chips=8),
        "fc-tpu-bf16": p("fc", FC, tpu, "bf16", optimizer="sgd"),
        "rnn-v100-fp16": p("rnn", RNN, v100, "fp16"),
        "rnn-v100-fp32-gru": p("rnn", {**RNN, "cell": "gru"}, v100, "fp32"),
        "rnn-tpu-bf16": p("rnn", RNN, tpu, "bf16"),
        "rnn-cpu-fp32": p("rnn", RNN, cpu, "fp32"),
        "transformer-a100-bf16": p("transformer", TRF, a100, "bf16"),
        "transformer-tpu-bf16": p("transformer", TRF, tpu, "bf16"),
        "fc-cpu-fp32": p("fc", FC, cpu, "fp32"),
        "fc-cpu-cached": p("fc", FC, cpu, "fp32", params=cached, optimizer="momentum"),
        "cnn-cpu-cached": p("cnn", CNN, cpu, "fp32", params=cached, optimizer_impl="foreach"),
        "fc-v100-large-fp32": p("fc", BIG, v100, "fp32"),
        "fc-v100-large-fp16": p("fc", BIG, v100, "fp16", optimizer="sgd"),
        "fc-cpu-large": p("fc", BIG, cpu, "fp32", params=cached),
        "cnn-v100-large-fp16": p(
            "cnn", {**CNN, "filters": 64, "image": 64, "batch": 32}, v100, "fp16"
        ),
        "cnn-seed-large-fp32": p(
            "cnn", {**CNN, "filters": 64, "image": 64, "batch": 32}, seed, "fp32"
        ),
        "fc-tpu-large-board": p("fc", BIG, tpu, "bf16", chips=16),
        "fc-skylake-fp32": p("fc", FC, chips.load("skylake-n1-32"), "fp32"),
    }


def _view(r: st.StepTime) -> dict:
    return {"row": r.row(), "step": r}


def test_predictions_pinned():
    pinned.check("steptime", {k: _view(r) for k, r in _cases().items()})


def test_overhead_and_helpers_pinned():
    v100, tpu = chips.load("v100-sxm2"), chips.load("tpu-v2")
    core, n = st.core_chip(tpu)
    got = {
        "overhead-fc-v100": st.multichip_overhead("fc", FC, chips.load("a100-40gb-sxm"), "fp16", 8),
        "overhead-cnn-tpu": st.multichip_overhead(
            "cnn", CNN, tpu, "bf16", 4, topology=Topology("ring", (4,)), optimizer="sgd"
        ),
        "core-chip": {"cores": n, "platform": core.platform, "same-gpu": st.core_chip(v100)},
        "impls": [st.default_impl(c) for c in (v100, tpu, _file("xeon-8163-12c.toml"))],
        "types": [st.device_type(c) for c in (v100, tpu, _file("xeon-8163-12c.toml"))],
        "kernels": [st.optimizer_kernels(o) for o in ("sgd", "momentum", "rmsprop", "adam")],
        "params-of": [st.params_of(v100), st.params_of(_file("v100-pcie.toml"))],
        "quantization": [
            st._quantization(m, n, k, t, u)
            for m, n, k, t, u in (
                (128, 128, 64, (128, 128), None),
                (129, 128, 64, (128, 128), None),
                (128, 128, 64, (128, 128), 80),
                (128, 128, 20480, (128, 128), 80),
                (1, 1, 1, (64, 32), 7),
            )
        ],
        "channel-pad": [
            st.channel_pad_efficiency(Conv2d("c", 2, cin, cout, 8, 8, 3, 1), a)
            for cin, cout in ((3, 64), (8, 8), (12, 20))
            for a in (0, 1, 2, 8)
        ],
        "split-batch": [
            [st._split_batch(fam, cfg, cores)[1] for cores in (1, 2, 3, 4)]
            for fam, cfg in (
                (families.get("cnn"), families.get("cnn").config({**CNN, "batch": 4})),
                (families.get("cnn"), families.get("cnn").config({**CNN, "batch": 2})),
                (families.get("fc"), families.get("fc").config(FC)),
                (families.get("fc"), SimpleNamespace(layers=2)),
                (families.get("fc"), SimpleNamespace(batch=4.0)),
            )
        ],
    }
    pinned.check("steptime_helpers", got)


def test_refusals_name_field_value_and_rule():
    v100, a100 = chips.load("v100-sxm2"), chips.load("a100-40gb-sxm")
    cases = [
        (lambda: st.predict_step("fc", FC, v100, "fp32", chips=2, topology=Topology("ring", (4,))),
         "--topology", "has 4 chips but --chips is 2"),
        (lambda: st.predict_step("fc", FC, a100, "bf16", policy="fp32-storage"),
         "policy", "only under bf16 on a chip with systolic matrix units"),
        (lambda: st.predict_step("fc", FC, v100, "fp16", policy="fp32-storage"),
         "policy", "only under bf16"),
        (lambda: st.predict_step("fc", FC, v100, "fp32", policy="half"), "policy", "half"),
        (lambda: st.predict_step("fc", FC, v100, "fp32", optimizer_impl="fast"),
         "optimizer implementation", "fast"),
        (lambda: st.predict_step("fc", FC, v100, "fp32", chips=0), "--chips", "0"),
    ]  # fmt: skip
    said = []
    for call, field, words in cases:
        with pytest.raises(ConfigError) as e:
            call()
        assert field in str(e.value) and words in str(e.value)
        said.append(str(e.value))
    pinned.check("steptime_refusals", {"said": said})  # each line as the user reads it
