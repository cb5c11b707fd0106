"""FLOPs of one training step, counted by PyTorch's FlopCounterMode with our corrections.

Counting runs forward + loss + backward, by default on the `meta` device: no real math, no
memory, device-independent, and recurrent layers take the decomposed path whose matmuls the
counter sees. Two corrections (reference/flops.md §2.3–2.4):
- grouped-convolution backward is over-counted by `groups` in recent releases: we count one
  forward-sized convolution per requested gradient instead;
- fused recurrent kernels (oneDNN on CPU, cuDNN on CUDA) have no formula and count 0: we add
  2·T·B·(|W_ih| + |W_hh|) per layer forward, one forward for the weight gradient and one for
  the data gradient less its t = 0 hidden-state term. The initial state is a constant, so that
  term is no model FLOP (the meta path skips it; fused kernels compute it anyway): leaving it
  out makes the count the same on every device.
Attention (`scaled_dot_product_attention`) is counted as model FLOPs too: CPU's flash kernel has
no stock formula (it counted 0 in torch 2.13), and flash backward's recompute of QKᵀ is left out,
so every backend counts what the meta (math) path does: backward = 2× forward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import prod
from typing import Any

import torch
from torch.utils.flop_counter import (
    FlopCounterMode,
    bmm_flop,
    conv_flop_count,
    sdpa_backward_flop_count,
    sdpa_flop_count,
)

from paradnn.families.base import Family

aten = torch.ops.aten


def _conv_backward(
    grad_out,
    x,
    w,
    _bias,
    _stride,
    _pad,
    _dil,
    transposed,
    _opad,
    _groups,
    output_mask,
    out_shape=None,
    **_: Any,
) -> int:
    fwd = conv_flop_count(x, w, grad_out, transposed=transposed)
    return fwd * (int(output_mask[0]) + int(output_mask[1]))


def _rnn_layer_flops(inp, w_ih, w_hh, batch_first: bool) -> int:
    t, b = (inp[1], inp[0]) if batch_first else (inp[0], inp[1])
    return 2 * t * b * (prod(w_ih) + prod(w_hh))


def _h0_term(inp, w_hh, batch_first: bool) -> int:
    """The data-gradient of the constant initial state, which model FLOPs leave out."""
    return 2 * (inp[0] if batch_first else inp[1]) * prod(w_hh)


# Positional indices below follow the aten schemas (printed by `op._schema`), counted after the
# leading arguments each function names.
def _mkldnn_rnn(inp, w_ih, w_hh, *args: Any, out_shape=None, **_: Any) -> int:
    return _rnn_layer_flops(inp, w_ih, w_hh, batch_first=args[11])


def _mkldnn_rnn_backward(inp, w_ih, w_hh, *args: Any, out_shape=None, **_: Any) -> int:
    batch_first = args[18]
    return 2 * _rnn_layer_flops(inp, w_ih, w_hh, batch_first) - _h0_term(inp, w_hh, batch_first)


def _cudnn_pairs(weights, stride0: int) -> list[tuple[Any, Any]]:
    """(W_ih, W_hh) per layer and direction from cuDNN's flat weight list."""
    return [(weights[i], weights[i + 1]) for i in range(0, len(weights), stride0)]


def _cudnn_rnn(inp, weights, stride0, *args: Any, out_shape=None, **_: Any) -> int:
    return sum(_rnn_layer_flops(inp, wi, wh, args[7]) for wi, wh in _cudnn_pairs(weights, stride0))


def _cudnn_rnn_backward(inp, weights, stride0, *args: Any, out_shape=None, **_: Any) -> int:
    batch_first, mask = args[11], args[18]
    pairs = _cudnn_pairs(weights, stride0)
    fwd = sum(_rnn_layer_flops(inp, wi, wh, batch_first) for wi, wh in pairs)
    data = fwd - sum(_h0_term(inp, wh, batch_first) for _, wh in pairs)
    if not mask[0]:  # no gradient for the sequence fed in: skip layer 1's x-gradient
        t, b = (inp[1], inp[0]) if batch_first else (inp[0], inp[1])
        data -= 2 * t * b * prod(pairs[0][0])
    return data * int(any(mask)) + fwd * int(mask[3])


def _sdpa_fwd(query, key, value, *_: Any, out_shape=None, **__: Any) -> int:
    return sdpa_flop_count(query, key, value)


def _sdpa_backward(grad_out, query, key, value, *_: Any, out_shape=None, **__: Any) -> int:
    """Model FLOPs of attention backward: the four gradient matmuls (2× forward). Flash-style
    kernels also recompute QKᵀ (stock count 2.5×), math paths do not: leaving the recompute out
    makes the count the same on every device and backend (PaLM's 12·L·d·T per token)."""
    b, h, s_q, d_q = query
    return sdpa_backward_flop_count(grad_out, query, key, value) - bmm_flop(
        (b * h, s_q, d_q), (b * h, d_q, key[2])
    )


CORRECTIONS: dict[Any, Any] = {
    aten._scaled_dot_product_flash_attention_for_cpu: _sdpa_fwd,  # no stock formula: 0 on CPU
    aten._scaled_dot_product_flash_attention_for_cpu_backward: _sdpa_backward,
    aten._scaled_dot_product_flash_attention_backward: _sdpa_backward,
    aten._scaled_dot_product_efficient_attention_backward: _sdpa_backward,
    aten._scaled_dot_product_cudnn_attention_backward: _sdpa_backward,
    aten.convolution_backward: _conv_backward,
    aten.mkldnn_rnn_layer: _mkldnn_rnn,
    aten.mkldnn_rnn_layer_backward: _mkldnn_rnn_backward,
    aten._cudnn_rnn: _cudnn_rnn,
    aten._cudnn_rnn_backward: _cudnn_rnn_backward,
}


@dataclass(frozen=True)
class FlopCount:
    total: int
    by_op: dict[str, int]
    device: str


def count_train_flops(
    family: Family, cfg: Any, device: str | torch.device = "meta", precision: str = "fp32"
) -> FlopCount:
    """FLOPs of forward + loss + backward for one batch, counted on `device` (meta: no memory,
    no math; the way to count a model too large for any device)."""
    with torch.device(device):
        built = family.build(cfg, device, precision)
        x, y = built.make_batch()
    return count_step(lambda: built.loss(built.module(x), y).backward(), device)


def count_step(step: Callable[[], Any], device: str | torch.device) -> FlopCount:
    """FLOPs of one call of `step` (a training step: optimizer updates count 0).

    A run counts one extra, untimed step on its own device this way: it costs one step's
    dispatch, where counting on meta unrolls a recurrent model in Python (seconds for a
    13-layer, 90-step LSTM). The corrections make the two counts equal (tests hold them so).
    """
    counter = FlopCounterMode(display=False, custom_mapping=CORRECTIONS)
    with counter:
        step()
    by_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
    return FlopCount(int(counter.get_total_flops()), by_op, str(device))
