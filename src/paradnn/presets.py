"""Named sets of runs. Torch-free, so `paradnn families`/`--dry-run` can list them cheaply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from paradnn.errors import ConfigError
from paradnn.measure.timer import QUICK_POLICY, TimingPolicy


@dataclass(frozen=True)
class RunSpec:
    family: str
    config: Mapping[str, Any]
    precision: str
    optimizer: str = "rmsprop"


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    configs: Sequence[tuple[str, Mapping[str, Any]]]
    precisions: Sequence[str] = ("fp32",)
    timing: TimingPolicy = field(default_factory=TimingPolicy)

    def specs(self, precisions: Sequence[str] | None = None) -> list[RunSpec]:
        """Every config at every precision, precision-major so a partial run covers all models."""
        return [
            RunSpec(fam, cfg, p)
            for p in (precisions or self.precisions)
            for fam, cfg in self.configs
        ]


_QUICK_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("fc", {"layers": 4, "nodes": 256, "input": 2000, "output": 200, "batch": 64}),
    ("fc", {"layers": 4, "nodes": 1024, "input": 2000, "output": 1000, "batch": 128}),
    ("fc", {"layers": 8, "nodes": 512, "input": 2000, "output": 1000, "batch": 256}),
    (
        "cnn",
        {"blocks": 1, "filters": 16, "image": 64, "output": 100, "batch": 16, "block": "residual"},
    ),
    (
        "cnn",
        {
            "blocks": 1,
            "filters": 16,
            "image": 64,
            "output": 100,
            "batch": 16,
            "block": "bottleneck",
        },
    ),
    ("rnn", {"layers": 1, "embed": 100, "length": 10, "vocab": 32, "batch": 64, "cell": "rnn"}),
    ("rnn", {"layers": 2, "embed": 100, "length": 10, "vocab": 32, "batch": 64, "cell": "lstm"}),
    ("rnn", {"layers": 2, "embed": 100, "length": 10, "vocab": 32, "batch": 64, "cell": "gru"}),
]

PRESETS: dict[str, Preset] = {
    "quick": Preset(
        "quick",
        "8 small paper-shaped models (3 FC, residual + bottleneck CNN, RNN/LSTM/GRU) in fp32 "
        "and bf16; about 1–3 minutes on a 2-core CPU",
        _QUICK_CONFIGS,
        ("fp32", "bf16"),
        QUICK_POLICY,
    ),
}


def get(name: str) -> Preset:
    if name not in PRESETS:
        raise ConfigError("preset", name, "must be one of " + ", ".join(PRESETS))
    return PRESETS[name]
