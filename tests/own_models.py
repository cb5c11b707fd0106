"""Factories of a user's own models, for tests/test_own_model.py (imported by name, as a user's
`--model own_models:small` would be, in the test process and in paradnn's worker)."""

from __future__ import annotations

import torch
from torch import nn

from paradnn.families.user import Model

BATCH = 6


def small():
    """The tuple form: (module, make_batch); the loss defaults to cross-entropy."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    return module, lambda: (torch.randn(BATCH, 12), torch.randint(0, 5, (BATCH,)))


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 3), nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.a(x) + self.b(y)


def two_inputs():
    """The Model form, inputs a tuple (the module's arguments), a loss of its own."""
    return Model(
        TwoInputs(),
        lambda: ((torch.randn(3, 8), torch.randn(3, 4)), torch.randn(3, 3)),
        loss=nn.functional.mse_loss,
    )


def as_dict():
    module, make_batch = small()
    return {"module": module, "make_batch": make_batch}


def not_a_model():
    return "a string"


def needs_an_argument(width):
    return small()


def broken():
    raise RuntimeError("the user's own bug")


NOT_CALLABLE = 3
