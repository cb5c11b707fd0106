"""Tests for what the seed-13 fresh sample (store, memory, timer-stats; 2026-11-27) left alive and
no equivalence explains: the fixed-size warm-up's seconds on a clock that does not start at 0, the
ranks' agreement refusing columns of different lengths, and AdamW's optimizer temporaries."""

from __future__ import annotations

import pytest

from paradnn import families, memory
from paradnn.config import TimingPolicy
from paradnn.measure import timer


class _Clock:
    """Host seconds from 1000: each step takes 0.25 s, a sync nothing."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def sync(self) -> None:
        pass

    def mark(self):
        return self.t

    def elapsed(self, pairs):
        return [b - a for a, b in pairs]


def test_a_fixed_warm_up_returns_the_seconds_it_spent_not_the_clock_reading():
    clock = _Clock()

    def step() -> None:
        clock.t += 0.25

    policy = TimingPolicy(warmup_min_steps=3)
    say = timer._Speaker(None, clock)
    warm, spent, converged = timer._warm_up(step, clock, policy, None, fixed=True, say=say)
    assert warm == [0.25, 0.25, 0.25] and converged is False
    assert spent == pytest.approx(0.75)


class _Ranks:
    world = 2

    def __init__(self, columns):
        self.columns = columns

    def gather(self, values):
        return self.columns


def test_the_ranks_agree_on_the_largest_value_and_refuse_ragged_columns():
    assert timer._agreed(_Ranks([[1.0, 5.0], [2.0, 4.0]]), [1.0, 5.0]) == [2.0, 5.0]
    assert timer._agreed(None, [3.0]) == [3.0]
    with pytest.raises(ValueError):  # a rank that sent fewer values: not silently cut
        timer._agreed(_Ranks([[1.0, 5.0], [2.0]]), [1.0, 5.0])


FC = families.get("fc").config({"layers": 4, "nodes": 256, "input": 64, "output": 10, "batch": 4})


@pytest.mark.parametrize("optimizer", ["adam", "adamw", "rmsprop"])
def test_adaptive_optimizers_hold_their_foreach_temporaries(optimizer):
    """RMSprop, Adam and AdamW allocate one update-sized temporary per parameter with foreach
    (the whole parameter count at once); SGD updates in place."""
    shapes = families.get("fc").shapes(FC)
    params = families.get("fc").params(FC)
    assert memory._optimizer_temporaries(shapes, params, optimizer, "foreach") == params
    assert memory._optimizer_temporaries(shapes, params, optimizer, "fused") == 0
    assert memory._optimizer_temporaries(shapes, params, "sgd", "foreach") == 0


def test_a_failed_migration_of_a_read_only_copy_names_the_database(tmp_path, monkeypatch):
    """An older schema is upgraded in the read-only snapshot only; when that fails, the error
    names the file the user gave (not the copy), and the file is left as it was."""
    from paradnn.errors import StoreError
    from paradnn.store import db, open_store, schema

    path = tmp_path / "named.db"
    open_store(path).close()
    before = path.read_bytes()
    monkeypatch.setattr(db, "MIGRATIONS", [*schema.MIGRATIONS, "ALTER TABLE nope ADD x;"])
    monkeypatch.setattr(db, "LATEST", schema.LATEST + 1)
    with pytest.raises(StoreError) as e:
        open_store(path, readonly=True)
    assert str(e.value).startswith(f"{path}: migration to schema v{schema.LATEST + 1} failed")
    assert path.read_bytes() == before
