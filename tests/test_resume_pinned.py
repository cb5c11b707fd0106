"""What a resumed sweep says it keeps, pinned whole (issue 46, item 6): the settings a run
records, the flattened differences in their order, each note's exact words with one, three
and more configurations, and the cases that say nothing."""

from __future__ import annotations

import dataclasses

from paradnn.runner import resume


@dataclasses.dataclass(frozen=True)
class Timing:
    min_time_s: float = 1.0
    max_samples: int = 50


@dataclasses.dataclass(frozen=True)
class Options:
    timing: Timing
    energy: object
    profile: object


def test_measured_with_records_timing_energy_and_profile_as_plain_values():
    got = resume.measured_with(Options(Timing(0.5, 9), energy=1, profile=""))
    assert got == {
        "timing": {"min_time_s": 0.5, "max_samples": 9},
        "energy": True,
        "profile": False,
    }
    other = resume.measured_with(Options(Timing(), energy=None, profile="yes"))
    assert other["energy"] is False and other["profile"] is True


NOW = {"timing": {"min_time_s": 1.0, "max_samples": 50, "deep": {"x": 1}}, "energy": True}


def test_differences_are_flattened_sorted_and_read_the_current_settings():
    was = {"timing": {"min_time_s": 0.5, "max_samples": 50, "deep": {"x": 2}}, "energy": False}
    assert resume.differences(was, NOW) == [
        "energy False → True",
        "timing.deep.x 2 → 1",
        "timing.min_time_s 0.5 → 1.0",
    ]
    # a setting the stored run lacks was None; one it had that is gone now is not compared
    assert resume.differences({"timing": {"max_samples": 50}, "gone": 3}, NOW) == [
        "energy None → True",
        "timing.deep.x None → 1",
        "timing.min_time_s None → 1.0",
    ]
    assert resume.differences({"label": "a"}, {"label": "b"}) == ["label 'a' → 'b'"]
    assert resume.differences(NOW, NOW) == []
    for unknown in (None, [("energy", True)], "energy"):
        assert resume.differences(unknown, NOW) == []


def kept(n: int, sweep: str | None, settings, stem: str = "fc nodes=") -> list[resume.Kept]:
    return [resume.Kept(f"{stem}{i}", sweep, settings) for i in range(n)]


WAS = {**NOW, "energy": False}


def test_one_changed_configuration_is_named_in_the_singular():
    notes = resume.kept_notes(kept(1, "s", WAS), NOW, "s")
    assert notes == [
        "kept 1 stored configuration measured with other settings (energy False → True): "
        "fc nodes=0; --remeasure-changed measures them again with these (new attempts; each "
        "config's best good attempt counts)"
    ]


def test_three_are_named_and_more_are_counted_with_every_difference_once():
    other = {**NOW, "timing": {**NOW["timing"], "max_samples": 10}}
    three = resume.kept_notes(kept(2, "s", WAS) + kept(1, "s", other, "cnn "), NOW, "s")
    assert three == [
        "kept 3 stored configurations measured with other settings (energy False → True, "
        "timing.max_samples 10 → 50): fc nodes=0; fc nodes=1; cnn 0; --remeasure-changed "
        "measures them again with these (new attempts; each config's best good attempt counts)"
    ]
    five = resume.kept_notes(kept(5, "s", WAS), NOW, "s")
    assert five[0].startswith(
        "kept 5 stored configurations measured with other settings (energy False → True): "
        "fc nodes=0; fc nodes=1; fc nodes=2; and 2 more; --remeasure"
    )
    four = resume.kept_notes(kept(4, "s", WAS), NOW, "s")
    assert "fc nodes=2; and 1 more; --remeasure" in four[0]


def test_other_sweep_names_get_a_note_each_in_name_order():
    ks = kept(1, "zeta", NOW) + kept(4, "alpha", NOW, "rnn ") + kept(2, "s", NOW)
    ks += kept(1, None, NOW, "nameless ")
    assert resume.kept_notes(ks, NOW, "s") == [
        "kept 4 stored configurations of sweep 'alpha' (the same run keys): rnn 0; rnn 1; "
        "rnn 2; and 1 more; `paradnn results --sweep alpha` lists them",
        "kept 1 stored configuration of sweep 'zeta' (the same run keys): fc nodes=0; "
        "`paradnn results --sweep zeta` lists them",
    ]
    assert resume.kept_notes(ks, NOW, None) == []  # no sweep name now: nothing was renamed


def test_settings_never_recorded_are_said_once_and_changed_ones_first():
    ks = kept(2, "s", None, "old ") + kept(1, "s", WAS) + kept(1, "s", "not a mapping", "odd ")
    notes = resume.kept_notes(ks, NOW, "s")
    assert len(notes) == 2 and notes[0].startswith("kept 1 stored configuration measured with")
    assert notes[1] == (
        "kept 3 stored configurations measured before paradnn recorded the timing settings of "
        "a run: old 0; old 1; odd 0; a new --db measures the whole sweep anew"
    )
    assert resume.kept_notes([], NOW, "s") == []
    assert resume.kept_notes(kept(3, "s", NOW), NOW, "s") == []
