"""Our corrections to FlopCounterMode, checked on real (CPU) kernels."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from paradnn import families
from paradnn.measure.flops import CORRECTIONS, count_train_flops


def _count(module, x, mapping=None):
    with FlopCounterMode(display=False, custom_mapping=mapping or {}) as c:
        module(x).sum().backward()
    return c.get_total_flops()


def test_grouped_conv_backward_is_not_overcounted():
    conv = nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False)
    x = torch.randn(2, 64, 8, 8, requires_grad=True)
    fwd = 2 * 2 * 8 * 8 * 64 * 1 * 9
    assert _count(conv, x, CORRECTIONS) == 3 * fwd  # forward + dgrad + wgrad
    # ungrouped convs are counted exactly as PyTorch does
    dense = nn.Conv2d(8, 16, 3, bias=False)
    y = torch.randn(2, 8, 10, 10)
    assert _count(dense, y, CORRECTIONS) == _count(dense, y)


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_fused_cpu_rnn_counts_equal_the_meta_count(cell):
    """On CPU, LSTM runs as oneDNN's fused kernel (0 FLOPs without our formula)."""
    fam = families.get("rnn")
    cfg = fam.config(layers=3, embed=12, length=6, vocab=9, batch=5, cell=cell)
    meta = count_train_flops(fam, cfg, "meta")
    cpu = count_train_flops(fam, cfg, "cpu")
    assert cpu.total == meta.total == fam.train_flops(cfg)


def test_without_the_correction_cpu_lstm_would_count_nothing():
    lstm = nn.LSTM(8, 8)
    x = torch.randn(4, 2, 8)
    with FlopCounterMode(display=False) as c:
        lstm(x)[0].sum().backward()
    assert c.get_total_flops() == 0  # why the correction exists (oneDNN path on CPU)


def test_count_reports_ops_and_device():
    fam = families.get("cnn")
    count = count_train_flops(fam, fam.config(blocks=1, filters=4, image=32, batch=2, output=3))
    assert count.device == "meta"
    assert set(count.by_op) >= {"aten.convolution", "aten.convolution_backward"}
    assert sum(count.by_op.values()) == count.total


def test_meta_counting_handles_paper_scale_models_without_memory():
    # 128 layers of 8192 nodes is 8.6 G parameters (34 GB in fp32): on meta it costs nothing
    fam = families.get("fc")
    cfg = fam.config(layers=128, nodes=8192, input=8000, output=1000, batch=16384)
    assert count_train_flops(fam, cfg).total == fam.train_flops(cfg)
