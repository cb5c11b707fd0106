"""α–β all-reduce, bisection bandwidth and scaling against the reference note (§2.6) and seed
001's TPUv2 figures."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paradnn.errors import ConfigError
from paradnn.sim import chip as sim_chip
from paradnn.sim.interconnect import (
    Link,
    Topology,
    allreduce,
    bisection_bandwidth,
    bisection_links,
    default_topology,
    parse_topology,
    ring_bound_bytes,
    step_time,
)

TPU_V2_LINK = Link(496e9 / 8, 1e-6)  # 62 GB/s per link and direction
RESNET50_GRADIENTS = 25.56e6 * 4  # fp32, 102.2 MB


def test_tpu_v2_16x16_worked_example():
    ar = allreduce(RESNET50_GRADIENTS, parse_topology("torus2d:16x16"), TPU_V2_LINK)
    assert ar.bandwidth_s == pytest.approx(1.64e-3, abs=0.005e-3)
    assert ar.steps == 60
    assert ar.latency_s == pytest.approx(60e-6)
    both = allreduce(
        RESNET50_GRADIENTS, parse_topology("torus2d:16x16"), TPU_V2_LINK, concurrent=True
    )
    assert both.bandwidth_s == pytest.approx(0.82e-3, abs=0.005e-3)


def test_tpu_v3_32x32_example():
    ar = allreduce(RESNET50_GRADIENTS, Topology("torus2d", (32, 32)), Link(656e9 / 8))
    assert ar.bandwidth_s == pytest.approx(1.25e-3, abs=0.01e-3)


def test_torus_equals_a_flat_ring_in_bandwidth_and_wins_in_latency():
    n, s = 256, 1e8
    flat = allreduce(s, Topology("biring", (n,)), TPU_V2_LINK)
    torus = allreduce(s, Topology("torus2d", (16, 16)), TPU_V2_LINK)
    assert torus.bandwidth_s == pytest.approx(flat.bandwidth_s)
    assert (flat.steps, torus.steps) == (510, 60)


def test_ring_time_is_the_nccl_formula():
    n, s, b = 8, 1e9, 25e9
    ar = allreduce(s, Topology("ring", (n,)), Link(b, 2e-6))
    assert ar.bandwidth_s == pytest.approx(2 * (n - 1) / n * s / b)  # busBw factor 2(n−1)/n
    assert ar.latency_s == pytest.approx(2 * (n - 1) * 2e-6)
    bi = allreduce(s, Topology("biring", (n,)), Link(b, 2e-6))
    assert bi.bandwidth_s == pytest.approx(ar.bandwidth_s / 2)


def test_torus3d_terms():
    ar = allreduce(1.0, Topology("torus3d", (4, 4, 4)), Link(1.0, 0.0))
    expected = (2 * 3 / 4 + 2 * 3 / 4 / 4 + 2 * 3 / 4 / 16) / 2
    assert ar.bandwidth_s == pytest.approx(expected)
    assert ar.steps == 18


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(
    kind=st.sampled_from(["ring", "biring", "torus2d", "torus3d"]),
    dims=st.lists(st.integers(1, 40), min_size=3, max_size=3),
    payload=st.floats(1.0, 1e10),
)
def test_every_chip_sends_exactly_the_ring_bound(kind, dims, payload):
    n = {"ring": 1, "biring": 1, "torus2d": 2, "torus3d": 3}[kind]
    topo = Topology(kind, tuple(dims[:n]))
    ar = allreduce(payload, topo, TPU_V2_LINK)
    assert ar.bytes_sent_per_chip == pytest.approx(ring_bound_bytes(payload, topo.chips))
    assert ar.bytes_sent_per_chip < 2 * payload


def test_more_chips_never_send_fewer_bytes_per_chip():
    sent = [
        allreduce(1e8, default_topology("torus2d", n), TPU_V2_LINK).bytes_sent_per_chip
        for n in (2, 4, 8, 16, 64, 256, 1024)
    ]
    assert sent == sorted(sent)


def test_bisection_of_the_tpu_v2_pod_is_seed_001s():
    topo = parse_topology("torus2d:16x16")
    assert bisection_links(topo) == 32 and f"{bisection_links(topo)} links" == "32 links"
    assert f"{bisection_links(parse_topology('torus3d:4x4x8'))} links" == "32 links"  # 16 rings
    assert bisection_bandwidth(topo, TPU_V2_LINK) * 8 / 1e12 == pytest.approx(15.9, abs=0.05)
    assert bisection_links(Topology("ring", (8,))) == 2
    assert bisection_links(Topology("ring", (2,))) == 1
    assert bisection_links(Topology("ring", (1,))) == 0


def test_default_topology_is_nearly_square():
    assert default_topology("torus2d", 256).dims == (16, 16)
    assert default_topology("torus2d", 512).dims == (32, 16)
    assert default_topology("torus3d", 64).dims == (4, 4, 4)
    assert default_topology("ring", 6).dims == (6,)


def test_step_time_hides_only_what_backward_covers():
    ar = allreduce(1e8, Topology("ring", (4,)), Link(1e9, 0.0))  # 0.15 s
    assert step_time(1.0, 0.5, ar) == pytest.approx((1.15, 0.15))
    assert step_time(1.0, 0.5, ar, overlap=1.0) == pytest.approx((1.0, 0.0))
    assert step_time(1.0, 0.1, ar, overlap=1.0) == pytest.approx((1.05, 0.05))
    with pytest.raises(ConfigError, match="overlap"):
        step_time(1.0, 0.5, ar, overlap=1.5)


@pytest.mark.parametrize(
    "text", ["torus2d:16", "mesh:4x4", "torus2d:16x16x2", "ring:", "torus2d:0x4", "ring:a"]
)
def test_bad_topology_is_one_line(text):
    with pytest.raises(ConfigError) as e:
        parse_topology(text)
    assert "\n" not in str(e.value) and "topology" in str(e.value)


def test_database_tpus_have_link_figures_and_pod_identities():
    # Cloud "all-reduce bandwidth per pod" = chips × links × one-way link bandwidth (§2.6).
    v3 = sim_chip.load("tpu-v3")
    assert 1024 * v3.links * v3.link.bandwidth / 1e12 == pytest.approx(340, rel=0.02)
    v4 = sim_chip.load("tpu-v4")
    assert 4096 * v4.links * v4.link.bandwidth / 1e15 == pytest.approx(1.1, rel=0.02)
    assert v4.topology_kind == "torus3d"
    assert sim_chip.load("h100-sxm").link.bandwidth == pytest.approx(450e9)


def test_a_torus_with_the_wrong_dims_names_its_shape():
    with pytest.raises(ConfigError) as e:
        Topology("torus2d", (4,))
    assert e.value.field == "topology" and e.value.value == "torus2d:4"
    assert e.value.allowed == "torus2d needs XxY chips, each ≥ 1"


def test_an_unknown_topology_kind_names_the_topology_field():
    with pytest.raises(ConfigError) as e:
        Topology("mesh", (4,))
    assert e.value.field == "topology" and e.value.value == "mesh"
    assert e.value.allowed == "must be one of ring, biring, torus2d, torus3d"


def test_a_topology_past_the_chip_limit_says_the_limit():
    from paradnn.errors import ConfigError
    from paradnn.sim.interconnect import MAX_CHIPS

    with pytest.raises(ConfigError) as e:
        Topology("ring", (MAX_CHIPS + 1,))
    assert e.value.allowed == f"at most {MAX_CHIPS} chips"
