"""sim/errorbands.py: the step-time model's validated error per device kind, read from a file
benchmarks/sim_validation.py writes; a missing file or kind is "not validated", never a band."""

from __future__ import annotations

import json
import math

import pytest

from paradnn.sim import errorbands as EB


def _write(tmp_path, doc) -> str:
    p = tmp_path / "error_bands.json"
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(p)


GOOD = {
    "schema": 1,
    "generated_by": "benchmarks/sim_validation.py",
    "generated_at": "2026-11-26T00:00:00Z",
    "bands": {
        "gpu": {"mdape": 0.11, "p90": 0.25, "n": 412, "dataset": "public A100", "method": "held"},
        "tpu": {"mdape": 0.6, "p90": 1.4, "n": 9, "dataset": "seed 002 Table 8", "method": "x"},
    },
}


def test_a_validated_kind_has_its_p90_as_band_and_says_where_it_came_from(tmp_path):
    bands = EB.read(_write(tmp_path, GOOD))
    g = bands.of("gpu")
    assert g.known and g.p90 == 0.25 and g.mdape == 0.11 and g.n == 412
    assert g.throughput(100.0) == pytest.approx((75.0, 125.0))
    assert "±25.0%" in g.label() and "412" in g.label() and "public A100" in g.label()
    assert g.short() == "gpu: ±25.0% (p90; median 11.0%, n = 412)"
    assert bands.generated_at == "2026-11-26T00:00:00Z"


def test_a_band_wider_than_the_value_clips_its_low_end_at_zero(tmp_path):
    lo, hi = EB.read(_write(tmp_path, GOOD)).of("tpu").throughput(10.0)
    assert lo == 0.0 and hi == pytest.approx(24.0)


def test_a_kind_the_file_lacks_is_not_validated_and_has_no_interval(tmp_path):
    cpu = EB.read(_write(tmp_path, GOOD)).of("cpu")
    assert not cpu.known and cpu.p90 is None
    assert cpu.reason.startswith(EB.NOT_VALIDATED) and "'cpu'" in cpu.reason
    assert all(math.isnan(v) for v in cpu.throughput(5.0))
    assert "not validated" in cpu.label() and cpu.short() == "cpu: not validated"


@pytest.mark.parametrize(
    "doc, why",
    [
        (None, "no error_bands.json"),
        ("{not json", "JSONDecodeError"),
        ({"schema": 2, "bands": {}}, "schema 2"),
        ([1, 2], "schema 'list'"),
    ],
)
def test_a_missing_or_unusable_file_gives_no_band_for_any_kind(tmp_path, doc, why):
    path = tmp_path / "error_bands.json" if doc is None else _write(tmp_path, doc)
    bands = EB.read(path)
    assert bands.bands == {} and why in bands.source
    for kind in EB.KINDS:
        b = bands.of(kind)
        assert b.p90 is None and b.reason.startswith(EB.NOT_VALIDATED), b


@pytest.mark.parametrize("p90", [-0.1, "0.2", None, float("nan"), True])
def test_an_unusable_p90_is_not_a_band(tmp_path, p90):
    doc = {"schema": 1, "bands": {"gpu": {"p90": p90, "mdape": 0.1, "n": 3}}}
    text = json.dumps(doc).replace("NaN", "NaN")  # json writes nan as NaN; read back as nan
    g = EB.read(_write(tmp_path, text)).of("gpu")
    assert g.p90 is None and "not validated" in g.reason and "p90" in g.reason


def test_the_default_path_is_beside_the_module():
    assert EB.PATH.name == "error_bands.json" and EB.PATH.parent.name == "sim"


def test_a_band_is_printed_from_its_fraction_once_as_a_percentage(tmp_path):
    """The stored figures are fractions (0.614 = 61.4 %): every wording of a band reads them
    through `units.error`/`units.band`, never as percents already (issue 41: '1 %' for 0.614)."""
    doc = {"schema": 1, "bands": {"tpu": {"mdape": 0.614, "p90": 0.813, "n": 14}}}
    bands = EB.read(_write(tmp_path, doc))
    assert bands.short(["tpu", "cpu", "tpu"]) == (
        "tpu: ±81.3% (p90; median 61.4%, n = 14); cpu: not validated"
    )
    assert (
        bands.of("tpu").label() == "tpu model error band ±81.3% (p90 of 14 validated predictions)"
    )
