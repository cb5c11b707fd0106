"""sim/timeline.py pinned function by function on hand-sized inputs: a plan's host seconds in
each branch (measured figure or composed, launches held or added, recurrent calls, optimizer
fallbacks, GradScaler), the counts per layer, the two-timeline simulation against its
event-by-event recursion, the bound a step is labelled with, and the optimizer's launches."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from paradnn.sim import timeline as T
from paradnn.sim.hostprofile import HostProfile

PROFILE = HostProfile(
    forward_op_s=2.0,
    autograd_node_s=3.0,
    optimizer_tensor_s={"loop": 5.0, "foreach": 7.0},
    optimizer_step_s=11.0,
    sync_s=0.0,
    kernel_launch_s=0.5,
)


def _plan(profile=PROFILE, **kw) -> T.HostPlan:
    base = {
        "profile": profile,
        "mode": "async",
        "fwd_ops": np.array([1.0, 2.0]),
        "bwd_nodes": np.array([4.0, 1.0]),
        "step_ops": 4.0,
        "step_nodes": 2.0,
        "cast_ops": 3.0,
        "optimizer_impl": "foreach",
        "optimizer_tensors": 2,
        "waits": 0,
    }
    return T.HostPlan(**{**base, **kw})


def _hs(plan, kf=(1.0, 1.0), kb=(2.0, 0.0), cast_k=4.0, opt_k=6.0) -> T.HostSeconds:
    return T.host_seconds(plan, np.array(kf), np.array(kb), cast_k, opt_k)


# -- launches --------------------------------------------------------------------------------


def test_a_launch_costs_the_profile_s_figure_only_when_async_and_not_held():
    assert _plan().launch_s() == 0.5 and _plan().inner_launch_s() == 0.5
    held = replace(PROFILE, launches_included=True)
    assert _plan(held).launch_s() == 0.0 and _plan(held).inner_launch_s() == 0.5
    assert _plan(mode="serial").launch_s() == 0.0 and _plan(mode="serial").inner_launch_s() == 0.0
    none = replace(PROFILE, kernel_launch_s=None)
    assert _plan(none).launch_s() == 0.0 and _plan(none).inner_launch_s() == 0.0


# -- host seconds ----------------------------------------------------------------------------


def test_every_figure_composed_from_the_per_op_costs():
    h = _hs(_plan())
    # forward: ops × 2 + kernels × 0.5; backward: nodes × 3 + kernels × 0.5
    assert list(h.forward_s) == [2.5, 4.5] and list(h.backward_s) == [13.0, 3.0]
    assert h.step_s == 4 * 2.0 + 2 * 3.0
    assert h.casts_s == 3 * (2.0 + 3.0) + 4 * 0.5
    assert h.optimizer_s == 11.0 + 2 * 7.0 + 6 * 0.5


def test_measured_once_a_step_and_per_cast_figures_replace_their_composition():
    p = replace(PROFILE, step_s=100.0, cast_s=10.0)
    h = _hs(_plan(p))
    assert h.step_s == 100.0 and h.casts_s == 30.0
    assert h.optimizer_s == 0.0 + 2 * 7.0 + 6 * 0.5  # the step() call is in step_s


def test_the_optimizer_s_implementation_falls_back_to_the_loop_then_to_nothing():
    assert _hs(_plan(optimizer_impl="fused")).optimizer_s == 11.0 + 2 * 5.0 + 3.0
    bare = replace(PROFILE, optimizer_tensor_s={"foreach": 7.0})
    assert _hs(_plan(bare, optimizer_impl="fused")).optimizer_s == 11.0 + 0.0 + 3.0
    assert _hs(_plan(optimizer_tensors=0)).optimizer_s == 0.0


def test_grad_scaler_seconds_measured_or_composed():
    h = _hs(_plan(scaler=True, optimizer_tensors=0))
    assert h.optimizer_s == T.SCALER_OPS * 2.0 == 38.0
    p = replace(PROFILE, scaler_s=0.25)
    assert _hs(_plan(p, scaler=True)).optimizer_s == 11.0 + 14.0 + 3.0 + 0.25


def test_a_recurrent_call_measured_is_split_between_forward_and_backward():
    rnn = {
        "rnn_calls": np.array([0.0, 1.0]),
        "rnn_ops": np.array([0.0, 18.0]),
        "rnn_nodes": np.array([0.0, 5.0]),
    }
    composed = _hs(_plan(**rnn))
    assert list(composed.forward_s) == [2.5, 4.5 + 18 * 2.0]
    assert list(composed.backward_s) == [13.0, 3.0 + 5 * 3.0]
    p = replace(PROFILE, rnn_call_s=8.0)
    measured = _hs(_plan(p, **rnn))
    assert list(measured.forward_s) == [2.5, 8.5] and list(measured.backward_s) == [13.0, 7.0]
    # any of the three arrays missing: no recurrent call at all
    for k in rnn:
        partial = {**rnn, k: None}
        assert list(_hs(_plan(**partial)).forward_s) == [2.5, 4.5]
        assert list(_hs(_plan(p, **partial)).backward_s) == [13.0, 3.0]


def test_a_library_s_inner_launches_count_even_where_the_figures_hold_theirs():
    held = replace(PROFILE, launches_included=True)
    inner = np.array([0.0, 1.0])
    h = _hs(_plan(held, inner_launches=inner), kf=(2.0, 4.0), kb=(2.0, 6.0))
    assert list(h.forward_s) == [2.0, 4.0 + 4 * 0.5]
    assert list(h.backward_s) == [12.0, 3.0 + 6 * 0.5]
    assert h.casts_s == 15.0 and h.optimizer_s == 11.0 + 14.0  # held: no launches added
    plain = _hs(_plan(inner_launches=inner), kf=(2.0, 4.0), kb=(2.0, 6.0))
    assert list(plain.forward_s) == [3.0, 6.0] and list(plain.backward_s) == [13.0, 6.0]
    no_inner = _hs(_plan(held, inner_launches=np.zeros(2)), kf=(2.0, 4.0))
    assert list(no_inner.forward_s) == [2.0, 4.0]


def test_a_compiled_step_has_no_host_seconds():
    h = _hs(_plan(mode="compiled", scaler=True))
    assert (h.step_s, h.casts_s, h.optimizer_s) == (0.0, 0.0, 0.0)
    assert list(h.forward_s) == [0.0, 0.0] and list(h.backward_s) == [0.0, 0.0]
    assert h.forward_s is not h.backward_s


def test_a_serial_step_pays_no_launches():
    h = _hs(_plan(mode="serial"))
    assert list(h.forward_s) == [2.0, 4.0] and list(h.backward_s) == [12.0, 3.0]
    assert h.casts_s == 15.0 and h.optimizer_s == 25.0


# -- counts per layer ------------------------------------------------------------------------


def _s(kind, name="x", cell="lstm", seq=10):
    return SimpleNamespace(kind=kind, name=name, cell=cell, seq=seq)


def test_counts_of_gemm_conv_attention_and_an_unknown_kind():
    shapes = [_s("gemm"), _s("conv2d"), _s("attention"), _s("pool"), _s("gemm", "head")]
    c = T.layer_counts(shapes, cpu=False)
    assert list(c["calls"]) == [2, 5.5, 12, 2, 1]
    assert list(c["nodes"]) == [5, 6.5, 19, 5, 4]
    assert list(c["tensors"]) == [2, 3, 0, 2, 2]
    assert list(c["casts"]) == [2, 1, -2, 2, 2]
    for k in ("rnn_calls", "rnn_ops", "rnn_nodes", "inner"):
        assert list(c[k]) == [0] * 5
    assert set(c) == {
        "calls",
        "nodes",
        "tensors",
        "casts",
        "rnn_calls",
        "rnn_ops",
        "rnn_nodes",
        "inner",
    }
    assert T.layer_counts([_s("conv2d", "head")], cpu=True)["calls"][0] == 5.5  # gemm only


def test_a_recurrent_module_s_call_is_kept_apart_on_its_first_layer():
    shapes = [
        _s("recurrent", cell="lstm"),
        _s("recurrent", cell="lstm"),
        _s("gemm"),
        _s("recurrent", cell="gru"),
        _s("recurrent", cell="odd"),
    ]
    c = T.layer_counts(shapes, cpu=False)
    assert list(c["rnn_calls"]) == [1, 0, 0, 1, 0]
    assert list(c["rnn_ops"]) == [18, 0, 0, 13, 0]
    assert list(c["rnn_nodes"]) == [5, 0, 0, 5, 0]
    assert list(c["inner"]) == [1, 1, 0, 1, 1]
    # a module's first layer: the embedding's call, its two nodes and its tensor
    assert list(c["calls"]) == [1, 0, 2, 1, 0]
    assert list(c["nodes"]) == [2, 5, 5, 2, 5]
    assert list(c["tensors"]) == [5, 4, 2, 5, 4]
    assert list(c["casts"]) == [6, 6, 2, 6, 6]
    odd = T.layer_counts([_s("recurrent", cell="odd")], cpu=False)
    assert odd["rnn_ops"][0] == T.RNN_MODULE_CALLS["lstm"]


def test_a_cpu_adds_the_decomposed_cell_ops_per_time_step():
    shapes = [_s("recurrent", cell="gru", seq=8), _s("recurrent", cell="rnn", seq=4)]
    c = T.layer_counts(shapes, cpu=True)
    gru, rnn = 12.0 * 8 * 0.25, 3.0 * 4 * 0.25
    assert list(c["calls"]) == [1 + gru, rnn] and list(c["nodes"]) == [2 + gru, 5 + rnn]
    lstm = T.layer_counts([_s("recurrent", cell="lstm", seq=8)], cpu=True)
    assert list(lstm["calls"]) == [1.0] and list(lstm["nodes"]) == [2.0]
    odd = T.layer_counts([_s("recurrent", cell="odd", seq=8)], cpu=True)
    assert list(odd["calls"]) == [1.0]
    assert T.layer_counts([], cpu=True)["calls"].shape == (0,)


# -- the two timelines -----------------------------------------------------------------------


def _recursion(h0, d0, a, b, n):
    """The event-by-event definition: item i starts when its first kernel is issued and the
    device is free, and ends no earlier than its last kernel issued plus that kernel's share."""
    host, dev = h0, d0
    for ai, bi, ni in zip(a, b, n, strict=True):
        ni = max(ni, 1.0)
        first = host + ai / ni
        host += ai
        dev = max(max(first, dev) + bi, host + bi / ni)
    return host, dev


def test_a_segment_is_its_recursion():
    rng = np.random.default_rng(3)
    for _ in range(20):
        k = int(rng.integers(1, 6))
        a, b = rng.uniform(0, 2, k), rng.uniform(0, 2, k)
        n = rng.integers(0, 4, k).astype(float)
        h0, d0 = rng.uniform(0, 3, 2)
        got = T._segment(h0, d0, a, b, n)
        assert got == pytest.approx(_recursion(h0, d0, a, b, n))
    assert T._segment(1.5, 2.5, np.array([]), np.array([]), np.array([])) == (1.5, 2.5)


def test_a_segment_by_hand():
    one = np.ones(1)
    # the device is free late: the item waits for it
    assert T._segment(0.0, 10.0, np.array([2.0]), np.array([3.0]), one) == (2.0, 13.0)
    # the host issues the last kernel late: the item ends with that kernel's share after it
    got = T._segment(0.0, 0.0, np.array([4.0]), np.array([2.0]), np.array([2.0]))
    assert got == (4.0, 5.0)
    # two items, the second's start waits for the first
    got = T._segment(1.0, 0.0, np.array([1.0, 1.0]), np.array([5.0, 1.0]), np.ones(2))
    assert got == (3.0, 8.0)
    # a later item's kernel issued last sets the end
    got = T._segment(0.0, 0.0, np.array([1.0, 10.0]), np.array([1.0, 1.0]), np.ones(2))
    assert got == (11.0, 12.0)


def test_simulate_in_each_mode():
    a, b, n = np.array([1.0, 2.0]), np.array([3.0, 0.5]), np.ones(2)
    items = T.Items(a, b, n)
    s = T.simulate(items, "serial", sync_s=9.0)
    assert s == T.Timelines(3.0, 3.5, 6.5, 0, "serial") and s.bound == "serial (host + device)"
    assert s.exposed_host_s == 3.0
    c = T.simulate(items, "compiled")
    assert c == T.Timelines(3.0, 3.5, 6.5, 0, "compiled") and c.bound == "device (compiled step)"
    g = T.simulate(items, "async")
    assert g == T.Timelines(3.0, 3.5, 4.5, 0, "async") and g.bound == "device"
    assert g.exposed_host_s == 1.0


def test_a_wait_drains_the_queue_before_the_host_goes_on():
    a, b, n = np.array([1.0, 1.0, 1.0]), np.array([5.0, 0.0, 1.0]), np.ones(3)
    w = T.simulate(T.Items(a, b, n, wait_before=2), "async", sync_s=0.5)
    # host issues 0 and 1 by t=2, the device ends item 0 at 6; the read waits to 6.5,
    # issues item 2 by 7.5, the device ends it at 8.5
    assert w == T.Timelines(3.5, 6.0, 8.5, 1, "async")
    free = T.simulate(T.Items(a, b, n), "async", sync_s=0.5)
    assert free == T.Timelines(3.0, 6.0, 7.0, 0, "async")
    at0 = T.simulate(T.Items(a, b, n, wait_before=0), "async")
    assert at0 == T.Timelines(3.0, 6.0, 7.0, 1, "async")


def test_the_bound_of_an_async_step():
    host = T.Timelines(2.0, 1.0, 2.5, 0, "async")
    assert host.bound == "host" and host.exposed_host_s == 1.5
    assert T.Timelines(1.0, 1.0, 1.0, 0, "async").bound == "device"
    assert T.Timelines(1.0, 3.0, 2.0, 0, "async").exposed_host_s == 0.0


# -- optimizer launches ----------------------------------------------------------------------


def test_optimizer_launches_per_implementation():
    assert T.optimizer_launches("loop", 3.0, 250, 10**9) == 750.0
    assert T.optimizer_launches("foreach", 3.0, 110, 1000) == 3.0
    assert T.optimizer_launches("foreach", 3.0, 111, 1000) == 6.0
    assert T.optimizer_launches("foreach", 3.0, 221, 1000) == 9.0
    per = T.ELEMENTS_PER_LAUNCH
    assert T.optimizer_launches("foreach", 2.0, 1, per) == 2.0
    assert T.optimizer_launches("foreach", 2.0, 1, per + 1) == 4.0
    assert T.optimizer_launches("foreach", 2.0, 1, 5 * per) == 10.0
    assert T.optimizer_launches("fused", 3.0, 221, 1000) == 3.0
    assert T.optimizer_launches("fused", 3.0, 0, 0) == 1.0
    assert T.optimizer_launches("foreach", 3.0, 0, 0) == 3.0
