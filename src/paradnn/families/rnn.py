"""ParaDnn recurrent models: Embedding → `layers` stacked RNN/LSTM/GRU cells → Linear(vocab).

Hidden size equals the embedding size, as in ParaDnn. The loss is next-token cross-entropy over
sequences of `length` tokens. Unlike the original (whose cell type was hard-coded to a basic
RNN and whose 16-bit runs silently ran fp32, reference/suites.md a.4), cell and precision are
real axes here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paradnn.families.base import Built, Family
from paradnn.families.shapes import GATES, Cell, Gemm, Recurrent, Shape
from paradnn.space import arithmetic, geometric
from paradnn.validate import int_at_least, one_of


@dataclass(frozen=True)
class RNNConfig:
    layers: int = 1
    embed: int = 100
    length: int = 10
    vocab: int = 32
    batch: int = 64
    cell: Cell = "lstm"

    def __post_init__(self) -> None:
        int_at_least("rnn.layers", self.layers, 1)
        int_at_least("rnn.embed", self.embed, 1)
        int_at_least("rnn.length", self.length, 1)
        int_at_least("rnn.vocab", self.vocab, 2)
        int_at_least("rnn.batch", self.batch, 1)
        one_of("rnn.cell", self.cell, tuple(GATES))


class RNN(Family):
    name = "rnn"
    title = "Recurrent LM: RNN/LSTM/GRU (ParaDnn)"
    config_cls = RNNConfig
    paper_space = {
        "layers": arithmetic(1, 13, 4),
        "embed": arithmetic(100, 900, 400),
        "length": arithmetic(10, 90, 40),
        "vocab": geometric(2, 1024, 4),
        "batch": geometric(16, 1024, 4),
        "cell": ("rnn", "lstm", "gru"),
    }
    paper_fixed = {"layers": 9, "vocab": 32, "length": 50}

    def params(self, cfg: RNNConfig) -> int:
        e, g = cfg.embed, GATES[cfg.cell]
        per_layer = g * e * (e + e) + 2 * g * e  # W_ih, W_hh, b_ih, b_hh
        return cfg.vocab * e + cfg.layers * per_layer + e * cfg.vocab + cfg.vocab

    def shapes(self, cfg: RNNConfig) -> list[Shape]:
        e = cfg.embed
        layers: list[Shape] = [
            Recurrent(f"{cfg.cell}{i + 1}", cfg.cell, cfg.batch, cfg.length, e, e)
            for i in range(cfg.layers)
        ]
        return [*layers, Gemm("head", cfg.batch * cfg.length, cfg.vocab, e)]

    def build(self, cfg: RNNConfig, device: Any, precision: str = "fp32") -> Built:
        import torch
        from torch import nn

        class RecurrentLM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                cls = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[cfg.cell]
                self.embed = nn.Embedding(cfg.vocab, cfg.embed)
                self.rnn = cls(cfg.embed, cfg.embed, num_layers=cfg.layers)
                self.head = nn.Linear(cfg.embed, cfg.vocab)

            def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # tokens: [T, B]
                out, _ = self.rnn(self.embed(tokens))
                return self.head(out)

        module = RecurrentLM().to(device)

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            seq = torch.randint(0, cfg.vocab, (cfg.length + 1, cfg.batch), device=device)
            return seq[:-1], seq[1:]

        def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab), targets.reshape(-1))

        return Built(module, make_batch, loss)


FAMILY = RNN()
