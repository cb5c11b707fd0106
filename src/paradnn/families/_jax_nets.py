"""The JAX models behind the families (docs/jax.md): FC, CNN (ResNet v1, residual and
bottleneck), RNN/LSTM/GRU (`lax.scan` over time) and the decoder-only Transformer, in plain
`jax.numpy`/`lax` (no flax), layer for layer the torch modules' architecture, so the parameter
counts and the FLOP-carrying shapes are the analytic halves'. Kept apart like the torch halves:
the analytic modules import this one in `build_jax` and pass what it needs (the config, the
CNN's group widths and strides); nothing here imports the analytic half or torch.

A model is a `JaxNet`: `init(key) -> (params, state)`, `apply(params, state, x) -> (logits,
state)` (state: BatchNorm running statistics, updated in training mode as torch does),
`make_batch(key) -> (x, y)` and `loss(logits, y)`. Weights are fp32; under bf16 `apply` casts
them and the activations to bfloat16 (as autocast does) and keeps norms and the loss in fp32.
Initialisation follows torch's defaults (uniform ±1/√fan_in, N(0, 1) embeddings); it changes
no count and no timing, only that the loss stays finite.

Layouts are XLA's: NHWC images and HWIO kernels (torch's NCHW has the same FLOPs and weights).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

F32 = jnp.float32


@dataclass
class JaxNet:
    init: Callable[[Any], tuple[Any, Any]]
    apply: Callable[[Any, Any, Any], tuple[Any, Any]]
    make_batch: Callable[[Any], tuple[Any, Any]]
    loss: Callable[[Any, Any], Any]


def compute_dtype(precision: str) -> Any:
    """The activations' dtype: bfloat16 for bf16, else fp32."""
    return jnp.bfloat16 if precision == "bf16" else F32


def cross_entropy(logits: Any, targets: Any) -> Any:
    """Mean next-class cross-entropy, the log-softmax in fp32 (as autocast keeps it)."""
    logp = jax.nn.log_softmax(logits.astype(F32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def _uniform(key: Any, shape: Sequence[int], fan_in: int) -> Any:
    bound = 1.0 / math.sqrt(max(fan_in, 1))
    return jax.random.uniform(key, tuple(shape), F32, -bound, bound)


def _linear(key: Any, fan_in: int, fan_out: int, bias: bool = True) -> dict[str, Any]:
    kw, kb = jax.random.split(key)
    p = {"w": _uniform(kw, (fan_in, fan_out), fan_in)}
    if bias:
        p["b"] = _uniform(kb, (fan_out,), fan_in)
    return p


def _dense(p: dict[str, Any], x: Any) -> Any:
    y = x @ p["w"]
    return y + p["b"] if "b" in p else y


def _cast(tree: Any, dtype: Any) -> Any:
    return jax.tree.map(lambda a: a.astype(dtype) if a.dtype == F32 else a, tree)


# -- FC -------------------------------------------------------------------------------------
def fc(cfg: Any, precision: str) -> JaxNet:
    """input → layers × (Linear(nodes) + ReLU) → Linear(output)."""
    dt = compute_dtype(precision)
    widths = [cfg.input] + [cfg.nodes] * cfg.layers + [cfg.output]

    def init(key: Any) -> tuple[Any, Any]:
        keys = jax.random.split(key, len(widths) - 1)
        return [_linear(k, a, b) for k, a, b in zip(keys, widths, widths[1:], strict=False)], {}

    def apply(params: Any, state: Any, x: Any) -> tuple[Any, Any]:
        ps = _cast(params, dt)
        h = x.astype(dt)
        for p in ps[:-1]:
            h = jax.nn.relu(_dense(p, h))
        return _dense(ps[-1], h), state

    def make_batch(key: Any) -> tuple[Any, Any]:
        kx, ky = jax.random.split(key)
        x = jax.random.uniform(kx, (cfg.batch, cfg.input), F32, -0.5, 0.5).astype(dt)
        return x, jax.random.randint(ky, (cfg.batch,), 0, cfg.output)

    return JaxNet(init, apply, make_batch, cross_entropy)


# -- CNN ------------------------------------------------------------------------------------
BN_EPS, BN_MOMENTUM = 1e-5, 0.1


def _conv_bn_init(key: Any, cin: int, cout: int, k: int, zero_gamma: bool = False) -> tuple:
    w = _uniform(key, (k, k, cin, cout), cin * k * k)
    gamma = jnp.zeros((cout,), F32) if zero_gamma else jnp.ones((cout,), F32)
    params = {"w": w, "gamma": gamma, "beta": jnp.zeros((cout,), F32)}
    state = {"mean": jnp.zeros((cout,), F32), "var": jnp.ones((cout,), F32)}
    return params, state


def _conv_bn(p: dict, s: dict, x: Any, stride: int) -> tuple[Any, dict]:
    """Conv (no bias, padding k//2) + training-mode BatchNorm over N, H, W in fp32; the
    running statistics move as torch's do (momentum 0.1, unbiased variance)."""
    k = p["w"].shape[0]
    y = lax.conv_general_dilated(
        x,
        p["w"],
        (stride, stride),
        [(k // 2, k // 2)] * 2,
        dimension_numbers=("NHWC", "HWIO", "NHWC"),
    )
    y32 = y.astype(F32)
    mean = jnp.mean(y32, axis=(0, 1, 2))
    var = jnp.var(y32, axis=(0, 1, 2))
    n = y.shape[0] * y.shape[1] * y.shape[2]
    unbiased = var * (n / max(n - 1, 1))
    out = (y32 - mean) * lax.rsqrt(var + BN_EPS) * p["gamma"] + p["beta"]
    new = {
        "mean": (1 - BN_MOMENTUM) * s["mean"] + BN_MOMENTUM * mean,
        "var": (1 - BN_MOMENTUM) * s["var"] + BN_MOMENTUM * unbiased,
    }
    return out.astype(x.dtype), new


def _block_plan(cfg: Any, group_width: Sequence[int], group_stride: Sequence[int]) -> list:
    """(cin, width, stride, project) of every block, in order (torch's ResNetV1)."""
    plan, cin = [], cfg.filters
    for mult, stride in zip(group_width, group_stride, strict=True):
        width = cfg.filters * mult
        for i in range(cfg.blocks):
            plan.append((cin, width, stride if i == 0 else 1, i == 0))
            cin = width * cfg.expansion
    return plan


def cnn(
    cfg: Any, precision: str, group_width: Sequence[int], group_stride: Sequence[int]
) -> JaxNet:
    """ResNet v1: stem 7×7/2 conv+BN+ReLU, 3×3/2 max-pool; residual or bottleneck blocks with a
    projection on each group's first block, the last BN of a block starting at γ = 0; global
    average pooling; Linear(output)."""
    dt = compute_dtype(precision)
    bottleneck = cfg.block == "bottleneck"
    plan = _block_plan(cfg, group_width, group_stride)

    def init(key: Any) -> tuple[Any, Any]:
        keys = iter(jax.random.split(key, 2 + 4 * len(plan)))
        stem_p, stem_s = _conv_bn_init(next(keys), 3, cfg.filters, 7)
        params: dict[str, Any] = {"stem": stem_p, "blocks": []}
        state: dict[str, Any] = {"stem": stem_s, "blocks": []}
        for cin, width, _, project in plan:
            cout = width * cfg.expansion
            if bottleneck:
                shapes = [(cin, width, 1, False), (width, width, 3, False), (width, cout, 1, True)]
            else:
                shapes = [(cin, width, 3, False), (width, cout, 3, True)]
            bp, bs = [], []
            for a, b, k, zero in shapes:
                p, s = _conv_bn_init(next(keys), a, b, k, zero)
                bp.append(p)
                bs.append(s)
            blk_p: dict[str, Any] = {"body": bp}
            blk_s: dict[str, Any] = {"body": bs}
            if project:
                blk_p["proj"], blk_s["proj"] = _conv_bn_init(next(keys), cin, cout, 1)
            params["blocks"].append(blk_p)
            state["blocks"].append(blk_s)
        params["head"] = _linear(next(keys), cfg.features, cfg.output)
        return params, state

    def apply(params: Any, state: Any, x: Any) -> tuple[Any, Any]:
        ps = _cast(params, dt)
        h, stem_s = _conv_bn(ps["stem"], state["stem"], x.astype(dt), 2)
        h = jax.nn.relu(h)
        neg = np.array(-np.inf, h.dtype)  # a constant: reduce_window's max is differentiable
        pad = [(0, 0), (1, 1), (1, 1), (0, 0)]
        h = lax.reduce_window(h, neg, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), pad)
        new_blocks = []
        for (_, _, stride, _), bp, bs in zip(plan, ps["blocks"], state["blocks"], strict=True):
            y, ns = h, {"body": []}
            strides = [1, stride, 1] if bottleneck else [stride, 1]
            for j, (p, s) in enumerate(zip(bp["body"], bs["body"], strict=True)):
                y, s2 = _conv_bn(p, s, y, strides[j])
                ns["body"].append(s2)
                if j < len(strides) - 1:
                    y = jax.nn.relu(y)
            if "proj" in bp:
                short, ns["proj"] = _conv_bn(bp["proj"], bs["proj"], h, stride)
            else:
                short = h
            h = jax.nn.relu(y + short)
            new_blocks.append(ns)
        pooled = jnp.mean(h.astype(F32), axis=(1, 2)).astype(dt)
        return _dense(ps["head"], pooled), {"stem": stem_s, "blocks": new_blocks}

    def make_batch(key: Any) -> tuple[Any, Any]:
        kx, ky = jax.random.split(key)
        x = jax.random.uniform(kx, (cfg.batch, cfg.image, cfg.image, 3), F32).astype(dt)
        return x, jax.random.randint(ky, (cfg.batch,), 0, cfg.output)

    return JaxNet(init, apply, make_batch, cross_entropy)


# -- RNN ------------------------------------------------------------------------------------
GATES = {"rnn": 1, "lstm": 4, "gru": 3}


def _cell_step(cell: str, hidden: int) -> Callable:
    """One time step (carry, input-side gates) -> (carry, h), torch's gate order and formulas:
    LSTM i, f, g, o; GRU r, z, n with n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))."""

    def step(p: dict, carry: Any, xg: Any) -> tuple[Any, Any]:
        if cell == "lstm":
            h, c = carry
            g = xg + h @ p["w_hh"] + p["b_hh"]
            i, f, gg, o = jnp.split(g, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(gg)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        h = carry
        hg = h @ p["w_hh"] + p["b_hh"]
        if cell == "rnn":
            h = jnp.tanh(xg + hg)
            return h, h
        xr, xz, xn = jnp.split(xg, 3, axis=-1)
        hr, hz, hn = jnp.split(hg, 3, axis=-1)
        r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        return h, h

    return step


def rnn(cfg: Any, precision: str) -> JaxNet:
    """Embedding → `layers` stacked cells (hidden = embed; each layer's input-side GEMM over
    all steps at once, the recurrence through `lax.scan`) → Linear(vocab) on every step."""
    dt = compute_dtype(precision)
    e, g = cfg.embed, GATES[cfg.cell]
    step = _cell_step(cfg.cell, e)

    def init(key: Any) -> tuple[Any, Any]:
        keys = iter(jax.random.split(key, 2 + 4 * cfg.layers))
        layers = []
        for _ in range(cfg.layers):
            layers.append(
                {
                    "w_ih": _uniform(next(keys), (e, g * e), e),
                    "w_hh": _uniform(next(keys), (e, g * e), e),
                    "b_ih": _uniform(next(keys), (g * e,), e),
                    "b_hh": _uniform(next(keys), (g * e,), e),
                }
            )
        embed = jax.random.normal(next(keys), (cfg.vocab, e), F32)
        return {"embed": embed, "layers": layers, "head": _linear(next(keys), e, cfg.vocab)}, {}

    def apply(params: Any, state: Any, tokens: Any) -> tuple[Any, Any]:  # tokens: [T, B]
        ps = _cast(params, dt)
        x = ps["embed"][tokens]
        b = tokens.shape[1]
        for p in ps["layers"]:
            xg = x @ p["w_ih"] + p["b_ih"]  # [T, B, G·H]: one GEMM for every step
            h0 = jnp.zeros((b, e), dt)
            carry = (h0, h0) if cfg.cell == "lstm" else h0
            _, x = lax.scan(lambda c, xt, p=p: step(p, c, xt), carry, xg)
        return _dense(ps["head"], x), state

    def make_batch(key: Any) -> tuple[Any, Any]:
        seq = jax.random.randint(key, (cfg.length + 1, cfg.batch), 0, cfg.vocab)
        return seq[:-1], seq[1:]

    return JaxNet(init, apply, make_batch, cross_entropy)


# -- Transformer ----------------------------------------------------------------------------
def _layer_norm(p: dict, x: Any) -> Any:
    x32 = x.astype(F32)
    mean = jnp.mean(x32, axis=-1, keepdims=True)
    var = jnp.var(x32, axis=-1, keepdims=True)
    y = (x32 - mean) * lax.rsqrt(var + 1e-5) * p["w"].astype(F32) + p["b"].astype(F32)
    return y.astype(x.dtype)


def transformer(cfg: Any, precision: str) -> JaxNet:
    """Token embedding (tied to the LM head) + learned positions → pre-norm blocks (causal
    softmax attention over the full T×T square, GELU MLP, no biases on linear layers) →
    LayerNorm → head: nanoGPT's layout, as `_transformer_torch.py`."""
    dt = compute_dtype(precision)
    d, heads, f = cfg.d_model, cfg.n_heads, cfg.ffn

    def ln() -> dict[str, Any]:
        return {"w": jnp.ones((d,), F32), "b": jnp.zeros((d,), F32)}

    def init(key: Any) -> tuple[Any, Any]:
        keys = iter(jax.random.split(key, 2 + 4 * cfg.layers))
        blocks = []
        for _ in range(cfg.layers):
            blocks.append(
                {
                    "ln1": ln(),
                    "qkv": _linear(next(keys), d, 3 * d, bias=False),
                    "proj": _linear(next(keys), d, d, bias=False),
                    "ln2": ln(),
                    "fc1": _linear(next(keys), d, f * d, bias=False),
                    "fc2": _linear(next(keys), f * d, d, bias=False),
                }
            )
        params = {
            "tok": jax.random.normal(next(keys), (cfg.vocab, d), F32),
            "pos": jax.random.normal(next(keys), (cfg.length, d), F32),
            "blocks": blocks,
            "ln_f": ln(),
        }
        return params, {}

    def attention(q: Any, k: Any, v: Any) -> Any:  # [B, H, T, dh]
        t = q.shape[2]
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.shape[-1])
        mask = jnp.tril(jnp.ones((t, t), bool))
        s = jnp.where(mask, s.astype(F32), -jnp.inf)
        w = jax.nn.softmax(s, axis=-1).astype(v.dtype)
        return jnp.einsum("bhqk,bhkd->bhqd", w, v)

    def apply(params: Any, state: Any, tokens: Any) -> tuple[Any, Any]:  # tokens: [B, T]
        ps = _cast(params, dt)
        b, t = tokens.shape
        x = ps["tok"][tokens] + ps["pos"][:t]
        for p in ps["blocks"]:
            qkv = _dense(p["qkv"], _layer_norm(p["ln1"], x))
            q, k, v = (
                z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)
                for z in jnp.split(qkv, 3, axis=-1)
            )
            y = attention(q, k, v).transpose(0, 2, 1, 3).reshape(b, t, d)
            x = x + _dense(p["proj"], y)
            hidden = jax.nn.gelu(_dense(p["fc1"], _layer_norm(p["ln2"], x)), approximate=False)
            x = x + _dense(p["fc2"], hidden)
        return _layer_norm(ps["ln_f"], x) @ ps["tok"].T, state

    def make_batch(key: Any) -> tuple[Any, Any]:
        seq = jax.random.randint(key, (cfg.batch, cfg.length + 1), 0, cfg.vocab)
        return seq[:, :-1], seq[:, 1:]

    return JaxNet(init, apply, make_batch, cross_entropy)


def param_count(params: Any) -> int:
    """Trainable parameters of a params pytree (BatchNorm statistics live in the state)."""
    return int(sum(a.size for a in jax.tree.leaves(params)))


__all__ = ["JaxNet", "cnn", "compute_dtype", "cross_entropy", "fc", "param_count", "rnn"]
