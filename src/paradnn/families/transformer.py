"""A parameterized decoder-only Transformer language model (GPT-2/nanoGPT layout).

Token embedding (tied to the LM head) + learned positions → `layers` pre-norm blocks
(LayerNorm → causal self-attention through `scaled_dot_product_attention` → residual;
LayerNorm → Linear(d, ffn·d) → GELU → Linear(ffn·d, d) → residual) → LayerNorm → LM head.
Linear layers have no bias, LayerNorms do. Next-token cross-entropy over `length` tokens.

ParaDnn has no attention family; this one follows its recipe (a space of hyperparameters, all
analytic) for today's dominant architecture.

FLOPs (reference/flops.md §7): a training step is 6·N + 12·L·d·T FLOPs per token (PaLM App. B,
nanoGPT's `estimate_mfu`), N = the matmul parameters (the blocks' linear layers and the tied
embedding as LM head; positions, LayerNorms excluded), with the full T×T attention square
counted though the mask is causal. paradnn's counter holds attention backward at 2× forward on
every backend (flash kernels' QKᵀ recompute is not a model FLOP), so `train_flops` equals the
count exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.errors import ConfigError
from paradnn.families.base import (
    AUTOCAST,
    ActivationMemory,
    Built,
    Family,
    activation_itemsize,
    cross_entropy_saved_bytes,
)
from paradnn.families.shapes import Gemm, Shape
from paradnn.space import geometric
from paradnn.validate import limits


@dataclass(frozen=True)
class Attention(Gemm):
    """Scaled dot-product attention of `m` = batch·heads·query rows against `n` keys, head
    width `k`: QKᵀ and the product with V, 2·m·n·k FLOPs each. No weights; backward is 2×
    forward (the four gradient matmuls), the model-FLOP convention the counter keeps."""

    kind: str = "attention"

    def fwd_flops(self) -> int:
        return 4 * self.m * self.n * self.k

    def train_flops(self) -> int:
        return 3 * self.fwd_flops()

    @property
    def weights(self) -> int:
        return 0


@dataclass(frozen=True)
class TransformerConfig:
    layers: int = 12
    d_model: int = 768
    heads: int = 0  # 0: d_model / 64 (64-wide heads) when 64 divides d_model, else 1
    ffn: int = 4  # feed-forward width as a multiple of d_model
    length: int = 1024
    vocab: int = 50304
    batch: int = 8

    # (low, high) per field, docs/limits.md: 4× the space's deepest model, ~5× its widest,
    # 4× its longest context, 20× GPT-2's vocabulary, 4× its batch; FLOPs per step stay
    # ≤ 2.5e18 (SQLite's 64-bit INTEGER). heads must also divide d_model.
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {
        "layers": (1, 128),
        "d_model": (1, 8192),
        "heads": (0, 8192),
        "ffn": (1, 8),
        "length": (1, 8192),
        "vocab": (2, 1 << 20),
        "batch": (1, 256),
    }

    def __post_init__(self) -> None:
        limits("transformer", self, self.LIMITS)
        if self.heads and self.d_model % self.heads:
            raise ConfigError(
                "transformer.heads",
                self.heads,
                f"must divide d_model = {self.d_model} (each head gets d_model / heads), "
                "or be 0 for 64-wide heads",
            )

    @property
    def n_heads(self) -> int:
        if self.heads:
            return self.heads
        return self.d_model // 64 if self.d_model % 64 == 0 else 1


class Transformer(Family):
    name = "transformer"
    title = "Decoder-only Transformer LM (GPT-style; not in ParaDnn)"
    config_cls = TransformerConfig
    # 6.8 M parameters (2 layers of 128, the 50k embedding dominating) to 0.98 B (32 layers of
    # 1536); heads follow d_model / 64 (heads = 0), as GPT-2 and most LMs do.
    paper_space = {
        "layers": geometric(2, 32, 2),
        "d_model": (128, 256, 512, 768, 1024, 1536),
        "length": geometric(128, 2048, 2),
        "batch": geometric(8, 64, 2),
    }
    paper_fixed = {"layers": 12, "d_model": 768, "length": 1024}
    space_label = "space (paradnn's, GPT-2-like; not in the papers)"

    def matmul_params(self, cfg: TransformerConfig) -> int:
        """N of the 6·N rule: the blocks' linear layers and the (tied) embedding."""
        d = cfg.d_model
        return cfg.layers * (4 + 2 * cfg.ffn) * d * d + cfg.vocab * d

    def params(self, cfg: TransformerConfig) -> int:
        d = cfg.d_model
        layer_norms = (2 * cfg.layers + 1) * 2 * d
        return self.matmul_params(cfg) + cfg.length * d + layer_norms

    def shapes(self, cfg: TransformerConfig) -> list[Shape]:
        rows, d, h = cfg.batch * cfg.length, cfg.d_model, cfg.n_heads
        out: list[Shape] = []
        for i in range(cfg.layers):
            p = f"block{i + 1}"
            out += [
                Gemm(f"{p}.qkv", rows, 3 * d, d),
                Attention(f"{p}.attn", cfg.batch * h * cfg.length, cfg.length, d // h),
                Gemm(f"{p}.proj", rows, d, d),
                Gemm(f"{p}.fc1", rows, cfg.ffn * d, d),
                Gemm(f"{p}.fc2", rows, d, cfg.ffn * d),
            ]
        out.append(Gemm("head", rows, cfg.vocab, d))
        return out

    def flops_per_token(self, cfg: TransformerConfig) -> int:
        """PaLM's 6·N + 12·L·d·T: what `train_flops` is, divided by batch·length."""
        return 6 * self.matmul_params(cfg) + 12 * cfg.layers * cfg.d_model * cfg.length

    def _saved_bytes(self, cfg: TransformerConfig, precision: str, device_type: str) -> int:
        """What autograd saves per block, in rows = batch·length and activation size s: the two
        LayerNorms' inputs and outputs (4·d) plus fp32 mean and rstd, q, k, v and the attention
        output (4·d) plus an fp32 log-sum-exp per head (flash-style SDPA keeps no T×T matrix),
        the projection input (d), fc1's output and GELU's output (2·ffn·d). Then the tokens, the
        embedding sum, the final LayerNorm, the log-softmax and, under autocast, 16-bit copies
        of every weight matrix. An estimate not yet fitted to measurements (see docs/models.md)."""
        rows, d, s = cfg.batch * cfg.length, cfg.d_model, activation_itemsize(precision)
        per_block = rows * ((9 + 2 * cfg.ffn) * d * s + 2 * 2 * 4 + cfg.n_heads * 4)
        saved = cfg.layers * per_block + (cfg.length + 1) * cfg.batch * 8
        saved += rows * 2 * d * s + 2 * rows * 4 + cross_entropy_saved_bytes(rows, cfg.vocab)
        if precision in AUTOCAST:
            saved += 2 * self.matmul_params(cfg)
        return saved

    def _floor_bytes(self, cfg: TransformerConfig, precision: str, device_type: str) -> int:
        """Certainly alive at the end of forward: the tokens, the LM head's input and the
        log-softmax (cross-entropy's fp32 output), whatever the attention kernel."""
        rows, s = cfg.batch * cfg.length, activation_itemsize(precision)
        head = rows * cfg.d_model * s + cross_entropy_saved_bytes(rows, cfg.vocab)
        return (cfg.length + 1) * cfg.batch * 8 + head

    def _cast_bytes(self, cfg: TransformerConfig, precision: str, device_type: str) -> int:
        return 0  # linear layers have no bias; their 16-bit weights are saved (above)

    def activation_memory(
        self, cfg: TransformerConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        return ActivationMemory(
            saved=self._saved_bytes(cfg, precision, device_type),
            floor=self._floor_bytes(cfg, precision, device_type),
            casts=self._cast_bytes(cfg, precision, device_type),
        )

    def build(self, cfg: TransformerConfig, device: Any, precision: str = "fp32") -> Built:
        import torch

        from paradnn.families._transformer_torch import DecoderLM

        module = DecoderLM(cfg).to(device)

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            seq = torch.randint(0, cfg.vocab, (cfg.batch, cfg.length + 1), device=device)
            return seq[:, :-1], seq[:, 1:]

        def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            flat = logits.reshape(-1, cfg.vocab)
            return torch.nn.functional.cross_entropy(flat, targets.reshape(-1))

        return Built(module, make_batch, loss)

    def build_jax(self, cfg: Any, precision: str = "fp32") -> Any:
        """The JAX model (docs/jax.md): the same layers, parameters and FLOP-carrying shapes."""
        from paradnn.families import _jax_nets

        return _jax_nets.transformer(cfg, precision)


FAMILY = Transformer()
