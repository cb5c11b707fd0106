"""The torch modules behind the zoo's image models, written to torchvision's layouts so the
parameter counts are torchvision's to the unit (kept apart: the analytic half never imports
torch)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from paradnn.zoo.images import CLASSES
from paradnn.zoo.images import RESNET50_BLOCKS as BLOCKS
from paradnn.zoo.images import RESNET50_EXPANSION as EXPANSION
from paradnn.zoo.images import RESNET50_WIDTHS as WIDTHS


def conv_bn(
    cin: int,
    cout: int,
    kernel: int | tuple[int, int],
    stride: int = 1,
    padding: int | tuple[int, int] = 0,
    *,
    groups: int = 1,
    eps: float = 1e-5,
    act: nn.Module | None = None,
) -> nn.Sequential:
    layers = [
        nn.Conv2d(cin, cout, kernel, stride, padding, groups=groups, bias=False),
        nn.BatchNorm2d(cout, eps=eps),
    ]
    return nn.Sequential(*layers, *([act] if act is not None else []))


# ---- ResNet-50 -----------------------------------------------------------------------------


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int, stride: int, downsample: bool):
        super().__init__()
        cout = width * EXPANSION
        self.body = nn.Sequential(
            conv_bn(cin, width, 1, act=nn.ReLU(inplace=True)),
            conv_bn(width, width, 3, stride, 1, act=nn.ReLU(inplace=True)),
            conv_bn(width, cout, 1),
        )
        self.downsample = conv_bn(cin, cout, 1, stride) if downsample else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.downsample(x))


class ResNet50Body(nn.Module):
    """Stem and stages; returns C3, C4, C5 (what RetinaNet's FPN reads) as a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            conv_bn(3, 64, 7, 2, 3, act=nn.ReLU(inplace=True)), nn.MaxPool2d(3, 2, 1)
        )
        cin, stages = 64, []
        for stage, (blocks, width) in enumerate(zip(BLOCKS, WIDTHS, strict=True), 1):
            layers = []
            for i in range(blocks):
                stride = 2 if stage > 1 and i == 0 else 1
                layers.append(Bottleneck(cin, width, stride, i == 0))
                cin = width * EXPANSION
            stages.append(nn.Sequential(*layers))
        self.stages = nn.ModuleList(stages)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.stem(x)
        outs = []
        for stage in self.stages:
            x = stage(x)
            outs.append(x)
        return tuple(outs[1:])


class ResNet50Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = ResNet50Body()
        self.fc = nn.Linear(2048, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c5 = self.body(x)[-1]
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(c5, 1), 1))


# ---- VGG16 ---------------------------------------------------------------------------------


class VGG16Net(nn.Module):
    def __init__(self, plan: tuple[int | str, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 3
        for v in plan:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                cin = int(v)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(4096, CLASSES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 7)
        return self.classifier(torch.flatten(x, 1))


# ---- Inception v3 --------------------------------------------------------------------------


def _bc(cin: int, cout: int, kernel, stride: int = 1, padding=0) -> nn.Sequential:
    """torchvision's BasicConv2d: conv without bias, BatchNorm (eps 0.001), ReLU."""
    return conv_bn(cin, cout, kernel, stride, padding, eps=1e-3, act=nn.ReLU(inplace=True))


class _Branches(nn.Module):
    """Runs each branch on the input and concatenates along channels."""

    def __init__(self, *branches: nn.Module) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([b(x) for b in self.branches], 1)


class _Split(nn.Module):
    """Inception E's split branch: a stem, then two convs side by side, concatenated."""

    def __init__(self, stem: nn.Module, a: nn.Module, b: nn.Module) -> None:
        super().__init__()
        self.stem, self.a, self.b = stem, a, b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        return torch.cat([self.a(x), self.b(x)], 1)


def _avg_pool_conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.AvgPool2d(3, 1, 1), _bc(cin, cout, 1))


def inception_a(cin: int, pool: int) -> _Branches:
    return _Branches(
        _bc(cin, 64, 1),
        nn.Sequential(_bc(cin, 48, 1), _bc(48, 64, 5, padding=2)),
        nn.Sequential(_bc(cin, 64, 1), _bc(64, 96, 3, padding=1), _bc(96, 96, 3, padding=1)),
        _avg_pool_conv(cin, pool),
    )


def inception_b(cin: int) -> _Branches:
    return _Branches(
        _bc(cin, 384, 3, 2),
        nn.Sequential(_bc(cin, 64, 1), _bc(64, 96, 3, padding=1), _bc(96, 96, 3, 2)),
        nn.MaxPool2d(3, 2),
    )


def inception_c(cin: int, c7: int) -> _Branches:
    return _Branches(
        _bc(cin, 192, 1),
        nn.Sequential(
            _bc(cin, c7, 1),
            _bc(c7, c7, (1, 7), padding=(0, 3)),
            _bc(c7, 192, (7, 1), padding=(3, 0)),
        ),
        nn.Sequential(
            _bc(cin, c7, 1),
            _bc(c7, c7, (7, 1), padding=(3, 0)),
            _bc(c7, c7, (1, 7), padding=(0, 3)),
            _bc(c7, c7, (7, 1), padding=(3, 0)),
            _bc(c7, 192, (1, 7), padding=(0, 3)),
        ),
        _avg_pool_conv(cin, 192),
    )


def inception_d(cin: int) -> _Branches:
    return _Branches(
        nn.Sequential(_bc(cin, 192, 1), _bc(192, 320, 3, 2)),
        nn.Sequential(
            _bc(cin, 192, 1),
            _bc(192, 192, (1, 7), padding=(0, 3)),
            _bc(192, 192, (7, 1), padding=(3, 0)),
            _bc(192, 192, 3, 2),
        ),
        nn.MaxPool2d(3, 2),
    )


def inception_e(cin: int) -> _Branches:
    def split(stem: nn.Module) -> _Split:
        return _Split(
            stem, _bc(384, 384, (1, 3), padding=(0, 1)), _bc(384, 384, (3, 1), padding=(1, 0))
        )

    return _Branches(
        _bc(cin, 320, 1),
        split(_bc(cin, 384, 1)),
        split(nn.Sequential(_bc(cin, 448, 1), _bc(448, 384, 3, padding=1))),
        _avg_pool_conv(cin, 192),
    )


class InceptionAux(nn.Module):
    def __init__(self, cin: int) -> None:
        super().__init__()
        self.conv0 = _bc(cin, 128, 1)
        self.conv1 = _bc(128, 768, 5)
        self.fc = nn.Linear(768, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(self.conv0(F.avg_pool2d(x, 5, 3)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class InceptionV3Net(nn.Module):
    """torchvision's inception_v3 (transform_input off). In training it returns (main, aux)
    when the auxiliary head is on."""

    def __init__(self, aux: bool) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            _bc(3, 32, 3, 2),
            _bc(32, 32, 3),
            _bc(32, 64, 3, padding=1),
            nn.MaxPool2d(3, 2),
            _bc(64, 80, 1),
            _bc(80, 192, 3),
            nn.MaxPool2d(3, 2),
        )
        self.mixed6 = nn.Sequential(
            inception_a(192, 32),
            inception_a(256, 64),
            inception_a(288, 64),
            inception_b(288),
            inception_c(768, 128),
            inception_c(768, 160),
            inception_c(768, 160),
            inception_c(768, 192),
        )
        self.aux = InceptionAux(768) if aux else None
        self.mixed7 = nn.Sequential(inception_d(768), inception_e(1280), inception_e(2048))
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(2048, CLASSES)

    def forward(self, x: torch.Tensor):
        x = self.mixed6(self.stem(x))
        aux = self.aux(x) if self.aux is not None and self.training else None
        x = self.mixed7(x)
        out = self.fc(self.dropout(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)))
        return out if aux is None else (out, aux)


# ---- MobileNetV2 ---------------------------------------------------------------------------


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers.append(conv_bn(cin, hidden, 1, act=nn.ReLU6(inplace=True)))
        layers += [
            conv_bn(hidden, hidden, 3, stride, 1, groups=hidden, act=nn.ReLU6(inplace=True)),
            conv_bn(hidden, cout, 1),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2Net(nn.Module):
    def __init__(self, settings: tuple[tuple[int, int, int, int], ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, 1, act=nn.ReLU6(inplace=True))]
        cin = 32
        for t, c, n, s in settings:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6(inplace=True)))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# ---- DenseNet-121 --------------------------------------------------------------------------


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int, bn_size: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin),
            nn.ReLU(inplace=True),
            nn.Conv2d(cin, bn_size * growth, 1, bias=False),
            nn.BatchNorm2d(bn_size * growth),
            nn.ReLU(inplace=True),
            nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.body(x)], 1)


class DenseNet121Net(nn.Module):
    def __init__(self, blocks: tuple[int, ...], growth: int, bn_size: int, init: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, init, 7, 2, 3, bias=False),
            nn.BatchNorm2d(init),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1),
        ]
        ch = init
        for b, n in enumerate(blocks):
            for _ in range(n):
                layers.append(DenseLayer(ch, growth, bn_size))
                ch += growth
            if b < len(blocks) - 1:
                layers += [
                    nn.BatchNorm2d(ch),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(ch, ch // 2, 1, bias=False),
                    nn.AvgPool2d(2, 2),
                ]
                ch //= 2
        layers += [nn.BatchNorm2d(ch), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(ch, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# ---- SqueezeNet 1.1 ------------------------------------------------------------------------


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, e1: int, e3: int) -> None:
        super().__init__()
        self.squeeze = nn.Conv2d(cin, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, e1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.squeeze(x), inplace=True)
        return torch.cat([F.relu(self.expand1x1(x)), F.relu(self.expand3x3(x))], 1)


class SqueezeNet11Net(nn.Module):
    def __init__(self, fires: tuple[tuple[int, int, int, int] | str, ...]) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv2d(3, 64, 3, 2), nn.ReLU(inplace=True)]
        for f in fires:
            layers.append(nn.MaxPool2d(3, 2, ceil_mode=True) if f == "M" else Fire(*f))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Dropout(0.5), nn.Conv2d(512, CLASSES, 1), nn.ReLU(inplace=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.classifier(self.features(x))
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


# ---- RetinaNet ResNet-50-FPN ---------------------------------------------------------------


class FrozenBatchNorm2d(nn.Module):
    """torchvision's FrozenBatchNorm2d: fixed statistics and affine, all buffers."""

    def __init__(self, channels: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        for name, fill in (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0)):
            self.register_buffer(name, torch.full((channels,), fill))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.view(1, -1, 1, 1).to(x.dtype) + shift.view(1, -1, 1, 1).to(x.dtype)


def _freeze_bn(module: nn.Module) -> None:
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            setattr(module, name, FrozenBatchNorm2d(child.num_features, child.eps))
        else:
            _freeze_bn(child)


class _Head(nn.Module):
    def __init__(self, outputs: int, per_anchor: int) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(4):
            layers += [nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True)]
        self.tower = nn.Sequential(*layers)
        self.out = nn.Conv2d(256, outputs, 3, padding=1)
        self.per_anchor = per_anchor

    def forward(self, levels: list[torch.Tensor]) -> torch.Tensor:
        outs = []
        for x in levels:
            y = self.out(self.tower(x))
            b, _, h, w = y.shape  # [B, A·K, H, W] → [B, H·W·A, K], torchvision's order
            y = y.view(b, -1, self.per_anchor, h, w).permute(0, 3, 4, 1, 2)
            outs.append(y.reshape(b, -1, self.per_anchor))
        return torch.cat(outs, 1)


class RetinaNetNet(nn.Module):
    def __init__(self, classes: int, anchors: int, frozen_bn: bool) -> None:
        super().__init__()
        self.body = ResNet50Body()
        if frozen_bn:
            _freeze_bn(self.body)
        self.inner = nn.ModuleList(nn.Conv2d(c, 256, 1) for c in (512, 1024, 2048))
        self.layer = nn.ModuleList(nn.Conv2d(256, 256, 3, padding=1) for _ in range(3))
        self.p6 = nn.Conv2d(256, 256, 3, 2, 1)
        self.p7 = nn.Conv2d(256, 256, 3, 2, 1)
        self.cls = _Head(anchors * classes, classes)
        self.reg = _Head(anchors * 4, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feats = self.body(x)
        last = self.inner[2](feats[2])
        levels = [self.layer[2](last)]
        for i in (1, 0):
            lateral = self.inner[i](feats[i])
            last = lateral + F.interpolate(last, size=lateral.shape[-2:], mode="nearest")
            levels.insert(0, self.layer[i](last))
        p6 = self.p6(levels[-1])
        levels += [p6, self.p7(F.relu(p6))]
        return self.cls(levels), self.reg(levels)


def retinanet_loss(out: tuple[torch.Tensor, torch.Tensor], target: tuple) -> torch.Tensor:
    """Sigmoid focal loss (α 0.25, γ 2) + smooth-L1 (β 1/9, torchvision's) on foreground
    anchors, both over the number of foreground anchors; masks instead of indexing, so the step
    never waits for the host."""
    logits, boxes = out
    onehot, box_target, fg, n_fg = target
    logits = logits.float()
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, onehot, reduction="none")
    p_t = p * onehot + (1 - p) * (1 - onehot)
    alpha = 0.25 * onehot + 0.75 * (1 - onehot)
    focal = (alpha * ce * (1 - p_t) ** 2).sum()
    box = F.smooth_l1_loss(boxes.float(), box_target, beta=1 / 9, reduction="none").sum(-1)
    return (focal + (box * fg).sum()) / n_fg
