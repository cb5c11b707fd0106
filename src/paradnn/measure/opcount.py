"""FLOPs and bytes moved per aten op of one training step (reference/flops.md §5).

`OpCount` is a `TorchDispatchMode` that sees the ops FlopCounterMode sees (same decomposition
rule, same registry plus our `CORRECTIONS`), so the FLOPs it records add up to
`flops.count_step`'s total exactly. For each call it also records:

- `bytes`: compulsory traffic, the unique input storages read + the unique output storages
  written. Per storage, one call counts the largest tensor of that storage it touches, and a
  tensor counts the elements it spans (an expanded, stride-0 tensor counts its distinct
  elements, not its numel). Views, `detach` and allocations (`empty*`) move nothing: 0 bytes.
  An in-place op reads and writes its tensor (2 × its bytes).
- `roofline_flops`: the MFU FLOPs plus a small per-output-element constant for memory-bound ops
  (§5: add/mul/relu = 1, ...). Only for drawing such ops on a roofline; never in `flops`, which
  stays the model-FLOP (MFU) count: matmul/conv/RNN only, elementwise ops 0.

Aggregated by (op, input shapes, dtype). Works on any device, `meta` included (storages are told
apart by their C++ identity, not `data_ptr()`, which is 0 on meta).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import FlopCounterMode

from paradnn.measure.flops import CORRECTIONS

aten = torch.ops.aten

# Ops that move no data: metadata only, or an allocation whose contents nobody writes.
NO_TRAFFIC = {
    aten.detach,
    aten._unsafe_view,
    aten.lift_fresh,
    aten.alias,
    aten.empty,
    aten.empty_like,
    aten.empty_strided,
    aten.new_empty,
    aten.new_empty_strided,
    aten.resize_,
    aten.set_,
}

# Per-output-element FLOPs of memory-bound ops, for the roofline only (§5; fvcore-like constants).
ELEMENTWISE_FLOPS: dict[Any, int] = {
    aten.add: 1,
    aten.add_: 1,
    aten.sub: 1,
    aten.sub_: 1,
    aten.mul: 1,
    aten.mul_: 1,
    aten.div: 1,
    aten.div_: 1,
    aten.relu: 1,
    aten.relu_: 1,
    aten.threshold_backward: 1,
    aten.sqrt: 1,
    aten.neg: 1,
    aten.addcmul_: 2,
    aten.addcdiv_: 2,
    aten.tanh: 4,
    aten.tanh_backward: 2,
    aten.sigmoid: 4,
    aten.sigmoid_backward: 2,
    aten._log_softmax: 5,
    aten._log_softmax_backward_data: 3,
    aten.native_batch_norm: 7,
    aten._native_batch_norm_legit: 7,
    aten._native_batch_norm_legit_functional: 7,
    aten.native_batch_norm_backward: 9,
    aten._foreach_add_: 1,
    aten._foreach_mul_: 1,
    aten._foreach_addcmul_: 2,
    aten._foreach_addcdiv_: 2,
    aten._foreach_sqrt: 1,
    aten._foreach_div_: 1,
}

# Queries FlopCounterMode leaves alone (they return NotImplemented there too).
_SKIP = {
    aten.is_contiguous.default,
    aten.is_contiguous.memory_format,
    aten.is_strides_like_format.default,
    aten.is_non_overlapping_and_dense.default,
    aten.size.default,
    aten.sym_size.default,
    aten.stride.default,
    aten.sym_stride.default,
    aten.storage_offset.default,
    aten.sym_storage_offset.default,
    aten.numel.default,
    aten.sym_numel.default,
    aten.dim.default,
    torch.ops.prim.layout.default,
}


@dataclass
class OpStat:
    """One (op, shapes, dtype) group of one step."""

    op: str  # aten::addmm (the profiler's spelling)
    shapes: tuple[tuple[int, ...], ...]  # per schema argument, [] for non-tensors (profiler-like)
    dtype: str  # torch.float32
    calls: int = 0
    flops: int = 0  # model FLOPs (MFU): FlopCounterMode + CORRECTIONS
    roofline_flops: int = 0  # flops + per-element constants of memory-bound ops
    bytes: int = 0  # compulsory traffic: unique inputs read + outputs written


def op_name(func: Any) -> str:
    """`aten::addmm` for aten.addmm.default (the name torch.profiler prints)."""
    return func._schema.name


def _tensors(tree: Any) -> Iterator[torch.Tensor]:
    return (t for t in tree_leaves(tree) if isinstance(t, torch.Tensor))


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes a kernel must touch to read or write `t`: the elements it spans in its storage
    (at most numel; an expanded tensor spans fewer)."""
    n = t.numel()
    if n == 0:
        return 0
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride(), strict=True))
    return min(n, span) * t.element_size()


def storage_bytes(tensors: Iterator[torch.Tensor]) -> dict[int, int]:
    """Bytes per unique storage: the largest of its tensors here (a tensor read twice, or two
    views of one buffer, count once)."""
    out: dict[int, int] = {}
    for t in tensors:
        try:
            key = t.untyped_storage()._cdata
        except (NotImplementedError, RuntimeError):  # tensor subclasses without a storage
            key = id(t)
        out[key] = max(out.get(key, 0), tensor_bytes(t))
    return out


def call_bytes(func: Any, args: tuple, kwargs: dict, out: Any) -> int:
    """Unique input storages read + unique output storages written; 0 for views/allocations."""
    if func.is_view or func._overloadpacket in NO_TRAFFIC:
        return 0
    read = storage_bytes(_tensors((args, kwargs)))
    written = storage_bytes(_tensors(out))
    return sum(read.values()) + sum(written.values())


def schema_shapes(func: Any, args: tuple, kwargs: dict) -> tuple[tuple[int, ...], ...]:
    """One shape per schema argument, defaults filled in: the layout of the profiler's
    `input_shapes` (a non-tensor, or a list of tensors, is `()`)."""
    shapes = []
    for i, arg in enumerate(func._schema.arguments):
        if i < len(args):
            v = args[i]
        elif arg.name in kwargs:
            v = kwargs[arg.name]
        else:
            v = None
        shapes.append(tuple(v.shape) if isinstance(v, torch.Tensor) else ())
    return tuple(shapes)


def _dtype(args: tuple, kwargs: dict, out: Any) -> str:
    ins = list(_tensors((args, kwargs)))
    pick = next((t for t in ins if t.is_floating_point()), None)
    if pick is None:
        pick = ins[0] if ins else next(_tensors(out), None)
    return str(pick.dtype) if pick is not None else ""


class OpCount(TorchDispatchMode):
    """Record FLOPs and bytes per aten op: `with OpCount() as oc: step()`, then `oc.stats`."""

    def __init__(self) -> None:
        super().__init__()
        # FlopCounterMode's own merged registry: its formulas, our corrections, wrapped alike.
        self.registry: dict[Any, Callable] = FlopCounterMode(
            display=False, custom_mapping=CORRECTIONS
        ).flop_registry
        self.groups: dict[tuple, OpStat] = {}
        self._stack: list[int] = []  # FLOPs of the decompositions under way

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SKIP or isinstance(func, torch._ops.HigherOrderOperator):
            return NotImplemented
        # FlopCounterMode's rule: decompose where possible, so both count the same FLOPs. The
        # row is the op as dispatched (what runs, and what the profiler times without this
        # mode), with its decomposition's FLOPs.
        if func not in self.registry and func is not torch.ops.prim.device.default:
            self._stack.append(0)
            try:
                with self:
                    r = func.decompose(*args, **kwargs)
            finally:
                inner = self._stack.pop()
            if r is not NotImplemented:
                self._emit(func, args, kwargs, r, inner)
                return r
        out = func(*args, **kwargs)
        packet = func._overloadpacket
        flops = (
            int(self.registry[packet](*args, **kwargs, out_val=out))
            if packet in self.registry
            else 0
        )
        self._emit(func, args, kwargs, out, flops)
        return out

    def _emit(self, func: Any, args: tuple, kwargs: dict, out: Any, flops: int) -> None:
        if self._stack:  # inside a decomposition: its FLOPs go to the op that was dispatched
            self._stack[-1] += flops
        elif func.namespace != "profiler":  # record_function markers are no work
            self.record(func, args, kwargs, out, flops)

    def record(self, func: Any, args: tuple, kwargs: dict, out: Any, flops: int) -> None:
        packet = func._overloadpacket
        n_out = sum(t.numel() for t in _tensors(out))
        extra = ELEMENTWISE_FLOPS.get(packet, 0) * n_out
        key = (op_name(func), schema_shapes(func, args, kwargs), _dtype(args, kwargs, out))
        stat = self.groups.get(key)
        if stat is None:
            stat = self.groups[key] = OpStat(*key)
        stat.calls += 1
        stat.flops += flops
        stat.roofline_flops += flops + extra
        stat.bytes += call_bytes(func, args, kwargs, out)

    @property
    def stats(self) -> list[OpStat]:
        return list(self.groups.values())

    @property
    def total_flops(self) -> int:
        return sum(s.flops for s in self.groups.values())

    @property
    def total_bytes(self) -> int:
        return sum(s.bytes for s in self.groups.values())


def count_ops(step: Callable[[], Any]) -> list[OpStat]:
    """Per-op FLOPs and bytes of one call of `step`."""
    with OpCount() as oc:
        step()
    return oc.stats
