"""Every option's help names every value the option accepts (issue 44): a word option's parser
says what it reads (`accepts`), and its help is held against it, for every command. The study
axes' options are generated from paradnn.axes, so a new value (an optimizer, a backend
registered with PARADNN_BACKENDS) shows up in --help with nothing else to edit."""

from __future__ import annotations

from typing import Any

import click
import pytest
import typer.main

from paradnn import axes
from paradnn.cli import app


def _commands(group: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, click.Command]]:
    found = [(" ".join(path) or "paradnn", group)]
    for name, sub in getattr(group, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def _parser(param: Any) -> Any:
    """The function typer reads an option's value with (`parser=`), whichever click it runs
    on: typer's own (its type descriptor) or click's (a FuncParamType)."""
    info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
    return getattr(info, "parser", None) or getattr(getattr(param, "type", None), "func", None)


def _word_options() -> list[tuple[str, Any, tuple[str, ...]]]:
    """(command, option, the words it accepts) of every option that reads words."""
    found = []
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if not param.opts[0].startswith("-"):
                continue  # an argument
            accepts = getattr(_parser(param), "accepts", None)
            if accepts is not None:
                found.append((path, param, tuple(accepts())))
    return found


WORD_OPTIONS = _word_options()


def test_every_word_option_is_checked():
    """The test holds something: the study axes of run and bench, compare --by and --metric,
    simulate's --optimizer are among the options it reads."""
    names = {(path, param.opts[0]) for path, param, _ in WORD_OPTIONS}
    for axis in axes.AXES:
        if axis.words is not None:
            assert ("run", axis.flag) in names and ("bench", axis.flag) in names
    for wanted in [("compare", "--by"), ("compare", "--metric"), ("simulate step", "--optimizer")]:
        assert wanted in names
    assert len(WORD_OPTIONS) > 40


@pytest.mark.parametrize(
    ("path", "param", "words"),
    WORD_OPTIONS,
    ids=[f"{path} {param.opts[0]}" for path, param, _ in WORD_OPTIONS],
)
def test_an_options_help_names_every_value_it_accepts(path, param, words):
    text = " ".join((param.help or "").split())
    missing = [w for w in words if w not in text]
    assert not missing, f"{path} {param.opts[0]}: help {text!r} leaves out {missing}"


def test_a_backend_registered_by_environment_is_accepted_and_listed(monkeypatch):
    """PARADNN_BACKENDS adds a word to --backend: read when the option is, listed in the help
    the axis generates."""
    from paradnn.cli.options import axis_option

    monkeypatch.setenv("PARADNN_BACKENDS", "toy=toy_backend")
    backend = axes.BY_FIELD["backend"]
    assert "toy" in backend.allowed() and "toy" in backend.help_text()
    option = axis_option(backend).__metadata__[0]
    assert option.parser("toy") == "toy"


@pytest.mark.parametrize("axis", [a for a in axes.AXES if a.low is not None], ids=lambda a: a.field)
def test_an_integer_axis_says_its_range(axis):
    assert f"{axis.low} to {axis.high}" in axis.help_text()


# Options that take free text (a path, an address, a name looked up when the command runs, a
# comma-separated list read by the command): no parser of their own, so no word list to hold.
FREE_TEXT = {
    *("--preset", "--procs", "--address", "--slurm-folder", "--slurm-partition", "--sweep"),
    *("--name", "--out", "--a", "--b", "--torch", "--cache", "--index-url", "--platform"),
    *("--topology", "--csv", "--device", "--holdout-ops"),
    *("--model", "--baseline"),  # issue 45: bench --model pkg.module:factory, a baseline's name
}


def _unparsed() -> set[tuple[str, str]]:
    found = set()
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            flag = param.opts[0]
            if not flag.startswith("-") or getattr(param, "is_flag", False):
                continue
            if getattr(param, "is_bool_flag", False) or _parser(param) is not None:
                continue
            found.add((path, flag))
    return found


def test_an_option_without_a_parser_takes_free_text():
    """Every other option is read by a parser (a word option's names what it accepts, and its
    help lists them from there): an option whose help lists words but reads anything (as
    `simulate fit --statistic` and `--from` did) fails here."""
    unparsed = _unparsed()
    assert {flag for _, flag in unparsed} <= FREE_TEXT, sorted(unparsed)
    assert len(unparsed) >= 20  # the test holds something: the free-text options were found


def test_the_simulators_words_in_the_cli_are_the_simulators():
    """cli/simulate.py lists the simulator's words without importing it (start-up): each list
    is held against its home."""
    from paradnn.api import simulation
    from paradnn.cli import simulate
    from paradnn.sim import curve, fit, opfit, systolic

    assert simulate.MODELS == curve.MODELS
    assert tuple(simulation.PRECISION_POLICIES) == simulate.PRECISION_POLICIES
    assert simulate.DATAFLOWS == systolic.DATAFLOWS
    assert simulate.STATISTICS == tuple(fit.STATISTICS) == tuple(opfit.STATISTICS)
