"""The report as people read it: numbers with units and % (the CLI's formatting, from
paradnn.formatting), human headers, one column per hyperparameter (report, CSVs, Store.frame, CSV
export), numeric CSVs, the whole roofline, integer colourbars, the per-op breakdown and per-op
speedups, the collapsed untestable findings, observations 8, 9 and 11, and citations that name
figures the seeds have. Figures are checked by their contents (axes, texts, labels), not pixels."""

from __future__ import annotations

import csv
import json
import re

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn import formatting, report
from paradnn import plots as P
from paradnn.analysis.breakdown import op_type
from paradnn.analysis.roofline import Roof
from paradnn.cli import tables
from paradnn.report import cells
from paradnn.store import open_store

import synth

FC = {
    "layers": [2, 4],
    "nodes": [64, 256, 1024],
    "input": [100],
    "output": [10],
    "batch": [32, 128],
}


# -- formatting ---------------------------------------------------------------------------


def test_units_read_as_the_cli_prints_them():
    assert formatting.si(3.485e10, "FLOP/s") == "34.9 GFLOP/s"
    assert formatting.si(1.628e11, "FLOP/s") == "163 GFLOP/s"
    assert formatting.pct(0.0812) == "8.1%"
    assert formatting.pct(float("nan")) == "—"
    assert formatting.number(322644) == "323 k"
    assert formatting.number(0.125) == "0.125"
    assert formatting.number(64.0) == "64"
    assert formatting.times(1.2345) == "1.23×"
    assert formatting.nbytes(3 * 2**20) == "3 MiB"
    assert (
        tables._si(4.402e5) == formatting.si(4.402e5) == "440 k"
    )  # the CLI's is the same function


def test_html_tables_have_units_percentages_human_headers_and_hyperparameter_columns():
    df = pd.DataFrame(
        {
            "family": ["fc", "fc"],
            "config_key": [json.dumps({"batch": 64, "nodes": 32}), json.dumps({"batch": 16384})],
            "achieved_flops": [3.485e10, 1.2e9],
            "utilization_measured": [0.0812, None],
            "params": [440200.0, 322644],
            "mdape": [0.8112, 0.1],
            "faster_share": [0.6667, 1.0],
            "step_time_s": [0.00181, 2.5],
        }
    )
    html = cells.html_table(df)
    for text in ("34.9 GFLOP/s", "8.1%", "81.1%", "66.7%", "440 k", "323 k", "1.81 ms", "2.5 s"):
        assert text in html, text
    for header in ("achieved FLOP/s", "<th>batch</th>", "<th>nodes</th>", "step time"):
        assert header in html, header
    assert "16,384" in html  # a hyperparameter stays a whole number
    assert "config_key" not in html and "e+" not in html and "snake" not in html
    assert "utilization_measured" not in html


def test_store_frame_and_csv_export_have_one_column_per_hyperparameter(tmp_path):
    db = synth.write_db(tmp_path / "a.db", synth.rows("fc", FC, lambda c: 0.1))
    with open_store(db, readonly=True) as store:
        frame = store.frame()
        rows = store.runs()
    assert {"batch", "nodes", "layers"} <= set(frame.columns)
    assert sorted(frame["batch"].unique()) == [32, 128]
    assert "cfg_threads" not in frame  # no fc key shadows a run column
    text = tables.to_csv(rows)
    got = list(csv.DictReader(text.splitlines()))
    assert {"batch", "nodes", "layers", "config"} <= set(got[0])
    assert {r["batch"] for r in got} == {"32", "128"}


# -- the report ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_platform_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rep")
    fast = {64: 2.0, 256: 1.0, 1024: 0.5}
    a = synth.write_db(tmp / "a.db", synth.rows("fc", FC, lambda c: 0.1, platform="PlatA"))
    b = synth.write_db(
        tmp / "b.db",
        synth.rows("fc", FC, lambda c: 0.1 * fast[c["nodes"]], platform="PlatB", hostname="b"),
    )
    ceilings = [
        dict(
            device="cpu",
            device_name="PlatA",
            fingerprint="f",
            kind=k,
            precision=p,
            value=v,
            unit=u,
            measured_at="2026-11-21T00:00:00",
        )
        for k, p, v, u in (("matmul", "fp32", 1.628e11, "FLOP/s"), ("copy", None, 2e10, "B/s"))
    ]
    for db, scale in ((a, 1.0), (b, 0.5)):
        with open_store(db) as store:
            store.insert_rows("op_profile", synth.op_profile(1, scale) + synth.op_profile(2, scale))
            if db == a:
                store.insert_rows("ceilings", ceilings)
    return report.build([a, b], tmp / "out"), tmp / "out"


def _sec(rep, sid):
    return next(s for s in rep.sections if s.id == sid)


def test_summary_csv_is_numeric_and_the_status_pivot_has_no_empty_column(two_platform_report):
    rep, out = two_platform_report
    summary = pd.read_csv(out / "tables" / "summary.csv")
    assert pd.api.types.is_float_dtype(summary["max_util_measured"])
    assert summary["max_util_measured"].dropna().between(0, 1).all()
    status = pd.read_csv(out / "tables" / "status-by-family.csv")
    assert list(status.columns) == ["family", "ok"]
    html = rep.html.read_text()
    assert "<th>status</th>" not in html.split('id="findings"')[0]
    assert re.search(r"\d+(\.\d)?%", html)  # utilization as a percentage
    assert not re.search(r"<td>[-\d.]+e[+-]\d+</td>", html)  # no scientific notation in cells


def test_batch_is_a_column_of_the_report_and_its_csvs(two_platform_report):
    rep, out = two_platform_report
    points = pd.read_csv(out / "tables" / "roofline-points.csv")
    assert {"batch", "nodes", "config_key"} <= set(points.columns)
    tables_html = "".join(html for s in rep.sections for _, html in s.tables)
    assert "<th>batch</th>" in tables_html and "<th>config_key</th>" not in tables_html


def test_per_op_breakdown_and_per_op_speedups_in_the_report(two_platform_report):
    rep, out = two_platform_report
    s = _sec(rep, "breakdown")
    names = {f.name for f in s.figures}
    assert "op-breakdown" in names
    assert "op-speedups-platform-PlatB-over-PlatA" in names
    bd = pd.read_csv(out / "tables" / "op-breakdown.csv")
    assert set(bd["op_type"]) == {"matmul", "elementwise", "layout & copy"}
    assert bd.groupby("run_uid")["share"].sum().round(9).eq(1).all()
    sp = pd.read_csv(out / "tables" / "op-speedups-platform-PlatB-over-PlatA-ops.csv")
    assert sp["speedup"].round(9).eq(2).all()  # PlatB's ops take half the time


def test_the_breakdown_shows_the_memory_bound_share_per_run_beside_the_seeds(two_platform_report):
    rep, out = two_platform_report
    s = _sec(rep, "breakdown")
    bs = pd.read_csv(out / "tables" / "op-bound-shares.csv")
    a, b = bs[bs["platform"] == "PlatA"], bs[bs["platform"] == "PlatB"]
    assert len(a) == 2 and len(b) == 2  # both profiled runs of each platform
    # PlatA's measured ridge 1.628e11 / 2e10 = 8.14 FLOP/byte: the matmuls (100) above it,
    # add_ (0.2) below, t (no bytes) unclassified; of 11.1 ms profiled per step
    assert (a["roof"] == "measured").all() and a["ridge"].round(6).eq(8.14).all()
    assert a["memory_bound"].round(9).eq(round(1 / 11.1, 9)).all()
    assert a["compute_bound"].round(9).eq(round(10 / 11.1, 9)).all()
    assert a["unclassified"].round(9).eq(round(0.1 / 11.1, 9)).all()
    assert b["memory_bound"].isna().all() and b["reason"].str.startswith("no roof").all()
    notes = " ".join(s.notes)
    assert "ResNet-50 (resnet50) 13%" in notes and "Transformer (transformer_base) 19.9%" in notes
    assert "measured on TPU v2" in notes and "PlatB fp32: no roof" in notes
    shown = next(html for cap, html in s.tables if "memory-bound and compute-bound" in cap)
    assert "memory-bound (below the ridge)" in shown
    # the seed's share is published for ResNet-50 and the Transformer only: a column that is —
    # in every row of this FC table is left out of the HTML (the notes carry the seed's figures)
    assert "seed 000 §4.2" not in shown and "seed_memory_bound" in a


def test_examples_per_s_maps_and_speedup_maps_with_regression(two_platform_report):
    rep, _ = two_platform_report
    heat = {f.name for f in _sec(rep, "heatmaps").figures}
    assert {"throughput-fc-PlatA-fp32", "throughput-fc-PlatB-fp32"} <= heat
    sp = {f.name for f in _sec(rep, "speedups").figures}
    assert any(n.endswith("-fc-map") for n in sp)
    assert any(n.endswith("-fc-weights") for n in sp)


def test_untestable_findings_are_one_line_each_under_headings(two_platform_report):
    rep, out = two_platform_report
    s = _sec(rep, "findings")
    headings = [h for h, _ in s.lists]
    assert any("any data paradnn can produce" in h for h in headings)
    never = next(lines for h, lines in s.lists if "any data paradnn can produce" in h)
    # TPU hardware and 1,024-chip systems; host-fed input left the list with the infeed study
    assert len(never) == len(A.findings.NEVER_TESTABLE) == 3
    assert "infeed" not in A.findings.NEVER_TESTABLE
    assert all(line.count("\n") == 0 and " — seed 00" in line for line in never)
    verdicts = pd.read_csv(out / "tables" / "findings.csv")
    assert "untestable" not in set(verdicts["verdict"])
    assert "seed 000 is the ParaDnn paper" in s.intro


def test_observation_8_holds_when_small_and_large_fc_prefer_different_platforms(
    two_platform_report,
):
    _, out = two_platform_report
    f = pd.read_csv(out / "tables" / "findings-all.csv").set_index("id")
    assert f.loc["fc-size-platform", "verdict"] == "holds"
    ev = f.loc["fc-size-platform", "evidence"]
    assert "smallest third 2.00× [2.00, 2.00], largest third 0.50× [0.50, 0.50]" in ev


# -- observations 9 and 11, one platform ---------------------------------------------------


CNN = {"blocks": [1], "filters": [8, 16, 32, 64], "image": [32], "output": [10], "batch": [2, 8]}
RNN = {"layers": [1], "embed": [50, 100, 200, 400], "length": [10], "vocab": [32], "batch": [8, 32]}


def _two(family, space, gain):
    return A.from_frames(
        synth.rows(family, space, lambda c: 0.1, platform="PlatA")
        + synth.rows(family, space, lambda c: 0.1 * gain(c), platform="PlatB")
    )


def test_observation_9_the_faster_platforms_speedup_grows_with_cnn_size():
    grows = _two("cnn", CNN, lambda c: 1 + c["filters"] / 16)
    f = A.findings.cnn_speedup_grows_with_size(grows)
    assert f.verdict == "holds" and "PlatB over PlatA" in f.evidence
    flat = _two("cnn", CNN, lambda c: 3 - c["filters"] / 32)
    assert A.findings.cnn_speedup_grows_with_size(flat).verdict == "does not hold"


def test_observation_11_the_slower_platform_scales_better_with_embedding():
    shrinks = _two("rnn", RNN, lambda c: 4 - c["embed"] / 200)  # PlatB faster, less so for big
    f = A.findings.rnn_embed_favours_slower(shrinks)
    assert f.verdict == "holds" and "ρ(embed, speedup) = -" in f.evidence
    one = A.from_frames(synth.rows("rnn", RNN, lambda c: 0.1))
    assert A.findings.rnn_embed_favours_slower(one).verdict == "untestable"


# -- figures ------------------------------------------------------------------------------


def test_the_roofline_is_drawn_whole_with_its_ridge_ceilings_and_labelled_points():
    pts = pd.DataFrame(
        {
            "family": ["fc", "fc"],
            "intensity": [200.0, 800.0],
            "achieved_flops": [2e11, 5e11],
            "config_key": [json.dumps({"batch": 64}), json.dumps({"batch": 512})],
        }
    )
    roofs = [Roof("datasheet", 1e12, 1e11, "x"), Roof("measured", 6e11, 5e10, "paradnn calibrate")]
    fig = P.roofline(pts, roofs, "t")
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert lo < 10 < hi and lo < 12 < hi  # both ridges (10 and 12 FLOP/B) on the axis
    texts = [t.get_text() for t in ax.texts]
    assert "ridge 10 FLOP/B" in texts and "ridge 12 FLOP/B" in texts
    assert "fc batch=512" in texts  # the family's best point, labelled
    labels = ax.get_legend_handles_labels()[1]
    assert any("1 TFLOP/s" in s and "100 GB/s" in s for s in labels)
    assert any("600 GFLOP/s" in s for s in labels)


def test_colourbars_label_batch_sizes_as_integers():
    pairs = pd.DataFrame(
        {
            "params": [1e4, 1e5, 1e6, 1e7],
            "speedup": [1.0, 1.2, 0.9, 1.5],
            "batch": [64, 128, 512, 1024],
        }
    )
    cmp = type("C", (), {"pairs": pairs, "a": "x", "b": "y", "by": "platform", "metric": "m"})()
    fig = P.speedup_scatter(cmp, "batch")
    cbar = fig.axes[1]
    labels = [t.get_text() for t in cbar.get_yticklabels()]
    assert labels == ["64", "128", "512", "1024"]


def test_op_types():
    cases = {
        "aten::addmm": "matmul",
        "aten::mm": "matmul",
        "aten::convolution_backward": "convolution",
        "aten::mkldnn_rnn_layer": "recurrent",
        "aten::native_batch_norm_backward": "normalization",
        "aten::max_pool2d_with_indices_backward": "pooling",
        "aten::_log_softmax_backward_data": "softmax & loss",
        "aten::nll_loss_forward": "softmax & loss",
        "aten::t": "layout & copy",
        "aten::sum": "reduction",
        "aten::add_": "elementwise",
        "aten::threshold_backward": "elementwise",
        "aten::embedding_dense_backward": "embedding",
        "aten::something_new": "other",
    }
    assert {k: op_type(k) for k in cases} == cases


# -- citations ----------------------------------------------------------------------------

# What each seed has (checked by hand against /work/shared/seeds): its last figure and table, and
# its numbered sections (seed 001, a CACM article, numbers none).
SEED_FIGURES = {"000": 12, "001": 7, "002": 17}
SEED_TABLES = {"000": 3, "001": 10, "002": 8}
SEED_SECTIONS = {
    "000": {"4.1", "4.2", "4.3", "4.4", "4.5", "5.1", "5.2", "5.3", "6", "6.1", "6.2", "4", "5"},
    "001": set(),
    "002": {"3.2", "4.1", "4.1.1", "4.1.2", "4.2", "4.2.1", "4.2.2", "4.3"},
}


def _check(text: str) -> list[str]:
    """Every figure, table and section a citation names exists in the seed named before it."""
    bad = []
    for m in re.finditer(r"seed (\d{3})(.*?)(?=seed \d{3}|$)", text):
        seed, part = m.group(1), m.group(2)
        for lo, hi in re.findall(r"Fig(?:ure)?s?\.? ?(\d+)(?:-(\d+))?", part):
            for v in (lo, hi):
                if v and int(v) > SEED_FIGURES[seed]:
                    bad.append(f"{text}: figure {v} is not in seed {seed}")
        for n in re.findall(r"Table (\d+)", part):
            if int(n) > SEED_TABLES[seed]:
                bad.append(f"{text}: table {n} is not in seed {seed}")
        for n in re.findall(r"§(\d+(?:\.\d+)*)", part):
            if n not in SEED_SECTIONS[seed]:
                bad.append(f"{text}: § {n} is not in seed {seed}")
    return bad


def test_every_finding_cites_what_its_seed_has():
    sources = [f.source for f in A.evaluate(A.from_frames([]))]
    assert sources and all(re.search(r"seed 00[012]", s) for s in sources)
    assert [b for s in sources for b in _check(s)] == []
    assert _check("seed 000 §6 (Figure 13)")  # the check catches the old mistake


def test_every_report_title_cites_what_its_seed_has(two_platform_report):
    rep, _ = two_platform_report
    titles = [s.title for s in rep.sections if "seed" in s.title]
    assert len(titles) >= 6
    assert [b for t in titles for b in _check(t)] == []


def test_a_config_column_of_json_or_dicts_becomes_hyperparameter_columns():
    df = pd.DataFrame(
        {
            "family": ["fc", "cnn"],
            "config": ['{"batch": 8, "nodes": 4}', {"batch": 2, "filters": 16}],
        }
    )
    out = cells.expand_config(df)
    assert list(out.columns) == ["family", "batch", "nodes", "filters"]
    assert out["batch"].tolist() == [8, 2]
    # in the HTML, rows of two families with different hyperparameters keep one config column
    # (no column that one family's rows leave at —); one family gets a column per hyperparameter
    html = cells.html_table(df)
    assert (
        "<td>batch=2 filters=16</td>" in html and "{" not in html and "<th>nodes</th>" not in html
    )
    assert "<th>filters</th>" in cells.html_table(df.iloc[1:])


def test_default_slices_hold_the_thread_count_fixed_when_it_varies():
    one = synth.rows("fc", FC, lambda c: 0.1, threads=1)
    two = synth.rows("fc", FC, lambda c: 0.3, threads=2)
    two = [dict(r, run_key=r["run_key"] + "-2") for r in two] + [two[0] | {"run_key": "x"}]
    data = A.from_frames(one + two)
    hm = A.heatmap(data, "fc")
    assert hm.where == {"platform": "SynthCPU", "precision": "fp32", "threads": 2}
    assert A.frames.where_text(hm.where) == "SynthCPU, fp32, threads=2"
    # every cell is a 2-thread run (utilization 0.3 of the synthetic peak), none a median with 1
    assert hm.values.stack().round(9).eq(0.3 * synth.PEAK).all()
    assert A.sensitivity(data, "fc").where["threads"] == 2
    single = A.from_frames(one)
    assert "threads" not in A.heatmap(single, "fc").where
