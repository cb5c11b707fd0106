"""A model of your own (issue 45, item 1): `bench --model pkg.module:factory` and a sweep's
`[[runs]] model = ...` run through the same measuring core as a family, end to end on CPU:
bench → stored record → results. FLOPs are counted (never analytic), memory is unknown (never
guessed), and a factory that cannot be imported or called is one line, exit 2, before work."""

from __future__ import annotations

import json
import sys

import pytest

from paradnn import api, families
from paradnn.errors import ConfigError
from paradnn.families.user import NO_ANALYTIC, NO_PREDICTION, load_factory
from paradnn.sweep import file as sweep_file

from conftest import TINY_POLICY, run_cli

KW = {"device": "cpu", "threads": 1, "timing": TINY_POLICY}


def test_bench_measures_a_factory_end_to_end_and_labels_what_it_counted(tmp_path, capsys):
    db = str(tmp_path / "r.db")
    rec = api.bench(model="own_models:small", db=db, **KW)
    assert rec.status == "ok", rec.error
    assert rec.family == "user" and rec.config == {"model": "own_models:small"}
    # params and FLOPs counted in the worker: Linear(12,16) + Linear(16,5)
    assert rec.params == 12 * 16 + 16 + 16 * 5 + 5
    fwd = 2 * 6 * (12 * 16 + 16 * 5)  # the two GEMMs' forward, batch 6 (bias not counted)
    assert rec.flops_per_step >= 2 * fwd  # forward and backward, counted
    assert rec.flops_analytic is None and rec.params_analytic is None
    assert rec.nulls["flops_analytic"] == NO_ANALYTIC == rec.nulls["params_analytic"]
    assert rec.predicted_mem_bytes is None and rec.predicted_mem_lower_bytes is None
    assert rec.nulls["predicted_mem_bytes"] == NO_PREDICTION
    assert NO_PREDICTION.startswith("unknown")
    assert rec.examples_per_step == 6 and "examples_per_step" not in rec.nulls
    assert rec.examples_per_s == pytest.approx(6 / rec.step_time_s)
    (row,) = api.results(db)
    assert row["run_key"] == rec.run_key and row["family"] == "user"
    (row,) = api.results(db, family="user")
    assert row["flops_analytic"] is None and row["flops_per_step"] == rec.flops_per_step
    # the simulator has nothing to predict it from: left out, the rest still validated
    fc = api.bench("fc", {"layers": 1, "nodes": 4, "input": 4, "output": 2, "batch": 2},
                   db=db, **KW)  # fmt: skip
    v = api.simulate_validate(db, platform="skylake-n1-32", include_noisy=True)
    assert fc.status == "ok" and {r["family"] for r in v.rows} == {"fc"}
    # another factory is another run; the same factory again is another attempt of it
    other = api.bench(model="own_models:as_dict", db=db, **KW)
    assert other.status == "ok" and other.run_key != rec.run_key
    again = api.bench(model="own_models:small", db=db, **KW)
    assert (again.run_key, again.attempt) == (rec.run_key, 2)
    seen = api.history(model="own_models:small", db=db)
    assert [r["attempt"] for r in seen] == [1, 2] and all(r["status"] == "ok" for r in seen)
    code, out, _ = run_cli(capsys, "results", "--db", db, "--family", "user", "--format", "json")
    assert code == 0 and len(json.loads(out)["rows"]) == 3


def test_a_model_form_with_tuple_inputs_and_its_own_loss(tmp_path):
    rec = api.bench(model="own_models:two_inputs", db=str(tmp_path / "r.db"), **KW)
    assert rec.status == "ok", rec.error
    assert rec.params == 8 * 3 + 3 + 4 * 3 + 3 and rec.examples_per_step == 3
    assert rec.final_loss is not None and rec.final_loss >= 0  # mse, not cross-entropy


def test_a_factory_answering_out_of_contract_is_a_failed_row_saying_the_contract(tmp_path):
    db = str(tmp_path / "r.db")
    rec = api.bench(model="own_models:not_a_model", db=db, **KW)
    assert rec.status == "crashed" and "must return" in rec.error and "str" in rec.error
    bug = api.bench(model="own_models:broken", db=db, **KW)
    assert bug.status == "crashed" and "the user's own bug" in bug.error
    assert len(api.results(db)) == 2  # failures are rows too


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("own_models", "must be 'package.module:factory'"),
        ("own_models:small()", "must be 'package.module:factory'"),
        ("no_such_module_45:f", "cannot import no_such_module_45: ModuleNotFoundError"),
        ("own_models:missing", "own_models has no attribute 'missing'"),
        ("own_models:NOT_CALLABLE", "NOT_CALLABLE is not callable"),
        ("own_models:needs_an_argument", "must take no required arguments"),
    ],
)
def test_a_factory_that_cannot_be_called_is_one_line_and_exit_2_before_work(
    capsys, tmp_path, ref, says
):
    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, "bench", "--model", ref, "--db", str(db))
    assert code == 2
    assert err.strip().count("\n") == 0 and f"model = {ref!r}: " in err and says in err
    assert not db.exists()  # before any work
    with pytest.raises(ConfigError, match="model = "):
        api.bench(model=ref, db=str(db), **KW)


def test_model_and_a_family_do_not_mix(capsys, tmp_path):
    with pytest.raises(ConfigError, match="not with family fc"):
        api.bench("fc", model="own_models:small", db=str(tmp_path / "r.db"))
    with pytest.raises(ConfigError, match="takes no config fields"):
        api.bench(None, {"batch": 2}, model="own_models:small", db=str(tmp_path / "r.db"))
    with pytest.raises(ConfigError, match="name a family, or a model of your own"):
        api.bench(db=str(tmp_path / "r.db"))
    code, _, err = run_cli(capsys, "bench", "fc", "--model", "own_models:small")
    assert code == 2 and "not with family fc" in err


def test_the_factory_imports_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "cwd_models_45.py").write_text("def make():\n    return 1, 2\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert load_factory("cwd_models_45:make")() == (1, 2)


def test_the_user_family_is_resolvable_but_not_listed_or_taken():
    assert families.USER not in families.names()
    fam = families.get("user")
    assert not fam.analytic and fam.shapes(fam.config({"model": "a.b:c"})) == []
    with pytest.raises(ConfigError, match="reserved"):
        families.register("user", "somewhere")


def test_a_sweep_file_names_a_model_of_its_own(tmp_path):
    path = tmp_path / "own.toml"
    path.write_text(
        '[[runs]]\nmodel = "own_models:small"\n\n[[runs]]\nfamily = "fc"\n'
        "config = { layers = 1, nodes = 4, input = 4, output = 2, batch = 2 }\n"
    )
    sweep = sweep_file.load(path)
    assert sweep.configs[0] == ("user", {"model": "own_models:small"})
    plan = api.plan(sweep, device="cpu")
    assert [s.family for s in plan.specs] == ["user", "fc"]
    (row, _) = api.dry_run(plan)
    assert row.family == "user" and row.flops_per_step is None and row.fits is None
    path.write_text('[[runs]]\nmodel = "own_models:small"\nfamily = "fc"\n')
    with pytest.raises(ConfigError, match=r"runs\[0\]\.model = .*stands alone"):
        sweep_file.load(path)
    path.write_text('[[runs]]\nmodel = "own_models:nothing"\n')
    with pytest.raises(ConfigError, match="own_models has no attribute 'nothing'"):
        api.plan(sweep_file.load(path), device="cpu")


def test_what_a_model_of_its_own_does_not_run_is_an_unsupported_row(tmp_path):
    db = str(tmp_path / "r.db")
    rec = api.bench(model="own_models:small", db=db, data_source="host", **KW)
    assert rec.status == "unsupported" and "device data only" in rec.error
