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
from paradnn.errors import MAX_SHOWN, ParadnnError
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
    from paradnn.sweep.file import MAX_RUNS

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


# -- every option of every command (issue 32) ----------------------------------------------
#
# Each int, float, choice, path and repeatable option of every command gets hostile values:
# the answer is exit 2 and one line on stderr naming the option as typed, the value (cut when
# long, its brackets kept) and what is allowed — while the command line is read, before any
# work: every library function a command calls is replaced by one that fails the test.

import functools  # noqa: E402
import re  # noqa: E402
from dataclasses import dataclass  # noqa: E402

import typer  # noqa: E402

from paradnn import cli  # noqa: E402

APP = cli.app
MAX_T = 86400  # --min-time, --max-time: a day (docs/limits.md)
STEP = ("simulate", "step", "fc", "--platform", "tpu-v3")
SCALING = ("simulate", "scaling", "fc", "--platform", "tpu-v3")
COMPARE = ("compare", "--by", "precision", "--a", "fp32", "--b", "bf16")
VERSIONS = ("versions", "--torch", "2.13.0")


@dataclass(frozen=True)
class Opt:
    """One option of one command: `kind` int, float, choice, device or path, its bounds or
    choices, and whether the lower bound is excluded."""

    command: tuple[str, ...]
    flag: str
    kind: str
    low: float = 0
    high: float = 0
    choices: tuple[str, ...] = ()
    strict: bool = False

    def __str__(self) -> str:
        return f"{' '.join(self.command[:2])} {self.flag}"


def _ints(command, *specs):
    return [Opt(command, flag, "int", low, high) for flag, low, high in specs]


def _floats(command, *specs):
    return [Opt(command, f, "float", lo, hi, strict=s) for f, lo, hi, s in specs]


def _choices(command, *specs):
    return [Opt(command, flag, "choice", choices=tuple(c)) for flag, c in specs]


PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
MAX_WAIT = 7 * 86_400  # --max-wait's bound (paradnn.cli.progress.MAX_WAIT_S)
OPTIMIZERS = ("rmsprop", "sgd", "momentum")
FORMATS = ("table", "csv", "json")
SIM_MODELS = ("step", "roofline")
MEASURE_INTS = (("--threads", 1, 4096),)
TIMES = (("--min-time", 0, MAX_T, False), ("--max-time", 0, MAX_T, False))
ENERGY = (("--energy-period", 0.05, 10, False), ("--energy-idle", 0, 600, False))
TIMEOUT = (("--timeout", 0, 604800, True),)
INFEED_INTS = (("--loader-workers", 0, 256), ("--prefetch-factor", 1, 64))
RUN_CHOICES = (
    ("--precision", PRECISIONS),
    ("--optimizer", OPTIMIZERS),
    ("--mode", ("eager", "compile", "max-autotune", "reduce-overhead")),
    ("--data", ("device", "host", "pipeline")),
    ("--backend", ("torch", "jax")),
)
OPTIONS = [
    *_ints(
        ("run",),
        *MEASURE_INTS,
        *INFEED_INTS,
        ("--workers", 1, 1024),
        ("--recycle-every", 1, 1_000_000),
        ("--cpus-per-task", 1, 4096),
        ("--configs-per-job", 1, 10_000),
        ("--max-array-size", 1, 1_000_000),
    ),
    *_floats(("run",), *TIMES, *ENERGY, *TIMEOUT, ("--remeasure-backoff", 0, 3600, False)),
    *_ints(("run",), ("--remeasure", 0, 10)),
    *_floats(("run",), ("--max-wait", 0, MAX_WAIT, False)),
    *_ints(("bench", "fc"), ("--remeasure", 0, 10)),
    *_ints(COMPARE, ("--min-configs", 1, 10**9)),
    *_floats(("doctor",), ("--budget", 1, 600, False)),
    *_choices(
        ("run",),
        *RUN_CHOICES,
        ("--executor", ("local", "ray", "slurm")),
        ("--progress", ("bar", "jsonl", "quiet")),
    ),
    *_ints(("bench", "fc"), *MEASURE_INTS, *INFEED_INTS, ("--procs", 1, 4096)),
    *_floats(("bench", "fc"), *TIMES, *ENERGY, *TIMEOUT),
    *_choices(("bench", "fc"), *RUN_CHOICES),
    *_ints(("scale", "fc"), *MEASURE_INTS),
    *_floats(("scale", "fc"), *TIMES, *TIMEOUT),
    *_choices(
        ("scale", "fc"),
        *RUN_CHOICES[:2],
        ("--strategy", ("ddp", "fsdp")),
        ("--scaling", ("weak", "strong")),
    ),
    *_ints(
        ("results",),
        *MEASURE_INTS,
        ("--limit", 1, 10**9),
        ("--run", 1, 2**63 - 1),
        ("--procs", 1, 4096),
        ("--attempt", 1, 2**63 - 1),
    ),
    *_choices(
        ("results",),
        *RUN_CHOICES[:1],
        *RUN_CHOICES[2:],
        ("--family", ("fc", "cnn", "rnn", "transformer")),
        ("--status", ("ok", "oom")),
        ("--quality", ("good", "noisy")),
        ("--table", ("runs", "ceilings", "ops", "op_profile")),
        ("--format", FORMATS),
    ),
    *_ints(COMPARE, ("--limit", 1, 10**9)),
    *_floats(COMPARE, ("--fail-if-slower", 0, 100, False)),
    *_choices(
        COMPARE,
        ("--family", ("fc", "cnn")),
        ("--format", FORMATS),
        ("--fail-on", ("config", "geomean")),
    ),
    *_ints(("calibrate",), *MEASURE_INTS),
    *_floats(("calibrate",), ("--budget", 1, MAX_T, False)),
    *_choices(("calibrate",), RUN_CHOICES[0]),
    *_ints(("ops",), *MEASURE_INTS),
    *_choices(("ops",), RUN_CHOICES[0]),
    *_ints(VERSIONS, *MEASURE_INTS),
    *_floats(VERSIONS, *TIMES),
    *_choices(VERSIONS, RUN_CHOICES[0], ("--progress", ("bar", "jsonl", "quiet"))),
    *_ints(STEP, ("--chips", 1, 2**20)),
    *_floats(STEP, ("--overlap", 0, 1, False), ("--loader-rate", 0, 1e12, True)),
    *_choices(
        STEP,
        *RUN_CHOICES[:2],
        ("--format", FORMATS),
        ("--model", SIM_MODELS),
        ("--precision-policy", ("16-bit",)),
    ),
    *_ints(SCALING, ("--max-chips", 1, 2**20)),
    *_floats(SCALING, ("--overlap", 0, 1, False)),
    *_choices(SCALING, *RUN_CHOICES[:2], ("--format", FORMATS), ("--model", SIM_MODELS)),
    *_ints(("simulate", "mxu-study"), ("--batch", 1, 65536)),
    *_choices(("simulate", "mxu-study"), ("--dataflow", ("os", "ws", "is")), ("--format", FORMATS)),
    *_choices(("simulate", "precision-study"), ("--format", FORMATS)),
    *_choices(("simulate", "validate"), ("--format", FORMATS), ("--model", SIM_MODELS)),
    *_floats(("report",), ("--watch", 1, 86_400, False)),
    *_ints(("simulate", "fit"), ("--holdout", 0, 90)),
    *_choices(("simulate", "fit"), ("--format", FORMATS)),
]
COMMANDS_WITH_DEVICE = [("run",), ("bench", "fc"), ("scale", "fc"), ("calibrate",), ("ops",)]
OPTIONS += [Opt(c, "--device", "device") for c in [*COMMANDS_WITH_DEVICE, VERSIONS]]
COMMANDS_WITH_DB = [
    *COMMANDS_WITH_DEVICE,
    ("results",),
    ("report",),
    COMPARE,
    VERSIONS,
    ("simulate", "validate"),
    ("simulate", "fit"),
    ("doctor",),
]
OPTIONS += [Opt(c, "--db", "path") for c in COMMANDS_WITH_DB]
# Repeatable options (and --procs lists) naming a value twice: a typo, refused.
REPEATS = [
    (("run",), ["-p", "fp32", "-p", "fp32"], "--precision"),
    (("run",), ["--mode", "eager", "--mode", "eager"], "--mode"),
    (("run",), ["--data", "device", "--data", "device"], "--data"),
    (("run",), ["--loader-workers", "2", "--loader-workers", "2"], "--loader-workers"),
    (("run",), ["--backend", "torch", "--backend", "torch"], "--backend"),
    (("run",), ["--procs", "2,2"], "--procs"),
    (("scale", "fc"), ["--procs", "1,1"], "--procs"),
    (("calibrate",), ["-p", "fp32", "-p", "fp32"], "--precision"),
    (("ops",), ["-p", "fp32", "-p", "fp32"], "--precision"),
    (("ops",), ["--name", "matmul-4096", "--name", "matmul-4096"], "--name"),
    (VERSIONS, ["-p", "fp32", "-p", "fp32"], "--precision"),
    (("report",), ["--db", "a.db", "--db", "a.db"], "--db"),
    (COMPARE, ["--db", "a.db", "--db", "a.db"], "--db"),
    (("bench", "fc", "layers=1", "layers=2"), [], "fc config"),  # a config key twice
]

LONG = "7" * 10_000  # echoed whole, it would be a 10,000-character error line
ODD_WORDS = ["", " ", "[3]", "[bold]x[/]", LONG, "é", "0x10", "１２", "٣", "1_000"]


def _bad_values(opt: Opt) -> list[str]:
    """Values `opt` must refuse, each for a reason of its own."""
    if opt.kind == "int":
        low, high = int(opt.low), int(opt.high)
        words = ["3.0", "+3", " 3", "3 ", "1e3", "nan", "9" * 30, "9" * 5000]
        return [*ODD_WORDS, *words, str(low - 1), str(high + 1), str(-(10**25))]
    if opt.kind == "float":
        words = ["+1", " 1", "nan", "inf", "-inf", "1e400", "-1e400", "9" * 5000]
        below = ["0"] if opt.strict else [f"{opt.low - 1:g}", f"{opt.low - 0.01:g}"]
        return [*ODD_WORDS, *words, *below, f"{opt.high * 10:g}", repr(opt.high + 1.0)]
    if opt.kind == "path":
        return ["", " "]
    first = opt.choices[0] if opt.choices else "cpu"
    return [*ODD_WORDS, "bogus", first.upper(), f"{first} ", f" {first}", "cuda:99999"]


def _allowed(opt: Opt) -> str:
    if opt.kind == "int":
        return f"must be an integer in [{int(opt.low)}, {int(opt.high)}]"
    if opt.kind == "float":
        return f"must be a number in {'(' if opt.strict else '['}{opt.low:g}, {opt.high:g}]"
    if opt.kind == "device":
        return "must be auto, cpu, cuda or cuda:N"
    if opt.kind == "path":
        return "must be a file path (not empty)"
    return "must be one of " + ", ".join(opt.choices[:2])


class WorkStarted(BaseException):
    """A command got past reading its options (a BaseException: main()'s error boundary turns
    every Exception into one line, and this one must reach the test)."""


@functools.cache
def _command():
    return typer.main.get_command(APP)  # built once: 2 ms a case instead of 200


@pytest.fixture
def no_work(monkeypatch, tmp_path):
    """Every library call a command makes fails the test; the command line is read by the
    CLI's own click command, built once; the working folder is empty and must stay so."""
    from paradnn import api

    for name in api._HOMES:

        def refuse(*args, _name=name, **kwargs):
            raise WorkStarted(f"api.{_name} was called: an option was read too late")

        monkeypatch.setattr(api, name, refuse)

    def sample_load(*args, **kwargs):  # `run`'s quiet check is work too (1 s of sampling)
        raise WorkStarted("the load check ran: the options were read")

    from paradnn.cli import run as run_command

    monkeypatch.setattr(run_command, "quiet_check", sample_load)
    monkeypatch.setattr(cli, "app", lambda **kw: _command()(**kw))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert not list(tmp_path.iterdir()), "a refused command left a file behind"


def _refused(capsys, args: list[str], flag: str) -> str:
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and not out, (args[:8], err)
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), (args[:8], err)
    assert flag in err, (flag, err)
    assert len(err) < 400, err  # a long value is cut, never echoed whole
    return err


CASES = [(opt, v) for opt in OPTIONS for v in _bad_values(opt)]


@pytest.mark.parametrize("opt", OPTIONS, ids=str)
def test_every_option_refuses_hostile_values_in_one_line_before_any_work(capsys, no_work, opt):
    for value in _bad_values(opt):
        err = _refused(capsys, [*opt.command, f"{opt.flag}={value}"], opt.flag)
        assert _allowed(opt) in err, (value, err)
        if len(value) > MAX_SHOWN:
            assert f"({len(value):,} characters)" in err, err
        elif "[" in value and len(value) < 20:
            assert repr(value) in err, err  # brackets printed literally, not read as markup


@pytest.mark.parametrize(("command", "args", "flag"), REPEATS, ids=lambda x: str(x)[:30])
def test_a_value_given_twice_is_refused(capsys, no_work, command, args, flag):
    err = _refused(capsys, [*command, *args], flag)
    assert "twice" in err


# A property over the same options: any word is either refused by the rule (one line, before
# any work) or accepted by it — and only then does the command reach its library call.
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.I)


def _valid(opt: Opt, value: str) -> bool:
    if opt.kind == "int":
        ok = _INTEGER.fullmatch(value) and len(value) <= 40
        return bool(ok) and opt.low <= int(value) <= opt.high
    if opt.kind == "float":
        if not (_NUMBER.fullmatch(value) and len(value) <= 40):
            return False
        x = float(value)
        return math.isfinite(x) and (x > opt.low if opt.strict else x >= opt.low) and x <= opt.high
    if opt.kind == "device":
        return bool(re.fullmatch(r"auto|cpu|cuda(:[0-9]{1,4})?", value))
    if opt.kind == "path":
        return bool(value.strip()) and "\x00" not in value
    return value in opt.choices or (opt.flag == "--family" and value in families.names())


FEW = settings(FAST, max_examples=120)
WORDS_OR_NUMBERS = (
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
    | st.integers(-(2**70), 2**70).map(str)
    | st.floats().map(repr)
    | st.sampled_from(["0", "1", "2", "64", "0.5", "1e3", "cpu", "fp32", "json", "fc"])
)


@FEW
@given(opt=st.sampled_from(OPTIONS), value=WORDS_OR_NUMBERS)
def test_any_option_value_is_refused_by_the_rule_or_reaches_the_work(capsys, no_work, opt, value):
    capsys.readouterr()  # one example's output is never read as the next one's
    if "\x00" in value:
        return  # argv cannot carry a NUL
    args = [*opt.command, f"{opt.flag}={value}"]
    if _valid(opt, value):
        with pytest.raises(WorkStarted):  # accepted: the next stop is the library
            code, _, err = run_cli(capsys, *args)
            # a valid value can still meet a cross-option rule (--max-time under --min-time)
            assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
            raise WorkStarted("refused by a cross-option rule, in one line")
        return
    err = _refused(capsys, args, opt.flag)
    assert _allowed(opt) in err, (value, err)


def test_messages_with_brackets_print_them_literally(capsys, tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text('name = "x"\n')
    code, _, err = run_cli(capsys, "run", "--dry-run", "--preset", str(empty), "--db", "r.db")
    assert code == 2 and "add a [families.NAME] table or [[runs]] entries" in err, err
    code, _, err = run_cli(capsys, "bench", "fc", "layers=[bold]1[/]", "--db", "r.db")
    assert code == 2 and "'[bold]1[/]'" in err, err


@pytest.mark.parametrize("where", ["sweep", "chip"])
def test_an_integer_of_thousands_of_digits_names_its_key_and_bound(capsys, tmp_path, where):
    huge = "9" * 5000
    path = tmp_path / "f.toml"
    if where == "sweep":
        path.write_text(f"[families.fc]\nnodes = 8\nlayers = {huge}\n")
        args = ["run", "--dry-run", "--preset", str(path), "--db", str(tmp_path / "r.db")]
        needle = "families.fc.layers (line 3) = an integer of 5,000 digits: too long to read;"
    else:
        path.write_text(CHIP.format(peak=huge, bw="1e12", extra=""))
        args = ["simulate", "step", "fc", "--platform", str(path)]
        needle = "my-chip.peak_dense.bf16 (line 5) = an integer of 5,000 digits: too long to read;"
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and needle in err, err
    assert "set_int_max_str_digits" not in err and len(err) < 300
    _one_line(code, err)
    assert not (tmp_path / "r.db").exists()
