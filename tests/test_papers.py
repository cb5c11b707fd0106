"""The seeds' claims file, "The papers beside paradnn" (measured here, predicted, cannot
compute: each row says which) and the `paper-sample` preset that feeds it."""

from __future__ import annotations

import collections
import csv
import json
import re

import pytest

from paradnn import analysis as A
from paradnn import families, presets
from paradnn.analysis import papers as measured_here
from paradnn.errors import ConfigError
from paradnn.report.section import Inputs
from paradnn.report.sections import papers as section
from paradnn.report.writer import Writer
from paradnn.sim import papers

import synth


def test_every_claim_has_its_source_and_number():
    claims = papers.load()
    assert len({c.id for c in claims}) == len(claims)
    assert {c.seed for c in claims} == {"000", "001", "002"}
    assert set(papers.seeds()) == {"000", "001", "002"}
    for c in claims:
        assert c.where and c.line >= 1 and c.quote and c.unit and c.workload, c.id
        assert isinstance(c.value, float), c.id
        if c.compute["kind"] == "none":
            assert c.compute["reason"], c.id
        elif c.quantity != "op_speedup":  # Fig. 6's "triple speedup" is a word, not a number
            numbers = re.findall(r"\d+(?:\.\d+)?", c.quote.replace(",", ""))
            assert c.value in {float(n) for n in numbers}, c.id
    table8 = [c for c in claims if c.id.startswith("s002-t8-")]
    assert len(table8) == 98  # the 98 numbers of Table 8's PERF rows (OOM and '-' left out)
    by_kind = collections.Counter(c.compute["kind"] for c in claims)
    assert by_kind["none"] >= 5 and by_kind["throughput"] == 98


@pytest.mark.parametrize(
    "text, field",
    [
        ('[[claim]]\nid = "x"\nseed = "000"\n', "claim[0].where"),
        (
            '[[claim]]\nid = "x"\nseed = "000"\nwhere = "Fig. 1"\nquote = "q 1"\nquantity = "q"\n'
            'unit = "x"\nworkload = "w"\nline = 1\nvalue = "1"\ncompute = { kind = "none", '
            'reason = "r" }\n',
            "x.value",
        ),
        (
            '[[claim]]\nid = "x"\nseed = "000"\nwhere = "Fig. 1"\nquote = "q 1"\nquantity = "q"\n'
            'unit = "x"\nworkload = "w"\nline = 1\nvalue = 1\ncompute = { kind = "none" }\n',
            "x.compute.reason",
        ),
        (
            '[[claim]]\nid = "x"\nseed = "000"\nwhere = "Fig. 1"\nquote = "q 1"\nquantity = "q"\n'
            'unit = "x"\nworkload = "w"\nline = 1\nvalue = 1\ncompute = { kind = "guess" }\n',
            "x.compute.kind",
        ),
    ],
)
def test_a_malformed_claim_is_refused_by_name(text, field):
    with pytest.raises(ConfigError) as e:
        papers.load(text)
    assert e.value.field == field


CLAIMS = """
[[claim]]
id = "util-cpu"
seed = "000"
where = "Fig. 11"
line = 1
quote = "CPU has up to 46% utilization."
quantity = "max_utilization"
unit = "%"
platforms = ["CPU"]
workload = "RNN"
value = 46.0
compute = { kind = "max_util", family = "rnn", platform = "skylake-n1-32", precision = "fp32" }
measure = { kind = "max_util", family = "rnn", device = "cpu" }

[[claim]]
id = "util-tpu"
seed = "000"
where = "Fig. 11"
line = 1
quote = "TPU has less than 26% FLOPS utilization"
quantity = "max_utilization"
unit = "%"
platforms = ["TPU v2 board"]
workload = "RNN"
value = 26.0
measure = { kind = "max_util", family = "rnn", device = "tpu" }
[claim.compute]
kind = "max_util"
family = "rnn"
platform = "tpu-v2"
precision = "bf16"
chips = 4
topology = "torus2d:2x2"

[[claim]]
id = "infeed"
seed = "000"
where = "§4.4"
line = 1
quote = "at least 34%"
quantity = "speedup"
unit = "%"
workload = "ResNet-50"
value = 34.0
compute = { kind = "none", reason = "no host model" }
"""
RNN = {"layers": [1], "embed": [100], "length": [10], "vocab": [32], "batch": [16, 64]}


def _data(util=0.3):
    rows = synth.rows(
        "rnn", RNN, lambda c: util * c["batch"] / 64, device="cpu", utilization_datasheet=None
    )
    for r in rows:  # the seeds' utilization: achieved ÷ datasheet peak
        r["utilization_datasheet"] = r["achieved_flops"] / synth.PEAK
    return A.from_frames(rows)


def test_measured_here_predicted_and_cannot_compute_rows_are_marked():
    data = _data(0.3)
    configs = {"rnn": [{"layers": 1, "embed": 100, "length": 10, "vocab": 32, "batch": 64}]}
    rows = papers.compare(
        papers.load(CLAIMS), measured=lambda c: section.measure(data, c), configs=configs
    )
    got = {r.claim.id: r for r in rows}
    cpu, tpu, infeed = got["util-cpu"], got["util-tpu"], got["infeed"]
    # measured here: the databases' maximum (30 %), not the model's number for the paper's CPU
    assert cpu.paradnn.source == "measured here"
    assert cpu.paradnn.value == pytest.approx(30.0)
    assert cpu.predicted.source == "predicted" and cpu.predicted.value != cpu.paradnn.value
    assert cpu.ratio == pytest.approx(30.0 / 46.0)
    # no TPU here: the prediction, marked so, with the reason it was not measured
    assert tpu.paradnn.source == "predicted" and tpu.paradnn.devices == ("tpu",)
    assert 0 < tpu.paradnn.value <= 100
    assert "not measured here: no rnn runs on a TPU" in tpu.paradnn.basis
    assert infeed.paradnn.value is None and infeed.paradnn.source == "cannot compute"
    assert infeed.paradnn.basis == "no host model" and infeed.ratio is None
    recs = {r["claim"]: r for r in papers.rows_frame_records(rows)}
    assert recs["util-tpu"]["error band"] == papers.band_text(["tpu"])
    assert recs["util-tpu"]["error band"].startswith("tpu: ")
    assert recs["util-cpu"]["error band"] == ""  # a measured number carries no model band
    assert "predicted for the paper's platform" in recs["util-cpu"]["basis"]


def test_error_bands_are_read_per_device_kind_as_fractions(tmp_path):
    from paradnn.sim import errorbands

    path = tmp_path / "error_bands.json"
    bands = {"gpu": {"mdape": 0.123, "p90": 0.40, "n": 86}}
    path.write_text(json.dumps({"schema": 1, "bands": bands}), encoding="utf-8")
    text = papers.band_text(["gpu", "tpu"], errorbands.read(path))
    assert text == "gpu: ±40.0% (p90; median 12.3%, n = 86); tpu: not validated"
    assert papers.band_text([]) == ""


def test_the_shipped_bands_are_printed_as_the_file_holds_them():
    """The report's papers section once printed 0.614 as '1 %': the default reader is the
    shipped file, and its fractions come out ×100."""
    from paradnn.sim import errorbands

    tpu = errorbands.read().of("tpu")
    assert tpu.known and f"±{100 * tpu.p90:.1f}%" in papers.band_text(["tpu"])


def test_measured_throughput_matches_config_device_and_precision():
    rows = [
        synth.row("resnet50", {"batch": 64}, 0.2, device="cpu"),
        synth.row("resnet50", {"batch": 128}, 0.9, device="cpu"),
        synth.row("resnet50", {"batch": 64}, 0.9, device="cuda:0", platform="SynthGPU"),
    ]
    data = A.from_frames(rows)
    v, basis = measured_here.throughput(data, "resnet50", {"batch": 64}, "cpu", "fp32")
    assert v == pytest.approx(rows[0]["examples_per_s"]) and "SynthCPU" in basis
    v, why = measured_here.throughput(data, "resnet50", {"batch": 64}, "tpu", "bf16")
    assert v is None and "TPU" in why
    assert measured_here.device_kind("cuda:1") == "gpu"
    assert measured_here.device_kind("tpu:0") == "tpu"
    assert measured_here.device_kind(None) is None


def test_section_renders_every_claim_with_its_source(tmp_path):
    data = _data(0.3)
    w = Writer(tmp_path)
    c = section.SECTION.build(data, w)
    assert c.empty is None and len(c.tables) == 2
    with open(tmp_path / "tables" / "paper-claims.csv", newline="") as f:
        recs = list(csv.DictReader(f))
    assert len(recs) == len(papers.load())  # no claim silently dropped
    sources = collections.Counter(r["source"] for r in recs)
    assert sources["measured here"] == 1  # the RNN-on-CPU maximum from the database
    assert sources["predicted"] >= 100 and sources["cannot compute"] >= 5
    for r in recs:
        assert r["paper"] and r["quote"] and r["basis"], r["claim"]
        if r["source"] == "predicted":
            assert r["paradnn"] and r["error band"], r["claim"]
        if r["source"] == "cannot compute":
            assert not r["paradnn"] and not r["paradnn_over_paper"], r["claim"]
    html = "".join(t[1] for t in c.tables)
    assert "predicted" in html and "measured here" in html and "cannot compute" in html
    assert any("claims:" in n for n in c.notes)


def test_section_inputs_are_the_kept_runs(tmp_path):
    kept, every = _data(0.3), _data(0.6)
    c = section.SECTION.fill
    from paradnn.report.section import Content

    out = Content("papers", "t")
    c(Inputs(kept, every), Writer(tmp_path), out)
    with open(tmp_path / "tables" / "paper-claims.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["claim"] == "s000-fig11-rnn-cpu-max-util")
    assert float(row["paradnn"]) == pytest.approx(30.0)  # noisy runs left out stay out


# --- the paper-sample preset --------------------------------------------------------------------

# Estimate of one config's wall time on a 2-core CPU under the preset's quick timing: ~1 s of
# worker set-up, then ≥5 warm-up steps and ≥10 timed samples (≈35 steps with the CI target),
# each step = analytic FLOPs ÷ the sustained rate `paradnn run --preset quick` measured here
# (FC/RNN ≈ 40–100 GFLOP/s, CNN 1–11 GFLOP/s on small images): a deliberately low rate per family.
RATE = {"fc": 40e9, "cnn": 8e9, "rnn": 30e9}


def test_paper_sample_is_a_valid_spread_sized_for_half_an_hour():
    sweep = presets.get("paper-sample")
    specs = list(sweep.specs())
    assert 150 <= len(specs) <= 400
    kinds = collections.Counter(
        (s.family, s.config.get("block") or s.config.get("cell")) for s in specs
    )
    assert {f for f, _ in kinds} == {"fc", "cnn", "rnn"}
    assert {k for f, k in kinds if f == "cnn"} == {"residual", "bottleneck"}
    assert {k for f, k in kinds if f == "rnn"} == {"rnn", "lstm", "gru"}
    seconds = 0.0
    for s in specs:
        fam = families.get(s.family)
        cfg = fam.config(s.config)  # every config is valid
        flops = fam.train_flops(cfg)
        assert flops <= 1e10
        seconds += 1.0 + 35 * flops / RATE[s.family]
    assert 15 * 60 <= seconds <= 35 * 60, seconds / 60
    table2 = {
        "fc": ("layers", "nodes", "input", "output", "batch"),
        "cnn": ("blocks", "filters", "image", "output", "batch", "block"),
        "rnn": ("layers", "embed", "length", "vocab", "batch", "cell"),
    }
    for fam, axes in table2.items():  # every Table 2 axis varies in the sample
        cfgs = [s.config for s in specs if s.family == fam]
        for key in axes:
            assert len({c[key] for c in cfgs}) >= 2, (fam, key)
