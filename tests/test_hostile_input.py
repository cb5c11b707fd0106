"""Hostile input (issue 14): whatever number or word reaches `bench`, `run`, `simulate`, a sweep
file, a chip file or the Python API, the answer is a result or one line and exit status 2 —
never a traceback, never a hang. And every count of a config within its bounds fits SQLite."""

from __future__ import annotations

import itertools
import math
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradnn import api, families, memory
from paradnn.errors import ParadnnError
from paradnn.validate import INT64_MAX

from conftest import run_cli

FAST = settings(  # derandomized, as every property test here: CI sees the same examples
    max_examples=40,
    deadline=None,  # a hang is caught by `no_hang` below, not by per-example timing
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HANG_S = 20  # generous: every answer here takes well under a second

HUGE = [
    "99999999999999999999",
    str(2**63),
    str(2**64 + 1),
    "-1",
    "0",
    "1.5",
    "2.0",
    "1e3",
    "nan",
    "inf",
    "-inf",
    "",
    " ",
    "１２",  # fullwidth digits: int() would take them
    "١",  # Arabic-Indic one
    "4\x00",
    "4\n5",
    "\x1b[31m",
    "é",
    "1; DROP TABLE runs; --",
    "' OR 1=1 --",
    "9" * 5000,  # past Python's int-from-string digit limit
]
WORDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
NUMBERS = (
    st.sampled_from(HUGE)
    | st.integers(-(2**70), 2**70).map(str)
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
)
VALUES = NUMBERS | WORDS
SHIPPED = [n for n in families.names() if n != "fault"]  # conftest registers a test family
FAMILY_NAMES = ["fc", "cnn", "rnn", "transformer", "resnet50", "lstm_ptb", "deepspeech2"]


@contextmanager
def no_hang(seconds: int = HANG_S):
    """Fail (rather than wait forever) if the body takes longer than `seconds`."""

    def alarm(signum, frame):  # pragma: no cover - only on a hang
        raise AssertionError(f"no answer within {seconds} s: a hang")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _one_line(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    if code != 0:
        assert code == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err


class SupervisorBuilt(BaseException):
    """Raised where a Supervisor would start: a BaseException, so the CLI's error boundary
    (which turns every Exception into one line) lets it through to the test."""


def _no_supervisor(monkeypatch):
    """Validation must finish before a Supervisor (hence a worker) exists."""

    def refuse(*args, **kwargs):
        raise SupervisorBuilt("a Supervisor was built: validation came too late")

    monkeypatch.setattr("paradnn.runner.supervisor.Supervisor.__init__", refuse)


# -- the issue's three cases ---------------------------------------------------------------


def test_the_issues_hostile_numbers_are_one_line(capsys, tmp_path, monkeypatch):
    _no_supervisor(monkeypatch)
    sweep = tmp_path / "huge.toml"
    sweep.write_text("[families.fc]\nlayers = 99999999999999999999\n")
    db = str(tmp_path / "r.db")
    cases = [
        (["bench", "fc", "input=99999999999999999999", "--db", db], "fc.input"),
        (
            ["simulate", "step", "fc", "batch=99999999999999999999", "--platform", "tpu-v3"],
            "fc.batch",
        ),
        (["run", "--preset", str(sweep), "--dry-run", "--db", db], "families.fc.layers"),
    ]
    for args, field in cases:
        with no_hang():
            code, _, err = run_cli(capsys, *args)
        assert code == 2, err
        assert f"{field} = 99999999999999999999: must be an integer in [1, " in err
        _one_line(code, err)
    assert not (tmp_path / "r.db").exists()  # nothing was stored, not even an empty database


def test_a_sweep_too_big_to_run_is_refused_from_its_counts(tmp_path):
    from paradnn.sweep import load
    from paradnn.sweep.spec import MAX_RUNS

    axes = "layers = '1..512'\nnodes = '1..10000'\nbatch = '1..10000'"  # 5e10 configs
    with no_hang(), pytest.raises(ParadnnError, match="at most 100,000 per family"):
        load(f"[families.fc]\n{axes}\n")
    # each family under its cap, the sweep over: counted before anything is expanded
    one = "input = 8\noutput = 8\nbatch = 8\n"
    grid = f"[families.fc]\nlayers = '1..10'\nnodes = '1..9000'\n{one}"  # 90,000 configs
    with no_hang(), pytest.raises(ParadnnError, match=f"at most {MAX_RUNS:,} per sweep"):
        load("precisions = ['fp32', 'bf16']\n" + grid)
    small = load(f"[families.fc]\nnodes = '1..9000'\nlayers = 4\n{one}")  # 9,000 configs …
    with pytest.raises(ParadnnError, match="per sweep"):  # … at 12 precisions × optimizers
        small.specs(["fp32", "bf16", "fp16", "tf32"], ["sgd", "momentum", "rmsprop"])


# -- every count within the bounds fits a signed 64-bit SQLite INTEGER ------------------------


def _corner_configs(fam):
    """Every corner of the family's bounds (and the defaults elsewhere) that makes a model."""
    bounds = fam.config_cls.LIMITS
    for combo in itertools.product(*bounds.values()):
        try:
            yield fam.config(dict(zip(bounds, combo, strict=True)))
        except ParadnnError:  # e.g. a CNN of batch 1 on a 1×1 last map; heads not dividing
            continue


def _counts(name, fam, cfg):
    yield fam.params(cfg)
    yield fam.train_flops(cfg)
    yield fam.examples_per_step(cfg)
    for precision in ("fp32", "bf16"):
        for device_type in ("cuda", "cpu"):
            est = memory.predict(name, cfg, precision, "momentum", device_type=device_type)
            yield est.total
            yield est.lower_bound


@pytest.mark.parametrize("name", SHIPPED)
def test_every_count_at_the_bounds_fits_sqlite_integer(name):
    fam = families.get(name)
    assert hasattr(fam.config_cls, "LIMITS"), f"{name} has no documented bounds"
    assert set(fam.config_cls.LIMITS) == {f.name for f in fam.fields() if f.type in (int, "int")}, (
        "every integer field has a bound"
    )
    seen = 0
    for cfg in _corner_configs(fam):
        seen += 1
        for count in _counts(name, fam, cfg):
            assert isinstance(count, int) and 0 <= count <= INT64_MAX, (cfg, count)
    assert seen


@FAST
@given(data=st.data(), name=st.sampled_from(FAMILY_NAMES))
def test_every_count_within_the_bounds_fits_sqlite_integer(data, name):
    fam = families.get(name)
    bounds = fam.config_cls.LIMITS
    values = {
        k: data.draw(st.sampled_from([lo, hi]) | st.integers(lo, hi), label=k)
        for k, (lo, hi) in bounds.items()
    }
    try:
        cfg = fam.config(values)
    except ParadnnError:
        return
    for count in _counts(name, fam, cfg):
        assert 0 <= count <= INT64_MAX, (cfg, count)


@pytest.mark.parametrize("name", SHIPPED)
def test_one_past_each_bound_is_one_line_naming_field_value_and_range(name):
    fam = families.get(name)
    for field, (low, high) in fam.config_cls.LIMITS.items():
        for bad in (high + 1, low - 1, 10**20, float(low), True):
            with pytest.raises(ParadnnError) as e:
                fam.config({field: bad})
            assert str(e.value).startswith(f"{name}.{field} = {bad!r}: must be an integer in")


# -- the command line ------------------------------------------------------------------------

KEYS = st.sampled_from(["layers", "nodes", "input", "batch", "image", "length", "x"]) | WORDS
ASSIGNMENTS = st.lists(st.tuples(KEYS, VALUES).map("=".join) | WORDS, max_size=3)
RUN_OPTIONS = st.sampled_from(
    [
        "--threads",
        "--min-time",
        "--max-time",
        "--timeout",
        "--energy-period",
        "--energy-idle",
        "--workers",
        "--recycle-every",
        "--max-wait",
    ]
)


def _plain(words):
    # an option-looking word is click's to parse (covered by its own tests), and a NUL
    # cannot be passed in argv at all
    return not any(w.startswith("-") or "\x00" in w for w in words)


@FAST
@given(family=st.sampled_from(FAMILY_NAMES) | WORDS, assignments=ASSIGNMENTS)
def test_bench_words_never_traceback(capsys, tmp_path, monkeypatch, family, assignments):
    _no_supervisor(monkeypatch)  # a valid config stops here: the assertion is then the answer
    if not _plain([family, *assignments]):
        return
    with no_hang():
        try:
            code, _, err = run_cli(capsys, "bench", family, *assignments, "--db", ":memory:")
        except SupervisorBuilt:  # everything valid: it got as far as the Supervisor
            return
    _one_line(code, err)


@FAST
@given(options=st.lists(st.tuples(RUN_OPTIONS, NUMBERS), min_size=1, max_size=3))
def test_run_option_numbers_never_traceback(capsys, tmp_path, monkeypatch, options):
    _no_supervisor(monkeypatch)
    args = ["run", "--dry-run", "--preset", "quick", "--db", str(tmp_path / "r.db")]
    for opt, value in options:
        args += [f"{opt}={value}"]
    if any("\x00" in a for a in args):
        return
    with no_hang():
        code, _, err = run_cli(capsys, *args)
    _one_line(code, err)


SIM_OPTIONS = st.sampled_from(["--chips", "--overlap", "--topology", "--max-chips", "--platform"])


@FAST
@given(
    family=st.sampled_from(["fc", "cnn", "rnn", "transformer"]),
    assignments=ASSIGNMENTS,
    options=st.lists(st.tuples(SIM_OPTIONS, VALUES), max_size=2),
)
def test_simulate_never_tracebacks(capsys, family, assignments, options):
    scaling = any(opt == "--max-chips" for opt, _ in options)
    args = ["simulate", "scaling" if scaling else "step", family, *assignments]
    given_platform = any(opt == "--platform" for opt, _ in options)
    for opt, value in options:
        args.append(f"{opt}={value}")
    if not given_platform:
        args += ["--platform", "tpu-v3"]
    if not _plain([family, *assignments]) or any("\x00" in a for a in args):
        return
    with no_hang():
        code, _, err = run_cli(capsys, *args)
    _one_line(code, err)


# -- sweep files -----------------------------------------------------------------------------

TOML_VALUES = st.sampled_from(
    [
        "99999999999999999999",
        "9223372036854775808",
        "-1",
        "0",
        "1.5",
        "2.0",
        "nan",
        "inf",
        "-inf",
        "true",
        '""',
        '"\\u0000"',
        '"é"',
        '"1..99999999999999999999 x2"',
        '"1..999999999 +1"',
        '"1..512"',
        '"٣..٨"',
        "'1; DROP TABLE runs'",
        "[]",
        "[1, 99999999999999999999]",
        "{ a = 1 }",
        "4",
        "128",
    ]
) | st.integers(-(2**64), 2**64).map(str)
AXES = st.sampled_from(["layers", "nodes", "input", "output", "batch", "blocks", "nodez"])
SECTIONS = st.sampled_from(
    ["[families.fc]", "[families.cnn]", "[families.rnn]", "[sampling]", "[timing]", "[filters]"]
)
TOP = st.sampled_from(["name", "description", "precisions", "optimizers"])


@FAST
@given(
    top=st.lists(st.tuples(TOP, TOML_VALUES), max_size=2, unique_by=lambda t: t[0]),
    section=SECTIONS,
    entries=st.lists(
        st.tuples(
            AXES | st.sampled_from(["method", "n", "seed", "min_time_s", "max_params"]),
            TOML_VALUES,
        ),
        max_size=3,
        unique_by=lambda t: t[0],
    ),
    method=st.sampled_from(["", "grid", "random", "lhs"]),
)
def test_sweep_files_never_traceback_or_hang(
    capsys, tmp_path, monkeypatch, top, section, entries, method
):
    _no_supervisor(monkeypatch)
    lines = [f"{k} = {v}" for k, v in top]
    lines += ["[families.fc]", "layers = 4", section]
    lines += [f"{k} = {v}" for k, v in entries]
    if method and section != "[sampling]":
        lines += ["[sampling]", f"method = '{method}'", "n = 5"]
    path = tmp_path / "s.toml"
    path.write_text("\n".join(lines) + "\n")
    with no_hang():
        code, _, err = run_cli(
            capsys, "run", "--dry-run", "--preset", str(path), "--db", str(tmp_path / "r.db")
        )
    _one_line(code, err)


# -- chip files ------------------------------------------------------------------------------

CHIP = """[my-chip]
name = "My chip"
vendor = "me"
kind = "tpu"
peak_dense = {{ bf16 = {peak} }}
mem_bandwidth = {bw}
memory_bytes = 16e9
{extra}
"""
CHIP_EXTRA = st.sampled_from(
    [
        "",
        "links = {v}",
        "link_bw = {v}",
        "link_latency_s = {v}",
        "mxu = {{ rows = {v}, cols = 128, per_core = 1, cores = 1 }}",
        'name2 = "x"',
        'interconnect = "{s}"',
        "dataflow = {v}",
    ]
)


@FAST
@given(peak=TOML_VALUES, bw=TOML_VALUES, extra=CHIP_EXTRA, v=TOML_VALUES, s=WORDS)
def test_chip_files_never_traceback(capsys, tmp_path, peak, bw, extra, v, s):
    safe = s.replace("\\", "\\\\").replace('"', '\\"')
    safe = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in safe)
    path = tmp_path / "chip.toml"
    path.write_text(CHIP.format(peak=peak, bw=bw, extra=extra.format(v=v, s=safe)))
    with no_hang():
        code, _, err = run_cli(
            capsys, "simulate", "step", "fc", "--platform", str(path), "--chips", "4", "-f", "json"
        )
    _one_line(code, err)


def test_a_chip_file_that_is_not_utf8_is_one_line(capsys, tmp_path):
    path = tmp_path / "chip.toml"
    path.write_bytes(b'[my-chip]\nname = "\xff\xfe"\n')
    code, _, err = run_cli(capsys, "simulate", "step", "fc", "--platform", str(path))
    assert code == 2 and "must be UTF-8" in err
    _one_line(code, err)


# -- the Python API --------------------------------------------------------------------------

API_VALUES = (
    st.sampled_from([10**20, 2**63, -1, 0, 1.5, 2.0, math.nan, math.inf, True, None, "", "x"])
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.sampled_from(HUGE)
)


@FAST
@given(
    family=st.sampled_from(FAMILY_NAMES) | WORDS | st.none() | st.integers(),
    config=st.dictionaries(KEYS, API_VALUES, max_size=3) | API_VALUES,
    kwargs=st.dictionaries(
        st.sampled_from(
            ["threads", "timeout_s", "energy_period_s", "energy_idle_s", "precision", "device"]
        ),
        API_VALUES,
        max_size=2,
    ),
)
def test_api_bench_raises_config_errors_before_any_work(monkeypatch, family, config, kwargs):
    _no_supervisor(monkeypatch)
    with no_hang():
        try:
            api.bench(family, config, db=":memory:", **kwargs)
        except ParadnnError as e:
            assert "\n" not in str(e)
        except SupervisorBuilt:  # everything valid: it got as far as the Supervisor
            pass


@FAST
@given(
    family=st.sampled_from(["fc", "cnn", "rnn", "transformer"]),
    config=st.dictionaries(KEYS, API_VALUES, max_size=3),
    chips=API_VALUES,
    overlap=API_VALUES,
)
def test_api_simulate_raises_config_errors_only(family, config, chips, overlap):
    with no_hang():
        try:
            api.simulate("tpu-v3", family, config, chips=chips, overlap=overlap)
        except ParadnnError as e:
            assert "\n" not in str(e)


@FAST
@given(preset=st.sampled_from(["quick", "nope"]) | WORDS | st.integers() | st.none())
def test_api_dry_run_raises_config_errors_only(tmp_path, preset):
    with no_hang():
        try:
            api.dry_run(preset, db=str(tmp_path / "none.db"), device="cpu")
        except ParadnnError as e:
            assert "\n" not in str(e)
