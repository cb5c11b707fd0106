"""Shared workers (`api.shared_workers`): calls inside one session reuse one worker process, a
time box stops a call at its deadline with what finished stored, and sessions do not nest."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from paradnn import api
from paradnn.errors import ParadnnError
from paradnn.runner import supervisor

from conftest import TINY, TINY_POLICY, write_sweep


def test_calls_in_a_session_share_one_worker(tmp_path):
    db = str(tmp_path / "s.db")
    with api.shared_workers() as session:
        a = api.bench("fc", TINY["fc"], device="cpu", threads=1, timing=TINY_POLICY, db=db)
        b = api.bench("fc", {**TINY["fc"], "nodes": 8}, device="cpu", threads=1,
                      timing=TINY_POLICY, db=db)  # fmt: skip
        assert a.status == b.status == "ok"
        assert a.worker_pid == b.worker_pid  # one process answered both
        assert b.worker_index == 1  # its second unit
        assert len(session.starts) == 1 and session.starts[0] > 0  # one start, measured
        (parked,) = session.parked.values()
        assert parked.process.is_alive()
    assert not parked.process.is_alive()  # stopped when the session closed
    # outside a session each call starts (and stops) its own worker
    c = api.bench("fc", {**TINY["fc"], "nodes": 4}, device="cpu", threads=1, timing=TINY_POLICY,
                  db=db)  # fmt: skip
    assert c.worker_pid != a.worker_pid


def test_a_time_box_stops_the_call_and_keeps_what_finished(tmp_path):
    db = str(tmp_path / "t.db")
    runs = [("fc", {**TINY["fc"], "nodes": n}) for n in range(4, 64)]
    # each run times its steps for at least 1 s: the sweep cannot finish inside the box
    slow = dataclasses.replace(TINY_POLICY, min_time_s=1.0, max_time_s=1.5, min_block_s=0.02)
    sweep = write_sweep(tmp_path / "many.toml", runs, policy=slow)
    with api.shared_workers() as session:
        # a first call starts the worker, so the box below times runs, not a start-up
        api.bench("fc", TINY["fc"], device="cpu", threads=1, timing=TINY_POLICY, db=db)
        t0 = time.monotonic()
        with pytest.raises(api.TimeBoxExpired), session.time_box(12.0):
            api.run(str(sweep), device="cpu", threads=1, db=db)
        assert time.monotonic() - t0 < 45  # stopped near its deadline, not after 60 runs
        assert session.deadline is None  # the box is closed again
        assert not session.parked  # the busy worker was killed, not kept
    swept = [r for r in api.results(db=db) if r["sweep"] == "many"]
    assert 1 <= len(swept) < len(runs)
    assert {r["status"] for r in swept} == {"ok"}  # the run in flight is not stored


def test_sessions_do_not_nest():
    with (
        api.shared_workers(),
        pytest.raises(ParadnnError, match="do not nest"),
        api.shared_workers(),
    ):
        pass
    assert supervisor._session() is None


def test_a_time_box_also_bounds_a_worker_start(tmp_path):
    """A worker that has not said hello when the box runs out is stopped: no worker starts (a
    fresh interpreter importing torch) in 50 ms, so the call ends at once, storing nothing."""
    db = str(tmp_path / "w.db")
    with api.shared_workers() as session:
        t0 = time.monotonic()
        with pytest.raises(api.TimeBoxExpired), session.time_box(0.05):
            api.bench("fc", TINY["fc"], device="cpu", threads=1, timing=TINY_POLICY, db=db)
        assert time.monotonic() - t0 < 30
        assert not session.parked
    assert not Path(db).exists()  # nothing stored, so no database made (issue 46)
