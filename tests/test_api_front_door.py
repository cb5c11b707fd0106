"""The library's front door (issue 45 item 7): one name for the database argument (`db`; the
old `dbs` kept as a deprecated alias), `as_dict()` on every result type the api returns,
`to_pandas()` on rows, and a misspelled filter named in one ConfigError, never a TypeError."""

from __future__ import annotations

import inspect
import json
import sys
import typing
from pathlib import Path

import pandas as pd
import pytest

from paradnn import api
from paradnn.errors import ConfigError

import synth

SPACE = {"layers": [4], "nodes": [64, 128], "input": [20], "output": [10], "batch": [8]}


@pytest.fixture
def db(tmp_path) -> str:
    """fp32 and bf16 (1.25× faster) runs of two configs."""
    rows = [synth.row("fc", c, 0.1, n_samples=20, seed=i) for i, c in enumerate(synth.grid(SPACE))]
    rows += [
        synth.row("fc", c, 0.08, n_samples=20, seed=9 + i, precision="bf16")
        for i, c in enumerate(synth.grid(SPACE))
    ]
    return synth.write_db(tmp_path / "r.db", rows)


# --- as_dict on every result -----------------------------------------------------------------


def _namespace() -> dict[str, typing.Any]:
    """What the api's return annotations name, their TYPE_CHECKING imports included."""
    from paradnn.analysis import Comparison
    from paradnn.api import returns, sample, scaling, sessions, versions
    from paradnn.records import RunRecord
    from paradnn.report import Report

    ns: dict[str, typing.Any] = {"pd": pd, "Comparison": Comparison, "Report": Report}
    ns["RunRecord"] = RunRecord
    for module in (returns, sample, scaling, sessions, versions):
        ns.update(vars(module))
    return ns


def _classes(hint: typing.Any) -> set[type]:
    """The classes a return annotation names, through list[...], X | None, tuple[...]."""
    found: set[type] = set()
    args = typing.get_args(hint)
    if args:
        for a in args:
            found |= _classes(a)
        return found
    if isinstance(hint, type):
        found.add(hint)
    return found


def _api_functions():
    for name in api.__all__:
        fn = getattr(api, name)
        if inspect.isfunction(fn):
            yield name, fn


RETURNS_NO_RESULT = {"shared_workers"}  # a context manager: its Session is not a result


def test_every_result_type_the_api_returns_has_as_dict():
    ns = _namespace()
    checked: set[str] = set()
    for name, fn in _api_functions():
        if name in RETURNS_NO_RESULT:
            continue
        module = vars(sys.modules[fn.__module__])
        hint = fn.__annotations__["return"]
        hint = eval(hint, {**module, **ns}) if isinstance(hint, str) else hint
        for cls in _classes(hint):
            if not cls.__module__.startswith("paradnn"):
                continue  # str, int, dict, None: plain already
            assert callable(getattr(cls, "as_dict", None)), f"api.{name} returns {cls.__name__}"
            checked.add(cls.__name__)
    # the four the issue found without it, and the rest the api returns
    assert {"Comparison", "Report", "Scaled", "VersionStudy"} <= checked
    assert {"RunRecord", "Rows", "SweepPlan", "DryRunRow", "SimFit", "Validation"} <= checked


def test_a_comparison_as_dict_is_what_compare_prints(db, capsys):
    from conftest import run_cli

    c = api.compare(db, by="precision", a="fp32", b="bf16")
    doc = c.as_dict()
    assert doc["compared"] == 2 and len(doc["pairs"]) == 2
    code, out, _err = run_cli(
        capsys, "compare", "--db", db, "--by", "precision", "--a", "fp32", "--b", "bf16",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out) == json.loads(json.dumps(doc, default=str))


def test_report_scaled_and_versionstudy_as_dict_are_plain(db):
    from paradnn.api.scaling import Scaled
    from paradnn.api.versions import VersionStudy
    from paradnn.report import Report
    from paradnn.report.section import Content
    from paradnn.runner.envs import TorchEnv
    from paradnn.sim.scaling_check import Check

    rep = Report(Path("r/report.html"), [Path("r/f.png")], [], [Content("summary", "Summary")])
    assert rep.as_dict() == {
        "html": "r/report.html",
        "figures": ["r/f.png"],
        "tables": [],
        "sections": [{"id": "summary", "title": "Summary", "empty": None, "notes": []}],
    }
    table = pd.DataFrame({"procs": [1, 2], "efficiency": [1.0, float("nan")]})
    scaled = Scaled([], table, pd.DataFrame(), Check(reason="one run"))
    d = scaled.as_dict()
    assert d["table"] == [{"procs": 1, "efficiency": 1.0}, {"procs": 2, "efficiency": None}]
    assert d["check"]["reason"] == "one run" and d["records"] == [] and d["fits"] == []
    study = VersionStudy(
        envs=[TorchEnv("2.13.0", Path("/venv/bin/python"), "2.13.0+cpu", True)],
        sweep_codes={"2.13.0": 0},
        comparisons=[api.compare(db, by="precision", a="fp32", b="bf16")],
    )
    d = study.as_dict()
    assert d["envs"][0]["python"] == "/venv/bin/python"
    assert d["comparisons"][0]["compared"] == 2
    for value in (rep.as_dict(), scaled.as_dict(), d):
        json.dumps(value, allow_nan=False)  # plain: no Path, no frame, no NaN


# --- one name for the database ---------------------------------------------------------------


def test_the_database_argument_is_db_everywhere():
    for name, fn in _api_functions():
        params = inspect.signature(fn).parameters
        assert not {"database", "path", "store"} & set(params), name
        if "dbs" in params:  # the deprecated alias: keyword-only, beside db
            assert params["dbs"].kind is inspect.Parameter.KEYWORD_ONLY, name
            assert params["dbs"].default is None and "db" in params, name


def test_dbs_still_works_with_a_deprecation_warning(db):
    new = api.compare(db, by="precision", a="fp32", b="bf16")
    with pytest.warns(DeprecationWarning, match=r"api.compare\(dbs=...\) is deprecated"):
        old = api.compare(dbs=[db], by="precision", a="fp32", b="bf16")
    pd.testing.assert_frame_equal(old.pairs, new.pairs)
    same = api.compare(db=[db], by="precision", a="fp32", b="bf16")
    pd.testing.assert_frame_equal(same.pairs, new.pairs)


def test_db_and_dbs_together_or_no_groups_are_refused(db):
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError, match="give db= only"):
        api.report(db, dbs=[db])
    with pytest.raises(ConfigError, match="by = None: required"):
        api.compare(db)
    with pytest.raises(ConfigError, match="db = 3"):
        api.compare([3], by="precision", a="fp32", b="bf16")


# --- rows as a frame -------------------------------------------------------------------------


def test_rows_to_pandas(db):
    rows = api.results(db, family="fc")
    frame = rows.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == len(rows) == 4
    assert list(frame["run_key"]) == [r["run_key"] for r in rows]


# --- a misspelled filter ---------------------------------------------------------------------


def test_a_misspelled_filter_is_named_in_one_config_error(db):
    with pytest.raises(ConfigError) as e:
        api.results(db, famly="fc")
    msg = str(e.value)
    assert msg.startswith("famly = 'fc': not a filter of api.results: did you mean family?")
    assert "\n" not in msg and "chosen, where" in msg
    assert e.value.field == "famly" and e.value.value == "fc"
    with pytest.raises(ConfigError, match=r"a run's precision goes in where=\{'precision'"):
        api.results(db, precision="fp32")
    with pytest.raises(ConfigError, match=r"devce = 'cpu': not a filter of api\.side_table"):
        api.side_table("ceilings", db, devce="cpu")
    with pytest.raises(ConfigError, match="table = 'ceiling'"):
        api.side_table("ceiling", db)
    assert len(api.results(db, family="fc", limit=1)) == 1  # the real filters still work
