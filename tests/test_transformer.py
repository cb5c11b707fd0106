"""The Transformer family: analytic parameters and FLOPs (PaLM's 6N + 12·L·d·T per token) equal
PyTorch's, on meta and on CPU, its space spans small to a billion parameters, and it trains."""

import itertools
import random

import pytest
import torch
import torch.nn.functional as F

from paradnn import families, memory
from paradnn.errors import ConfigError
from paradnn.families.transformer import Attention
from paradnn.measure.flops import count_step, count_train_flops
from paradnn.measure.saved_bytes import saved_tensor_bytes
from paradnn.measure.step import TrainStep

FAM = families.get("transformer")
CPU = torch.device("cpu")
TINY = {"layers": 2, "d_model": 32, "length": 8, "vocab": 40, "batch": 2}


def _configs(n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        heads = rng.choice([0, 1, 2, 4])
        d = rng.choice([8, 16, 24, 64, 128]) if heads else rng.choice([64, 128, 192])
        try:
            out.append(
                FAM.config(
                    layers=rng.randint(1, 3),
                    d_model=d,
                    heads=heads,
                    ffn=rng.randint(1, 4),
                    length=rng.randint(1, 24),
                    vocab=rng.randint(2, 90),
                    batch=rng.randint(1, 3),
                )
            )
        except ConfigError:  # heads that do not divide d_model
            continue
    return out


def test_analytic_params_equal_pytorch():
    for cfg in [*_configs(12, 0), FAM.default_config()]:
        with torch.device("meta"):
            module = FAM.build(cfg, "meta").module
        assert sum(p.numel() for p in module.parameters()) == FAM.params(cfg), cfg


def test_gpt2_small_is_the_default():
    cfg = FAM.default_config()
    assert (cfg.layers, cfg.d_model, cfg.n_heads, cfg.length) == (12, 768, 12, 1024)
    assert FAM.params(cfg) == 124_392_960  # nanoGPT's GPT-2 small with the padded 50,304 vocab


def test_train_flops_follow_palm_and_equal_the_counter():
    for cfg in _configs(10, 1):
        tokens = cfg.batch * cfg.length
        n = cfg.layers * (4 + 2 * cfg.ffn) * cfg.d_model**2 + cfg.vocab * cfg.d_model
        palm = (6 * n + 12 * cfg.layers * cfg.d_model * cfg.length) * tokens
        assert FAM.train_flops(cfg) == palm == FAM.flops_per_token(cfg) * tokens, cfg
        assert count_train_flops(FAM, cfg).total == palm, cfg


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cpu_count_equals_meta_count(precision):
    """CPU attention runs as the fused flash kernel, which torch's counter scores 0 and whose
    backward it would score 2.5×: the corrections make it count what the math path does."""
    cfg = FAM.config(TINY)
    built = FAM.build(cfg, CPU, precision)
    x, y = built.make_batch()
    from paradnn.measure.precision import autocast

    def step():
        with autocast(precision, CPU):
            loss = built.loss(built.module(x), y)
        loss.backward()

    counted = count_step(step, CPU)
    assert counted.total == FAM.train_flops(cfg)
    assert any("flash_attention_for_cpu" in op for op in counted.by_op)


def test_sdpa_counts_backward_as_twice_forward_on_every_path():
    q = torch.randn(2, 3, 10, 8, requires_grad=True)
    fwd = 4 * 2 * 3 * 10 * 10 * 8
    for device in ("cpu", "meta"):
        x = q.detach().to(device).requires_grad_()
        counted = count_step(
            lambda x=x: F.scaled_dot_product_attention(x, x, x, is_causal=True).sum().backward(),
            device,
        )
        assert counted.total == 3 * fwd, device
    shape = Attention("a", 2 * 3 * 10, 10, 8)
    assert (shape.fwd_flops(), shape.train_flops(), shape.weights) == (fwd, 3 * fwd, 0)


def test_paper_space_spans_small_to_a_billion():
    space = FAM.paper_space
    sizes = [
        FAM.params(FAM.config(dict(zip(space, point, strict=True))))
        for point in itertools.product(*space.values())
    ]
    assert min(sizes) < 10e6 and 0.9e9 < max(sizes) <= 1.1e9
    assert len(sizes) == 5 * 6 * 5 * 4
    for point in itertools.product(*space.values()):  # heads = d_model / 64 everywhere
        cfg = FAM.config(dict(zip(space, point, strict=True)))
        assert cfg.n_heads * 64 == cfg.d_model


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"d_model": 96, "heads": 5}, "transformer.heads"),
        ({"layers": 0}, "transformer.layers"),
        ({"vocab": 1}, "transformer.vocab"),
        ({"dropout": 0.1}, "transformer.dropout"),
    ],
)
def test_bad_configs_name_the_field(values, field):
    with pytest.raises(ConfigError) as e:
        FAM.config(values)
    assert e.value.field == field


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_trains_on_cpu(precision):
    torch.manual_seed(0)
    step = TrainStep(FAM.build(FAM.config(TINY), CPU, precision), "rmsprop", precision, CPU)
    before = [p.detach().clone() for p in step.module.parameters()]
    step()
    step()
    loss = step.final_loss()
    assert loss is not None and loss == loss
    assert all(not torch.equal(a, b) for a, b in zip(before, step.module.parameters(), strict=True))


def test_causal_mask_is_applied():
    """Changing a later token must not change an earlier position's logits."""
    cfg = FAM.config(TINY)
    torch.manual_seed(0)
    module = FAM.build(cfg, CPU).module.eval()
    tokens = torch.randint(0, cfg.vocab, (1, cfg.length))
    other = tokens.clone()
    other[0, -1] = (other[0, -1] + 1) % cfg.vocab
    with torch.no_grad():
        a, b = module(tokens), module(other)
    assert torch.equal(a[0, :-1], b[0, :-1]) and not torch.equal(a[0, -1], b[0, -1])


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_memory_estimate_matches_what_autograd_saves(precision):
    for cfg in _configs(3, 2 + (precision == "bf16")):
        torch.manual_seed(0)
        measured = saved_tensor_bytes(TrainStep(FAM.build(cfg, CPU, precision), "sgd",
                                                precision, CPU))  # fmt: skip
        est = memory.predict("transformer", cfg, precision, "sgd", device_type="cpu")
        assert est.weights == measured["weights"] and est.grads == measured["grads"]
        assert est.activations == pytest.approx(measured["activations"], rel=0.15), cfg
        assert est.activations_floor <= measured["activations"]
