"""The torch module behind `transformer.py` (kept apart so the analytic layer never imports
torch): nanoGPT's block layout, attention through `scaled_dot_product_attention`. One-way:
`transformer.py` imports this module in `build`; nothing here imports the analytic half."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ffn * d, bias=False)
        self.fc2 = nn.Linear(ffn * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class DecoderLM(nn.Module):
    def __init__(self, cfg: Any) -> None:
        """`cfg`: a `TransformerConfig` (vocab, length, d_model, n_heads, ffn, layers)."""
        super().__init__()
        d = cfg.d_model
        self.tok = nn.Embedding(cfg.vocab, d)
        self.pos = nn.Embedding(cfg.length, d)
        self.blocks = nn.ModuleList(Block(d, cfg.n_heads, cfg.ffn) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # tokens: [B, T]
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))
