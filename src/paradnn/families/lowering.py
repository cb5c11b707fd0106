"""Lowering a workload's shapes to the GEMMs a matrix unit executes, forward and backward.

A linear layer ``y[m,n] = x[m,k] @ w[k,n]`` trains as three GEMMs: forward (m, n, k), the
data-gradient ``dx = dy @ wᵀ`` (m, k, n) and the weight-gradient ``dw = xᵀ @ dy`` (k, n, m).
A convolution is the same after im2col: M = batch × output pixels, N = output channels,
K = kernel area × input channels per group (one GEMM per group). A recurrent layer runs its input
projection for all steps as one GEMM (as cuDNN and oneDNN do) and its hidden projection as one
GEMM per step; backward mirrors both. The FLOPs of the lowered list equal the shape's
`train_flops`, which the tests assert, so the simulator and the counters cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from paradnn.families.shapes import Conv2d, Gemm, Recurrent, Shape

Phase = Literal["fwd", "dgrad", "wgrad"]


@dataclass(frozen=True)
class Op:
    """``count`` repetitions of one GEMM x[m,k] @ w[k,n] of a layer in one training phase."""

    layer: str
    phase: Phase
    m: int
    n: int
    k: int
    count: int = 1
    tensor_elements: int | None = None  # per repetition; None: the GEMM's own operands

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.count

    @property
    def macs(self) -> int:
        return self.m * self.n * self.k * self.count

    def elements(self) -> int:
        """Elements read or written, each once, over all repetitions: input, weight and output
        tensors (for a convolution the real feature maps, not the im2col matrix, as implicit-GEMM
        kernels read them; on-chip reuse between ops is not assumed)."""
        own = self.m * self.k + self.k * self.n + self.m * self.n
        return (own if self.tensor_elements is None else self.tensor_elements) * self.count


def _train(
    layer: str, m: int, n: int, k: int, input_grad: bool, count: int = 1, tensors: int | None = None
) -> list[Op]:
    ops = [Op(layer, "fwd", m, n, k, count, tensors)]
    if input_grad:
        ops.append(Op(layer, "dgrad", m, k, n, count, tensors))
    ops.append(Op(layer, "wgrad", k, n, m, count, tensors))
    return ops


def lower(shape: Shape, *, train: bool = True) -> list[Op]:
    """The GEMMs of one shape: forward only, or a whole training step (the default)."""
    if isinstance(shape, Gemm) and shape.kind == "attention":
        ops = _attention(shape)
    elif isinstance(shape, Gemm):
        ops = _train(shape.name, shape.m, shape.n, shape.k, shape.input_grad)
    elif isinstance(shape, Conv2d):
        g = shape.groups
        m = shape.batch * shape.out_h * shape.out_w
        # kernel area from the weights, so rectangular kernels (Inception's 1×7) lower right
        area = shape.weights // (shape.out_ch * (shape.in_ch // g))
        n, k = shape.out_ch // g, (shape.in_ch // g) * area
        maps = shape.batch * shape.in_ch * shape.in_h * shape.in_w + shape.out_ch * m
        tensors = (maps + shape.weights) // g
        ops = _train(shape.name, m, n, k, shape.input_grad, count=g, tensors=tensors)
    elif isinstance(shape, Recurrent):
        ops = _recurrent(shape)
    else:  # pragma: no cover - the Shape union is closed
        raise TypeError(f"unknown shape {shape!r}")
    return [o for o in ops if o.phase == "fwd"] if not train else ops


def _attention(s: Gemm) -> list[Op]:
    """Weightless attention (the transformer family's `Attention`): scores Q·Kᵀ (m, n, k) and
    context P·V (m, k, n) forward; backward is two GEMMs of each shape (4× the FLOPs of one)."""
    qk, pv = f"{s.name}.qk", f"{s.name}.pv"
    return [
        Op(qk, "fwd", s.m, s.n, s.k),
        Op(pv, "fwd", s.m, s.k, s.n),
        Op(qk, "dgrad", s.m, s.n, s.k, 2),
        Op(pv, "dgrad", s.m, s.k, s.n, 2),
    ]


def _recurrent(s: Recurrent) -> list[Op]:
    gh, b, t = s.gates * s.hidden, s.batch, s.seq
    ih, hh = f"{s.name}.ih", f"{s.name}.hh"
    ops = [Op(ih, "fwd", t * b, gh, s.input), Op(hh, "fwd", b, gh, s.hidden, t)]
    if s.input_grad:
        ops.append(Op(ih, "dgrad", t * b, s.input, gh))
    if t > 1:  # h0 is a constant: no data-gradient through it at t = 0
        ops.append(Op(hh, "dgrad", b, s.hidden, gh, t - 1))
    # The hidden weight-gradient sums over steps: one GEMM over the stacked states.
    ops += [Op(ih, "wgrad", s.input, gh, t * b), Op(hh, "wgrad", s.hidden, gh, t * b)]
    return ops


def lower_all(shapes: list[Shape], *, train: bool = True) -> list[Op]:
    return [op for s in shapes for op in lower(s, train=train)]
