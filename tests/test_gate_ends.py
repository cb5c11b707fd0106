"""`compare --fail-if-slower` judges a slowdown by the upper end of its interval (issue 46): a
config fails only when the whole interval lies below the threshold; one whose interval
straddles it is inconclusive and passes. Before this file, a planted fault that judged by
the lower end (`ci_low`, `geomean_ci_low`) passed the whole suite: every gate test had
intervals wholly on one side of the threshold, where both ends agree."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import speedup as S

import synth
from conftest import run_cli

LIMIT_PCT = 5  # the gate: slower than 0.95× fails
#            (ci_low, speedup, ci_high): where the interval lies against 0.95
STRADDLES = (0.90, 0.94, 0.99)  # the lower end below, the upper above: inconclusive, passes
BELOW = (0.80, 0.85, 0.90)  # wholly below: fails
ABOVE = (0.96, 1.00, 1.04)  # wholly above: passes


def _comparison(*pairs: tuple[float, float, float], geomean=(math.nan,) * 3):
    lo, point, hi = zip(*pairs, strict=True)
    table = pd.DataFrame({"ci_low": lo, "speedup": point, "ci_high": hi})
    glo, g, ghi = geomean
    summary = pd.DataFrame(
        {"family": ["all"], "geomean_ci_low": [glo], "geomean": [g], "geomean_ci_high": [ghi]}
    )
    return SimpleNamespace(pairs=table, summary=summary)


@pytest.mark.parametrize("order", [(STRADDLES, BELOW, ABOVE), (ABOVE, BELOW, STRADDLES)])
def test_a_config_fails_only_when_its_whole_interval_is_below(order):
    c = _comparison(*order)
    failed = S.slower_than(c, LIMIT_PCT)
    assert list(failed["ci_high"]) == [BELOW[2]]
    assert list(failed["basis"]) == ["interval"]


@pytest.mark.parametrize(("geomean", "fails"), [(STRADDLES, False), (BELOW, True), (ABOVE, False)])
def test_the_geomean_fails_only_when_its_whole_interval_is_below(geomean, fails):
    c = _comparison(ABOVE, geomean=geomean)
    assert len(S.slower_than(c, LIMIT_PCT, on="geomean")) == int(fails)


def _runs(slow: dict[int, float], spread: float) -> list[dict]:
    """fc runs of four widths on platforms A and B; B's step time × slow[width]."""
    rows = []
    for side, seed in (("A", 0), ("B", 100)):
        for i, nodes in enumerate((16, 32, 64, 128)):
            factor = slow.get(nodes, 1.0) if side == "B" else 1.0
            cfg = {"layers": 2, "nodes": nodes, "input": 8, "output": 4, "batch": 8}
            rows.append(
                synth.row(
                    "fc",
                    cfg,
                    0.1 / factor,
                    n_samples=20,
                    spread=spread,
                    seed=seed + i,
                    platform=side,
                )
            )
    return rows


def test_the_gate_on_measured_intervals_judges_by_the_upper_end(capsys, tmp_path):
    """Bootstrap intervals from samples: one config about 5% slower with an interval across
    0.95 (inconclusive: exit 0), then one 30% slower (exit 1, that config alone)."""
    straddle = _runs({32: 1.05}, spread=0.05)
    c = A.compare(A.from_frames(straddle), "platform", "A", "B")
    pair = c.pairs.loc[c.pairs["speedup"].idxmin()]
    assert pair["ci_low"] < 0.95 < pair["ci_high"], pair  # the case this test is about
    assert len(S.slower_than(c, LIMIT_PCT)) == 0
    db = synth.write_db(tmp_path / "s.db", straddle)
    args = [
        "compare",
        "--db",
        db,
        "--by",
        "platform",
        "--a",
        "A",
        "--b",
        "B",
        "--fail-if-slower",
        "5",
    ]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    db = synth.write_db(tmp_path / "b.db", _runs({32: 1.05, 64: 1.3}, spread=0.05))
    code, _, err = run_cli(capsys, *["compare", "--db", db, *args[3:]])
    assert code == 1, err
    c = A.compare(A.from_frames(_runs({32: 1.05, 64: 1.3}, spread=0.05)), "platform", "A", "B")
    failed = S.slower_than(c, LIMIT_PCT)
    assert len(failed) == 1 and failed.iloc[0]["ci_high"] < 0.95
