"""The 2-layer LSTM language model on PTB of the accelerator study (seed 002, Table 5: 66 M
parameters, sequences of 20): PyTorch's word_language_model example in its large setting
(Zaremba et al. 2014): a 10,000-word vocabulary, 1500-wide embedding and hidden state, dropout
0.65, untied decoder. 66,034,000 parameters."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from paradnn.families.base import ActivationMemory, Built, activation_itemsize
from paradnn.families.rnn import FAMILY as RNN_FAMILY
from paradnn.validate import limits
from paradnn.zoo.layers import Plan, RealModel

VOCAB = 10_000  # PTB
WIDTH = 1500
LAYERS = 2
DROPOUT = 0.65


@dataclass(frozen=True)
class LSTMPTBConfig:
    batch: int = 64
    length: int = 20

    # docs/limits.md: the ParaDnn RNN's bounds, whose memory model this one reuses: 16× the
    # study's largest batch, 200× its 20-token sequences; ≤ 1e17 FLOPs per step.
    LIMITS: ClassVar[dict[str, tuple[int, int]]] = {"batch": (1, 4096), "length": (1, 4096)}

    def __post_init__(self) -> None:
        limits("lstm_ptb", self, self.LIMITS)


class LSTMPTB(RealModel):
    name = "lstm_ptb"
    title = "2-layer LSTM language model, PTB (seed 002)"
    source = "PyTorch examples word_language_model, --emsize 1500 --nhid 1500: 66,034,000"
    config_cls = LSTMPTBConfig
    paper_space = {"batch": (64, 128, 256)}

    def plan(self, cfg: LSTMPTBConfig) -> Plan:
        plan = Plan(cfg.batch)
        plan.params += VOCAB * WIDTH  # the embedding: a lookup, no FLOPs
        for i in range(LAYERS):
            plan.recurrent(f"lstm{i + 1}", "lstm", cfg.length, WIDTH, WIDTH)
        plan.linear("decoder", cfg.batch * cfg.length, WIDTH, VOCAB)
        return plan

    def _as_rnn(self, cfg: LSTMPTBConfig) -> Any:
        """The same network as a ParaDnn RNN config (an LSTM LM with hidden = embed), whose
        memory model is fitted to what PyTorch saves."""
        return RNN_FAMILY.config_cls(LAYERS, WIDTH, cfg.length, VOCAB, cfg.batch, "lstm")

    def activation_memory(
        self, cfg: LSTMPTBConfig, precision: str, *, device_type: str = "cuda"
    ) -> ActivationMemory:
        """The RNN family's model plus what dropout adds to `saved`: a mask per dropout (fp32
        after the embedding, whose output stays fp32 under autocast) and the two dropped copies
        read by the second layer and the decoder. On CUDA the inter-layer dropout is inside
        cuDNN."""
        s, elements = activation_itemsize(precision), cfg.length * cfg.batch * WIDTH
        per_element = 4 + 2 * s if device_type == "cuda" else 4 + 4 * s
        rnn = RNN_FAMILY.activation_memory(self._as_rnn(cfg), precision, device_type=device_type)
        return dataclasses.replace(rnn, saved=rnn.saved + per_element * elements)

    def build(self, cfg: LSTMPTBConfig, device: Any, precision: str = "fp32") -> Built:
        import torch
        from torch.nn.functional import cross_entropy

        from paradnn.zoo._sequence_torch import WordLM

        module = WordLM(VOCAB, WIDTH, LAYERS, DROPOUT).to(device)

        def make_batch() -> tuple[torch.Tensor, torch.Tensor]:
            seq = torch.randint(0, VOCAB, (cfg.length + 1, cfg.batch), device=device)
            return seq[:-1], seq[1:]

        def loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
            return cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))

        return Built(module, make_batch, loss)


FAMILY = LSTMPTB()
