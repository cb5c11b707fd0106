"""The execution-mode study's analysis, report section and finding on synthetic rows (fast;
tests/test_modes.py compiles for real)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import modes as M
from paradnn.analysis.findings import FAILS, HOLDS, INCONCLUSIVE, NO_DATA, UNTESTABLE
from paradnn.config import MODES, RunOptions
from paradnn.errors import ConfigError
from paradnn.report.build import SECTIONS
from paradnn.report.sections.modes import SECTION
from paradnn.report.writer import Writer

import synth

SPACE = {"layers": [2], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8, 16]}


def _runs(mode: str, faster=lambda c: 1.0, seed0: int = 0, **extra) -> list[dict]:
    out = []
    for i, c in enumerate(synth.grid(SPACE)):
        r = synth.row("fc", c, 0.1 * faster(c), n_samples=20, spread=0.02, seed=seed0 + i)
        r.update(run_key=f"{r['run_key']}-{mode}", mode=mode, **extra)
        out.append(r)
    return out


COMPILED = dict(compile_cold_s=20.0, compile_warm_s=3.0, graph_count=1, graph_breaks=0)


def test_modes_are_the_issue_s_four_and_a_bad_one_is_one_line():
    assert MODES == ("eager", "compile", "max-autotune", "reduce-overhead")
    with pytest.raises(ConfigError, match="mode"):
        RunOptions(mode="jit")


def test_speedup_break_even_and_family_summary_are_computed():
    # compiled 2x the examples/s everywhere: step time halves, so 20 s of compile pays off
    # after 20 / (t - t/2) steps
    data = A.from_frames(_runs("eager") + _runs("compile", lambda c: 2.0, seed0=50, **COMPILED))
    st = M.study(data, "compile", include_noisy=True)
    assert st is not None and len(st.pairs) == 4
    p = st.pairs
    assert p["speedup"].round(6).eq(2.0).all()
    assert (p["ci_low"] < 2.0).all() and (p["ci_high"] > 2.0).all()
    expect = 20.0 / (p["t_eager_s"] - p["t_compiled_s"])
    assert (p["break_even_steps"] - expect).abs().max() < 1e-9
    assert (p["t_compiled_s"] * 2 - p["t_eager_s"]).abs().max() < 1e-12
    assert p["memory_ratio"].isna().all() and any("Memory ratio" in n for n in st.notes)
    fam = st.families.set_index("family")
    assert fam.loc["all", "median_compile_cold_s"] == 20.0
    assert fam.loc["fc", "median_compile_warm_s"] == 3.0
    grid, y, x = M.heat(p, "fc")
    assert (y, x) == ("nodes", "batch") and grid.shape == (2, 2)
    cnn = p.assign(family="cnn", filters=p["nodes"], nodes=float("nan"))  # columns of 2 families
    grid, y, x = M.heat(pd.concat([p, cnn]), "cnn")
    assert (y, x) == ("filters", "batch") and grid.notna().all().all()


def test_a_slower_compile_has_no_break_even_and_the_finding_does_not_hold():
    data = A.from_frames(_runs("eager") + _runs("compile", lambda c: 0.8, seed0=50, **COMPILED))
    st = M.study(data, "compile", include_noisy=True)
    assert st.pairs["break_even_steps"].isna().all()
    assert any("never pays off" in n for n in st.notes)
    f = M.fusion_finding(data)
    assert f.verdict == FAILS and "0.80×" in f.evidence


def test_the_fusion_finding_holds_untestable_and_not_enough_data():
    fast = A.from_frames(_runs("eager") + _runs("compile", lambda c: 2.0, seed0=50, **COMPILED))
    f = M.fusion_finding(fast)
    assert f.verdict == HOLDS and "2.00×" in f.evidence and "4 of 4" in f.evidence
    assert "seed 001" in f.source and "above 1" in f.rule
    assert M.fusion_finding(A.from_frames(_runs("eager"))).verdict == UNTESTABLE
    two = A.from_frames(_runs("eager")[:2] + _runs("compile", seed0=50, **COMPILED)[:2])
    f = M.fusion_finding(two)
    assert f.verdict == NO_DATA and f.evidence == "2 config(s) ran ok eager and compile"
    fast3 = _runs("compile", lambda c: 2.0, seed0=50, **COMPILED)[:3]
    three = M.fusion_finding(A.from_frames(_runs("eager")[:3] + fast3))
    assert three.verdict == HOLDS and "over 3 configs" in three.evidence  # 3 is enough
    assert M.fusion_finding in A.findings.CHECKS


def test_the_report_section_and_failures_are_data(tmp_path):
    comp = _runs("compile", lambda c: 1.5, seed0=50, **COMPILED)
    comp[0] = {**comp[0], "status": "crashed", "error": "recompiled while timed: x"}
    for k in ("step_time_s", "samples", "examples_per_s", "achieved_flops"):
        comp[0].pop(k, None)
    data = A.from_frames(_runs("eager") + comp)
    sec = SECTION.build(data, Writer(tmp_path / "out"))
    assert sec.empty is None and len(sec.figures) == 2  # per-family bars and the fc map
    fam = pd.read_csv(tmp_path / "out" / "tables" / "modes-compile-families.csv")
    assert fam.iloc[-1]["n"] == 3
    bad = pd.read_csv(tmp_path / "out" / "tables" / "modes-failures.csv")
    assert list(bad["status"]) == ["crashed"] and "recompiled" in bad.iloc[0]["error"]
    empty = SECTION.build(A.from_frames(_runs("eager")), Writer(tmp_path / "e"))
    assert "--preset modes" in empty.empty
    assert SECTION in SECTIONS


def test_compare_by_mode_cli(tmp_path, capsys):
    from conftest import run_cli

    db = synth.write_db(
        tmp_path / "c.db", _runs("eager") + _runs("compile", lambda c: 2.0, seed0=50, **COMPILED)
    )
    code, out, _ = run_cli(
        capsys, "compare", "--db", db, "--by", "mode", "--a", "eager", "--b", "compile"
    )
    assert code == 0 and "speedup of compile over eager" in out
    # the speedup's 95% CI (1.98–2.02×) in the one form every table uses
    assert re.search(r"2× ±\d\.\d%", out) and out.count("faster") >= 4


def test_the_fusion_finding_at_its_boundary_and_on_no_data():
    # the same speed in both modes: the CI straddles 1, so the claim is undecided (issue 30)
    same = A.from_frames(_runs("eager") + _runs("compile", seed0=50, **COMPILED))
    f = M.fusion_finding(same)
    assert f.verdict == INCONCLUSIVE and "1.00×" in f.evidence
    assert f.ci_low < 1 < f.ci_high and f.threshold == 1.0 and "matched configs" in f.decide
    assert M.fusion_finding(A.from_frames([])).verdict == UNTESTABLE
