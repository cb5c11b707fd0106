"""Study axes (paradnn.axes): each declared once, and from that one declaration a sweep-file
key, an override, a bench keyword, a part of the run key and a command-line option."""

from __future__ import annotations

import dataclasses

import pytest

from paradnn import axes, sweep
from paradnn.api import runs as api_runs
from paradnn.config import MODES, RunOptions, RunSpec
from paradnn.errors import ConfigError
from paradnn.sweep import SweepError
from paradnn.sweep.file import TOP_KEYS

RUN = '[[runs]]\nfamily = "fc"\nconfig = {{ layers = {} }}\n'
RUNS = RUN.format(2) + RUN.format(4)
# A value other than the default, for each axis (an integer one: one more than its default).
OTHER = {a.field: next((v for v in (a.allowed() or ()) if v != a.default), None) for a in axes.AXES}
OTHER |= {a.field: a.default + 1 for a in axes.AXES if a.low is not None}
# The values under which an axis measures something (its `when`).
WHERE = {"strategy": {"procs": 2}, "scaling": {"procs": 2}}
WHERE |= {name: {"data_source": "pipeline"} for name in axes.LOADER_SETTINGS}


def parse(text: str):
    return sweep.parse(text, label="s.toml", source="s.toml", name="s")


def test_an_axis_in_the_file_is_expanded_for_every_config():
    s = parse('modes = ["eager", "eager"]\n' + RUNS)  # duplicates kept once
    assert s.axes == (("mode", ("eager",)),)
    specs = s.specs(precisions=["fp32", "bf16"])
    assert len(specs) == 4
    assert all(spec.options.mode == "eager" for spec in specs)
    assert [spec.precision for spec in specs] == ["fp32", "fp32", "bf16", "bf16"]


def test_a_sweep_without_axes_gives_runs_at_the_defaults_with_the_sweeps_timing():
    s = parse("[timing]\nmin_time_s = 0.5\n" + RUNS)
    specs = s.specs()
    assert [spec.options.study() for spec in specs] == [RunOptions().study()] * 2
    assert all(spec.options.timing.min_time_s == 0.5 for spec in specs)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('modes = ["eagr"]', f"s.toml: modes[0] = 'eagr': must be one of {', '.join(MODES)}"),
        ("modes = []", "s.toml: modes = []: must be a non-empty list of mode values"),
        ("modes = { a = 1 }", "s.toml: modes = {'a': 1}: must be a non-empty list of mode values"),
    ],
)
def test_a_bad_axis_value_names_the_key_and_the_choices(line, message):
    with pytest.raises(SweepError) as e:
        parse(line + "\n" + RUNS)
    assert str(e.value) == message


def test_an_override_replaces_the_files_axis_and_is_checked_by_the_axis():
    s = parse('modes = ["eager"]\n' + RUNS)
    with pytest.raises(ConfigError, match="mode = 'x': must be one of eager"):
        s.specs(axes={"mode": ["x"]})
    with pytest.raises(ConfigError, match="axis = 'nope'"):
        s.specs(axes={"nope": ["x"]})
    assert len(s.specs(axes={"mode": ["eager"]})) == 2


def test_bench_refuses_an_unknown_keyword_before_any_work(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(ConfigError, match="bench option = 'colour'"):
        api_runs.bench("fc", {"layers": 1}, db=str(db), colour="red")
    assert not db.exists()


def test_each_axis_is_a_run_option_with_the_same_default_and_a_sweep_key():
    fields = {f.name: f.default for f in dataclasses.fields(RunOptions)}
    for axis in axes.AXES:
        assert fields[axis.field] == axis.default, axis.field
        assert axis.key in TOP_KEYS
    for what in ("field", "key", "flag"):
        names = [getattr(a, what) for a in axes.AXES]
        assert len(set(names)) == len(names), what


@pytest.mark.parametrize("axis", axes.AXES, ids=lambda a: a.field)
def test_an_axis_checks_its_values_in_one_line(axis):
    for value in axis.allowed() or (axis.low, axis.high):
        axis.check(value)
        RunOptions(**{axis.field: value, **WHERE.get(axis.field, {})})
    bad = "nope" if axis.words else (axis.high or 0) + 1 if axis.low is not None else "yes"
    with pytest.raises(ConfigError) as e:
        axis.check(bad)
    assert str(e.value).startswith(f"{axis.field} = ") and "\n" not in str(e.value)


@pytest.mark.parametrize("axis", axes.AXES, ids=lambda a: a.field)
def test_an_axis_enters_the_key_as_declared(axis):
    where = WHERE.get(axis.field, {})
    if axis.field == "precision_policy":
        where = {"precision": "bf16"}  # fp32 has one policy: mixed
    base = RunOptions(**where)
    other = dataclasses.replace(base, **{axis.field: OTHER[axis.field]})
    assert other.key_fields()[axis.field] == OTHER[axis.field]
    assert (axis.field in base.key_fields()) == (axis.keyed == "always")
    if axis.when is not None:  # where it measures nothing, it is not in the key
        assert axis.field not in RunOptions(**{axis.field: OTHER[axis.field]}).key_fields()


def test_energy_enters_the_key_only_when_on():
    assert "energy" not in RunOptions().key_fields()
    assert RunOptions(energy=True).key_fields()["energy"] is True


def test_combinations_with_the_same_effect_are_one_run():
    """A loader's settings without a pipeline, a strategy on one process, fp32's pure
    policy: each is the default in effect, so a sweep plans one run for them."""
    assert axes.in_effect({"loader_workers": 0, "data_source": "host"}) == {
        "loader_workers": 2,
        "data_source": "host",
    }
    assert axes.in_effect({"strategy": "fsdp"}) == {"strategy": "ddp"}
    assert axes.in_effect({"precision": "fp32", "precision_policy": "pure"})[
        "precision_policy"
    ] == ("mixed")
    text = 'procs = [1, 2]\nstrategies = ["ddp", "fsdp"]\n' + RUN.format(2)
    got = [(s.options.procs, s.options.strategy) for s in parse(text).specs()]
    assert got == [(1, "ddp"), (2, "ddp"), (2, "fsdp")]


def test_a_run_description_travels_whole_as_json():
    spec = RunSpec("fc", {"layers": 2}, RunOptions(precision="bf16", mode="compile", threads=3))
    assert RunSpec.from_json(spec.to_json()) == spec


def test_each_axis_is_in_the_sweep_docs():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "sweeps.md").read_text()
    for axis in axes.AXES:
        assert f"`{axis.key}`" in text, f"docs/sweeps.md lacks the sweep key {axis.key}"
