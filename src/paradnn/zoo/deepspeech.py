"""Deep Speech 2 (Amodei et al. 2016) as the accelerator study trained it on AN4 (seed 002,
Table 5: about 27 M parameters, 100–400 frame utterances, CTC loss), in the layout of
deepspeech.pytorch (SeanNaren), the PyTorch implementation such studies used:

- input: a 161-bin spectrogram (20 ms windows at 16 kHz) of `frames` 10 ms frames;
- two 2-D convolutions over (frequency, time): 32 filters of 41×11, stride (2, 2), then 21×11,
  stride (2, 1), each with BatchNorm and Hardtanh(0, 20): 32 × 41 features per time step;
- `layers` bidirectional GRU layers of `hidden` units whose two directions are summed, each but
  the first after a BatchNorm over its input;
- BatchNorm + Linear(hidden, 29 characters, no bias), log-softmax, CTC loss.

The seed gives no layer sizes; 3 layers of 800 (deepspeech.pytorch's hidden size) give
25,805,568 parameters, 4.4% under Table 5's 27 M (its 5-layer default would be 41.2 M).
Every utterance in a batch is `frames` long (a loader pads to the longest one), and the
synthetic transcripts are `frames` / 8 characters, so CTC's alignment always exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import Built, input_dtype
from paradnn.validate import limits
from paradnn.zoo.layers import Plan, RealModel, conv_out

FREQ = 161
CHARS = 29  # blank, 26 letters, apostrophe, space
CONV1: dict[str, Any] = {"kernel": (41, 11), "stride": (2, 2), "padding": (20, 5)}
CONV2: dict[str, Any] = {"kernel": (21, 11), "stride": (2, 1), "padding": (10, 5)}
CHANNELS = 32


def conv_sizes(frames: int) -> tuple[int, int]:
    """(frequency, time) after the two convolutions."""
    f = conv_out(conv_out(FREQ, 41, 2, 20), 21, 2, 10)
    t = conv_out(conv_out(frames, 11, 2, 5), 11, 1, 5)
    return f, t


@dataclass(frozen=True)
class DeepSpeech2Config:
    batch: int = 32
    frames: int = 400
    hidden: int = 800
    layers: int = 3

    # docs/limits.md: 128× the study's largest batch, 40× its 4-second utterances (164 s at
    # 100 frames/s), 5× its hidden width, 21× its depth; ≤ 2.5e18 FLOPs per step.
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "batch": (1, 4096),
        "frames": (8, 16_384),
        "hidden": (1, 4096),
        "layers": (1, 64),
    }

    def __post_init__(self) -> None:
        limits("deepspeech2", self, self.LIMITS)


class DeepSpeech2(RealModel):
    name = "deepspeech2"
    title = "Deep Speech 2 (speech recognition, CTC; seed 002)"
    source = "deepspeech.pytorch layout; 25,805,568 parameters at 3 × 800 (Table 5: 27 M)"
    config_cls = DeepSpeech2Config
    paper_space = {"batch": (8, 16, 32)}

    def plan(self, cfg: DeepSpeech2Config) -> Plan:
        plan = Plan(cfg.batch)
        hw = plan.conv(
            "conv1", 1, CHANNELS, (FREQ, cfg.frames), bias=True, input_grad=False, **CONV1
        )
        plan.conv("conv2", CHANNELS, CHANNELS, hw, bias=True, **CONV2)
        freq, steps = conv_sizes(cfg.frames)
        width = CHANNELS * freq
        for i in range(cfg.layers):
            if i:
                plan.batchnorm(cfg.hidden)
            for direction in ("fwd", "bwd"):
                plan.recurrent(f"gru{i + 1}.{direction}", "gru", steps, width, cfg.hidden)
            width = cfg.hidden
        plan.batchnorm(cfg.hidden)
        plan.linear("fc", steps * cfg.batch, cfg.hidden, CHARS, bias=False)
        return plan

    def build(self, cfg: DeepSpeech2Config, device: Any, precision: str = "fp32") -> Built:
        import torch

        from paradnn.zoo._sequence_torch import DeepSpeech2Net, ctc

        module = DeepSpeech2Net(
            CONV1, CONV2, CHANNELS, conv_sizes(cfg.frames)[0], cfg.hidden, cfg.layers, CHARS
        ).to(device)
        steps, b = conv_sizes(cfg.frames)[1], cfg.batch
        chars = max(1, cfg.frames // 8)

        def make_batch() -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
            x = torch.randn(b, 1, FREQ, cfg.frames, device=device, dtype=input_dtype(precision))
            targets = torch.randint(1, CHARS, (b, chars), device=device)
            full = torch.full((b,), steps, dtype=torch.long, device=device)
            return x, (targets, full, torch.full((b,), chars, dtype=torch.long, device=device))

        return Built(module, make_batch, ctc)


FAMILY = DeepSpeech2()
