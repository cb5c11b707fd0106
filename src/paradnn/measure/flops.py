"""FLOPs of one training step, counted by PyTorch's FlopCounterMode with our corrections.

Counting runs forward + loss + backward, by default on the `meta` device: no real math, no
memory, device-independent, and recurrent layers take the decomposed path whose matmuls the
counter sees. Two corrections (reference/flops.md §2.3–2.4):
- grouped-convolution backward is over-counted by `groups` in recent releases: we count one
  forward-sized convolution per requested gradient instead;
- fused recurrent kernels (oneDNN on CPU, cuDNN on CUDA) have no formula and count 0: we add
  2·T·B·(|W_ih| + |W_hh|) per layer forward, and one forward each for the data and weight
  gradients. (The meta path skips the h0 data-gradient at t = 0, so a fused-kernel count
  exceeds the meta count by 2·B·|W_hh| per layer.)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode, conv_flop_count

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


def _mkldnn_rnn(
    inp,
    w0,
    w1,
    _w2,
    _w3,
    _hx,
    _cx,
    _reverse,
    _batch_sizes,
    _mode,
    _hidden,
    _layers,
    _has_biases,
    _bidir,
    batch_first,
    _train,
    out_shape=None,
    **_: Any,
) -> int:
    return _rnn_layer_flops(inp, w0, w1, batch_first)


def _mkldnn_rnn_backward(inp, w1, w2, *rest: Any, out_shape=None, **_: Any) -> int:
    batch_first = rest[17]  # after w3, w4, hx, cx, output, hy, cy, grad_out, grad_hy, grad_cy, …
    return 2 * _rnn_layer_flops(inp, w1, w2, batch_first)


def _cudnn_layers(inp, weights, stride0: int, batch_first: bool) -> int:
    if len(inp) != 3:  # packed sequences: total tokens is inp[0]
        return sum(
            2 * inp[0] * (prod(weights[i]) + prod(weights[i + 1]))
            for i in range(0, len(weights), stride0)
        )
    return sum(
        _rnn_layer_flops(inp, weights[i], weights[i + 1], batch_first)
        for i in range(0, len(weights), stride0)
    )


def _cudnn_rnn(
    inp,
    weight,
    weight_stride0,
    _buf,
    _hx,
    _cx,
    _mode,
    _hidden,
    _proj,
    _layers,
    batch_first,
    *_: Any,
    out_shape=None,
    **__: Any,
) -> int:
    return _cudnn_layers(inp, weight, weight_stride0, batch_first)


def _cudnn_rnn_backward(
    inp,
    weight,
    weight_stride0,
    _buf,
    _hx,
    _cx,
    _out,
    _gout,
    _ghy,
    _gcy,
    _mode,
    _hidden,
    _proj,
    _layers,
    batch_first,
    _dropout,
    _train,
    _bidir,
    _bsizes,
    _dstate,
    _reserve,
    output_mask,
    out_shape=None,
    **_: Any,
) -> int:
    fwd = _cudnn_layers(inp, weight, weight_stride0, batch_first)
    data = any(output_mask[:3]) or output_mask[3]  # weight grads need the data-gradient sweep
    return fwd * (int(data) + int(output_mask[3]))


CORRECTIONS: dict[Any, Any] = {
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
    """FLOPs of forward + loss + backward for one batch (the optimizer step counts 0)."""
    with torch.device(device):
        built = family.build(cfg, device, precision)
        x, y = built.make_batch()
    counter = FlopCounterMode(display=False, custom_mapping=CORRECTIONS)
    with counter:
        loss = built.loss(built.module(x), y)
        loss.backward()
    by_op = {str(k): int(v) for k, v in counter.get_flop_counts().get("Global", {}).items()}
    return FlopCount(int(counter.get_total_flops()), by_op, str(device))
