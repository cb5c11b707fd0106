"""ParaDnn recurrent models: Embedding → `layers` stacked RNN/LSTM/GRU cells → Linear(vocab).

Hidden size equals the embedding size, as in ParaDnn. The loss is next-token cross-entropy over
sequences of `length` tokens. Unlike the original (whose cell type was hard-coded to a basic
RNN and whose 16-bit runs silently ran fp32, reference/suites.md a.4), cell and precision are
real axes here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import (
    AUTOCAST,
    ActivationMemory,
    Built,
    Family,
    activation_itemsize,
    cross_entropy_saved_bytes,
)
from paradnn.families.shapes import GATES, Cell, Gemm, Recurrent, Shape
from paradnn.space import arithmetic, geometric
from paradnn.validate import limits, one_of


@dataclass(frozen=True)
class RNNConfig:
    layers: int = 1
    embed: int = 100
    length: int = 10
    vocab: int = 32
    batch: int = 64
    cell: Cell = "lstm"

    # (low, high) per field, docs/limits.md: ~5× the paper's deepest stack and 9× its widest
    # embedding, 45× its longest sequences, 1024× its vocabulary, 4× its batch; FLOPs per step
    # stay ≤ 4.4e18 (SQLite's 64-bit INTEGER).
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "layers": (1, 64),
        "embed": (1, 8192),
        "length": (1, 4096),
        "vocab": (2, 1 << 20),
        "batch": (1, 4096),
    }

    def __post_init__(self) -> None:
        limits("rnn", self, self.LIMITS)
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

    def _saved_bytes(self, cfg: RNNConfig, precision: str, device_type: str) -> int:
        """What the recurrent layers save depends on the kernel library (T steps, B batch, H
        hidden, L layers, G gates, s bytes per activation):

        - CUDA, all cells, one cuDNN call: its input, h0 (and c0) and the last layer's output,
          plus cuDNN's opaque reserve, estimated at L·T·B·H·(G + 2)·s (gate activations and two
          states per step; not validated on a GPU yet); under autocast also the flat 16-bit
          weight copy it computes with.
        - CPU LSTM, one oneDNN call per layer: each saves its input, h0, c0, output, h_T, c_T
          and the oneDNN workspace (`onednn_lstm_workspace`); under autocast also 16-bit copies
          of its four weights.
        - CPU RNN and GRU, ATen's loop over time steps. RNN saves h0, each step's tanh output
          and the stacked output. GRU per step saves the hidden-side gate block (3H), a clone of
          its new-gate slice, the new gate, a clone of the hidden update and the hidden state
          the next step's GEMM reads: 8·T·B·H elements per layer with h0 and the stacked output.
          Under autocast GRU's hidden chain stays fp32 (h0 is fp32), so each step saves its
          16-bit cast and the fp32 clone (16 bytes per B·H with the 16-bit gates), and each
          layer's output is saved as a 16-bit cast by its consumer. W_ih's 16-bit copy is
          saved, W_hh's from two steps on (the first step reads h0, which needs no gradient).

        Plus the tokens (the targets are a view of them), the embedding output (its 16-bit cast
        under autocast), the log-softmax and, under autocast, the head's 16-bit weight copy.
        """
        t, b, h, n = cfg.length, cfg.batch, cfg.embed, cfg.layers
        g, size = GATES[cfg.cell], activation_itemsize(precision)
        mixed = precision in AUTOCAST
        rnn_params = n * (2 * g * h * h + 2 * g * h)
        saved = self._common_saved_bytes(cfg, precision)
        if device_type == "cuda":
            states = 2 if cfg.cell == "lstm" else 1
            saved += states * n * b * h * size + t * b * h * size + n * t * b * h * (g + 2) * size
            return saved + (2 * rnn_params if mixed else 0)
        if cfg.cell == "lstm":
            per_layer = (t + 2) * b * h * size + onednn_lstm_workspace(t, b, h, size)
            saved += 2 * n * b * h * size + n * per_layer
            return saved + (2 * rnn_params if mixed else 0)
        if cfg.cell == "rnn":
            per_layer = (1 + 2 * t) * b * h * size  # h0, T tanh outputs, the stacked output
        elif mixed:
            per_layer = 16 * t * b * h + 2 * t * b * h
        else:
            per_layer = 8 * t * b * h * 4
        saved += n * per_layer
        if mixed:
            saved += 2 * n * g * h * h * (2 if t > 1 else 1)
        return saved

    def _floor_bytes(self, cfg: RNNConfig, precision: str, device_type: str) -> int:
        """What every implementation saves: the common tensors, h0 (and c0), the head's input
        and, under autocast, 16-bit copies of the input-side weights. Library workspaces and
        per-step intermediates are left out: a fused kernel keeps them in its own layout."""
        t, b, h, n = cfg.length, cfg.batch, cfg.embed, cfg.layers
        size = activation_itemsize(precision)
        states = 2 if cfg.cell == "lstm" else 1
        floor = self._common_saved_bytes(cfg, precision) + states * n * b * h * size
        floor += t * b * h * size
        if precision in AUTOCAST:
            floor += 2 * n * GATES[cfg.cell] * h * h
        return floor

    def _cast_bytes(self, cfg: RNNConfig, precision: str, device_type: str) -> int:
        """The head's bias and, on CPU's per-step path, the recurrent biases (and W_hh for a
        single step); cuDNN casts into its own flat copy and oneDNN saves all four weights."""
        if precision not in AUTOCAST:
            return 0
        head = 2 * cfg.vocab
        if device_type == "cuda" or cfg.cell == "lstm":
            return head
        g, h, n = GATES[cfg.cell], cfg.embed, cfg.layers
        return head + 2 * n * 2 * g * h + (2 * n * g * h * h if cfg.length == 1 else 0)

    def _common_saved_bytes(self, cfg: RNNConfig, precision: str) -> int:
        """Tokens (int64, T+1 rows: inputs and targets are views), the embedding output (or its
        16-bit cast), the log-softmax over T·B rows and, under autocast, the head's weight copy."""
        t, b, h = cfg.length, cfg.batch, cfg.embed
        common = (t + 1) * b * 8 + t * b * h * activation_itemsize(precision)
        common += cross_entropy_saved_bytes(t * b, cfg.vocab)
        return common + (2 * cfg.vocab * h if precision in AUTOCAST else 0)

    def activation_memory(
        self, cfg: RNNConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        return ActivationMemory(
            saved=self._saved_bytes(cfg, precision, device_type),
            floor=self._floor_bytes(cfg, precision, device_type),
            casts=self._cast_bytes(cfg, precision, device_type),
        )

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

    def build_jax(self, cfg: Any, precision: str = "fp32") -> Any:
        """The JAX model (docs/jax.md): the same layers, parameters and FLOP-carrying shapes."""
        from paradnn.families import _jax_nets

        return _jax_nets.rnn(cfg, precision)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def _good_ld(dim: int, itemsize: int) -> int:
    """oneDNN's leading dimension for RNN buffers: whole 64-byte lines, but never a multiple of
    256 elements (rows would alias in 4 KiB pages)."""
    ld = _round_up(dim, 64 // itemsize)
    return ld + 64 // itemsize if ld % 256 == 0 else ld


def onednn_lstm_workspace(seq: int, batch: int, hidden: int, itemsize: int) -> int:
    """Bytes of the workspace oneDNN's LSTM forward-training call (one per layer in PyTorch)
    returns for backward, for input size = hidden size.

    Seven parts, each starting on a 4 KiB page: the gate activations and h_t of every step in
    the activation dtype, then five state buffers over seq + 1 steps and two layers' worth
    (oneDNN keeps n_layer + 1), two in the activation dtype and three in fp32, some rows padded
    by `_good_ld`. Fitted to torch 2.13 (oneDNN 3.12), which it matches byte for byte on 176
    shapes in fp32 and bf16; another oneDNN version may lay the workspace out differently.
    """
    t, b, h, s = seq, batch, hidden, itemsize
    parts = (
        t * b * _good_ld(4 * h, s) * s,
        t * b * _good_ld(h, s) * s,
        2 * (t + 1) * b * h * s,
        2 * (t + 1) * b * _good_ld(h, s) * s,
        2 * (t + 1) * b * h * 4,
        2 * (t + 1) * b * _good_ld(h, 4) * 4,
        2 * (t + 1) * b * _good_ld(h, 4) * 4,
    )
    return sum(_round_up(p, 4096) for p in parts)


FAMILY = RNN()
