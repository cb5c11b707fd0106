"""The torch modules behind `cnn.py` (kept apart so the analytic layer never imports torch).

One-way: `cnn.py` imports this module in `build` and passes what it needs (the config and the
groups' widths and strides); nothing here imports the analytic half."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn


def _conv_bn(cin: int, cout: int, k: int, stride: int, zero_gamma: bool = False) -> nn.Sequential:
    bn = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
    if zero_gamma:
        nn.init.zeros_(bn.weight)
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), bn)


class Block(nn.Module):
    def __init__(self, cin: int, width: int, stride: int, bottleneck: bool, project: bool):
        super().__init__()
        cout = width * (4 if bottleneck else 1)
        if bottleneck:
            self.body = nn.Sequential(
                _conv_bn(cin, width, 1, 1),
                nn.ReLU(inplace=True),
                _conv_bn(width, width, 3, stride),
                nn.ReLU(inplace=True),
                _conv_bn(width, cout, 1, 1, zero_gamma=True),
            )
        else:
            self.body = nn.Sequential(
                _conv_bn(cin, width, 3, stride),
                nn.ReLU(inplace=True),
                _conv_bn(width, cout, 3, 1, zero_gamma=True),
            )
        self.proj = _conv_bn(cin, cout, 1, stride) if project else nn.Identity()
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.body(x) + self.proj(x))


class ResNetV1(nn.Module):
    def __init__(self, cfg: Any, group_width: Sequence[int], group_stride: Sequence[int]):
        """`cfg`: a `CNNConfig` (filters, blocks, block, expansion, features, output)."""
        super().__init__()
        self.stem = nn.Sequential(
            _conv_bn(3, cfg.filters, 7, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        )
        layers: list[nn.Module] = []
        cin = cfg.filters
        bottleneck = cfg.block == "bottleneck"
        for mult, stride in zip(group_width, group_stride, strict=True):
            width = cfg.filters * mult
            for i in range(cfg.blocks):
                layers.append(Block(cin, width, stride if i == 0 else 1, bottleneck, i == 0))
                cin = width * cfg.expansion
        self.groups = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(cfg.features, cfg.output)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.groups(self.stem(x))
        return self.head(torch.flatten(self.pool(x), 1))
