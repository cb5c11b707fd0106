"""`analysis.history` pinned on a hand-made store: which attempts belong to a configuration,
how `where` narrows them (and refuses what is no study axis), which attempt is chosen, which
baselines name it, every column it promises, and the order (time, then database, then id)."""

from __future__ import annotations

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn import families
from paradnn.analysis import history as H
from paradnn.errors import ConfigError

import synth

CFG = {"layers": 2, "nodes": 8, "input": 12, "output": 5, "batch": 4}
FULL = dict(families.get("fc").config(CFG).__dict__)
JAN, FEB, MAR = "2026-01-01T00:00:00", "2026-02-01T00:00:00", "2026-03-01T00:00:00"


def _row(db: str, dbi: int, rid: int, when, cfg=CFG, family="fc", **kw) -> dict:
    kw.setdefault("attempt", 1)
    kw.setdefault("mode", "eager")
    r = synth.row(family, cfg, 0.5, n_samples=10, seed=rid, started_at=when, **kw)
    return r | {"db": db, "db_index": dbi, "id": rid}


def _data() -> A.Data:
    rows = [
        _row("a.db", 0, 1, FEB),  # fp32, attempt 1: the chosen one of its key
        _row("a.db", 0, 2, MAR, status="crashed", attempt=2),  # same key, a later failure
        _row("a.db", 0, 3, JAN, precision="bf16"),
        _row("b.db", 1, 3, JAN, mode="compile"),  # same time: after a.db's (db_index)
        _row("b.db", 1, 1, JAN, mode="compile", threads=4),  # same time and db: by id
        _row("b.db", 1, 9, None),  # no start time: first
        _row("a.db", 0, 4, JAN, cfg={**CFG, "nodes": 16}),  # another configuration
    ]
    rows[1]["run_key"] = rows[0]["run_key"]
    rows[1]["step_time_s"] = None
    return A.from_frames(rows)


def test_every_attempt_of_the_configuration_oldest_first_with_every_column():
    held = {("a.db", 1): ["main", "v2"], ("b.db", 3): ["old"], ("a.db", 4): ["other"]}
    h = H.history(_data(), "fc", FULL, baselines=held)
    assert list(h.columns) == list(H.COLUMNS)
    assert list(zip(h["db"], h["id"], strict=True)) == [
        ("b.db", 9), ("a.db", 3), ("b.db", 1), ("b.db", 3), ("a.db", 1), ("a.db", 2),
    ]  # fmt: skip
    assert list(h["started_at"].fillna("-")) == ["-", JAN, JAN, JAN, FEB, MAR]
    assert list(h["baselines"]) == ["", "", "", "old", "main, v2", ""]
    assert list(h["chosen"]) == [True, True, True, True, True, False]
    assert list(h["status"]) == ["ok"] * 5 + ["crashed"]
    assert list(h["precision"]) == ["fp32", "bf16", "fp32", "fp32", "fp32", "fp32"]
    assert list(h["mode"]) == ["eager", "eager", "compile", "compile", "eager", "eager"]
    assert list(h["attempt"]) == [1, 1, 1, 1, 1, 2]
    assert [str(t) for t in h["threads"]] == ["2", "2", "4", "2", "2", "2"]
    assert h["paradnn_version"].isna().all()  # not stored: a column of nulls, never dropped
    assert list(h.index) == list(range(6))
    assert h.loc[4, "step_time_s"] > 0 and pd.isna(h.loc[5, "step_time_s"])


def test_no_baselines_given_is_an_empty_name_on_every_row():
    h = H.history(_data(), "fc", FULL)
    assert list(h["baselines"]) == [""] * 6


@pytest.mark.parametrize(
    "where, ids",
    [
        ({"precision": "bf16"}, [("a.db", 3)]),
        ({"mode": "compile"}, [("b.db", 1), ("b.db", 3)]),
        ({"threads": 4}, [("b.db", 1)]),
        ({"threads": "4"}, [("b.db", 1)]),
        ({"attempt": 2}, [("a.db", 2)]),
        ({"mode": "eager", "precision": "fp32"}, [("b.db", 9), ("a.db", 1), ("a.db", 2)]),
        ({"precision": "fp16"}, []),
        ({"strategy": "ddp"}, []),  # a study axis the runs have no column for: nothing
    ],
)
def test_where_narrows_to_the_study_axes_values(where, ids):
    h = H.history(_data(), "fc", FULL, where=where)
    assert list(h.columns) == list(H.COLUMNS)
    assert list(zip(h["db"], h["id"], strict=True)) == ids


@pytest.mark.parametrize("field", ["colour", "optimizer_impl", "config"])
def test_where_refuses_a_field_that_is_no_study_axis_with_a_column(field):
    with pytest.raises(ConfigError) as e:
        H.history(_data(), "fc", FULL, where={field: "x"})
    assert e.value.field == "where" and e.value.value == field
    assert "a study axis with a record column, threads, attempt" in str(e.value)


def test_another_family_or_configuration_or_an_empty_store_is_an_empty_frame():
    for data, family, cfg in (
        (_data(), "cnn", FULL),
        (_data(), "fc", {**FULL, "nodes": 32}),
        (_data(), "fc", {k: v for k, v in FULL.items() if k != "input"}),  # not all of it
        (A.from_frames([]), "fc", FULL),
    ):
        h = H.history(data, family, cfg)
        assert len(h) == 0 and list(h.columns) == list(H.COLUMNS)
    other = H.history(_data(), "fc", {**FULL, "nodes": 16})
    assert list(other["id"]) == [4] and list(other["db"]) == ["a.db"]
