"""The api's results are typed: no public function returns a bare dict, every result type is a
frozen dataclass whose `as_dict()` is plain JSON, and a sweep is planned once."""

import dataclasses
import inspect
import json

import pytest

from paradnn import api
from paradnn.api import returns
from paradnn.errors import ConfigError

from conftest import TINY, run_cli, write_sweep


@pytest.mark.parametrize("name", api.__all__)
def test_no_public_function_returns_a_bare_dict(name):
    annotation = inspect.signature(getattr(api, name)).return_annotation
    assert annotation is not inspect.Signature.empty, f"api.{name} has no return annotation"
    assert "dict" not in str(annotation), f"api.{name} returns {annotation}"


def test_every_result_type_is_frozen_with_as_dict():
    types = [
        t
        for t in vars(returns).values()
        if inspect.isclass(t) and dataclasses.is_dataclass(t) and t.__module__ == returns.__name__
    ]
    assert len(types) >= 8
    for t in types:
        assert t.__dataclass_params__.frozen, t.__name__
        assert callable(getattr(t, "as_dict", None)), t.__name__


def _round_trips(result):
    plain = result.as_dict()
    assert json.loads(json.dumps(plain)) == plain
    return plain


def test_as_dict_round_trips_through_json(tmp_path):
    info = api.family_info()
    fc = next(f for f in info if f.name == "fc")
    assert _round_trips(fc)["fields"] == fc.fields and fc.kind == "generated"
    store = api.store_info(str(tmp_path / "none.db"))
    assert _round_trips(store) == {"db": str(tmp_path / "none.db"), "store_schema": None}
    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    planned = api.plan(str(sweep), axes={"mode": ["eager", "compile"]})
    assert [r["options"]["mode"] for r in _round_trips(planned)["runs"]] == ["eager", "compile"]
    rows = api.dry_run(planned, device="cpu", db=str(tmp_path / "none.db"))
    first = _round_trips(rows[0])
    # the study axes are columns after the optimizer, as before the rows were typed
    assert list(first)[:5] == ["family", "config", "precision", "optimizer", "mode"]
    assert first["mode"] == "eager" and rows[0].options["mode"] == "eager"
    predicted = api.simulate("h100-sxm", "fc", {"batch": 64})
    assert predicted.table == "predictions" and len(predicted) == 1
    assert _round_trips(predicted) == [dict(predicted[0])]
    assert _round_trips(api.simulate_scaling("tpu-v3", "fc", {"batch": 64}, max_chips=2))
    assert _round_trips(api.simulate_mxu_study())
    assert _round_trips(api.simulate_precision_study())


def _fit(**ops):
    summary = returns.Rows("fit_summary", ({"family": "fc", "mdape": 5.0},))
    return returns.SimFit(
        device_name="cpu",
        params={"k_half": 1.0},
        fitted_runs=3,
        holdout_runs=1,
        status="ok",
        summary=summary,
        rows=returns.Rows("fit", ({"family": "fc"},)),
        chip_toml="x = 1\n",
        out=None,
        **ops,
    )


def test_a_fit_keeps_the_keys_and_order_of_each_source():
    from_runs = _round_trips(_fit())
    assert list(from_runs) == [
        *("device_name", "params", "identified", "regimes", "fitted_runs", "holdout_runs"),
        *("status", "summary", "rows", "chip_toml", "out"),
    ]
    ops = {"fitted": {"k_half": 1.1}, "kept": {}, "holdout_ops": ["matmul-4096"]}
    from_ops = _round_trips(_fit(source="ops", warnings=["w"], **ops))
    assert list(from_ops) == [
        *("device_name", "source", "params", "fitted", "kept", "fitted_runs", "holdout_runs"),
        *("holdout_ops", "warnings", "status", "summary", "rows", "chip_toml", "out"),
    ]
    check = returns.Validation(returns.Rows("v", ({"a": 1},)), returns.Rows("s", ()))
    assert _round_trips(check) == {"rows": [{"a": 1}], "summary": []}


def test_rows_read_as_a_sequence():
    rows = returns.rows("t", [{"a": 1}, {"a": 2}, {"a": 3}])
    assert len(rows) == 3 and rows[1] == {"a": 2} and [r["a"] for r in rows] == [1, 2, 3]
    assert rows[:2] == returns.Rows("t", ({"a": 1}, {"a": 2}))
    (only,) = rows[2:]
    assert only == {"a": 3} and not returns.Rows("t")


def test_a_plan_is_not_planned_again(tmp_path, monkeypatch, capsys):
    from paradnn.sweep.file import Sweep

    sweep = write_sweep(tmp_path / "s.toml", [("fc", TINY["fc"])])
    planned = api.plan(str(sweep))
    with pytest.raises(ConfigError, match="precisions"):
        api.dry_run(planned, precisions=["bf16"])
    calls = []
    real = Sweep.specs
    monkeypatch.setattr(
        Sweep, "specs", lambda self, *a, **k: calls.append(1) or real(self, *a, **k)
    )
    code, out, err = run_cli(
        capsys, "run", "--preset", str(sweep), "--dry-run", "--device", "cpu",
        "--db", str(tmp_path / "none.db"),
    )  # fmt: skip
    assert code == 0, err
    assert "1 runs (dry run)" in out and len(calls) == 1
