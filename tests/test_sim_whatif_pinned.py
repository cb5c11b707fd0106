"""sim/whatif.py pinned: the --what-if value's every refusal (one line naming the option, the
item and what is allowed), the chips it resolves to, the precision a chip is predicted at, and
every field of a predicted row — the values the step-time model gives, the band's ends, and
the reason a row has no number."""

from __future__ import annotations

import json
import math

import pytest

from paradnn.errors import ConfigError
from paradnn.platforms import datasheets
from paradnn.sim import errorbands as EB
from paradnn.sim import whatif as SW
from paradnn.sim.steptime import predict_step

CFG = {"layers": 2, "nodes": 64, "input": 100, "output": 10, "batch": 32}
ALLOWED = (
    "comma-separated platform ids ("
    + ", ".join(p.id for p in datasheets.all_platforms())
    + "), a unique prefix of one (v100), or chip .toml files"
)


def _chip_file(tmp_path, name="mychip", peaks="{ fp32 = 1e13 }", suffix=".toml"):
    f = tmp_path / f"{name}{suffix}"
    f.write_text(
        f'[{name}]\nname = "My chip"\nvendor = "me"\nkind = "gpu"\n'
        f"peak_dense = {peaks}\nmem_bandwidth = 5e11\nmemory_bytes = 16e9\n",
        encoding="utf-8",
    )
    return f


def test_label_and_allowed():
    assert SW.label("tpu-v2") == "tpu-v2 (predicted)"
    assert SW.allowed() == ALLOWED


def _refused(value) -> ConfigError:
    with pytest.raises(ConfigError) as e:
        SW.resolve(value)
    assert e.value.field == "--what-if"
    return e.value


def test_resolve_takes_a_list_of_items_each_comma_separated_and_trims_them():
    got = SW.resolve(["tpu-v2, v100", " tpu-v3 "])
    assert [c.id for c in got] == ["tpu-v2", "v100-sxm2", "tpu-v3"]
    assert [c.origin for c in got] == ["datasheet"] * 3
    assert [c.id for c in SW.resolve("v100-sxm2")] == ["v100-sxm2"]


def test_resolve_refuses_nothing_an_empty_item_and_too_many():
    e = _refused([])
    assert e.value == "" and e.allowed == ALLOWED
    e = _refused(["tpu-v2", " "])
    assert e.value == "tpu-v2, " and e.allowed == ALLOWED
    e = _refused("tpu-v2,")
    assert e.value == "tpu-v2," and e.allowed == ALLOWED
    twelve = ",".join(["tpu-v2"] * 12)
    assert [c.id for c in SW.resolve(twelve)] == ["tpu-v2"]  # twelve is the most, duplicates one
    e = _refused(twelve + ",v100")
    assert e.value == twelve + ",v100" and e.allowed == "at most 12 platforms"
    e = _refused(["tpu-v2"] * 13)
    assert e.allowed == "at most 12 platforms"


def test_resolve_refuses_an_unprintable_or_unknown_name_by_itself():
    e = _refused("tpu-v2,x\ty")
    assert e.value == "x\ty" and e.allowed == ALLOWED
    e = _refused("tpu-v2,v999")
    assert e.value == "v999" and e.allowed == ALLOWED
    e = _refused("a100")
    assert e.value == "a100" and e.allowed == datasheets.ambiguous(datasheets.prefixed("a100"))
    e = _refused("nope.toml")
    assert e.value == "nope.toml" and e.allowed == "no such chip file; " + ALLOWED
    e = _refused("a" * 4097)
    assert e.value == "a" * 4097 and e.allowed == ALLOWED


@pytest.mark.parametrize("n", [300, 4096])
def test_a_name_too_long_for_a_file_is_refused_not_a_traceback(n):
    e = _refused("a" * n)  # the OS refuses to look it up (ENAMETOOLONG): no file
    assert e.value == "a" * n and e.allowed == ALLOWED
    name = "a" * (n - 5) + ".toml"
    e = _refused(name)
    assert e.value == name and e.allowed == "no such chip file; " + ALLOWED


def test_resolve_reads_a_chip_file_with_or_without_the_toml_suffix(tmp_path):
    f = _chip_file(tmp_path)
    g = _chip_file(tmp_path, "other", suffix=".chip")
    got = SW.resolve(f"{f},{g},{f}")
    assert [c.id for c in got] == ["mychip", "other"]
    assert got[0].origin == f"file {f}" and got[1].origin == f"file {g}"


def test_precision_on_a_chip_with_no_usable_peak_is_none(tmp_path):
    chip = SW.resolve(str(_chip_file(tmp_path, peaks="{ tf32 = 1e13 }")))[0]
    assert SW.precision_on(chip, "fp32") is None and SW.precision_on(chip, "bf16") is None
    chip = SW.resolve(str(_chip_file(tmp_path, "half", peaks="{ fp16 = 4e13 }")))[0]
    assert SW.precision_on(chip, "fp32") == "fp16" and SW.precision_on(chip, "fp16") == "fp16"
    chip = SW.resolve(str(_chip_file(tmp_path, "wide", peaks="{ fp32 = 4e13, bf16 = 2e13 }")))[0]
    assert SW.precision_on(chip, "fp16") == "fp32" and SW.precision_on(chip, "bf16") == "bf16"


def _bands(tmp_path, **p90) -> EB.Bands:
    doc = {"schema": 1, "bands": {k: {"p90": v, "mdape": v / 2, "n": 9} for k, v in p90.items()}}
    path = tmp_path / "error_bands.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return EB.read(path)


def test_a_predicted_row_holds_the_models_numbers_and_its_kinds_band(tmp_path):
    (chip,) = SW.resolve("v100")
    bands = _bands(tmp_path, gpu=0.25)
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32", "sgd")], [chip], bands)
    st = predict_step("fc", dict(CFG), chip, "fp32", optimizer="sgd")
    band = bands.of("gpu")
    assert row == {
        "kind": "predicted",
        "predicted": True,
        "platform": "v100-sxm2 (predicted)",
        "platform_id": "v100-sxm2",
        "device_kind": "gpu",
        "family": "fc",
        "config": json.dumps(CFG, sort_keys=True, separators=(",", ":")),
        "precision": "fp32",
        "precision_here": "fp32",
        "optimizer": "sgd",
        "band": 0.25,
        "band_reason": None,
        "band_label": band.label(),
        "origin": "datasheet",
        "reason": None,
        "examples_per_s": pytest.approx(st.examples_per_s),
        "examples_per_s_low": pytest.approx(0.75 * st.examples_per_s),
        "examples_per_s_high": pytest.approx(1.25 * st.examples_per_s),
        "step_time_s": pytest.approx(st.predicted_step_s),
        "achieved_flops": pytest.approx(st.flops_per_chip / st.predicted_step_s),
        "utilization": pytest.approx(st.utilization),
        "bottleneck": st.bottleneck,
        "params_source": st.params_source,
    }
    assert row["config"] == '{"batch":32,"input":100,"layers":2,"nodes":64,"output":10}'
    assert row["examples_per_s"] == pytest.approx(CFG["batch"] / row["step_time_s"])


def test_the_default_optimizer_is_the_models_and_an_unvalidated_kind_has_no_band_ends():
    (chip,) = SW.resolve("tpu-v2")
    bands = EB.Bands({}, "no error_bands.json")
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], [chip], bands)
    st = predict_step("fc", dict(CFG), chip, "bf16")
    assert row["optimizer"] is None and row["precision"] == "bf16"
    assert row["examples_per_s"] == pytest.approx(st.examples_per_s)
    sgd = predict_step("fc", dict(CFG), chip, "bf16", optimizer="sgd")
    assert sgd.predicted_step_s != st.predicted_step_s  # the optimizer reaches the model
    assert row["band"] is None and row["examples_per_s_low"] is None
    assert row["examples_per_s_high"] is None
    assert row["band_reason"] == "not validated: no error_bands.json"
    assert row["band_label"] == "tpu: no error band (not validated: no error_bands.json)"


def test_rows_are_per_target_then_chip_and_a_repeated_target_is_predicted_once(tmp_path):
    chips = SW.resolve("v100,tpu-v2")
    bands = _bands(tmp_path, gpu=0.1, tpu=0.3)
    t = SW.Target("fc", CFG, "fp32", "sgd")
    other = {**CFG, "batch": 64}
    targets = [
        t,
        SW.Target("fc", dict(reversed(list(CFG.items()))), "fp32", "sgd"),  # same, other order
        SW.Target("fc", other, "fp32", "sgd"),
        SW.Target("fc", CFG, "bf16", "sgd"),
        SW.Target("fc", CFG, "fp32", "adam"),
        SW.Target("fc", CFG, "fp32", None),
        t,
    ]
    rows = SW.predict_rows(targets, chips, bands)
    got = [(json.loads(r["config"])["batch"], r["precision_here"], r["optimizer"],
            r["platform_id"]) for r in rows]  # fmt: skip
    assert got == [
        (32, "fp32", "sgd", "v100-sxm2"), (32, "fp32", "sgd", "tpu-v2"),
        (64, "fp32", "sgd", "v100-sxm2"), (64, "fp32", "sgd", "tpu-v2"),
        (32, "bf16", "sgd", "v100-sxm2"), (32, "bf16", "sgd", "tpu-v2"),
        (32, "fp32", "adam", "v100-sxm2"), (32, "fp32", "adam", "tpu-v2"),
        (32, "fp32", None, "v100-sxm2"), (32, "fp32", None, "tpu-v2"),
    ]  # fmt: skip
    assert [r["band"] for r in rows[:2]] == [0.1, 0.3]
    assert [r["family"] for r in rows] == ["fc"] * 10
    assert SW.predict_rows([], chips, bands) == []


def test_the_default_bands_are_the_shipped_file():
    (chip,) = SW.resolve("v100")
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], [chip])
    shipped = EB.read().of("gpu")
    assert row["band"] == shipped.p90 and row["band_label"] == shipped.label()


def test_a_chip_with_no_usable_peak_gets_a_row_that_says_so(tmp_path):
    chip = SW.resolve(str(_chip_file(tmp_path, peaks="{ tf32 = 1e13 }")))[0]
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], [chip], EB.Bands({}, "none"))
    assert row["precision"] is None and row["reason"] == "mychip has no fp32, bf16 or fp16 peak"
    for k in ("examples_per_s", "examples_per_s_low", "examples_per_s_high", "step_time_s",
              "achieved_flops", "utilization", "bottleneck", "params_source"):  # fmt: skip
        assert k in row and row[k] is None, k
    assert row["predicted"] is True and row["platform"] == "mychip (predicted)"


@pytest.mark.parametrize("exc", [ConfigError("f", 1, "x"), KeyError("k"), ValueError("v"),
                                 TypeError("t"), ZeroDivisionError("z")])  # fmt: skip
def test_a_config_the_model_refuses_is_a_row_with_the_first_line_of_why(exc, monkeypatch):
    def refuse(*a, **k):
        raise exc

    monkeypatch.setattr(SW, "predict_step", refuse)
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], SW.resolve("v100"),
                             EB.Bands({}, "none"))  # fmt: skip
    assert row["reason"] == f"not predicted: {str(exc).splitlines()[0][:160]}"
    assert row["examples_per_s"] is None and row["bottleneck"] is None
    assert row["precision"] == "fp32"


def test_a_long_refusal_is_cut_to_its_first_line_and_160_characters(monkeypatch):
    def refuse(*a, **k):
        raise ValueError("x" * 170 + "\nsecond line")

    monkeypatch.setattr(SW, "predict_step", refuse)
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], SW.resolve("v100"),
                             EB.Bands({}, "none"))  # fmt: skip
    assert row["reason"] == "not predicted: " + "x" * 160


def test_another_error_is_no_refusal(monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(SW, "predict_step", broken)
    with pytest.raises(RuntimeError):
        SW.predict_rows([SW.Target("fc", CFG, "fp32")], SW.resolve("v100"), EB.Bands({}, "n"))


def test_a_refused_config_from_the_model_itself():
    (row,) = SW.predict_rows([SW.Target("fc", {**CFG, "layers": -1}, "fp32")],
                             SW.resolve("v100"), EB.Bands({}, "none"))  # fmt: skip
    with pytest.raises(ConfigError) as e:
        predict_step("fc", {**CFG, "layers": -1}, SW.resolve("v100")[0], "fp32")
    assert row["reason"] == "not predicted: " + str(e.value).splitlines()[0][:160]


def test_a_zero_step_has_no_achieved_rate_and_a_nan_band_end_is_null(monkeypatch):
    class Step:
        examples_per_s = math.inf
        predicted_step_s = 0.0
        flops_per_chip = 10
        utilization = 0.5
        bottleneck = "compute"
        params_source = "datasheet"

    monkeypatch.setattr(SW, "predict_step", lambda *a, **k: Step())
    bands = EB.Bands({"gpu": EB.Band("gpu", 0.2)}, "test")
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], SW.resolve("v100"), bands)
    assert row["achieved_flops"] is None and row["step_time_s"] == 0.0
    assert row["examples_per_s_low"] is None and row["examples_per_s_high"] is None
    Step.predicted_step_s, Step.examples_per_s = 2.0, 4.0
    (row,) = SW.predict_rows([SW.Target("fc", CFG, "fp32")], SW.resolve("v100"), bands)
    assert row["achieved_flops"] == 5.0
    assert row["examples_per_s_low"] == pytest.approx(3.2)
    assert row["examples_per_s_high"] == pytest.approx(4.8)


def test_one_config_of_two_families_is_two_targets():
    rows = SW.predict_rows([SW.Target("fc", CFG, "fp32"), SW.Target("cnn", CFG, "fp32")],
                           SW.resolve("v100"), EB.Bands({}, "none"))  # fmt: skip
    assert [r["family"] for r in rows] == ["fc", "cnn"]
    assert rows[0]["reason"] is None and rows[1]["reason"].startswith("not predicted: ")
