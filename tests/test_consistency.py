"""One source for every printed figure (issue 41): on one synthetic database, every figure that a
CLI command and the report both print is the same number, and printed the same way.

The database: FC, CNN and RNN runs on one calibrated device (ceilings), FC at two precisions,
raw samples (so speedups carry bootstrap CIs), a config re-measured (a good attempt, then a
noisy one), a config whose only attempt is noisy, and a host profile `paradnn calibrate` stored
for the host that measured them. The report is built once with --what-if; the CLI runs in
process (`--format json`), and the report is read from the CSV tables it writes beside the
page (the numbers as numbers) and from its HTML (the numbers as printed).

Checked: `simulate validate` against the report's "Predicted vs measured" (same model, runs,
host profile, per-run predictions and per-family median error); sim/error_bands.json against
the papers section, the what-if section and `simulate step`; `results` against the report's
tables for the same runs (step time, examples/s, achieved FLOP/s, utilization); `compare`
against the report's speedup table and key result."""

from __future__ import annotations

import csv
import json
import re
from html import unescape
from pathlib import Path

import pytest

from paradnn import formatting as U
from paradnn import report
from paradnn.sim import errorbands
from paradnn.store import open_store

import synth
from conftest import export_rows, run_cli

CEILING = 5e11  # FLOP/s, the device's measured fp32 ceiling: utilization = achieved / CEILING
HOST = "host-a"
FC = {"layers": [1, 2], "nodes": [32, 128], "input": [16], "output": [4], "batch": [8, 32]}
CNN = {"blocks": [1], "filters": [4, 8], "image": [16], "output": [3], "batch": [4, 8]}
RNN = {"layers": [1], "embed": [8, 16], "length": [5], "vocab": [7], "batch": [4, 8]}
WHAT_IF = "v100,tpu-v2"


def _runs() -> list[dict]:
    out = []
    for i, (fam, space, util) in enumerate(
        (("fc", FC, 0.1), ("cnn", CNN, 0.05), ("rnn", RNN, 0.02))
    ):
        for j, cfg in enumerate(synth.grid(space)):
            u = util * (1 + 0.1 * j)  # configs differ, so medians and maxima are not ties
            out.append(synth.row(fam, cfg, u, n_samples=20, seed=100 * i + j, hostname=HOST))
    for j, cfg in enumerate(synth.grid(FC)):  # bf16, 1.4× faster: a clear speedup
        r = synth.row("fc", cfg, 0.14 * (1 + 0.1 * j), precision="bf16", n_samples=20,
                      seed=500 + j, hostname=HOST)  # fmt: skip
        out.append(r)
    for r in out:
        r |= {"attempt": 1, "quality": "good", "quality_reasons": [], "converged": True}
    # a config measured again, noisy the second time: its first (good) attempt counts
    again = dict(out[0], attempt=2, quality="noisy", quality_reasons=["load"], converged=False)
    again["step_time_s"] *= 3.0
    again["examples_per_s"] /= 3.0
    again["achieved_flops"] /= 3.0
    # a config whose only attempt is noisy: left out of validate and of the report alike
    cfg = {"layers": 3, "nodes": 64, "input": 16, "output": 4, "batch": 8}
    lone = synth.row("fc", cfg, 0.1, n_samples=20, seed=900, hostname=HOST)
    lone |= {"attempt": 1, "quality": "noisy", "quality_reasons": ["load"], "converged": False}
    out += [again, lone]
    for r in out:
        r["utilization_measured"] = r["achieved_flops"] / CEILING  # as a calibrated run stores
    return out


PROFILE = {
    "device": "cpu", "device_type": "cpu", "device_name": "SynthCPU", "host": "Synth CPU",
    "hostname": HOST, "fingerprint": "f", "forward_op_s": 40e-6, "autograd_node_s": 60e-6,
    "optimizer_loop_s": 9e-6, "optimizer_foreach_s": 3e-6, "optimizer_fused_s": 1e-6,
    "optimizer_step_s": 80e-6, "sync_s": 0.0, "kernel_launch_s": None, "quality": "good",
    "quality_reasons": [], "threads": 2, "measured_at": "2026-11-20T00:00:00", "status": "ok",
}  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("consistency")
    ceilings = [
        dict(device="cpu", device_name="SynthCPU", fingerprint="f", kind=k, precision=p,
             value=v, unit=u, measured_at="2026-11-21T00:00:00")
        for k, p, v, u in (("matmul", "fp32", CEILING, "FLOP/s"), ("copy", None, 2e10, "B/s"))
    ]  # fmt: skip
    db = synth.write_db(tmp / "c.db", _runs(), ceilings=ceilings)
    with open_store(db) as store:
        store.insert_rows("host_profile", [PROFILE])
    rep = report.build([db], tmp / "out", what_if=[WHAT_IF])
    return db, rep


def _csv(rep, name: str) -> list[dict]:
    with (rep.html.parent / "tables" / f"{name}.csv").open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _section(rep, sid: str):
    return next(s for s in rep.sections if s.id == sid)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def _cli_json(capsys, *args):
    code, out, err = run_cli(capsys, *args, "--format", "json")
    assert code == 0, err
    return out


def _float(v: str) -> float:
    return float(v)


def _key(cfg) -> str:
    return json.dumps(json.loads(cfg) if isinstance(cfg, str) else cfg, sort_keys=True)


# -- the model's error against these runs: one computation, one model, one host profile -----


def test_simulate_validate_and_the_reports_prediction_section_are_one_computation(built, capsys):
    db, rep = built
    got = json.loads(_cli_json(capsys, "simulate", "validate", "--db", db))
    cli_rows, cli_summary = got["rows"], got["summary"]
    rows, summary = _csv(rep, "predicted-vs-measured"), _csv(rep, "prediction-error")
    # the same runs: each config's chosen attempt, the noisy-only config left out of both, and
    # bf16 (the calibrated chip has no bf16 ceiling) too
    assert len(cli_rows) == len(rows) == 8 + 4 + 4
    assert {r["model"] for r in cli_rows} == {r["model"] for r in rows} == {"step"}
    by_run = {(r["family"], _key(r["config"]), r["precision"]): r for r in rows}
    for r in cli_rows:
        mine = by_run[(r["family"], _key(r["config"]), r["precision"])]
        assert _float(mine["measured_s"]) == pytest.approx(r["measured_s"], rel=1e-12)
        assert _float(mine["predicted_s"]) == pytest.approx(r["predicted_s"], rel=1e-12)
        assert mine["host_profile"] == r["host_profile"]
    # the host profile calibrate stored for the runs' host, in both
    assert {r["host_profile"] for r in cli_rows} == {r["host_profile"] for r in rows}
    assert all("host_profile row 1 of host-a" in r["host_profile"] for r in cli_rows)
    # the per-family median error: equal numbers, printed alike (units.error) in both
    assert [r["family"] for r in cli_summary] == [r["family"] for r in summary] == [
        "cnn", "fc", "rnn"
    ]  # fmt: skip
    html = _text("".join(h for _, h in _section(rep, "prediction").tables))
    code, table, err = run_cli(capsys, "simulate", "validate", "--db", db)
    assert code == 0, err
    for c, r in zip(cli_summary, summary, strict=True):
        assert _float(r["mdape"]) == pytest.approx(c["mdape"], rel=1e-12)
        assert r["model"] == c["model"] == "step"
        shown = U.error(c["mdape"])
        assert shown in html and shown in table, shown
    assert "(step model)" in table and "host_profile row 1 of host-a" in table
    notes = " ".join(_section(rep, "prediction").notes)
    assert "step-time model" in notes and "host_profile row 1 of host-a" in notes


def test_the_stored_host_profile_changes_the_prediction_it_is_not_decoration(built, capsys):
    """Without the stored profile (the defaults) validate predicts other step times: the
    equality above is the profile's, not two default runs agreeing."""
    db, _ = built
    from paradnn.api import simulate_validate
    from paradnn.sim import fidelity

    with open_store(db, readonly=True) as store:
        frame, ceilings = store.frame(), store.rows("ceilings")
    plain, _ = fidelity.validate_frame(frame, ceilings)  # no host profiles given: defaults
    stored = simulate_validate(db).rows
    assert [r["predicted_s"] for r in stored] != pytest.approx(plain["predicted_s"].tolist())


# -- the validated error bands: the file, the report's two sections and the CLI ---------------


def test_error_bands_are_the_files_numbers_everywhere_they_are_printed(built, capsys):
    _, rep = built
    doc = json.loads(errorbands.PATH.read_text(encoding="utf-8"))["bands"]
    want = {k: f"±{100 * b['p90']:.1f}%" for k, b in doc.items()}  # fractions in the file
    median = {k: f"median {100 * b['mdape']:.1f}%" for k, b in doc.items()}
    # the papers section: every predicted claim's band, and the note naming all bands
    papers = _section(rep, "papers")
    claims = _csv(rep, "paper-claims")
    predicted = [r for r in claims if r["source"] == "predicted" and r["error band"]]
    assert predicted
    for r in predicted:
        for kind, text in want.items():
            if r["error band"].startswith(kind) or f"; {kind}:" in r["error band"]:
                assert f"{kind}: {text} (p90; {median[kind]}" in r["error band"], r
    note = next(n for n in papers.notes if n.startswith("Error band"))
    assert all(f"{k}: {t}" in note for k, t in want.items())
    # the what-if section: its notes, its tables' band column, the bars' caption
    whatif = _section(rep, "whatif")
    notes = " ".join(whatif.notes)
    for kind in ("gpu", "tpu"):
        assert f"{kind} model error band {want[kind]}" in notes
    bands = {r["error band"] for r in _csv(rep, "whatif")}
    assert bands == {errorbands.read().of(k).label() for k in ("gpu", "tpu")}
    bars = next(f for f in whatif.figures if f.name == "whatif-bars")
    assert f"gpu {want['gpu']}, tpu {want['tpu']}" in bars.caption
    # the CLI: `simulate step` carries the same band per kind, and says it under its table
    for platform, kind in (("v100-sxm2", "gpu"), ("tpu-v2", "tpu")):
        (row,) = json.loads(_cli_json(capsys, "simulate", "step", "fc", "--platform", platform))
        assert row["band"] == doc[kind]["p90"] and row["model"] == "step"
        assert row["band_label"] == errorbands.read().of(kind).label()
        code, out, _ = run_cli(capsys, "simulate", "step", "fc", "--platform", platform)
        assert code == 0 and f"{kind} model error band {want[kind]}" in " ".join(out.split())
    # nowhere a fraction printed as a percent (issue 41: 0.614 shown as '1 %')
    page = rep.html.read_text(encoding="utf-8")
    for b in doc.values():
        for v in (b["p90"], b["mdape"]):
            assert f" {v:.0f} %" not in page and f" {v:.1f}%" not in page


# -- measured numbers: `results` and the report's tables for the same runs ---------------------


def test_results_and_the_reports_tables_print_the_same_measurements(built, capsys):
    db, rep = built
    runs = export_rows(_cli_json(capsys, "results", "--db", db, "--chosen", "--status", "ok"))
    good = [r for r in runs if r["quality"] == "good"]
    assert len(good) == 24
    # step time: the prediction section's measured column is each run's stored step time
    measured = {
        (r["family"], _key(r["config"]), r["precision"]): _float(r["measured_s"])
        for r in _csv(rep, "predicted-vs-measured")
    }
    fp32 = [r for r in good if r["precision"] == "fp32"]  # the chip has no bf16 ceiling
    assert len(measured) == len(fp32) == 16
    for r in fp32:
        assert measured[(r["family"], _key(r["config"]), r["precision"])] == r["step_time_s"]
    # examples/s: Table 8's layout holds one run per model, platform and precision
    t8 = {row["model"]: row for row in _csv(rep, "table8")}
    for r in good:
        label = f"{r['family']} " + " ".join(
            f"{k}={r['config'][k]}"
            for k in ["batch", *sorted(k for k in r["config"] if k != "batch")]
        )
        cell = t8[label][f"SynthCPU {r['precision']}"]
        assert _float(cell) == pytest.approx(r["examples_per_s"], rel=1e-12), label
    # achieved FLOP/s per run: the roofline points
    points = {
        (p["family"], _key(p["config_key"]), p["precision"]): _float(p["achieved_flops"])
        for p in _csv(rep, "roofline-points")
    }
    for r in good:
        got = points[(r["family"], _key(r["config"]), r["precision"])]
        assert got == pytest.approx(r["achieved_flops"], rel=1e-12)
    # utilization: the summary's maximum per family and precision, and the key result's best
    summary = {(s["family"], s["precision"]): s for s in _csv(rep, "summary")}
    for (fam, prec), s in summary.items():
        mine = [r["utilization_measured"] for r in good if (r["family"], r["precision"]) ==
                (fam, prec)]  # fmt: skip
        assert _float(s["max_util_measured"]) == pytest.approx(max(mine), rel=1e-12)
    best = max(good, key=lambda r: r["utilization_measured"])
    page = _text(rep.html.read_text(encoding="utf-8"))
    shown = U.pct(best["utilization_measured"])
    assert f"{shown} of the measured ceiling" in page
    code, table, err = run_cli(capsys, "results", "--db", db, "--chosen")
    assert code == 0 and shown in table, err


# -- compare and the report's speedup table --------------------------------------------------


def test_compare_and_the_reports_speedup_table_agree(built, capsys):
    db, rep = built
    got = json.loads(
        _cli_json(capsys, "compare", "--db", db, "--by", "precision", "--a", "fp32", "--b", "bf16")
    )
    mine = {r["family"]: r for r in _csv(rep, "speedup-precision-bf16-over-fp32")}
    assert got["summary"]
    for c in got["summary"]:
        r = mine[c["family"]]
        for k in ("geomean", "geomean_ci_low", "geomean_ci_high"):
            assert _float(r[k]) == pytest.approx(c[k], rel=1e-12), (c["family"], k)
        assert r["geomean_call"] == c["geomean_call"] and int(r["n"]) == c["n"]
    overall = next(c for c in got["summary"] if c["family"] == "all")
    assert overall["geomean_call"] == "faster"
    page = _text(rep.html.read_text(encoding="utf-8"))
    ci = U.times_range(overall["geomean_ci_low"], overall["geomean_ci_high"])
    assert f"{U.times(overall['geomean'])} geometric mean, 95% CI {ci}" in page


def test_no_band_is_called_a_ci_in_the_what_if_tables(built):
    _, rep = built
    whatif = _section(rep, "whatif")
    for caption, html in whatif.tables:
        head = html.partition("</thead>")[0]
        assert "CI" not in _text(head), caption
    pair = next(p for p in rep.tables if p.name.startswith("whatif-tpu-v2-predicted--over-v100"))
    with Path(pair).open(encoding="utf-8") as fh:
        cols = next(csv.reader(fh))
    assert "geomean_band_low" in cols and "geomean_ci_low" not in cols and "pair" in cols
