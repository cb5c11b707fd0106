"""The optimizers, torch-free: one home for their names, hyperparameters and state.

ParaDnn's constants (reference/suites.md a.2): lr 0.1; RMSProp with decay 0.9, momentum 0.9 and
epsilon 1.0. (TensorFlow adds ε inside the square root, PyTorch outside; the arithmetic cost per
parameter is the same, which is what a throughput benchmark measures.) The run options validate
against this table, the memory model and the simulator read its state and traffic, and the
timed step (`paradnn.measure.step`) builds the torch optimizer from it, and the JAX backend's
step (`paradnn.measure.xla`, docs/jax.md) the optax transformation of the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class OptimizerSpec:
    name: str
    torch_class: str  # the class in torch.optim
    hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    # fp32 copies of the parameters it keeps as state: RMSProp with momentum keeps square_avg
    # and momentum_buffer, momentum SGD its buffer, plain SGD nothing.
    state_copies: int = 0
    # fp32 words read + written per parameter by one step (weights, gradient, state): SGD reads
    # w, g and writes w; momentum adds a buffer read and write; RMSProp with momentum adds
    # square_avg and the momentum buffer, each read and written.
    words_per_param: int = 3
    # The optax function and its arguments that do the same arithmetic (the JAX backend):
    # RMSProp with ε outside the square root (eps_in_sqrt=False) and zero-initialised averages,
    # as torch; SGD's momentum as optax's trace (t = g + μ·t, w -= lr·t), as torch.
    optax_function: str = "sgd"
    optax_hyperparameters: Mapping[str, Any] = field(default_factory=dict)


SPECS: Mapping[str, OptimizerSpec] = MappingProxyType(
    {
        "rmsprop": OptimizerSpec(
            "rmsprop",
            "RMSprop",
            MappingProxyType({"lr": 0.1, "alpha": 0.9, "momentum": 0.9, "eps": 1.0}),
            state_copies=2,
            words_per_param=7,
            optax_function="rmsprop",
            optax_hyperparameters=MappingProxyType(
                {
                    "learning_rate": 0.1,
                    "decay": 0.9,
                    "eps": 1.0,
                    "momentum": 0.9,
                    "eps_in_sqrt": False,
                    "initial_scale": 0.0,
                }
            ),
        ),
        "sgd": OptimizerSpec(
            "sgd",
            "SGD",
            MappingProxyType({"lr": 0.1}),
            optax_hyperparameters=MappingProxyType({"learning_rate": 0.1}),
        ),
        "momentum": OptimizerSpec(
            "momentum",
            "SGD",
            MappingProxyType({"lr": 0.1, "momentum": 0.9}),
            state_copies=1,
            words_per_param=5,
            optax_hyperparameters=MappingProxyType({"learning_rate": 0.1, "momentum": 0.9}),
        ),
    }
)
OPTIMIZERS = tuple(SPECS)  # ("rmsprop", "sgd", "momentum"): the default first


def spec(name: str) -> OptimizerSpec:
    if name not in SPECS:
        raise ValueError(f"optimizer = {name!r}: must be one of {', '.join(OPTIMIZERS)}")
    return SPECS[name]
