"""Which points of a family's grid a sweep measures: all, a random subset, or a Latin hypercube.

A point is a tuple of indices, one per axis, into that axis' value list. Nothing here
materialises the full product unless the whole grid is wanted, so `random`/`lhs` stay cheap on
grids far too large to enumerate. Torch-free; scipy is imported only for `lhs`.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Method = Literal["grid", "random", "lhs"]
METHODS: tuple[Method, ...] = ("grid", "random", "lhs")
Point = tuple[int, ...]


@dataclass(frozen=True)
class Sampling:
    """`n` points per family (capped at the grid size; unused by `grid`), reproducible by `seed`."""

    method: Method = "grid"
    n: int | None = None
    seed: int = 0

    def count(self, lengths: Sequence[int]) -> int:
        """How many points `points` yields for a grid with these axis lengths."""
        size = math.prod(lengths)
        return size if self.method == "grid" or self.n is None else min(self.n, size)

    def points(self, lengths: Sequence[int]) -> Iterable[Point]:
        """Grid order for `grid` (and whenever n covers the grid); otherwise the sampled order,
        which is random, so an interrupted run is still spread over the whole space."""
        size = math.prod(lengths)
        if self.method == "grid" or self.n is None or self.n >= size:
            return itertools.product(*map(range, lengths))
        if self.method == "random":
            return [unravel(i, lengths) for i in _distinct(size, self.n, random.Random(self.seed))]
        return _latin_hypercube(lengths, self.n, self.seed)


def unravel(index: int, lengths: Sequence[int]) -> Point:
    """The grid point at `index` in itertools.product order (last axis fastest)."""
    out = []
    for n in reversed(lengths):
        index, i = divmod(index, n)
        out.append(i)
    return tuple(reversed(out))


def _distinct(size: int, n: int, rng: random.Random) -> list[int]:
    """n distinct indices in [0, size), without building the population."""
    if size <= sys.maxsize:
        return rng.sample(range(size), n)
    # len(range) overflows past sys.maxsize; with n ≤ MAX configs ≪ size, collisions are rare.
    picked: dict[int, None] = {}
    while len(picked) < n:
        picked[rng.randrange(size)] = None
    return list(picked)


def _latin_hypercube(lengths: Sequence[int], n: int, seed: int) -> list[Point]:
    """Each unit coordinate of a Latin hypercube picks an index into its axis, so every axis'
    values are used about equally often. Two points can land on the same grid point when the
    grid is small; the shortfall is topped up with distinct random points."""
    import numpy as np
    from scipy.stats import qmc

    # A Generator (not an int) gives the same stream whether scipy calls the argument seed or rng.
    engine = qmc.LatinHypercube(d=len(lengths), seed=np.random.default_rng(seed))
    sizes = np.asarray(lengths, dtype=np.int64)
    idx = np.minimum((engine.random(n) * sizes).astype(np.int64), sizes - 1)
    picked = dict.fromkeys(tuple(row) for row in idx.tolist())
    rng, size = random.Random(seed), math.prod(lengths)
    while len(picked) < n:
        picked[unravel(rng.randrange(size), lengths)] = None
    return list(picked)
