"""The Transformer for translation (Vaswani et al. 2017), base or big, as in both studies
(seed 000: MLPerf's Transformer, batch 4k tokens; seed 002: WMT14 En-De, 512-token sequences,
batches of 1k–4k tokens).

`torch.nn.Transformer` (post-norm, ReLU, dropout 0.1, final LayerNorms on both stacks) with one
37,000-token embedding shared by source, target and the pre-softmax projection (the WMT En-De
shared BPE vocabulary; the paper ties all three), scaled by √d, sinusoidal positions.
Parameters: the body's 44,140,544 (base) or 176,361,472 (big), exactly nn.Transformer's, plus
the embedding: 63,084,544 and 214,249,472, within 3% of the paper's 65 M and 213 M (its exact
vocabulary is not stated). Label-smoothed (0.1) cross-entropy over the target tokens.

`batch` counts sentence pairs of `length` tokens on each side: the default 8 × 512 is the
studies' 4,096-token batch, and examples/s is sentence pairs per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import Built
from paradnn.families.shapes import Gemm
from paradnn.families.transformer import Attention
from paradnn.validate import limits
from paradnn.zoo.layers import Plan, RealModel

LAYERS = 6


@dataclass(frozen=True)
class TransformerBaseConfig:
    batch: int = 8
    length: int = 512
    vocab: int = 37_000
    big: bool = False

    # docs/limits.md: 512× the studies' largest batch, 16× their 512-token sentences, 28×
    # their 37k vocabulary; ≤ 1.5e17 FLOPs per step (big) at the bounds.
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "batch": (1, 4096),
        "length": (1, 8192),
        "vocab": (2, 1 << 20),
    }

    def __post_init__(self) -> None:
        limits("transformer_base", self, self.LIMITS)
        if not isinstance(self.big, bool):
            raise ConfigError("transformer_base.big", self.big, "must be true or false")

    @property
    def dims(self) -> tuple[int, int, int]:
        """(d_model, heads, d_ff): Table 3's base and big rows."""
        return (1024, 16, 4096) if self.big else (512, 8, 2048)


class TransformerBase(RealModel):
    name = "transformer_base"
    title = "Transformer base/big, translation (seeds 000 and 002)"
    source = "nn.Transformer body 44,140,544 (big 176,361,472) + shared 37k embedding"
    config_cls = TransformerBaseConfig
    paper_space = {"batch": (2, 4, 8)}

    def plan(self, cfg: TransformerBaseConfig) -> Plan:
        plan, (d, h, ff) = Plan(cfg.batch), cfg.dims
        rows, t = cfg.batch * cfg.length, cfg.length
        plan.params += cfg.vocab * d  # shared embedding; its matmul is the output projection
        plan.buffers += cfg.length * d * 4  # the sinusoidal position table

        def attention(p: str, kv: str | None) -> None:
            if kv is None:
                plan.shapes.append(Gemm(f"{p}.in_proj", rows, 3 * d, d))
            else:
                plan.shapes += [
                    Gemm(f"{p}.q_proj", rows, d, d),
                    Gemm(f"{p}.kv_proj", rows, 2 * d, d),
                ]
            plan.shapes += [
                Attention(f"{p}.sdpa", cfg.batch * h * t, t, d // h),
                Gemm(f"{p}.out_proj", rows, d, d),
            ]
            plan.params += 4 * d * d + 4 * d

        def feed_forward(p: str) -> None:
            plan.linear(f"{p}.linear1", rows, d, ff)
            plan.linear(f"{p}.linear2", rows, ff, d)

        for i in range(LAYERS):
            attention(f"encoder{i + 1}.self_attn", None)
            feed_forward(f"encoder{i + 1}")
            plan.params += 2 * 2 * d  # two LayerNorms
        plan.params += 2 * d  # the encoder's final LayerNorm
        for i in range(LAYERS):
            attention(f"decoder{i + 1}.self_attn", None)
            attention(f"decoder{i + 1}.cross_attn", "memory")
            feed_forward(f"decoder{i + 1}")
            plan.params += 3 * 2 * d
        plan.params += 2 * d
        plan.shapes.append(Gemm("generator", rows, cfg.vocab, d))  # tied: no new parameters
        return plan

    def examples_per_step(self, cfg: TransformerBaseConfig) -> int:
        return cfg.batch

    def build(self, cfg: TransformerBaseConfig, device: Any, precision: str = "fp32") -> Built:
        import torch
        from torch.nn.functional import cross_entropy

        from paradnn.zoo._sequence_torch import Seq2SeqTransformer

        d, h, ff = cfg.dims
        module = Seq2SeqTransformer(cfg.vocab, d, h, ff, LAYERS, cfg.length).to(device)

        def make_batch() -> tuple[tuple[torch.Tensor, torch.Tensor], torch.Tensor]:
            src = torch.randint(0, cfg.vocab, (cfg.batch, cfg.length), device=device)
            tgt = torch.randint(0, cfg.vocab, (cfg.batch, cfg.length + 1), device=device)
            return (src, tgt[:, :-1]), tgt[:, 1:]

        def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            flat = logits.reshape(-1, cfg.vocab)
            return cross_entropy(flat, targets.reshape(-1), label_smoothing=0.1)

        return Built(module, make_batch, loss)


FAMILY = TransformerBase()
