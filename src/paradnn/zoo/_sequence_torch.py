"""The torch modules behind the zoo's sequence models (kept apart: the analytic half never
imports torch)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

# ---- 2-layer LSTM language model -----------------------------------------------------------


class WordLM(nn.Module):
    """PyTorch examples' word_language_model RNNModel (LSTM, untied): [T, B] tokens in."""

    def __init__(self, vocab: int, width: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, width, layers, dropout=dropout)
        self.decoder = nn.Linear(width, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(self.drop(self.encoder(tokens)))
        return self.decoder(self.drop(out))


# ---- Deep Speech 2 -------------------------------------------------------------------------


class BatchRNN(nn.Module):
    """deepspeech.pytorch's BatchRNN: optional BatchNorm over the input, a bidirectional GRU,
    the two directions summed."""

    def __init__(self, width: int, hidden: int, batch_norm: bool) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(width) if batch_norm else None
        self.rnn = nn.GRU(width, hidden, bidirectional=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [T, B, width]
        if self.norm is not None:
            t, b, w = x.shape
            x = self.norm(x.reshape(t * b, w)).view(t, b, w)
        x, _ = self.rnn(x)
        t, b, _ = x.shape
        return x.view(t, b, 2, -1).sum(2)


def _conv(cin: int, cout: int, spec: dict) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, spec["kernel"], spec["stride"], spec["padding"])


class DeepSpeech2Net(nn.Module):
    def __init__(
        self,
        conv1: dict,
        conv2: dict,
        channels: int,
        freq: int,
        hidden: int,
        layers: int,
        chars: int,
    ) -> None:
        super().__init__()
        self.conv = nn.Sequential(
            _conv(1, channels, conv1),
            nn.BatchNorm2d(channels),
            nn.Hardtanh(0, 20, inplace=True),
            _conv(channels, channels, conv2),
            nn.BatchNorm2d(channels),
            nn.Hardtanh(0, 20, inplace=True),
        )
        width = channels * freq
        self.rnns = nn.Sequential(
            *(BatchRNN(width if i == 0 else hidden, hidden, i > 0) for i in range(layers))
        )
        self.norm = nn.BatchNorm1d(hidden)
        self.fc = nn.Linear(hidden, chars, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [B, 1, freq, frames]
        x = self.conv(x)
        b, c, f, t = x.shape
        x = self.rnns(x.view(b, c * f, t).permute(2, 0, 1).contiguous())  # [T, B, C·F]
        t, b, h = x.shape
        return self.fc(self.norm(x.reshape(t * b, h))).view(t, b, -1)


def ctc(out: torch.Tensor, target: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """CTC over log-softmax outputs. CTC has no meta kernel (torch 2.13); on meta, where only
    FLOPs are counted, a plain sum stands in: CTC has no matmul FLOPs and its gradient has the
    same shape, so the count upstream is the same."""
    targets, input_lengths, target_lengths = target
    log_probs = F.log_softmax(out.float(), dim=-1)
    if log_probs.device.type == "meta":
        return log_probs.sum()
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, zero_infinity=True)


# ---- Transformer (translation) -------------------------------------------------------------


class Seq2SeqTransformer(nn.Module):
    """nn.Transformer with one embedding shared by source, target and the output projection."""

    def __init__(self, vocab: int, d: int, heads: int, ff: int, layers: int, length: int):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.body = nn.Transformer(d, heads, layers, layers, ff, batch_first=True)
        self.scale = math.sqrt(d)
        pos = torch.arange(length).unsqueeze(1)
        freq = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(length, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        src, tgt = batch
        t = tgt.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=tgt.device)
        x = self.embed(src) * self.scale + self.pe[: src.shape[1]]
        y = self.embed(tgt) * self.scale + self.pe[:t]
        out = self.body(x, y, tgt_mask=mask, tgt_is_causal=True)
        return F.linear(out, self.embed.weight)
