"""Every terminal size (issue 45): the tables fit 80, 100 and 160 columns by design — numbers
never cut or wrapped, header words never split, every column left out named under the table —
`results` and the live view of `paradnn run` checked in a real pseudo-terminal, and every
--help readable at 80 columns with examples and summaries that end where a sentence ends."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from rich.console import Console

from paradnn.cli import fit, helptext, tables
from paradnn.cli.sim_tables import sim_table

import synth

WIDTHS = (80, 100, 160)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
SRC = str(Path(__file__).resolve().parents[1] / "src")
NOT_SHOWN = re.compile(r"not shown at (\d+) columns: (.*?);\s+widen the terminal", re.S)


def _rows() -> list[dict]:
    """Runs of three families in two modes, with compile times, energy and a CI each: more
    columns than 80 (or 100) columns hold."""
    out = []
    for i, (fam, cfg) in enumerate(
        [
            ("fc", {"layers": 4, "nodes": 2048, "batch": 256}),
            ("fc", {"layers": 2, "nodes": 64, "batch": 8}),
            ("cnn", {"blocks": 2, "filters": 32, "image": 32, "batch": 16}),
            ("rnn", {"layers": 2, "embed": 200, "batch": 64}),
            ("transformer", {"layers": 2, "d_model": 128, "heads": 4, "batch": 8}),
        ]
    ):
        for mode in ("eager", "compile"):
            r = synth.row(fam, cfg, 0.011 * (i + 1), mode=mode)
            step = r["step_time_s"]
            r |= {"step_time_ci_low_s": step * 0.8, "step_time_ci_high_s": step * 1.19}
            r |= {"utilization_datasheet": 0.0123 * (i + 1), "quality": "noisy"}
            if mode == "compile":
                r |= {"compile_cold_s": 12.25 + i, "compile_warm_s": 3.5}
            out.append(r)
    return out


def _render(table, width: int) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _header_words(text: str) -> set[str]:
    return {w for ln in text.splitlines() if "┃" in ln for c in ln.split("┃") for w in c.split()}


def _check_fits(text: str, width: int, headers: list[str], cells: list[str]) -> None:
    """No line wider than the terminal; every cell shown whole on one line (a number cut to
    `0.9…` or split into `11.4 / M` is not); header words unsplit; each header either shown
    or named in the one line under the table."""
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= width
    body = [ln for ln in lines if ln.startswith("│")]
    assert not any("…" in ln for ln in body)
    shown_words = _header_words(text)
    named = NOT_SHOWN.search(text)
    left = set()
    if named:
        assert named[1] == str(width)
        left = {h.strip() for h in " ".join(named[2].split()).split(", ")}
    for h in headers:
        if h in left:
            continue
        assert set(h.split()) <= shown_words, (h, width)  # its words, each whole
    shown = [h for h in headers if h not in left]
    for cell in cells:
        assert any(cell in ln for ln in body), (cell, width)
    assert shown and set(shown) | left == set(headers)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_runs_table_fits_every_width_and_names_what_it_leaves_out(width):
    rows = _rows()
    text = _render(tables.rich_table(rows, title="t", width=width), width)
    full = tables.rich_table(rows, title="t")  # no limit: every column
    headers = [c.header for c in full.columns]
    steps = [tables._ms(r) for r in rows]
    _check_fits(text, width, headers, steps)
    assert "fc 4x2048 b256" in text  # the compact config, the family in it
    assert "config: fc layers×nodes" in text  # and the line that reads it
    body = [ln for ln in text.splitlines() if ln.startswith("│")]
    assert len(body) == len(rows)  # one line per run
    if width == 80:
        assert NOT_SHOWN.search(text)


def test_a_column_left_out_is_the_least_useful_and_never_the_step_time():
    cols = [
        fit.Column("config", ("fc 4x2048 b256",)),
        fit.Column("step ms (±95% CI)", ("12.5 ±3.1%",), "right", number=True),
        fit.Column("FLOP/s", ("1.23 T",), "right", number=True, drop=1),
        fit.Column("params", ("2.28 M",), "right", number=True, drop=2),
    ]
    kept, left = fit.choose(cols, 40)
    assert [c.header for c in left] == ["FLOP/s"]
    kept, left = fit.choose(cols, 10)  # nothing left to drop: the essentials stay
    assert [c.header for c in kept] == ["config", "step ms (±95% CI)"]
    assert fit.choose(cols, None) == (cols, [])
    # a number's least width is its whole cell; a text's, its longest word
    assert cols[1].least() == len("12.5 ±3.1%") and cols[0].least() == len("4x2048")


@pytest.mark.parametrize("width", WIDTHS)
def test_compare_never_cuts_a_number(tmp_path, width):
    from paradnn import analysis as A

    rows = [r | {"n_samples": 20} for r in _rows()]
    for r in rows:
        r["samples"] = [r["step_time_s"] * (1 + 0.01 * ((k % 5) - 2)) for k in range(20)]
    db = synth.write_db(tmp_path / "c.db", rows)
    c = A.compare(A.load([db]), "mode", "eager", "compile")
    summary = tables.speedup_summary(c)
    text = _render(tables.speedup_summary(c, width=width), width)
    geo = [
        tables._x_ci(*r) for r in c.summary[["geomean", "geomean_ci_low", "geomean_ci_high"]].values
    ]
    _check_fits(text, width, [col.header for col in summary.columns], geo)
    pairs = tables.speedup_pairs(c, 20)
    text = _render(tables.speedup_pairs(c, 20, width=width), width)
    speedups = [tables._x_ci(r.speedup, r.ci_low, r.ci_high) for r in c.pairs.itertuples()]
    _check_fits(text, width, [col.header for col in pairs.columns], speedups)


@pytest.mark.parametrize("width", WIDTHS)
def test_simulate_step_names_every_column_it_leaves_out(width):
    from paradnn import api

    rows = api.simulate("tpu-v3", None, {}, preset="quick", precision="bf16")
    rows = [{k: v for k, v in r.items() if k not in ("host_profile",)} for r in rows]
    full = sim_table(rows, title="t")
    text = _render(sim_table(rows, title="t", width=width), width)
    steps = {f"{r['predicted_step_s'] * 1e3:.4g}" for r in rows if r.get("predicted_step_s")}
    _check_fits(text, width, [c.header for c in full.columns], sorted(steps))


# -- a real terminal -------------------------------------------------------------------------


def _in_pty(argv: list[str], columns: int, lines: int = 24) -> str:
    """Run a command with stdout and stderr on a pseudo-terminal of `columns`×`lines` (no
    COLUMNS variable: the program asks the terminal) and return what it wrote, colours
    stripped."""
    import fcntl
    import pty
    import struct
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env |= {"PYTHONPATH": SRC + os.pathsep + env.get("PYTHONPATH", ""), "TERM": "xterm"}
    proc = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


@pytest.mark.parametrize("width", WIDTHS)
def test_results_in_a_real_terminal(tmp_path, width):
    rows = _rows()
    db = synth.write_db(tmp_path / "r.db", rows)
    text = _in_pty([sys.executable, "-m", "paradnn", "results", "--db", db], width)
    stored = tables.rich_table(json.loads(json.dumps(rows, default=str)))
    steps = [tables._ms(r) for r in rows]
    _check_fits(text, width, [c.header for c in stored.columns], steps)
    assert len([ln for ln in text.splitlines() if ln.startswith("│")]) == len(rows)


LIVE = """
import sys
sys.path.insert(0, {tests!r})
from types import SimpleNamespace
from paradnn.cli.progress import BarReporter, ProgressMode
from paradnn.runner.supervisor import Event
import test_cli_watch as W

reporter = BarReporter(ProgressMode.bar)  # stderr: the terminal, its size asked of it
big = {{"layers": 6, "d_model": 512, "heads": 8, "ffn": 2048, "length": 128, "batch": 64}}
running = [SimpleNamespace(family="transformer", precision="bf16", config=big)]
with reporter:  # the live region drawn on the terminal as a sweep draws it
    for e in W._stream(12)[:11]:
        reporter(e)
    reporter(Event("run", 10, 12, {{"ok": 9, "oom": 1}}, running=running, eta_s=300.0))
    reporter.bar.refresh()
print("=" * 10, flush=True)
for part in reporter.bar.get_renderables():  # wrapped as rich's live region wraps them
    reporter.console.print(part, soft_wrap=False)
"""


@pytest.mark.parametrize(("width", "height"), [(80, 24), (100, 40), (160, 16)])
def test_the_live_view_keeps_the_bar_on_screen(width, height):
    script = LIVE.format(tests=str(Path(__file__).parent))
    text = _in_pty([sys.executable, "-c", script], width, height)
    view = text.split("=" * 10, 1)[1].strip("\n").splitlines()
    assert len(view) <= height - 1  # the whole view on screen, with the cursor's line
    assert max(len(ln) for ln in view) <= width
    bar = next(ln for ln in view if "10/12" in ln)
    assert "ETA 5m" in bar and "ok:9 oom:1" in bar  # the bar, its ETA and counts: one line
    assert view[-1].startswith("now: transformer 6x512")  # what runs, on one line
    rows = [ln for ln in view if ln.startswith("│")]
    assert rows and all(" b" in ln for ln in rows)  # one line per result


# -- --help ----------------------------------------------------------------------------------


def _commands():
    """(path, click command) of every command, the groups' subcommands included."""
    from paradnn.cli import app

    root = typer.main.get_command(app)
    for name, cmd in root.commands.items():
        yield name, cmd
        for sub, subcmd in getattr(cmd, "commands", {}).items():
            yield f"{name} {sub}", subcmd


def test_every_command_has_examples_that_parse():
    from paradnn.cli import app

    paths = dict(_commands())
    assert set(helptext.EXAMPLES) == {"", *paths}
    assert "Examples:" in (typer.main.get_command(app).epilog or "")
    for example in helptext.EXAMPLES[""]:  # the root's: each names a command
        assert shlex.split(example)[1] in paths
    for path, cmd in paths.items():
        assert "Examples:" in (cmd.epilog or ""), path
        for example in helptext.EXAMPLES[path]:
            assert len(f" $ {example}") <= 80, example  # one line at 80 columns
            words = shlex.split(example)
            words = words[: words.index(">")] if ">" in words else words
            assert words[0] == "paradnn"
            if getattr(cmd, "commands", None):  # a group: its example names a subcommand
                assert words[2] in cmd.commands, example
                continue
            prefix = 1 + len(path.split())
            assert words[1:prefix] == path.split(), example
            ctx = cmd.make_context(path, words[prefix:])  # the command's own parsers
            assert ctx.params is not None


def test_every_summary_is_the_descriptions_first_sentence():
    from paradnn.cli import app

    root = typer.main.get_command(app)
    for path, cmd in _commands():
        short = cmd.get_short_help_str(limit=10_000) if not cmd.short_help else cmd.short_help
        assert short.rstrip().endswith((".", ")")), (path, short)
        assert "\n" not in short and (cmd.help or "").startswith(short[:-1]), path
        # a docstring's line break is not a line break on screen
        assert all("\n" not in p for p in (cmd.help or "").split("\n\n")), path
    assert root.commands["doctor"].short_help.startswith("Say what this machine is")


def test_summaries_do_not_break_mid_sentence_at_80_columns():
    text = _in_pty([sys.executable, "-m", "paradnn", "--help"], 80)
    panel = text.split("Commands", 1)[1].split("╰", 1)[0]
    entries = re.split(r"\n│ (?=[a-z])", panel)
    for entry in entries[1:]:
        words = " ".join(ln.strip(" │╰─╯") for ln in entry.splitlines())
        assert words.rstrip().endswith((".", ")")), words


@pytest.mark.parametrize("path", ["run", "bench", "results", "compare", "simulate step"])
def test_help_at_80_columns_cuts_no_option_name(path):
    text = _in_pty([sys.executable, "-m", "paradnn", *path.split(), "--help"], 80)
    assert max(len(ln) for ln in text.splitlines()) <= 80
    cmd = dict(_commands())[path]
    for p in cmd.params:
        for name in (*p.opts, *getattr(p, "secondary_opts", ())):
            if name.startswith("--"):
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (path, name)
    assert "Examples:" in text and "<bool>" not in text


def test_one_reason_for_the_rows_without_a_prediction_is_said_once():
    from paradnn import api

    rows = api.simulate("tpu-v3", None, {}, preset="quick", precision="fp32")
    missing = [r for r in rows if r.get("predicted_step_s") is None]
    assert missing and len({r["reason"] for r in missing}) == 1
    text = _render(sim_table(rows, title="t", width=80), 80)
    assert f"no prediction for {len(missing)} of {len(rows)} rows (—): " in " ".join(text.split())
    assert "reason" not in _header_words(text)
    assert len([ln for ln in text.splitlines() if ln.startswith("│")]) == len(rows)
