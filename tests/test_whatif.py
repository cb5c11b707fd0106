"""`report --what-if`: platform ids resolved (bad ones: one line, exit 2), predicted rows marked
and banded (sim/whatif.py), kept apart from the measured runs, and the cross-platform findings
judged on predicted pairs with the band as their interval (analysis/whatif.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from paradnn import analysis as A
from paradnn.analysis import findings as F
from paradnn.analysis import whatif as W
from paradnn.errors import ConfigError
from paradnn.sim import errorbands as EB
from paradnn.sim import whatif as SW

import synth
from conftest import run_cli

FC = {"layers": [2, 4], "nodes": [64, 256, 1024], "input": [100], "output": [10],
      "batch": [32, 128, 512]}  # fmt: skip
CNN = {"blocks": [1], "filters": [4, 8, 16], "image": [16], "output": [3], "batch": [4, 8, 16]}


def _measured() -> A.Data:
    rows = [synth.row("fc", c, 0.2, n_samples=20, seed=i) for i, c in enumerate(synth.grid(FC))]
    rows += [synth.row("cnn", c, 0.2, n_samples=20, seed=i) for i, c in enumerate(synth.grid(CNN))]
    return A.from_frames(rows)


def _bands(tmp_path, **p90) -> EB.Bands:
    doc = {"schema": 1, "bands": {k: {"p90": v, "mdape": v / 2, "n": 20} for k, v in p90.items()}}
    path = tmp_path / "error_bands.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return EB.read(path)


def _pred(
    data, pid: str, kind: str, rate, e: float | None, bottleneck="compute", precision=None
) -> list[dict]:
    """Hand-made predicted rows: examples/s = rate(config) (a number or a function of the
    measured row), band ±e (None: not validated)."""
    band = EB.Band(kind, e, reason="" if e is not None else EB.NOT_VALIDATED)
    out = []
    for _, r in A.frames.chosen_ok(data).iterrows():
        x = rate(r) if callable(rate) else rate
        lo, hi = band.throughput(x)
        out.append(
            {
                "kind": "predicted", "predicted": True, "platform": SW.label(pid),
                "platform_id": pid, "device_kind": kind, "family": r["family"],
                "config": r["config_key"], "precision_here": r["precision"],
                "precision": precision(r["precision"]) if precision else "bf16",
                "optimizer": r["optimizer"], "band": e, "band_label": band.label(),
                "band_reason": band.reason or None, "examples_per_s": x,
                "examples_per_s_low": None if e is None else lo,
                "examples_per_s_high": None if e is None else hi, "step_time_s": 1 / x,
                "achieved_flops": None, "utilization": x / 1e6, "bottleneck": bottleneck,
                "reason": None,
            }
        )  # fmt: skip
    return out


# --- platform ids ---------------------------------------------------------------------------


def test_ids_prefixes_and_chip_files_resolve(tmp_path):
    f = tmp_path / "mychip.toml"
    f.write_text(
        '[mychip]\nname = "My chip"\nvendor = "me"\nkind = "gpu"\n'
        "peak_dense = { fp32 = 1e13 }\nmem_bandwidth = 5e11\nmemory_bytes = 16e9\n",
        encoding="utf-8",
    )
    got = SW.resolve(f"tpu-v2, v100,{f},tpu-v2")
    assert [c.id for c in got] == ["tpu-v2", "v100-sxm2", "mychip"]
    # the one resolver (platforms.datasheets.resolve): ids are lower case, so case is ignored
    assert [c.id for c in SW.resolve("TPU-V2,V100")] == ["tpu-v2", "v100-sxm2"]


BAD_IDS = ["v999", "a100", "tpu-v2,,v100", "", "nope.toml", "x\x00.toml", "a" * 5000]


@pytest.mark.parametrize("bad", [*BAD_IDS, ",".join(["tpu-v2"] * 13)])
def test_a_bad_id_is_one_line_naming_it_and_the_allowed_ids(bad):
    with pytest.raises(ConfigError) as e:
        SW.resolve(bad)
    msg = str(e.value)
    assert "--what-if" in msg and "\n" not in msg
    if bad == "a100":
        assert "a100-40gb-sxm" in msg and "a100-80gb-sxm" in msg
    elif len(bad.split(",")) > SW.MAX_PLATFORMS:
        assert "at most 12" in msg
    elif bad != "nope.toml":
        assert "tpu-v3" in msg and "v100-sxm2" in msg


def test_the_report_command_refuses_a_bad_id_before_any_work(capsys, tmp_path, monkeypatch):
    from paradnn import api

    def work(*a, **k):
        raise AssertionError("api.report was called: --what-if was read too late")

    monkeypatch.setattr(api, "report", work)
    out = tmp_path / "never"
    code, _, err = run_cli(
        capsys, "report", "--db", str(tmp_path / "missing.db"), "--out", str(out),
        "--what-if", "tpu-v2,v999",
    )  # fmt: skip
    assert code == 2
    assert "--what-if" in err and "'v999'" in err and "tpu-v3" in err
    assert "Traceback" not in err and not out.exists()


# --- predicted rows -------------------------------------------------------------------------


def test_predicted_rows_are_marked_and_carry_their_kinds_band(tmp_path):
    bands = _bands(tmp_path, gpu=0.2)
    chips = SW.resolve("tpu-v2,v100")
    cfg = {"layers": 2, "nodes": 256, "input": 100, "output": 10, "batch": 128}
    rows = SW.predict_rows([SW.Target("fc", cfg, "fp32", "rmsprop")] * 2, chips, bands)
    assert len(rows) == 2  # the duplicate target predicted once per chip
    tpu, gpu = rows
    for r in rows:
        assert r["kind"] == "predicted" and r["predicted"] is True
        assert r["platform"].endswith("(predicted)") and r["examples_per_s"] > 0
    assert tpu["precision"] == "bf16" and gpu["precision"] == "fp32"  # TPU: no fp32 peak
    assert gpu["band"] == 0.2
    assert gpu["examples_per_s_low"] == pytest.approx(0.8 * gpu["examples_per_s"])
    assert gpu["examples_per_s_high"] == pytest.approx(1.2 * gpu["examples_per_s"])
    assert tpu["band"] is None and tpu["examples_per_s_low"] is None
    assert "not validated" in tpu["band_reason"] and "not validated" in tpu["band_label"]


def test_a_config_the_model_cannot_take_is_a_row_with_a_reason_not_a_number():
    rows = SW.predict_rows(
        [SW.Target("fc", {"layers": -1}, "fp32")], SW.resolve("v100"), EB.Bands({}, "none")
    )
    assert rows[0]["examples_per_s"] is None and rows[0]["reason"].startswith("not predicted")


# --- kept apart -----------------------------------------------------------------------------


def test_predicted_rows_never_enter_the_runs_or_a_measured_statistic(tmp_path):
    """Rows labelled with the measured platform's own name and 1000× its speed: were any of
    them read as measured, the comparison, Table 8, the heat map and every measured finding
    would move."""
    data = _measured()
    here = data.runs["platform"].iloc[0]
    rows = _pred(data, "x", "gpu", lambda r: 1000 * r["examples_per_s"], 0.1)
    for r in rows:
        r["platform"] = here  # the worst case: a predicted row named like the measured platform
    mixed = W.with_predictions(data, rows)
    assert len(mixed.predicted) == len(rows) and mixed.runs.equals(data.runs)
    pd.testing.assert_frame_equal(A.table8(mixed), A.table8(data))
    hm = A.heatmap(mixed, "fc", metric="examples_per_s")
    pd.testing.assert_frame_equal(hm.values, A.heatmap(data, "fc", metric="examples_per_s").values)
    s0 = A.sensitivity(data, "fc", "examples_per_s")
    pd.testing.assert_frame_equal(s0.table, A.sensitivity(mixed, "fc", "examples_per_s").table)
    assert A.evaluate(mixed, include_noisy=True) == A.evaluate(data, include_noisy=True)
    kept, _ = A.frames.without_noisy(mixed)
    assert kept.predicted is mixed.predicted and len(kept.runs) == len(data.runs)


# --- pairs and findings ---------------------------------------------------------------------


def _two_predicted(data, e_gpu, e_tpu, tpu_rate=None):
    """A predicted GPU at the measured speed and a predicted TPU faster at small FC models and
    slower at large ones (seed 000 observation 8's pattern)."""
    small = data.runs["params"].median()
    tpu_rate = tpu_rate or (lambda r: r["examples_per_s"] * (3.0 if r["params"] < small else 0.3))
    rows = _pred(data, "v100-sxm2", "gpu", lambda r: r["examples_per_s"], e_gpu)
    rows += _pred(data, "tpu-v2", "tpu", tpu_rate, e_tpu)
    return W.with_predictions(data, rows)


def test_a_pair_of_predictions_divides_the_band_ends():
    data = _two_predicted(_measured(), 0.1, 0.2)
    c = W.pair(data, SW.label("v100-sxm2"), SW.label("tpu-v2"))
    p = c.pairs
    assert (p["basis"] == W.PREDICTED_VS_PREDICTED).all() and len(p) == 27
    assert p["ci_low"].to_numpy() == pytest.approx((p["speedup"] * 0.8 / 1.1).to_numpy())
    assert p["ci_high"].to_numpy() == pytest.approx((p["speedup"] * 1.2 / 0.9).to_numpy())
    m = W.pair(data, data.runs["platform"].iloc[0], SW.label("tpu-v2")).pairs
    assert (m["basis"] == W.MEASURED_VS_PREDICTED).all() and len(m) == 27


def _finding(fs, fid) -> F.Finding:
    return next(f for f in fs if f.id == fid)


def test_observation_8_gets_a_predicted_verdict_with_its_band():
    data = _two_predicted(_measured(), 0.05, 0.05)
    f = _finding(W.evaluate(data), "fc-size-platform")
    assert f.verdict == F.HOLDS and f.basis == W.PREDICTED_VS_PREDICTED
    assert f.evidence.startswith("predicted (predicted vs predicted")
    assert "±5.0%" in f.evidence and "error band" in f.rule
    measured = _finding(A.evaluate(_measured(), include_noisy=True), "fc-size-platform")
    assert measured.verdict == F.UNTESTABLE and measured.basis == "measured"


def test_a_band_that_makes_the_interval_straddle_gives_inconclusive():
    data = _two_predicted(_measured(), 0.05, 0.9)  # the TPU's ±90% reaches across 1
    f = _finding(W.evaluate(data), "fc-size-platform")
    assert f.verdict == F.INCONCLUSIVE and f.basis == W.PREDICTED_VS_PREDICTED
    assert "±90.0%" in f.evidence


def test_no_band_means_inconclusive_and_says_not_validated():
    data = _two_predicted(_measured(), None, None)
    for fid in ("fc-size-platform", "speedup-batch"):
        f = _finding(W.evaluate(data), fid)
        assert f.verdict == F.INCONCLUSIVE and "not validated" in f.evidence, f


def test_tpu_v3_over_v2_is_judged_against_the_seeds_least_figure():
    base = _measured()

    def v2v3(e, factor):
        rows = _pred(base, "tpu-v2", "tpu", lambda r: r["examples_per_s"], e)
        rows += _pred(base, "tpu-v3", "tpu", lambda r: factor * r["examples_per_s"], e)
        return _finding(W.evaluate(W.with_predictions(base, rows)), "tpu-v3")

    f = v2v3(0.1, 2.0)  # [2·0.9/1.1, 2·1.1/0.9] = [1.64, 2.44] ≥ 1.5
    assert f.verdict == F.HOLDS and f.basis == W.PREDICTED_VS_PREDICTED
    assert f.ci_low == pytest.approx(2 * 0.9 / 1.1) and f.threshold == W.V3_OVER_V2
    assert v2v3(0.1, 1.1).verdict == F.FAILS  # [0.9, 1.34] < 1.5
    assert v2v3(0.5, 2.0).verdict == F.INCONCLUSIVE  # [0.67, 6] straddles
    untested = v2v3(None, 2.0)
    assert untested.verdict == F.INCONCLUSIVE and "not validated" in untested.evidence


def test_tpu_over_gpu_utilization_needs_both_figures():
    base = _measured()
    rows = _pred(base, "v100-sxm2", "gpu", lambda r: r["examples_per_s"], 0.05)
    rows += _pred(base, "tpu-v2", "tpu", lambda r: 2.5 * r["examples_per_s"], 0.05)
    f = _finding(W.evaluate(W.with_predictions(base, rows)), "tpu-vs-gpu")
    # CNN 2.5× [2.26, 2.76] over 2×: 1.25 of the figure (no RNN configs: CNN alone)
    assert f.verdict == F.HOLDS and f.estimate == pytest.approx(1.25)
    assert "cnn 2.50×" in f.evidence


def test_a_measured_verdict_stays_measured():
    """Two measured platforms decide observation 8 themselves: predictions do not replace it."""
    rows = [synth.row("fc", c, 0.2, n_samples=20, seed=i) for i, c in enumerate(synth.grid(FC))]
    small = pd.Series([r["params"] for r in rows]).median()
    rows += [
        synth.row("fc", c, 0.2 * (3 if r["params"] < small else 0.3), n_samples=20, seed=i,
                  platform="Other", hostname="b")
        for i, (c, r) in enumerate(zip(synth.grid(FC), rows, strict=True))
    ]  # fmt: skip
    data = A.from_frames(rows)
    mixed = _two_predicted(data, 0.05, 0.05)
    got = _finding(W.evaluate(mixed), "fc-size-platform")
    want = _finding(A.evaluate(data, include_noisy=True), "fc-size-platform")
    assert got == want and got.basis == "measured"


def test_the_what_if_table_is_labelled_predicted_on_every_row():
    data = _two_predicted(_measured(), 0.1, None)
    t = W.table(data)
    assert len(t) == 4 and (t["predicted"] == "yes").all()
    assert t["platform there"].str.endswith("(predicted)").all()
    assert set(t["basis"]) == {W.MEASURED_VS_PREDICTED}
    gpu = t[t["platform there"] == SW.label("v100-sxm2")]
    assert gpu["speedup there over here"].to_numpy() == pytest.approx(1.0)
    tpu = t[t["platform there"] == SW.label("tpu-v2")]
    assert (
        tpu["speedup band low"].isna().all()
        and tpu["error band"].str.contains("not validated").all()
    )
    t8 = W.table8(data)
    assert any("(predicted)" in c for c in t8.columns)
    assert any("(predicted)" not in c for c in t8.columns)


def test_a_config_measured_at_two_precisions_pairs_once_between_predictions():
    """fp32 and bf16 runs here give two predictions of each config per platform; a GPU–TPU
    pair counts each config once, at the papers' policy (both 16-bit: GPU fp16, TPU bf16)."""
    fp32 = [synth.row("fc", c, 0.2, n_samples=20, seed=i) for i, c in enumerate(synth.grid(FC))]
    bf16 = [synth.row("fc", c, 0.3, n_samples=20, seed=i, precision="bf16")
            for i, c in enumerate(synth.grid(FC))]  # fmt: skip
    data = A.from_frames(fp32 + bf16)
    gpu_prec = {"fp32": "fp32", "bf16": "fp16"}.get
    rows = _pred(data, "v100-sxm2", "gpu", lambda r: 2 * r["examples_per_s"], 0.1,
                 precision=gpu_prec)  # fmt: skip
    rows += _pred(data, "tpu-v2", "tpu", lambda r: 5 * r["examples_per_s"], 0.1)
    data = W.with_predictions(data, rows)
    p = W.pair(data, SW.label("v100-sxm2"), SW.label("tpu-v2")).pairs
    assert len(p) == 18 and p["config_key"].is_unique
    assert set(p["precision_a"]) == {"fp16"} and set(p["precision_b"]) == {"bf16"}
    here = W.pair(data, data.runs["platform"].iloc[0], SW.label("tpu-v2")).pairs
    assert len(here) == 36  # measured vs predicted: per measured precision, as `compare` pairs


def test_figures_draw_predictions_hatched_and_say_predicted():
    from paradnn.plots import whatif as PW

    data = _two_predicted(_measured(), 0.1, None)
    fig = PW.bars(W.table(data))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].endswith("(measured)")
    assert all(lab.count("predicted") == 1 for lab in labels[1:]) and len(labels) == 3
    hatched = [p for p in ax.patches if p.get_hatch()]
    solid = [p for p in ax.patches if not p.get_hatch()]
    assert len(solid) == 2 and len(hatched) == 4  # 2 families: measured solid, 2 × 2 hatched
    assert "predicted" in ax.get_title()
    c = W.pair(data, SW.label("v100-sxm2"), SW.label("tpu-v2"))
    ax = PW.speedup_scatter(c).axes[0]
    assert "predicted" in ax.get_title() and "predicted" in ax.get_ylabel()
    points = [coll for coll in ax.collections if coll.get_offsets().shape[0] == len(c.pairs)]
    assert points and all(coll.get_hatch() for coll in points)


def test_a_chip_without_the_measured_precision_is_predicted_at_its_native_one():
    """Like for like where the chip can (fp32 on a V100), else what it trains in: a TPU bf16,
    a V100 fp16 for a bf16 run (it has no bf16), a Titan X fp32 (its fp16 runs at 1/64)."""
    chips = {c.id: c for c in SW.resolve("tpu-v2,v100,titan-x")}
    assert SW.precision_on(chips["v100-sxm2"], "fp32") == "fp32"
    assert SW.precision_on(chips["tpu-v2"], "fp32") == "bf16"
    assert SW.precision_on(chips["v100-sxm2"], "bf16") == "fp16"
    assert SW.precision_on(chips["titan-x-pascal"], "bf16") == "fp32"
