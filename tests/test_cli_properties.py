"""Property tests over command-line arguments: whatever a user types, the answer is a result or
one clear line and exit status 2 — never a traceback."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradnn.records import RunRecord

from conftest import run_cli

FAST = settings(  # derandomized: CI sees the same examples every run
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
WORDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
KEYS = st.sampled_from(["layers", "nodes", "input", "output", "batch", "cell", "x"]) | WORDS
VALUES = st.integers(-5, 10**12).map(str) | WORDS | st.sampled_from(["lstm", "1e3", "", "2.5"])
ASSIGNMENTS = st.lists(st.tuples(KEYS, VALUES).map("=".join) | WORDS, max_size=4)
OPTION = st.sampled_from(["--precision", "--device", "--threads", "--optimizer", "--max-time"])


def _fake_run(self, specs):
    """Stands in for the worker: these tests are about argument handling, not measuring."""
    (spec,) = specs
    options = self.options
    family, values = spec.family, dict(spec.config)
    return [
        RunRecord.flat(
            run_key="k",
            family=family,
            config=values,
            precision=options.precision,
            optimizer=options.optimizer,
            device="cpu",
            status="crashed",
            error="not measured: a test stand-in",
        )
    ]


def _check(code, err):
    assert "Traceback" not in err
    if code == 1:  # valid arguments, and the stand-in's run "crashed": nothing was measured
        assert err.strip().splitlines()[-1].startswith("error: nothing was measured"), err
        return
    if code != 0:
        assert code == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err


@FAST
@given(
    family=st.sampled_from(["fc", "cnn", "rnn"]) | WORDS,
    assignments=ASSIGNMENTS,
    options=st.lists(st.tuples(OPTION, WORDS | st.integers(-3, 99).map(str)), max_size=2),
)
def test_bench_arguments(capsys, tmp_path, monkeypatch, family, assignments, options):
    monkeypatch.setattr("paradnn.runner.supervisor.Supervisor.run", _fake_run)
    args = ["bench", family, *assignments, "--db", str(tmp_path / "r.db")]
    for opt, value in options:
        args += [opt, value]
    if any(a.startswith("-") for a in [family, *assignments]):
        return  # an option-looking word is click's to parse; covered by its own tests
    code, _, err = run_cli(capsys, *args)
    _check(code, err)


@FAST
@given(
    options=st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "-p",
                    "--device",
                    "--optimizer",
                    "--workers",
                    "--timeout",
                    "--recycle-every",
                    "--min-time",
                    "--max-time",
                    "--preset",
                ]
            ),
            WORDS | st.integers(-3, 99).map(str) | st.sampled_from(["fp32", "cpu", "quick"]),
        ),
        max_size=3,
    )
)
def test_run_dry_run_arguments(capsys, tmp_path, options):
    args = ["run", "--dry-run", "--db", str(tmp_path / "r.db")]
    for opt, value in options:
        if value.startswith("-"):
            return
        args += [opt, value]
    code, _, err = run_cli(capsys, *args)
    _check(code, err)


@pytest.mark.parametrize("value", ["nan", "inf", "-0", "1e400", "0x10", "  3 "])
def test_odd_numbers_in_configs(capsys, tmp_path, monkeypatch, value):
    monkeypatch.setattr("paradnn.runner.supervisor.Supervisor.run", _fake_run)
    code, _, err = run_cli(capsys, "bench", "fc", f"layers={value}", "--db", str(tmp_path / "r"))
    _check(code, err)
