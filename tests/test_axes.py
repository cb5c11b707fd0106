"""Study axes (paradnn.config.AXES): one mechanism for every study's option (mode, ...) as a
sweep-file key, an override, a bench keyword and a part of the run key."""

from __future__ import annotations

import pytest

from paradnn import config, sweep
from paradnn.api import runs as api_runs
from paradnn.config import MODES, RunOptions
from paradnn.errors import ConfigError
from paradnn.sweep import SweepError

RUN = '[[runs]]\nfamily = "fc"\nconfig = {{ layers = {} }}\n'
RUNS = RUN.format(2) + RUN.format(4)


def parse(text: str):
    return sweep.parse(text, label="s.toml", source="s.toml", name="s")


def test_an_axis_in_the_file_is_expanded_for_every_config():
    s = parse('modes = ["eager", "eager"]\n' + RUNS)  # duplicates kept once
    assert s.axes == (("mode", ("eager",)),)
    specs = s.specs(precisions=["fp32", "bf16"])
    assert len(specs) == 4
    assert all(spec.options == {"mode": "eager"} for spec in specs)
    assert [spec.precision for spec in specs] == ["fp32", "fp32", "bf16", "bf16"]


def test_a_sweep_without_axes_gives_runs_without_options():
    specs = parse(RUNS).specs()
    assert [spec.options for spec in specs] == [{}, {}]


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


def test_an_override_replaces_the_files_axis_and_is_checked_by_run_options():
    s = parse('modes = ["eager"]\n' + RUNS)
    with pytest.raises(ConfigError, match="mode = 'x': must be one of eager"):
        s.specs(axes={"mode": ["x"]})
    with pytest.raises(ConfigError, match="axis = 'nope'"):
        s.specs(axes={"nope": ["x"]})
    assert len(s.specs(axes={"mode": ["eager"]})) == 2


def test_bench_refuses_an_unknown_study_keyword_before_any_work(tmp_path):
    db = tmp_path / "r.db"
    with pytest.raises(ConfigError, match="bench option = 'colour'"):
        api_runs.bench("fc", {"layers": 1}, db=str(db), colour="red")
    assert not db.exists()


def test_a_study_field_enters_the_key_only_when_set(monkeypatch):
    monkeypatch.setattr(config, "KEYED_WHEN_SET", ("seed",))
    assert "seed" not in RunOptions().key_fields()
    assert RunOptions(seed=3).key_fields()["seed"] == 3
    assert RunOptions().key_fields()["mode"] == "eager"  # mode is always in the key
    assert RunOptions().axis_values()["mode"] == "eager"  # one entry per study axis
