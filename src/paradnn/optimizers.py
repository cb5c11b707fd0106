"""The optimizers, torch-free: one home for their names, hyperparameters and state.

ParaDnn's constants (reference/suites.md a.2): lr 0.1; RMSProp with decay 0.9, momentum 0.9 and
epsilon 1.0. (TensorFlow adds ε inside the square root, PyTorch outside; the arithmetic cost per
parameter is the same, which is what a throughput benchmark measures.) Adam and AdamW (issue
35: the optimizers people train with) keep PyTorch's defaults: lr 1e-3, betas (0.9, 0.999), eps
1e-8, AdamW's weight decay 0.01. The run options validate against this table, the memory model
and the simulator read its state and traffic, and the timed step (`paradnn.measure.step`) builds
the torch optimizer from it, and the JAX backend's step (`paradnn.measure.xla`, docs/jax.md) the
optax transformation of the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Optimizer:
    """What paradnn knows of one optimizer: torch's class and hyperparameters, optax's, and the
    state and memory traffic of its update (the memory model and the simulator read them)."""

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
    # The same for torch's per-parameter loop and foreach implementations, which run the update
    # as separate elementwise ops, each reading its inputs and writing its output in full (an op
    # reading one tensor twice, as addcmul_(g, g), counted once: the second read hits the cache).
    # None: as `words_per_param` (a single pass). Counted from torch.optim's _single_tensor_* and
    # _multi_tensor_* functions (torch 2.x) in `TABLE` below.
    unfused_words_per_param: int | None = None
    # The optax function and its arguments that do the same arithmetic (the JAX backend):
    # RMSProp with ε outside the square root (eps_in_sqrt=False) and zero-initialised averages,
    # as torch; SGD's momentum as optax's trace (t = g + μ·t, w -= lr·t), as torch.
    optax_function: str = "sgd"
    optax_hyperparameters: Mapping[str, Any] = field(default_factory=dict)
    # The torch.optim implementations of this class (IMPLEMENTATIONS): every one has the
    # per-parameter loop and foreach; torch 2.x has fused kernels for Adam, AdamW and SGD (CPU
    # and CUDA), none for RMSprop.
    implementations: tuple[str, ...] = ("loop", "foreach", "fused")


TABLE: Mapping[str, Optimizer] = MappingProxyType(
    {
        "rmsprop": Optimizer(
            "rmsprop",
            "RMSprop",
            MappingProxyType({"lr": 0.1, "alpha": 0.9, "momentum": 0.9, "eps": 1.0}),
            state_copies=2,
            words_per_param=7,
            # square_avg.mul_ (2) .addcmul_(g, g) (3); avg = sqrt (2) .add_(eps) (2);
            # buf.mul_ (2) .addcdiv_(g, avg) (4); param.add_(buf) (3)
            unfused_words_per_param=18,
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
            implementations=("loop", "foreach"),
        ),
        "sgd": Optimizer(
            "sgd",
            "SGD",
            MappingProxyType({"lr": 0.1}),
            optax_hyperparameters=MappingProxyType({"learning_rate": 0.1}),
        ),
        "momentum": Optimizer(
            "momentum",
            "SGD",
            MappingProxyType({"lr": 0.1, "momentum": 0.9}),
            state_copies=1,
            words_per_param=5,
            unfused_words_per_param=8,  # buf.mul_ (2) .add_(g) (3); param.add_(buf) (3)
            optax_hyperparameters=MappingProxyType({"learning_rate": 0.1, "momentum": 0.9}),
        ),
        # Adam keeps exp_avg and exp_avg_sq; a step reads w, g, both and writes w and both (7
        # words). The loop and foreach implementations also allocate temporaries (foreach:
        # sqrt(exp_avg_sq) for every parameter at once) and AdamW's decay is a separate pass
        # over w there (2 more words); fused does it all in one kernel per chunk: 7 is the floor.
        "adam": Optimizer(
            "adam",
            "Adam",
            MappingProxyType({"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8}),
            state_copies=2,
            words_per_param=7,
            # exp_avg.lerp_(g) (3); exp_avg_sq.mul_ (2) .addcmul_(g, g) (3); denom = sqrt (2)
            # / bias correction (2) .add_(eps) (2); param.addcdiv_(exp_avg, denom) (4)
            unfused_words_per_param=18,
            optax_function="adam",
            optax_hyperparameters=MappingProxyType(
                {"learning_rate": 1e-3, "b1": 0.9, "b2": 0.999, "eps": 1e-8, "eps_root": 0.0}
            ),
        ),
        # AdamW: torch decays w by lr·wd before the Adam update; optax adds wd·w (the old w) to
        # the update before scaling by -lr: the same arithmetic.
        "adamw": Optimizer(
            "adamw",
            "AdamW",
            MappingProxyType(
                {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01}
            ),
            state_copies=2,
            words_per_param=7,
            unfused_words_per_param=20,  # Adam's 18 + param.mul_(1 − lr·wd) (2)
            optax_function="adamw",
            optax_hyperparameters=MappingProxyType(
                {
                    "learning_rate": 1e-3,
                    "b1": 0.9,
                    "b2": 0.999,
                    "eps": 1e-8,
                    "eps_root": 0.0,
                    "weight_decay": 0.01,
                }
            ),
        ),
    }
)
OPTIMIZERS = tuple(TABLE)  # ("rmsprop", "sgd", "momentum", "adam", "adamw"): the default first

# How torch.optim runs the update (docs/optimizers.md): `auto` is torch's own choice, what every
# run measured before the option existed: foreach on CUDA, the per-parameter loop on a CPU
# (torch 2.13 lists no CPU foreach kernels); `loop` one parameter at a time (foreach=False);
# `foreach` multi-tensor ops over the whole list (foreach=True); `fused` one kernel per chunk
# of tensors (fused=True). The record's flags say which one ran.
IMPLEMENTATIONS = ("auto", "loop", "foreach", "fused")
FOREACH_DEVICES = ("cuda",)  # where torch's `auto` picks foreach (else the loop)


def get(name: str) -> Optimizer:
    if name not in TABLE:
        raise ValueError(f"optimizer = {name!r}: must be one of {', '.join(OPTIMIZERS)}")
    return TABLE[name]


def resolve_implementation(implementation: str, device_type: str) -> str:
    """The implementation a run uses: `auto` becomes torch's own choice on the device."""
    if implementation != "auto":
        return implementation
    return "foreach" if device_type in FOREACH_DEVICES else "loop"


def implementation_reason(name: str, implementation: str) -> str | None:
    """Why torch.optim has no such implementation of this optimizer (None: it has)."""
    s = get(name)
    if implementation == "auto" or implementation in s.implementations:
        return None
    return (
        f"torch.optim.{s.torch_class} has no {implementation} implementation "
        f"(it has {', '.join(s.implementations)})"
    )


def torch_flags(implementation: str) -> dict[str, bool]:
    """The constructor arguments that make torch.optim run a resolved implementation."""
    return {
        "loop": {"foreach": False},
        "foreach": {"foreach": True},
        "fused": {"fused": True},
    }[implementation]
