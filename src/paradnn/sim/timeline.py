"""Host and device as two timelines (issue 35, shared/reference/host-model.md).

Eager PyTorch on a GPU launches asynchronously: the host (Python, the dispatcher, autograd, the
optimizer's loop, the launch call) runs ahead of the device until it must wait, so a step takes
about max(host, device) plus the waits, not their sum. Here a step is a sequence of items —
the autocast casts, each layer's forward, each layer's backward in reverse, the optimizer — each
with its host seconds (`HostProfile`: ops, autograd nodes, optimizer tensors, kernel launches)
and its device seconds (the step-time model's terms). A simple event simulation runs them: the
host issues item i when it has done the work before it; the device starts it when the host has
issued its first kernel and the device is free, and cannot finish before the host issued its
last. A wait (GradScaler's inf check under fp16 reads a device value) holds the host until the
device is done. On a CPU the host runs the kernels itself: one timeline, the sum. On a TPU, XLA
runs a compiled step: no eager dispatch, the device alone.

The op counts per layer are assumptions about eager PyTorch modules, like the elementwise passes
(`traffic.ELEMENTWISE_PASSES`); the costs per op are the host profile's, measured by
`paradnn calibrate` or the documented defaults, scaled by ``StepParams.host_scale``. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paradnn.sim.hostprofile import HostProfile

MODES = ("async", "serial", "compiled")  # GPU, CPU, TPU
# Eager ops a layer's forward dispatches from Python, and the autograd nodes its backward runs:
# FC Linear + ReLU; CNN Conv2d + BatchNorm2d + ReLU (the residual add and pooling amortised
# here); a recurrent layer is one module call (cuDNN or oneDNN runs its cell; a CPU's decomposed
# cells are counted per time step below); attention Q·Kᵀ, scale, softmax, P·V.
FORWARD_OPS = {"gemm": 2.0, "conv2d": 3.0, "recurrent": 1.0, "attention": 4.0}
AUTOGRAD_NODES = {"gemm": 2.0, "conv2d": 3.0, "recurrent": 1.0, "attention": 4.0}
# Once a step: zero_grad, the loss (log_softmax, nll_loss) and the backward() call; the loss's
# two autograd nodes.
STEP_OPS = 4.0
STEP_NODES = 2.0
# A CPU runs a GRU or plain RNN as separate ATen ops per time step (ATen's decomposed cells: the
# hidden linear, gate additions, sigmoids/tanh, products); oneDNN fuses the LSTM (torch's
# mkldnn RNN path), as cuDNN fuses all three on a GPU. Forward ops per step, and as many nodes.
CELL_OPS_CPU = {"rnn": 3.0, "gru": 12.0, "lstm": 0.0}
# An op dispatched from C++ inside another op skips the Python module call: this share of an
# eager op (an assumption).
CPP_OP_SHARE = 0.25
# torch's multi-tensor apply: one launch covers up to this many tensors … and this many elements
# (320 blocks of 65,536), so a foreach op over a big model needs several launches.
TENSORS_PER_LAUNCH = 110
ELEMENTS_PER_LAUNCH = 320 * 65536
# GradScaler under mixed fp16: scale the loss, unscale + inf check, update the scale.
SCALER_OPS = 3.0


@dataclass(frozen=True)
class HostPlan:
    """What one step dispatches on the host, per layer (arrays in layer order) and once a step;
    `evaluate` turns it into seconds with a `HostProfile` and ``StepParams.host_scale``."""

    profile: HostProfile
    mode: str  # async (GPU), serial (CPU), compiled (TPU)
    fwd_ops: np.ndarray
    bwd_nodes: np.ndarray
    step_ops: float
    step_nodes: float
    cast_ops: float  # autocast's casts of the weights (an op forward, a node backward each)
    optimizer_impl: str  # loop | foreach | fused
    optimizer_tensors: int
    waits: int  # host syncs before the optimizer step

    def launch_s(self) -> float:
        got = self.profile.kernel_launch_s
        return 0.0 if got is None or self.mode != "async" else got


@dataclass(frozen=True)
class Items:
    """The step as items in issue order: host seconds, device seconds, kernels (≥ 1 where the
    item runs on the device), and the index before which the host waits (None: no wait)."""

    host_s: np.ndarray
    device_s: np.ndarray
    kernels: np.ndarray
    wait_before: int | None = None


@dataclass(frozen=True)
class Timelines:
    host_s: float  # the host's own work (dispatch, launches, syncs), excluding time it waits
    device_s: float  # the device's work: Σ of its kernels' time
    step_s: float  # when both have finished
    waits: int
    mode: str

    @property
    def exposed_host_s(self) -> float:
        """Seconds of the step the device spends waiting for the host (all of the host on a
        CPU, where they are one timeline)."""
        return max(0.0, self.step_s - self.device_s)

    @property
    def bound(self) -> str:
        if self.mode == "serial":
            return "serial (host + device)"
        if self.mode == "compiled":
            return "device (compiled step)"
        return "host" if self.host_s > self.device_s else "device"


def _segment(
    h0: float, d0: float, a: np.ndarray, b: np.ndarray, n: np.ndarray
) -> tuple[float, float]:
    """(host end, device end) of items issued from host time ``h0`` on a device free at ``d0``:
    item i starts at max(first kernel issued, device free) and ends no earlier than its last
    kernel issued plus that kernel's share of the item. Closed form of the max-plus recursion."""
    if not len(a):
        return h0, d0
    done = h0 + np.cumsum(a)  # host has issued all of item i
    n = np.maximum(n, 1.0)
    first = done - a + a / n
    suffix = np.cumsum(b[::-1])[::-1]  # Σ_{j ≥ i} b_j
    after = suffix - b  # Σ_{j > i} b_j
    dev = max(
        d0 + float(suffix[0]), float(np.max(first + suffix)), float(np.max(done + b / n + after))
    )
    return float(done[-1]), dev


def simulate(items: Items, mode: str, sync_s: float = 0.0) -> Timelines:
    """Run the items on two timelines (``async``), one (``serial``) or the device alone
    (``compiled``)."""
    a, b, n = items.host_s, items.device_s, items.kernels
    host, dev = float(a.sum()), float(b.sum())
    if mode == "serial":
        return Timelines(host, dev, host + dev, 0, mode)
    if mode == "compiled":
        return Timelines(host, dev, host + dev, 0, mode)
    w = items.wait_before
    if w is None:
        h, d = _segment(0.0, 0.0, a, b, n)
        return Timelines(host, dev, max(h, d), 0, mode)
    h, d = _segment(0.0, 0.0, a[:w], b[:w], n[:w])
    h = max(h, d) + sync_s  # the host reads a device value: it waits for the queue to drain
    h, d = _segment(h, d, a[w:], b[w:], n[w:])
    return Timelines(host + sync_s, dev, max(h, d), 1, mode)


def optimizer_launches(impl: str, kernels_per_tensor: float, tensors: int, params: int) -> float:
    """Kernel launches of one optimizer step: the loop launches each op per tensor; foreach one
    multi-tensor launch per op per chunk of tensors (and of elements); fused one launch per
    chunk for the whole update."""
    if impl == "loop":
        return kernels_per_tensor * tensors
    chunks = max(-(-tensors // TENSORS_PER_LAUNCH), -(-params // ELEMENTS_PER_LAUNCH), 1)
    return (1.0 if impl == "fused" else kernels_per_tensor) * chunks
