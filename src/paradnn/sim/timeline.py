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

The counts per layer (torch calls, autograd nodes, parameter tensors, autocast casts) are those
PyTorch's own modules make for the families' layers, counted on PyTorch (`LAYER_COUNTS`; the
tests hold them against a TorchFunctionMode count, a walk of the autograd graph and a dispatch
count of the casts); the costs per unit are the host profile's, measured by `paradnn calibrate`
or the documented defaults, scaled by ``StepParams.host_scale``. Where the profile has the
once-a-step, per-cast, per-recurrent-call and GradScaler figures (issue 42) they are used as
measured; where it has not, they are composed from its per-op figures. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from paradnn.sim.hostprofile import HostProfile

MODES = ("async", "serial", "compiled")  # GPU, CPU, TPU


@dataclass(frozen=True)
class Counts:
    """What one layer dispatches on the host in a training step: forward torch calls made from
    Python, autograd nodes its backward runs (AccumulateGrad included), parameter tensors, and
    the casts autocast makes of its forward (each a copy forward and a node backward)."""

    calls: float
    nodes: float
    tensors: float
    casts: float


# Counted on PyTorch 2.13 for the families' modules (CPU; the calls and nodes are the device's
# too, the fused recurrent op aside): per shape kind, what its layer adds to a training step.
LAYER_COUNTS = {
    # Linear + ReLU: addmm and relu; AddmmBackward, TBackward, ReluBackward and two
    # AccumulateGrad; weight and bias; both cast under autocast
    "gemm": Counts(calls=2, nodes=5, tensors=2, casts=2),
    # Conv2d (no bias) + BatchNorm2d (its batch counter's add_ and the norm) + ReLU, and per conv
    # half of a basic block's residual add and final ReLU (5.5 and 6.5; a bottleneck's 5.3 and
    # 6.3); the conv weight, the norm's weight and bias; only the conv weight is cast
    "conv2d": Counts(calls=5.5, nodes=6.5, tensors=3, casts=1),
    # one layer of a recurrent module: its four weight tensors (and their AccumulateGrad) and the
    # fused op's backward node (a CPU runs one oneDNN op a layer, cuDNN one for the stack); the
    # module's own calls are counted once a module (`RNN_MODULE_CALLS`)
    "recurrent": Counts(calls=0, nodes=5, tensors=4, casts=6),
    # a transformer block beyond its four Linear layers: two LayerNorms, the attention, GELU,
    # the residual adds and the head reshapes; its Linear layers have no bias (four casts
    # fewer than the gemm row says) and the attention casts two of its inputs
    "attention": Counts(calls=12, nodes=19, tensors=0, casts=-2),
}
# The head Linear has no ReLU after it: one call and one node fewer than a hidden Linear.
HEAD = Counts(calls=-1, nodes=-1, tensors=0, casts=0)
# A recurrent module (nn.LSTM/GRU/RNN, all its layers in one call): the torch calls its Python
# forward makes (the initial states, checks, the fused op) and the embedding before it (a call,
# EmbeddingBackward and its AccumulateGrad, a tensor).
RNN_MODULE_CALLS = {"lstm": 18.0, "gru": 13.0, "rnn": 13.0}
EMBEDDING = Counts(calls=1, nodes=2, tensors=1, casts=0)
# Once a step, composed when the profile has no measured ``step_s``: zero_grad, the loss
# (log_softmax, nll_loss) and the backward() call; the loss's two autograd nodes.
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
# GradScaler under mixed fp16, composed when the profile has no measured ``scaler_s``: the
# torch calls of scale, unscale_ (the foreach inf check), step's read of the inf flag and
# update, counted on PyTorch 2.13 (its fixed part; the per-tensor bookkeeping is attribute
# reads), each at the profile's ``forward_op_s``; the read is a wait for the device.
SCALER_OPS = 19.0


@dataclass(frozen=True)
class HostPlan:
    """What one step dispatches on the host, per layer (arrays in layer order) and once a step;
    `host_seconds` turns it into seconds with its `HostProfile` and ``StepParams.host_scale``.
    A recurrent module's own calls are kept apart (``rnn_*``): a profile with a measured
    ``rnn_call_s`` prices the call as measured, another composes it from its calls and nodes."""

    profile: HostProfile
    mode: str  # async (GPU), serial (CPU), compiled (TPU)
    fwd_ops: np.ndarray
    bwd_nodes: np.ndarray
    step_ops: float
    step_nodes: float
    cast_ops: float  # autocast's casts (a copy forward, a node backward each)
    optimizer_impl: str  # loop | foreach | fused
    optimizer_tensors: int
    waits: int  # host syncs before the optimizer step
    rnn_calls: np.ndarray | None = None  # 1 where a recurrent module's call starts
    rnn_ops: np.ndarray | None = None  # that call's torch calls, composed
    rnn_nodes: np.ndarray | None = None  # and its first layer's nodes, composed
    scaler: bool = False  # mixed fp16: a GradScaler around the backward and the step
    # 1 where a layer's kernels are launched from inside a library call, one or more a time
    # step (cuDNN's RNN): their launches count even where the per-op figures hold their own
    inner_launches: np.ndarray | None = None

    def launch_s(self) -> float:
        """Seconds per kernel launch the host items add: none on a CPU or a TPU, and none for a
        profile whose per-op figures were measured on the launching device (they hold theirs)."""
        if self.profile.launches_included:
            return 0.0
        return self.inner_launch_s()

    def inner_launch_s(self) -> float:
        """Seconds per kernel a library launches inside one call (async mode only)."""
        got = self.profile.kernel_launch_s
        return 0.0 if got is None or self.mode != "async" else got


@dataclass(frozen=True)
class HostSeconds:
    """The host seconds of a step's items (before ``host_scale``): once a step, the casts,
    each layer's forward and backward, and the optimizer (with GradScaler's work after its
    wait)."""

    step_s: float
    casts_s: float
    forward_s: np.ndarray
    backward_s: np.ndarray
    optimizer_s: float


def host_seconds(
    hp: HostPlan,
    kernels_fwd: np.ndarray,
    kernels_bwd: np.ndarray,
    cast_kernels: float,
    optimizer_kernels: float,
) -> HostSeconds:
    """The plan's host seconds with its profile: each measured once-a-step, per-cast, per-call
    or GradScaler figure where the profile has it, else composed from the per-op figures (and
    kernel launches where the profile's figures do not hold them)."""
    p, launch = hp.profile, hp.launch_s()
    zeros = np.zeros(len(hp.fwd_ops))
    if hp.mode == "compiled":  # XLA: no eager dispatch
        return HostSeconds(0.0, 0.0, zeros, zeros.copy(), 0.0)
    per_kernel = np.full(len(hp.fwd_ops), launch)
    if hp.inner_launches is not None:
        per_kernel = np.where(hp.inner_launches > 0, hp.inner_launch_s(), launch)
    fwd = hp.fwd_ops * p.forward_op_s + kernels_fwd * per_kernel
    bwd = hp.bwd_nodes * p.autograd_node_s + kernels_bwd * per_kernel
    if hp.rnn_calls is not None and hp.rnn_ops is not None and hp.rnn_nodes is not None:
        if p.rnn_call_s is not None:  # forward and backward, split evenly between the two
            fwd = fwd + hp.rnn_calls * p.rnn_call_s / 2
            bwd = bwd + hp.rnn_calls * p.rnn_call_s / 2
        else:
            fwd = fwd + hp.rnn_ops * p.forward_op_s
            bwd = bwd + hp.rnn_nodes * p.autograd_node_s
    if p.step_s is not None:
        step = p.step_s  # zero_grad, loss, backward(), step() call: measured as a whole
        opt_call = 0.0
    else:
        step = hp.step_ops * p.forward_op_s + hp.step_nodes * p.autograd_node_s
        opt_call = p.optimizer_step_s
    if p.cast_s is not None:
        casts = hp.cast_ops * p.cast_s
    else:
        casts = hp.cast_ops * (p.forward_op_s + p.autograd_node_s) + cast_kernels * launch
    opt = 0.0
    if hp.optimizer_tensors:
        per = p.optimizer_tensor_s.get(hp.optimizer_impl)
        if per is None:
            per = p.optimizer_tensor_s.get("loop", 0.0)
        opt = opt_call + hp.optimizer_tensors * per + optimizer_kernels * launch
    if hp.scaler:
        opt += p.scaler_s if p.scaler_s is not None else SCALER_OPS * p.forward_op_s
    return HostSeconds(step, casts, fwd, bwd, opt)


def layer_counts(shapes: Sequence[Any], cpu: bool) -> dict[str, np.ndarray]:
    """Per shape (a family's `shapes` list, in layer order): forward calls, backward nodes,
    parameter tensors and autocast casts (`LAYER_COUNTS`), and the recurrent modules' calls
    kept apart (``rnn_calls``: 1 where a module starts; ``rnn_ops``, ``rnn_nodes``: what that
    call is, composed; ``inner``: 1 where the library launches the layer's kernels itself).
    Consecutive recurrent layers are one module (the families build one nn.LSTM/GRU/RNN of
    ``layers`` layers), after an embedding. On a CPU a GRU or plain RNN adds ATen's decomposed
    cell ops per time step (`CELL_OPS_CPU`)."""
    n = len(shapes)
    out = {
        k: np.zeros(n)
        for k in (
            "calls",
            "nodes",
            "tensors",
            "casts",
            "rnn_calls",
            "rnn_ops",
            "rnn_nodes",
            "inner",
        )
    }
    prev = None
    for i, s in enumerate(shapes):
        c = LAYER_COUNTS.get(s.kind, LAYER_COUNTS["gemm"])
        calls, nodes, tensors, casts = c.calls, c.nodes, c.tensors, c.casts
        if s.kind == "gemm" and s.name == "head":
            calls, nodes = calls + HEAD.calls, nodes + HEAD.nodes
        if s.kind == "recurrent":
            out["inner"][i] = 1.0
            if prev != "recurrent":  # a module starts: its call, after the embedding
                out["rnn_calls"][i] = 1.0
                out["rnn_ops"][i] = RNN_MODULE_CALLS.get(s.cell, RNN_MODULE_CALLS["lstm"])
                out["rnn_nodes"][i] = nodes
                nodes = 0.0
                calls, nodes = calls + EMBEDDING.calls, nodes + EMBEDDING.nodes
                tensors += EMBEDDING.tensors
            if cpu:  # ATen's decomposed cell, op by op per time step
                cell = CELL_OPS_CPU.get(s.cell, 0.0) * s.seq * CPP_OP_SHARE
                calls, nodes = calls + cell, nodes + cell
        prev = s.kind
        for k, v in (("calls", calls), ("nodes", nodes), ("tensors", tensors), ("casts", casts)):
            out[k][i] = v
    return out


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
