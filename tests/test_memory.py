"""The memory model against what PyTorch really keeps: saved tensors measured with
saved_tensors_hooks during a real training step on CPU, and the real peak of the profiler."""

import random
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from paradnn import families, memory
from paradnn.errors import ConfigError
from paradnn.families.shapes import Conv2d, Gemm, Recurrent
from paradnn.measure.saved_bytes import profiler_peak_bytes, saved_tensor_bytes
from paradnn.measure.step import TrainStep

from conftest import require_native

CPU = torch.device("cpu")
SMALL = {
    "fc": {
        "layers": range(1, 5),
        "nodes": range(1, 64),
        "input": range(1, 80),
        "output": range(2, 40),
        "batch": range(1, 24),
    },
    "cnn": {
        "blocks": range(1, 3),
        "filters": range(1, 9),
        "image": range(8, 48),
        "output": range(2, 12),
        "batch": range(2, 5),
    },
    "rnn": {
        "layers": range(1, 4),
        "embed": range(1, 40),
        "length": range(1, 12),
        "vocab": range(2, 40),
        "batch": range(1, 9),
    },
}
VARIANTS = [
    ("fc", {}),
    ("cnn", {"block": "residual"}),
    ("cnn", {"block": "bottleneck"}),
    ("rnn", {"cell": "rnn"}),
    ("rnn", {"cell": "lstm"}),
    ("rnn", {"cell": "gru"}),
]


def _configs(name, extra, n, seed):
    fam = families.get(name)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        try:
            out.append(fam.config({k: rng.choice(v) for k, v in SMALL[name].items()}, **extra))
        except ConfigError:  # a 1×1 last map with batch 1 cannot train BatchNorm
            continue
    return out


def _step(name, cfg, precision, optimizer):
    torch.manual_seed(0)
    return TrainStep(families.get(name).build(cfg, CPU, precision), optimizer, precision, CPU)


@pytest.mark.parametrize(("name", "extra"), VARIANTS)
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_estimate_matches_what_autograd_saves(name, extra, precision):
    seed = 2 * VARIANTS.index((name, extra)) + (precision == "bf16")
    require_native(precision)
    if precision == "bf16" and extra.get("cell") == "lstm":
        _require_onednn_bf16_lstm()
    optimizers = random.Random(seed).choices(("sgd", "momentum", "rmsprop"), k=6)
    for cfg, optimizer in zip(_configs(name, extra, 6, seed), optimizers, strict=True):
        measured = saved_tensor_bytes(_step(name, cfg, precision, optimizer))
        est = memory.predict(name, cfg, precision, optimizer, device_type="cpu")
        where = (cfg, precision, optimizer, measured, est)
        for part in ("weights", "grads", "optimizer_state"):
            assert getattr(est, part) == measured[part], where
        assert est.activations == pytest.approx(measured["activations"], rel=0.15), where
        assert est.resident == pytest.approx(sum(measured.values()), rel=0.15), where
        assert est.activations_floor <= measured["activations"], where
        assert est.lower_bound <= sum(measured.values()), where


def _require_onednn_bf16_lstm():
    lstm = torch.nn.LSTM(4, 4)
    kinds = []

    def pack(t):
        kinds.append(t.dtype)
        return t

    x = torch.zeros(2, 1, 4, requires_grad=True)
    hooks = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
    with hooks, torch.autocast("cpu", dtype=torch.bfloat16):
        lstm(x)
    if torch.uint8 not in kinds:  # no oneDNN workspace: ATen's per-step fallback ran
        pytest.skip("this CPU runs bf16 LSTM without oneDNN; the model assumes oneDNN")


@pytest.mark.parametrize(
    ("name", "values", "optimizer"),
    [
        ("fc", {"layers": 3, "nodes": 64, "input": 300, "output": 50, "batch": 64}, "momentum"),
        ("cnn", {"blocks": 1, "filters": 8, "image": 32, "output": 10, "batch": 4}, "rmsprop"),
        ("rnn", {"layers": 2, "embed": 48, "length": 8, "vocab": 30, "batch": 8}, "sgd"),
    ],
)
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_lower_bound_stays_below_the_real_peak(name, values, optimizer, precision):
    """The profiler's memory timeline gives the real peak of live tensor bytes on CPU. The lower
    bound holds on every ISA; the estimate leaves out conv scratch that only some kernels
    allocate (im2col on AVX2), which the upper bound adds."""
    require_native(precision)
    if precision == "bf16" and name == "rnn":  # an LSTM
        _require_onednn_bf16_lstm()
    cfg = families.get(name).config(values)
    step = _step(name, cfg, precision, optimizer)
    step()  # the optimizer state exists from the second step on
    peak = profiler_peak_bytes(step)
    if peak is None:
        pytest.skip("this torch has no profiler memory timeline")
    est = memory.predict(name, cfg, precision, optimizer, device_type="cpu")
    assert est.lower_bound <= peak
    assert 0.8 * est.total <= peak <= 1.2 * est.upper_bound


def _paper_configs(name, n, seed=0):
    fam = families.get(name)
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        try:
            out.append(fam.config({k: rng.choice(list(v)) for k, v in fam.paper_space.items()}))
        except ConfigError:
            continue
    return out


@pytest.mark.parametrize("name", ["fc", "cnn", "rnn"])
def test_bounds_are_ordered_on_the_paper_space(name):
    for cfg in _paper_configs(name, 40):
        for precision in ("fp32", "bf16"):
            for device_type in ("cpu", "cuda"):
                est = memory.predict(name, cfg, precision, "rmsprop", device_type=device_type)
                assert 0 < est.activations_floor <= est.activations, cfg
                assert est.lower_bound <= est.total, cfg
                assert est.live_at_peak <= est.grads + est.activations, cfg
                assert est.peak_phase in ("forward", "backward", "optimizer")


def test_optimizer_state_is_fp32_copies_of_the_parameters():
    fam = families.get("fc")
    cfg = fam.default_config()
    p = fam.params(cfg)
    state = {
        o: memory.predict("fc", cfg, "fp32", o).optimizer_state
        for o in ("sgd", "momentum", "rmsprop")
    }
    assert state == {"sgd": 0, "momentum": 4 * p, "rmsprop": 8 * p}


def test_precision_changes_activations_only():
    cfg = families.get("cnn").config(batch=32)
    est = {p: memory.predict("cnn", cfg, p, "momentum") for p in ("fp32", "tf32", "bf16", "fp16")}
    assert est["tf32"] == est["fp32"]
    assert est["fp16"] == est["bf16"]
    for part in ("weights", "grads", "optimizer_state"):  # fp32 master weights in every mode
        assert getattr(est["bf16"], part) == getattr(est["fp32"], part)
    # 16-bit maps, but the BN statistics, pool indices, log-softmax and weight copies are not
    assert 0.5 < est["bf16"].activations / est["fp32"].activations < 0.6


def test_autocast_weight_copies_are_counted():
    fam = families.get("fc")
    cfg = fam.config(layers=2, nodes=1000, input=10, output=10, batch=1)
    fp32, bf16 = (fam.activation_memory(cfg, p).saved for p in ("fp32", "bf16"))
    assert bf16 - fp32 > 2 * 1000 * 1000  # fc2's 16-bit weight, saved for its input gradient
    assert fam.activation_memory(cfg, "bf16").casts >= 2 * 1000 * 10  # fc1's: cached, not saved


def test_only_the_recurrent_family_depends_on_the_device_type():
    for name in ("fc", "cnn"):
        cfg = families.get(name).default_config()
        cpu, cuda = (
            memory.predict(name, cfg, "bf16", "sgd", device_type=d) for d in memory.DEVICE_TYPES
        )
        assert cpu.activations == cuda.activations
        assert cuda.workspace - cpu.workspace == memory.CUDA_LIBRARY_BYTES
    cfg = families.get("rnn").default_config()
    cpu, cuda = (
        memory.predict("rnn", cfg, "fp32", "sgd", device_type=d) for d in memory.DEVICE_TYPES
    )
    assert cpu.activations != cuda.activations


def test_fits_uses_the_lower_bound():
    est = memory.MemoryEstimate(
        weights=100,
        grads=100,
        optimizer_state=200,
        activations=1000,
        activations_floor=600,
        peak_phase="backward",
        live_at_peak=1050,
        workspace=500,
    )
    assert est.lower_bound == 900 and est.total == 1850
    assert memory.fits(est, 900, headroom=0)
    assert memory.fits(est, 1000)  # the best estimate exceeds it, the bound does not
    assert not memory.fits(est, 899, headroom=0)
    assert memory.fits(est, 850, headroom=0.1) and not memory.fits(est, 800, headroom=0.1)
    with pytest.raises(ValueError, match="headroom"):
        memory.fits(est, 10**9, headroom=-0.1)


def test_a_family_without_a_model_falls_back_to_its_shapes():
    cfg = families.get("fault").config(width=64, batch=32)  # tests/faults.py: one Linear
    est = memory.predict("fault", cfg, "bf16", "momentum")
    assert est.activations == 2 * 32 * (64 + 64)  # the GEMM's input and output, 16-bit
    assert est.activations_floor == 0  # so the lower bound claims only the parameter state
    assert est.lower_bound == est.weights + est.optimizer_state + est.grads


def test_predict_rejects_unknown_names():
    cfg = families.get("fc").default_config()
    with pytest.raises(ConfigError) as e:
        memory.predict("fc", cfg, "fp32", "lamb")
    assert e.value.field == "optimizer" and e.value.value == "lamb"
    with pytest.raises(ConfigError) as e:
        memory.predict("fc", cfg, "fp32", "sgd", device_type="tpu")
    assert e.value.field == "device_type" and e.value.value == "tpu"
    with pytest.raises(ConfigError) as e:
        memory.predict("fc", cfg, "fp8", "sgd")
    assert e.value.field == "precision" and e.value.value == "fp8"


def test_the_model_never_imports_torch():
    code = (
        "import sys\n"
        "from paradnn import families, memory\n"
        "for n in ('fc', 'cnn', 'rnn'):\n"
        "    f = families.get(n)\n"
        "    for d in memory.DEVICE_TYPES:\n"
        "        memory.predict(n, f.default_config(), 'bf16', 'rmsprop', device_type=d)\n"
        "sys.exit(any(m == 'torch' or m.startswith('torch.') for m in sys.modules))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# Hand-computed cases for the model's parts: each number below is worked out from the
# docstrings' rules, so a changed rule (a dropped term, a swapped branch) fails here even where
# the measured comparisons above stay within their tolerances.
GA = Gemm("a", m=2, n=4, k=3)  # reads 2×3, weights 12
GB = Gemm("b", m=2, n=5, k=4)  # reads 2×4, weights 20: the classifier, last
CONV = Conv2d("c", batch=2, in_ch=3, out_ch=4, in_h=5, in_w=6, kernel=3)  # out 3×4
LSTM = Recurrent("r", cell="lstm", batch=2, seq=3, input=5, hidden=7)  # weights 4·7·12 = 336
GRU = Recurrent("g", cell="gru", batch=2, seq=3, input=5, hidden=7)


def test_an_ops_reads_are_its_activation_input():
    assert memory._reads(GB) == 2 * 4
    assert memory._reads(CONV) == 2 * 3 * 5 * 6
    assert memory._reads(LSTM) == 3 * 2 * (5 + 4 * 7)  # the input and the gates


def test_gradient_buffers_hold_the_output_and_input_gradients():
    assert memory._gradient_buffers(GB, 4, "cuda") == 2 * (5 + 4) * 4
    assert memory._gradient_buffers(replace(GB, input_grad=False), 4, "cpu") == 2 * 5 * 4
    assert memory._gradient_buffers(CONV, 2, "cpu") == 2 * (4 * 3 * 4 + 3 * 5 * 6) * 2
    assert memory._gradient_buffers(replace(CONV, input_grad=False), 2, "cpu") == 2 * 48 * 2
    gates = 3 * 2 * (4 * 7 + 5)
    assert memory._gradient_buffers(LSTM, 4, "cpu") == gates * 4 + 2 * 4 * 336  # oneDNN's copies
    assert memory._gradient_buffers(LSTM, 2, "cuda") == gates * 2 + 2 * 336  # cuDNN's flat 16-bit
    assert memory._gradient_buffers(LSTM, 4, "cuda") == gates * 4  # fp32: the gradients themselves
    assert memory._gradient_buffers(GRU, 4, "cpu") == 3 * 2 * (3 * 7 + 5) * 4  # no staging
    assert memory._gradient_buffers(replace(GRU, input_grad=False), 4, "cpu") == 3 * 2 * 21 * 4


def test_rmsprop_allocates_a_square_root_for_all_or_the_largest_parameter():
    shapes = [GA, GB]
    assert memory._optimizer_temporaries(shapes, 32, "rmsprop", "foreach") == 32  # CUDA's
    assert memory._optimizer_temporaries(shapes, 32, "rmsprop", "loop") == 20  # CPU's: one by one
    assert memory._optimizer_temporaries(shapes, 32, "adam", "foreach") == 32
    assert memory._optimizer_temporaries(shapes, 32, "adamw", "fused") == 0
    assert memory._optimizer_temporaries(shapes, 32, "momentum", "foreach") == 0
    assert memory._optimizer_temporaries(shapes, 32, "sgd", "loop") == 0
    assert memory._optimizer_temporaries([], 0, "rmsprop", "loop") == 0


def test_conv_scratch_is_two_unfolded_inputs_of_the_largest_spatial_conv():
    unfolded = 3 * 3 * 3 * (3 * 4) * 2  # in_ch · k² · out_h · out_w · batch
    pointwise = Conv2d("p", batch=64, in_ch=64, out_ch=64, in_h=32, in_w=32, kernel=1)
    assert memory._conv_scratch([GA, CONV, pointwise], "fp32") == 2 * unfolded * 4
    assert memory._conv_scratch([CONV], "bf16") == 2 * unfolded * 2
    grouped = replace(CONV, in_ch=4, groups=2)  # 2 input channels per group
    assert memory._conv_scratch([grouped], "fp32") == 2 * 2 * 9 * 12 * 2 * 4
    assert memory._conv_scratch([GA, pointwise], "fp32") == 0
    two = replace(CONV, kernel=2)  # out 4×5: a 2×2 kernel unfolds too
    assert memory._conv_scratch([two], "fp32") == 2 * (3 * 4 * 20 * 2) * 4
    assert isinstance(memory._conv_scratch([grouped], "fp32"), int)  # bytes are whole


def test_backward_peaks_where_gradients_and_activations_sum_highest():
    # reversed: b first (20/32 of the gradients, buffers max(2·9·4, logits' 2·2·5·4) = 80),
    # then a (all gradients, 8/14 of the activations freed, buffers 2·7·4 = 56)
    assert memory._backward([GA, GB], 1400, 3200, "fp32", "cuda") == (600 + 3200, 56)
    assert memory._backward([GA, GB], 14000, 320, "fp32", "cuda") == (14000 + 200, 80)
    # no activation reads or no weights: everything at once, no buffers
    assert memory._backward([], 100, 50, "fp32", "cpu") == (150, 0)
    assert memory._backward([Gemm("w0", m=2, n=0, k=3)], 100, 50, "fp32", "cpu") == (150, 0)
    assert memory._backward([Gemm("r0", m=0, n=4, k=3)], 100, 50, "fp32", "cpu") == (150, 0)
    # a tie keeps the earlier moment (the later one holds fewer buffers, more gradients):
    # b: 1000 + 1064/2 + 64 = 1596; a (no input gradient): 500 + 1064 + 32 = 1596
    a, b = Gemm("a", m=2, n=4, k=4, input_grad=False), Gemm("b", m=2, n=4, k=4)
    assert memory._backward([a, b], 1000, 1064, "fp32", "cpu") == (1532, 64)


def test_the_estimates_totals_and_bounds_add_the_right_parts():
    est = memory.MemoryEstimate(
        weights=10, grads=20, optimizer_state=30, activations=40, activations_floor=25,
        peak_phase="backward", live_at_peak=50, workspace=7, conv_scratch=3,
    )  # fmt: skip
    assert est.resident == 100 and est.total == 97 and est.upper_bound == 100
    assert est.lower_bound == 10 + 30 + 25  # the activation floor is larger than the gradients
    assert replace(est, grads=28).lower_bound == 10 + 30 + 28


@pytest.mark.parametrize("device_type", memory.DEVICE_TYPES)
@pytest.mark.parametrize("optimizer", ["sgd", "rmsprop"])
def test_predict_takes_the_largest_phase_and_adds_its_parts(device_type, optimizer):
    fam = families.get("cnn")
    cfg = fam.config(blocks=1, filters=8, image=16, batch=4)
    est = memory.predict("cnn", cfg, "fp32", optimizer, device_type=device_type)
    p, shapes = fam.params(cfg), fam.shapes(cfg)
    act = fam.activation_memory(cfg, "fp32", device_type=device_type)
    impl = "foreach" if device_type == "cuda" else "loop"  # torch's own choice
    phases = {
        "forward": (act.saved, act.casts),
        "backward": memory._backward(shapes, act.saved, 4 * p, "fp32", device_type),
        "optimizer": (4 * p, 4 * memory._optimizer_temporaries(shapes, p, optimizer, impl)),
    }
    peak = max(phases, key=lambda k: sum(phases[k]))
    library = memory.CUDA_LIBRARY_BYTES if device_type == "cuda" else 0
    assert est.peak_phase == peak and est.live_at_peak == phases[peak][0]
    assert est.workspace == phases[peak][1] + library
    assert est.weights == 4 * p + act.buffers and est.grads == 4 * p
    assert est.activations == act.saved and est.activations_floor == act.floor
    scratch = memory._conv_scratch(shapes, "fp32") if device_type == "cpu" else 0
    assert est.conv_scratch == scratch and (scratch > 0) == (device_type == "cpu")


def test_each_phase_can_be_the_peak():
    fc = families.get("fc")
    # a wide input, a narrow net and a large batch: forward's saved inputs and 16-bit casts
    wide = fc.config(layers=4, nodes=16, input=1000, output=2, batch=512)
    est = memory.predict("fc", wide, "bf16", "sgd", device_type="cpu")
    act = fc.activation_memory(wide, "bf16", device_type="cpu")
    assert est.peak_phase == "forward"
    assert (est.live_at_peak, est.workspace) == (act.saved, act.casts)
    # one example through large weights: RMSProp's step, its square root all at once on CUDA
    big = fc.config(layers=2, nodes=1024, batch=1)
    p, largest = fc.params(big), max(s.weights for s in fc.shapes(big))
    cpu = memory.predict("fc", big, "fp32", "rmsprop", device_type="cpu")
    cuda = memory.predict("fc", big, "fp32", "rmsprop", device_type="cuda")
    assert cpu.peak_phase == cuda.peak_phase == "optimizer"
    assert cpu.live_at_peak == cuda.live_at_peak == 4 * p
    assert cpu.workspace == 4 * largest
    assert cuda.workspace == 4 * p + memory.CUDA_LIBRARY_BYTES
    cnn = families.get("cnn").config(blocks=1, filters=8, image=16, batch=4)
    assert memory.predict("cnn", cnn, "fp32", "sgd").peak_phase == "backward"


def test_one_run_is_predicted_from_its_description_whole():
    """memory.estimate/check_run take the run's spec: precision policy, implementation and
    ranks included (issue 44); the simulator's capacity sizes a pure 16-bit run as pure."""
    from paradnn.config import RunOptions, RunSpec
    from paradnn.sim import traffic

    values = {"layers": 4, "nodes": 1024, "batch": 64}
    cfg = families.get("fc").config(values)
    pure = RunOptions(precision="bf16", optimizer="adam", precision_policy="pure")
    est = memory.estimate(RunSpec("fc", values, pure), "cuda")
    assert est == memory.predict("fc", cfg, "bf16", "adam", device_type="cuda", policy="pure")
    mixed = memory.estimate(
        RunSpec("fc", values, RunOptions(precision="bf16", optimizer="adam")), "cuda"
    )
    assert est.total < mixed.total
    ranks = RunSpec("fc", values, RunOptions(procs=4))
    assert memory.check_run(ranks, "cpu", 10**12, "host memory").copies == 4
    sim_pure = traffic.capacity(RunSpec("fc", values, pure), None)
    sim_mixed = traffic.capacity(
        RunSpec("fc", values, RunOptions(precision="bf16", optimizer="adam")), None
    )
    assert (sim_pure.needed_bytes, sim_mixed.needed_bytes) == (est.total, mixed.total)


def test_the_estimate_reads_every_option_of_the_description_and_the_device():
    """estimate(spec) passes the precision, optimizer, policy, implementation and device type
    through, each changing the figure it changes; a model of your own has no estimate, and
    check_run says so (None, never a guess) with what is free."""
    from paradnn.config import RunOptions, RunSpec

    values = {"layers": 2, "nodes": 256, "batch": 32}
    cfg = families.get("fc").config(values)
    for kw in (
        {"precision": "bf16", "optimizer": "rmsprop", "optimizer_impl": "foreach"},
        {"precision": "bf16", "optimizer": "rmsprop", "optimizer_impl": "loop"},
        {"precision": "fp16", "optimizer": "adam", "precision_policy": "pure"},
    ):
        o = RunOptions(**kw)
        for device in ("cpu", "cuda"):
            assert memory.estimate(RunSpec("fc", values, o), device) == memory.predict(
                "fc", cfg, o.precision, o.optimizer, device_type=device,
                policy=o.precision_policy, implementation=o.optimizer_impl,
            )  # fmt: skip
    loop = RunOptions(optimizer="rmsprop", optimizer_impl="loop")
    each = RunOptions(optimizer="rmsprop", optimizer_impl="foreach")
    assert (
        memory.estimate(RunSpec("fc", values, loop), "cuda").total
        < memory.estimate(RunSpec("fc", values, each), "cuda").total
    )
    lstm = {"layers": 1, "embed": 64, "length": 8, "vocab": 100, "batch": 4, "cell": "lstm"}
    opts = RunOptions(precision="fp32")
    assert memory.estimate(RunSpec("rnn", lstm, opts), "cpu") != memory.estimate(
        RunSpec("rnn", lstm, opts), "cuda"
    )
    own = RunSpec("user", {"model": "a.b:c"}, RunOptions())
    assert memory.estimate(own, "cpu") is None
    check = memory.check_run(own, "cpu", 2**30, "host memory")
    assert check == memory.MemoryCheck(None, 2**30, "host memory", 1)
    assert check.fits is None and check.predicted_bytes is None
