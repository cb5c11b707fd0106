"""Predict the memory of one training step from the configuration alone, without torch.

The sweep supervisor asks before it runs a config and records `predicted_oom` instead of running
when `fits` says no. That answer must never skip a config that would have fitted, so `fits` uses
a lower bound, not the best estimate; the estimate is stored next to the measured peak so its
error can be studied. docs/memory.md describes the model and its measured error.

What is alive when, in the step of measure/step.py (zero_grad(set_to_none) → forward → backward →
optimizer step): fp32 weights and the optimizer state stay resident; forward accumulates the
tensors autograd saves; backward frees them while it allocates the fp32 gradients; the optimizer
step runs with weights, gradients and state alive. Under the pure precision policy
(docs/optimizers.md) weights, gradients and state are 16-bit, nothing is cast, and the saved
tensors are the fp32 step's in the 16-bit type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from paradnn import families, optimizers
from paradnn.families.shapes import Conv2d, Gemm, Shape
from paradnn.optimizers import IMPLEMENTATIONS, OPTIMIZERS, resolve_implementation
from paradnn.precisions import POLICIES, PRECISIONS, effective_policy, state_itemsize
from paradnn.precisions import itemsize as activation_itemsize
from paradnn.validate import one_of

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.config import RunSpec

DEVICE_TYPES = ("cpu", "cuda")
# An allowance for the cuBLAS and cuBLASLt workspaces (PyTorch's defaults: a few MiB, 32 MiB on
# Hopper) and cuDNN's, which the caching allocator counts; not validated on a GPU yet.
CUDA_LIBRARY_BYTES = 64 * 2**20
DEFAULT_HEADROOM = 0.1


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one training step by kind. Weights (with buffers), gradients and optimizer state
    are fp32 in every precision under the mixed policy (fp32 master weights), 16-bit under the
    pure one (no master copy)."""

    weights: int
    grads: int
    optimizer_state: int
    activations: int  # saved for backward, alive at the end of forward (incl. the log-softmax)
    activations_floor: int  # the part of `activations` every implementation must keep
    peak_phase: str  # when the step peaks: "forward", "backward" or "optimizer"
    live_at_peak: int  # gradient plus saved-activation bytes alive then
    workspace: int  # transients then: gradient buffers, casts, temporaries, library workspaces
    # Convolution scratch some CPU kernels allocate and others do not: oneDNN's im2col + GEMM
    # path (chosen on AVX2-only CPUs) holds the largest conv's unfolded input in forward and
    # in backward; its direct AVX-512 kernels hold none. Outside `total`, inside `upper_bound`.
    conv_scratch: int = 0

    @property
    def resident(self) -> int:
        """Weights, gradients, optimizer state and activations, counted as if all were alive at
        once (they never are: backward frees activations as it allocates gradients)."""
        return self.weights + self.grads + self.optimizer_state + self.activations

    @property
    def total(self) -> int:
        """The best estimate of the peak."""
        return self.weights + self.optimizer_state + self.live_at_peak + self.workspace

    @property
    def upper_bound(self) -> int:
        """The estimate plus the scratch that depends on which kernel the library picks."""
        return self.total + self.conv_scratch

    @property
    def lower_bound(self) -> int:
        """Bytes certainly alive at one moment of a run. At the end of a forward pass (from the
        second step on) weights, optimizer state and the saved activations are; at the end of an
        optimizer step weights, gradients and state are. Gradients and activations are not added:
        with zero_grad(set_to_none) backward allocates the first while it frees the second."""
        certain = max(self.grads, self.activations_floor)
        return self.weights + self.optimizer_state + certain


def predict(
    family_name: str,
    cfg: Any,
    precision: str,
    optimizer: str,
    *,
    device_type: str = "cuda",
    policy: str = "mixed",
    implementation: str = "auto",
) -> MemoryEstimate:
    """Estimate one training step of `cfg` (a config of `family_name`) on a `device_type` device,
    under the precision `policy`, with the optimizer's `implementation` (auto: torch's choice).

    The device type matters only where kernel libraries differ: recurrent layers run one cuDNN
    call on CUDA but oneDNN (LSTM) or ATen's per-step loop (RNN, GRU) on CPU, and only CUDA has
    library workspaces in the allocator's count.
    """
    one_of("precision", precision, PRECISIONS)
    one_of("optimizer", optimizer, OPTIMIZERS)
    one_of("device_type", device_type, DEVICE_TYPES)
    one_of("precision_policy", policy, POLICIES)
    one_of("optimizer_impl", implementation, IMPLEMENTATIONS)
    family = families.get(family_name)
    params = family.params(cfg)
    size = state_itemsize(precision, policy)  # 4: fp32 master weights; 2: pure 16-bit
    grads = size * params
    if effective_policy(precision, policy) == "pure":
        # model.half(): the fp32 step's saved tensors in the 16-bit type (integer targets
        # and indices halve too, so the floor stays a floor), no autocast copies
        f32 = family.activation_memory(cfg, "fp32", device_type=device_type)
        activations, floor, casts, buffers = f32.saved // 2, f32.floor // 2, 0, f32.buffers // 2
    else:
        act = family.activation_memory(cfg, precision, device_type=device_type)
        activations, floor, casts, buffers = act.saved, act.floor, act.casts, act.buffers
    shapes = family.shapes(cfg)
    impl = resolve_implementation(implementation, device_type)
    phases = {  # phase: (gradients + activations alive, transients alongside)
        "forward": (activations, casts),
        "backward": _backward(shapes, activations, grads, precision, device_type),
        "optimizer": (grads, size * _optimizer_temporaries(shapes, params, optimizer, impl)),
    }
    phase = max(phases, key=lambda k: sum(phases[k]))
    live, transient = phases[phase]
    return MemoryEstimate(
        weights=size * params + buffers,
        grads=grads,
        optimizer_state=size * params * optimizers.get(optimizer).state_copies,
        activations=activations,
        activations_floor=floor,
        peak_phase=phase,
        live_at_peak=live,
        workspace=transient + (CUDA_LIBRARY_BYTES if device_type == "cuda" else 0),
        conv_scratch=_conv_scratch(shapes, precision) if device_type == "cpu" else 0,
    )


def _conv_scratch(shapes: list[Any], precision: str) -> int:
    """Two unfolded (im2col) inputs of the largest convolution: forward's and backward's."""
    cols = [
        (s.in_ch // s.groups) * s.kernel * s.kernel * s.out_h * s.out_w * s.batch
        for s in shapes
        if s.kind == "conv2d" and s.kernel > 1
    ]
    return 2 * max(cols, default=0) * activation_itemsize(precision)


def fits(
    estimate: MemoryEstimate, capacity_bytes: int, *, headroom: float = DEFAULT_HEADROOM
) -> bool:
    """False only when even `estimate.lower_bound` exceeds `capacity_bytes` by more than
    `headroom` (a fraction of the capacity).

    The lower bound counts only tensors that are certainly alive together, and the allocator
    can only add to them (block rounding, fragmentation, the CUDA context outside its count), so
    a config refused here would have run out of memory anyway; `headroom` absorbs errors of the
    bound itself, such as a PyTorch version that saves less. The best estimate is deliberately
    not used: its transient allowances are guesses, and a guess must not cost a measurement.
    """
    if headroom < 0:
        raise ValueError(
            f"headroom = {headroom!r}: must be ≥ 0, or a fitting config may be skipped"
        )
    return estimate.lower_bound <= capacity_bytes * (1 + headroom)


GiB = 2**30


@dataclass(frozen=True)
class MemoryCheck:
    """One run's predicted memory against the memory free for it: `fits` is False only when
    even the lower bound exceeds what is free (`fits`), None when the free memory is unknown.
    `bench`, `scale` and `run` judge through `check`, so they refuse (or store
    `predicted_oom`) on the same numbers with the same words."""

    estimate: MemoryEstimate | None  # None: no memory model (a model of your own)
    free_bytes: int | None  # what the run's device has free now (None: unknown)
    where: str  # "host memory", "GPU memory": whose memory `free_bytes` is
    copies: int = 1  # runs sharing that memory (ranks of one host), each needing the estimate
    headroom: float = DEFAULT_HEADROOM

    @property
    def lower_bytes(self) -> int | None:
        return None if self.estimate is None else self.copies * self.estimate.lower_bound

    @property
    def predicted_bytes(self) -> int | None:
        return None if self.estimate is None else self.copies * self.estimate.total

    @property
    def fits(self) -> bool | None:
        if self.free_bytes is None or self.lower_bytes is None:
            return None
        return self.lower_bytes <= self.free_bytes * (1 + self.headroom)

    def words(self) -> str:
        """'needs at least X GiB (predicted Y GiB) and Z GiB of host memory is free'."""
        ranks = f" for {self.copies} ranks" if self.copies > 1 else ""
        free = "unknown" if self.free_bytes is None else f"{self.free_bytes / GiB:.2f} GiB"
        if self.lower_bytes is None or self.predicted_bytes is None:
            return f"needs an unknown amount of memory and {free} of {self.where} is free"
        return (
            f"needs at least {self.lower_bytes / GiB:.2f} GiB{ranks} (predicted "
            f"{self.predicted_bytes / GiB:.2f} GiB) and {free} of {self.where} is free"
        )


def estimate(spec: RunSpec, device_type: str) -> MemoryEstimate | None:
    """One run's estimate, from its description whole: family, config, precision, optimizer,
    precision policy and optimizer implementation, on a `device_type` device. None for a
    family known only once built (a model of your own): its memory is unknown, never guessed."""
    o = spec.options
    family = families.get(spec.family)
    if not family.analytic:
        return None
    cfg = family.config(dict(spec.config))
    return predict(
        spec.family,
        cfg,
        o.precision,
        o.optimizer,
        device_type=device_type,
        policy=o.precision_policy,
        implementation=o.optimizer_impl,
    )


def check_run(spec: RunSpec, device_type: str, free_bytes: int | None, where: str) -> MemoryCheck:
    """A run, described whole, against the memory free for it on a `device_type` device: its
    `estimate` for as many copies as its ranks need (`copies`). The supervisor, `bench`,
    `scale` and the dry run judge every run through this one call."""
    o = spec.options
    ranks = copies(device_type, o.procs, o.scaling)
    est = estimate(spec, device_type)
    if est is None:
        return MemoryCheck(None, free_bytes, where, ranks)
    return check(est, free_bytes, where, copies=ranks)


def copies(device_type: str, procs: int = 1, scaling: str = "weak") -> int:
    """How many runs of a config's estimate one device's memory must hold: the N ranks of a
    CPU run share the host's memory, each running the whole config under weak scaling (under
    strong scaling one estimate of the whole config is already a lower bound of the N ranks'
    sum); a GPU rank has its own GPU."""
    if device_type == "cpu" and procs > 1 and scaling == "weak":
        return procs
    return 1


def check(
    estimate: MemoryEstimate,
    free_bytes: int | None,
    where: str,
    *,
    copies: int = 1,
    headroom: float = DEFAULT_HEADROOM,
) -> MemoryCheck:
    """Whether `copies` runs of `estimate` can fit in `free_bytes` of `where` (`fits`'s rule:
    the lower bound against what is free, with `headroom`)."""
    if headroom < 0:
        raise ValueError(
            f"headroom = {headroom!r}: must be ≥ 0, or a fitting config may be skipped"
        )
    if copies < 1:
        raise ValueError(f"copies = {copies!r}: must be ≥ 1")
    return MemoryCheck(estimate, free_bytes, where, copies, headroom)


def _backward(
    shapes: list[Shape], activations: int, grads: int, precision: str, device_type: str
) -> tuple[int, int]:
    """The backward moment with the most gradients + activations + gradient buffers alive.

    Backward runs the ops in reverse; each allocates its weight gradient and holds the gradients
    of its output and input while it runs, and releases what it saved afterwards. It starts with
    the loss: every family ends in a GEMM classifier under cross-entropy, whose backward holds
    the fp32 gradients of the log-softmax and of the logits at once. Activations are apportioned
    to the ops by the inputs they read (what most of them save) and gradients by their weights,
    so only the totals are exact: the peak's position is an approximation.
    """
    itemsize = activation_itemsize(precision)
    all_reads = sum(_reads(s) for s in shapes)
    all_weights = sum(s.weights for s in shapes)
    if not all_reads or not all_weights:
        return activations + grads, 0
    left, allocated, best = float(activations), 0.0, (0.0, 0.0)
    for i, s in enumerate(reversed(shapes)):
        allocated += grads * s.weights / all_weights
        buffers = float(_gradient_buffers(s, itemsize, device_type))
        if i == 0 and isinstance(s, Gemm):
            buffers = max(buffers, 2 * s.m * s.n * 4.0)
        if left + allocated + buffers > sum(best):
            best = (left + allocated, buffers)
        left -= activations * _reads(s) / all_reads
    return round(best[0]), round(best[1])


def _optimizer_temporaries(
    shapes: list[Shape], params: int, optimizer: str, implementation: str
) -> int:
    """Elements the optimizer step allocates besides its state. RMSProp's step allocates
    sqrt(square_avg), Adam's and AdamW's sqrt(exp_avg_sq) (the denominator): for all parameters
    at once with foreach (CUDA's default), one parameter at a time with the loop (the CPU's);
    fused kernels allocate none. SGD and momentum update in place (momentum's first step clones
    the gradient into what becomes its state)."""
    if optimizer not in ("rmsprop", "adam", "adamw") or implementation == "fused":
        return 0
    largest = max((s.weights for s in shapes), default=0)
    return params if implementation == "foreach" else largest


def _reads(s: Shape) -> int:
    """Elements of an op's activation input (a recurrent layer also reads its gates)."""
    if isinstance(s, Gemm):
        return s.m * s.k
    if isinstance(s, Conv2d):
        return s.batch * s.in_ch * s.in_h * s.in_w
    return s.seq * s.batch * (s.input + s.gates * s.hidden)


def _gradient_buffers(s: Shape, itemsize: int, device_type: str) -> int:
    """Bytes of the gradients an op's backward holds at once: its output's and, unless the input
    is data, its input's; recurrent layers also stage their weight gradients: oneDNN's LSTM in
    its own layout (two fp32 copies, measured), cuDNN in a flat buffer of the compute dtype that
    becomes the gradients themselves in fp32."""
    if isinstance(s, Gemm):
        return s.m * (s.n + (s.k if s.input_grad else 0)) * itemsize
    if isinstance(s, Conv2d):
        out = s.out_ch * s.out_h * s.out_w
        return s.batch * (out + (s.in_ch * s.in_h * s.in_w if s.input_grad else 0)) * itemsize
    staged = 0
    if device_type == "cpu" and s.cell == "lstm":
        staged = 2 * 4 * s.weights
    elif device_type == "cuda" and itemsize == 2:
        staged = 2 * s.weights
    gates = s.seq * s.batch * (s.gates * s.hidden + (s.input if s.input_grad else 0))
    return gates * itemsize + staged
