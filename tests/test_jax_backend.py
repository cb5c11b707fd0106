"""The JAX/XLA backend (docs/jax.md): the same families on JAX, held to the same analytic counts
as the torch backend; the XLA measurement (lowering and compile apart from the first step,
donated buffers, cost analysis beside the analytic counts, peak memory or its reason); the
backend as a run option, a run-key part and a comparison axis. Tiny configs, CPU only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import torch  # noqa: E402

from paradnn import analysis, families  # noqa: E402
from paradnn.config import RunOptions, RunSpec  # noqa: E402
from paradnn.errors import ConfigError  # noqa: E402
from paradnn.measure import xla  # noqa: E402
from paradnn.runner.execute import execute  # noqa: E402
from paradnn.runner.start import start_record  # noqa: E402

from conftest import TINY, TINY_POLICY  # noqa: E402

CASES = [
    ("fc", TINY["fc"]),
    ("cnn", {**TINY["cnn"], "block": "residual"}),
    (
        "cnn",
        {"blocks": 2, "filters": 2, "image": 37, "output": 3, "batch": 2, "block": "bottleneck"},
    ),
    ("rnn", TINY["rnn"]),
    ("rnn", {**TINY["rnn"], "cell": "gru", "layers": 1}),
    ("rnn", {**TINY["rnn"], "cell": "rnn"}),
    (
        "transformer",
        {"layers": 2, "d_model": 16, "heads": 2, "ffn": 2, "length": 6, "vocab": 11, "batch": 2},
    ),
]
IDS = [f"{f}-{c.get('block') or c.get('cell') or ''}" for f, c in CASES]


def _jax(family, config, options):
    """One JAX run prepared and measured in this process."""
    return execute(RunSpec(family, config, dataclasses.replace(options, backend="jax")))


def _opts(**kw):
    return RunOptions(device="cpu", threads=1, timing=TINY_POLICY, backend="jax", **kw)


def _step(family: str, values: dict, precision: str = "fp32", optimizer: str = "rmsprop"):
    fam = families.get(family)
    cfg = fam.config(values)
    return fam, cfg, xla.XlaStep(fam.build_jax(cfg, precision), optimizer, jax.devices("cpu")[0])


@pytest.mark.parametrize(("family", "values"), CASES, ids=IDS)
def test_params_and_counted_flops_equal_the_analytic_counts_on_both_backends(family, values):
    fam = families.get(family)
    cfg = fam.config(values)
    net = fam.build_jax(cfg, "fp32")
    params, state, x, y = xla.abstract(net)  # shapes only: nothing compiled or allocated
    torch_params = sum(p.numel() for p in fam.build(cfg, torch.device("cpu")).module.parameters())
    count = sum(int(np.prod(a.shape)) for a in jax.tree.leaves(params))
    assert count == fam.params(cfg) == torch_params
    counted = xla.model_flops(net, params, state, x, y)  # matmuls and convs of value_and_grad
    extra = 0
    if family == "rnn":  # lax.scan's backward also takes the (discarded) gradient of h0
        g = {"rnn": 1, "lstm": 4, "gru": 3}[cfg.cell]
        extra = cfg.layers * 2 * cfg.batch * g * cfg.embed**2
    assert counted == fam.train_flops(cfg) + extra


def test_the_run_key_and_analytic_counts_of_both_backends():
    env = {"device": "cpu", "fingerprint": "f", "device_type": "cpu"}
    base = RunOptions(device="cpu")
    t = start_record(RunSpec("fc", TINY["fc"], base), env)
    j = start_record(RunSpec("fc", TINY["fc"], dataclasses.replace(base, backend="jax")), env)
    assert (t.params_analytic, t.flops_analytic) == (j.params_analytic, j.flops_analytic)
    assert t.run_key != j.run_key and (t.backend, j.backend) == ("torch", "jax")
    assert "backend" not in base.key_fields()  # torch keys are what they were before backends
    with pytest.raises(ConfigError, match="backend"):
        RunOptions(backend="tensorflow")


@pytest.mark.parametrize("name", ["rmsprop", "sgd", "momentum", "adam", "adamw"])
def test_optax_does_the_torch_optimizers_arithmetic(name):
    from paradnn.measure.step import make_optimizer

    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 4)).astype(np.float32)
    grads = [rng.normal(size=(3, 4)).astype(np.float32) for _ in range(3)]
    p = torch.nn.Parameter(torch.tensor(w0))
    opt = make_optimizer(name, [p])
    tx = xla.make_optimizer(name)
    w = jax.numpy.asarray(w0)
    state = tx.init(w)
    for g in grads:
        p.grad = torch.tensor(g)
        opt.step()
        upd, state = tx.update(jax.numpy.asarray(g), state, w)
        w = w + upd
    np.testing.assert_allclose(np.asarray(w), p.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_a_cpu_run_records_compile_apart_xla_counts_and_the_missing_peak():
    rec = _jax("fc", TINY["fc"], _opts())
    assert rec.status == "ok", rec.error
    assert rec.backend == "jax" and rec.flags["backend"] == "jax"
    assert rec.params == rec.params_analytic and rec.flops_per_step == rec.flops_analytic
    assert rec.flops_count_device == "jaxpr"
    assert rec.xla_lower_s > 0 and rec.xla_compile_s > 0 and rec.first_step_s > 0
    assert rec.xla_flops > 0 and rec.xla_bytes > 0
    assert rec.xla_flops_ratio == pytest.approx(rec.xla_flops / rec.flops_analytic)
    assert rec.xla_flops_mismatch == (abs(rec.xla_flops_ratio - 1) > 0.10)
    d = rec.xla_detail
    assert d["donated"] is True and d["platform"] == "cpu" and d["versions"]["jax"]
    assert d["memory_analysis"]["argument_bytes"] > 0 and d["grad_flops"] > 0
    assert rec.peak_mem_bytes is None and "memory statistics" in rec.nulls["peak_mem_bytes"]
    assert rec.n_samples == len(rec.samples) >= TINY_POLICY.min_samples
    assert rec.quality in ("good", "noisy") and np.isfinite(rec.final_loss)
    assert rec.achieved_flops == pytest.approx(rec.flops_per_step / rec.step_time_s)
    assert rec.device_name == rec.env["cpu_model"]  # one platform with the host's torch rows


def test_bf16_steps_train_in_bfloat16_with_fp32_weights():
    _, _, step = _step("fc", TINY["fc"], precision="bf16", optimizer="momentum")
    step.lower_and_compile()
    for _ in range(2):
        step()
    assert step.x.dtype == jax.numpy.bfloat16
    assert {str(a.dtype) for a in jax.tree.leaves(step.params)} == {"float32"}
    assert np.isfinite(step.final_loss())


@pytest.mark.parametrize(
    ("family", "kw", "match"),
    [
        ("fc", {"mode": "compile"}, "always compiled by XLA"),
        ("fc", {"precision": "tf32"}, "runs fp32 and bf16"),
        ("fc", {"procs": 2}, "torch-only"),
        ("resnet50", {}, "no JAX implementation"),
    ],
)
def test_what_the_jax_backend_cannot_run_is_unsupported_with_the_reason(family, kw, match):
    rec = _jax(family, {} if family == "resnet50" else TINY["fc"], _opts(**kw))
    assert rec.status == "unsupported" and match in rec.error


def test_compare_by_backend_pairs_torch_and_jax_runs_of_one_config(store, tmp_path):
    opts = RunOptions(device="cpu", threads=1, timing=TINY_POLICY)
    for fam in ("fc", "rnn"):
        store.insert(execute(RunSpec(fam, TINY[fam], opts)))
        store.insert(_jax(fam, TINY[fam], opts))
    rows = store.runs()
    assert [r["backend"] for r in rows] == ["torch", "jax", "torch", "jax"]
    assert isinstance(rows[1]["xla_detail"], dict) and rows[1]["xla_flops_mismatch"] in (0, 1)
    data = analysis.from_frames(store.frame())
    c = analysis.compare(data, "backend", "torch", "jax", include_noisy=True)
    assert sorted(c.pairs["family"]) == ["fc", "rnn"]
    assert (c.pairs["ci_low"] <= c.pairs["speedup"]).all()
    assert (c.pairs["speedup"] <= c.pairs["ci_high"]).all()
    e = analysis.compare(data, "engine", "torch-eager", "jax", include_noisy=True)
    assert e.pairs["speedup"].tolist() == c.pairs["speedup"].tolist()
    from paradnn.analysis import backends

    st = backends.study(data, "torch-eager", include_noisy=True)
    assert st is not None and len(st.pairs) == 2 and st.pairs["xla_compile_s"].gt(0).all()
    agree = backends.flop_agreement(data)
    assert list(agree["family"]) == ["fc", "rnn", "all"] and agree["runs"].tolist() == [1, 1, 2]
    # precision comparisons never pair a torch run with a jax run
    assert "backend" in analysis.speedup._key("precision", data.runs, data.runs)
    from paradnn.report.sections.backends import SECTION
    from paradnn.report.writer import Writer

    sec = SECTION.build(data, Writer(tmp_path / "out"))
    assert sec.empty is None and sec.figures
    agreement = tmp_path / "out" / "tables" / "backends-xla-flops.csv"
    assert agreement.exists() and "median_ratio" in agreement.read_text()
    none = SECTION.build(analysis.from_frames(store.frame().iloc[0:1]), Writer(tmp_path))
    assert "--backend torch --backend jax" in none.empty


def test_a_bad_backend_is_one_line_and_exit_2_before_any_work(capsys):
    from conftest import run_cli

    code, _, err = run_cli(capsys, "bench", "fc", "--backend", "tensorflow", "--db", ":memory:")
    assert code == 2 and "backend" in err and "tensorflow" in err and "torch, jax" in err


def test_a_sweep_file_sets_the_backend_axis(tmp_path):
    from paradnn.sweep import load

    path = tmp_path / "b.toml"
    path.write_text(
        'backends = ["torch", "jax"]\n[[runs]]\nfamily = "fc"\nconfig = { layers = 1 }\n'
    )
    specs = load(str(path)).specs()
    assert [s.options.backend for s in specs] == ["torch", "jax"]
    path.write_text('backends = ["jaxx"]\n[[runs]]\nfamily = "fc"\n')
    with pytest.raises(ConfigError, match="jaxx"):
        load(str(path))
