"""α–β all-reduce on rings and tori, bisection bandwidth, data-parallel scaling.

Formulas (reference note modelling.md §2.6; α = per-step latency, B = bandwidth a node drives
along one ring, S = bytes per node):

* ring:    ``2(n−1)·α + 2(n−1)/n · S/B``, B = one link, one direction;
* biring:  the same with half the payload each way, so B = 2 × the one-way link bandwidth;
* torus2d X×Y, dimension-ordered (reduce-scatter X, all-reduce Y on S/X, all-gather X), each
  dimension a bidirectional ring with wraparound:
  ``[2(X−1)+2(Y−1)]·α + 2(X−1)/X · S/B + 2(Y−1)/Y · (S/X)/B``; with ``concurrent`` both
  dimensions run at once on half the payload each, halving the bandwidth term;
* torus3d X×Y×Z: the same over three dimensions.

The bytes each chip sends equal the ring bound ``2(n−1)/n · S`` on every topology: tori buy
fewer latency steps (60 instead of 510 at 16×16), not fewer bytes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from paradnn.errors import ConfigError

KINDS = ("ring", "biring", "torus2d", "torus3d")
_DIMS = {"ring": 1, "biring": 1, "torus2d": 2, "torus3d": 3}
MAX_CHIPS = 1 << 20


@dataclass(frozen=True)
class Topology:
    kind: str
    dims: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError("topology", self.kind, "must be one of " + ", ".join(KINDS))
        if len(self.dims) != _DIMS[self.kind] or any(d < 1 for d in self.dims):
            raise ConfigError("topology", self.label(), f"{self.kind} needs {_shape(self.kind)}")
        if self.chips > MAX_CHIPS:
            raise ConfigError("topology", self.label(), f"at most {MAX_CHIPS} chips")

    @property
    def chips(self) -> int:
        return math.prod(self.dims)

    def label(self) -> str:
        return f"{self.kind}:{'x'.join(map(str, self.dims))}"


def _shape(kind: str) -> str:
    return {1: "N", 2: "XxY", 3: "XxYxZ"}[_DIMS[kind]] + " chips, each ≥ 1"


def parse_topology(text: str) -> Topology:
    """``ring:8``, ``biring:8``, ``torus2d:16x16``, ``torus3d:4x4x8``."""
    allowed = "written kind:dims, e.g. torus2d:16x16, torus3d:4x4x4, ring:8, biring:8"
    if not isinstance(text, str) or len(text) > 100:
        raise ConfigError("--topology", text, allowed)
    kind, _, dims = text.strip().partition(":")
    if kind not in KINDS or not re.fullmatch(r"[0-9]{1,9}(x[0-9]{1,9})*", dims):
        raise ConfigError("--topology", text, allowed)
    return Topology(kind, tuple(int(d) for d in dims.split("x")))


def default_topology(kind: str, chips: int) -> Topology:
    """The most nearly square (cubic) torus, or a ring, of ``chips`` chips."""
    if kind not in KINDS:
        raise ConfigError("topology", kind, "must be one of " + ", ".join(KINDS))
    n = _DIMS[kind]
    dims = _balanced(chips, n)
    return Topology(kind, dims)


def _balanced(chips: int, n: int) -> tuple[int, ...]:
    if n == 1:
        return (chips,)
    best = None
    for d in range(1, chips + 1):
        if chips % d == 0:
            rest = _balanced(chips // d, n - 1)
            dims = tuple(sorted((d, *rest), reverse=True))
            if best is None or max(dims) - min(dims) < max(best) - min(best):
                best = dims
    assert best is not None
    return best


@dataclass(frozen=True)
class Link:
    bandwidth: float  # bytes/s, one link, one direction
    latency_s: float = 1e-6  # per hop/step; scaling-book's T_min ≈ 1 µs per ICI hop


@dataclass(frozen=True)
class AllReduce:
    """One all-reduce of ``payload_bytes`` per chip (a prediction, not a measurement)."""

    topology: str
    chips: int
    payload_bytes: float
    steps: int
    latency_s: float
    bandwidth_s: float
    bytes_sent_per_chip: float

    @property
    def time_s(self) -> float:
        return self.latency_s + self.bandwidth_s


def ring_bound_bytes(payload: float, chips: int) -> float:
    """Bytes every chip must send in any point-to-point all-reduce: ``2(n−1)/n · S``."""
    return 2 * (chips - 1) / chips * payload


def allreduce(payload: float, topo: Topology, link: Link, *, concurrent: bool = False) -> AllReduce:
    """α–β time of an all-reduce of ``payload`` bytes per chip over ``topo``."""
    if payload < 0:
        raise ConfigError("payload", payload, "must be ≥ 0 bytes")
    if topo.kind in ("ring", "biring"):
        per_dim_bw = link.bandwidth * (2 if topo.kind == "biring" else 1)
    else:
        per_dim_bw = 2 * link.bandwidth  # each torus dimension is a bidirectional ring
    steps, bw_s, sent, share = 0, 0.0, 0.0, float(payload)
    dims = topo.dims
    # Reduce-scatter down every dimension but the last, all-reduce the last, gather back up:
    # dimension i moves 2(d−1)/d of what is left after the earlier scatters.
    for d in dims:
        if d > 1:
            steps += 2 * (d - 1)
            moved = 2 * (d - 1) / d * share
            bw_s += moved / per_dim_bw
            sent += moved
        share /= d
    if concurrent and topo.kind in ("torus2d", "torus3d"):
        bw_s /= 2
    return AllReduce(topo.label(), topo.chips, payload, steps, steps * link.latency_s, bw_s, sent)


def bisection_links(topo: Topology) -> int:
    """Links cut when the network is split in half across its longest dimension (wraparound
    links count: a ring of more than two chips is cut twice)."""
    longest = max(topo.dims)
    if longest == 1:
        return 0
    cross = topo.chips // longest  # rings along the longest dimension
    return cross * (2 if longest > 2 else 1)


def bisection_bandwidth(topo: Topology, link: Link) -> float:
    """Bytes/s across the worst-case split, one direction (seed 001's 16×16 TPUv2 example:
    32 links × 496 Gbit/s = 15.9 Tbit/s)."""
    return bisection_links(topo) * link.bandwidth


def step_time(
    compute_s: float, backward_s: float, ar: AllReduce, *, overlap: float = 0.0
) -> tuple[float, float]:
    """(data-parallel step time, exposed all-reduce time): compute plus the part of the
    all-reduce that ``overlap`` × backward does not hide (0 = fully serial, the upper bound)."""
    if not 0.0 <= overlap <= 1.0:
        raise ConfigError("overlap", overlap, "must be a fraction in [0, 1]")
    exposed = max(0.0, ar.time_s - overlap * backward_s)
    return compute_s + exposed, exposed


def chip_counts(limit: int = 1024) -> list[int]:
    """1, 2, 4, … up to ``limit`` (the scaling curve's x axis)."""
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out
