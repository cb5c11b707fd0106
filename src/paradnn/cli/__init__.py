"""`paradnn`: a thin command line over `paradnn.api`; every command calls one library function.

One module per domain — `run` (run, bench), `results` (results, families, platforms),
`ceilings` (calibrate, ops), `report` (report, compare), `simulate` (its subcommands) — with
the shared options in `common` and the run reporters in `progress`. This module is the app,
the command list in help order, and `main()`: bad input of any kind is one line, exit 2."""

from __future__ import annotations

import logging
import re
import sqlite3
import sys
from typing import Annotated

import typer

from paradnn import __version__
from paradnn.cli import (
    baselines,
    ceilings,
    helptext,
    report,
    results,
    run,
    scale,
    simulate,
    versions,
)
from paradnn.cli import doctor as doctor_cmd
from paradnn.cli.common import error_line, out
from paradnn.errors import MAX_SHOWN, ParadnnError, shown
from paradnn.runner import signals

app = typer.Typer(
    name="paradnn",
    help=(
        "Benchmark deep-learning training on this machine the way the ParaDnn paper did: "
        "generated FC, CNN, RNN and Transformer models and the studies' real models, timed "
        "training steps, counted FLOPs, energy where it can be read, and a SQLite result "
        "store.\n\nStart with `paradnn run` (the quick preset), then `paradnn report` (HTML) "
        "or `paradnn results`."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    epilog=helptext.epilog(""),
)
app.command()(run.run)
app.command()(run.bench)
app.command()(scale.scale)
app.command()(results.results)
app.command("families")(results.families)
app.command()(ceilings.calibrate)
app.command()(ceilings.ops)
app.command()(results.platforms)
app.command()(report.report)
app.command()(report.compare)
app.add_typer(
    baselines.app,
    name="baseline",
    short_help=helptext.summary(baselines.app.info.help),
    epilog=helptext.epilog("baseline"),
)
app.command()(baselines.history)
app.add_typer(
    simulate.app,
    name="simulate",
    short_help=helptext.summary(simulate.app.info.help),
    epilog=helptext.epilog("simulate"),
)
app.command()(versions.versions)
app.command()(doctor_cmd.doctor)
# every --help readable at 80 columns, with examples (cli/helptext.py)
helptext.tidy(app.registered_commands)
helptext.tidy(simulate.app.registered_commands, "simulate ")
helptext.tidy(baselines.app.registered_commands, "baseline ")


def _version(value: bool) -> None:
    if value:
        out.print(f"paradnn {__version__}")
        raise typer.Exit()


_DEBUG = {"on": False}


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="On an error, show Python's traceback instead of the one-line message "
            "(before the command: `paradnn --debug results`).",
        ),
    ] = False,
) -> None:
    _DEBUG["on"] = debug


class _Warnings(logging.Handler):
    """The library's warnings (a damaged row skipped, …) as `warning: …` lines on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        error_line(record.getMessage(), "warning:", "yellow")


_log = logging.getLogger("paradnn")
if not any(isinstance(h, _Warnings) for h in _log.handlers):
    _log.addHandler(_Warnings(logging.WARNING))
    _log.propagate = False


def _fail(message: str, code: int) -> int:
    """One line on stderr, printed literally (a [bracket] in a path or value stays)."""
    error_line(" | ".join(ln for ln in message.splitlines() if ln.strip()))
    return code


def _os_error(e: OSError) -> str:
    """An OSError as one line: what went wrong and the path it went wrong on."""
    names = " -> ".join(str(n) for n in (e.filename, e.filename2) if n is not None)
    what = e.strerror or str(e) or type(e).__name__
    return f"{names}: {what}" if names else what


# Recent typer vendors click (and raises the vendored click's errors), older typer raises
# click's own: take the base class from typer's public BadParameter so either is caught.
UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


LONG_WORD = re.compile(rf"[^\s'\"]{{{MAX_SHOWN + 1},}}")  # a long word click echoes: cut


def main() -> None:
    """Entry point and every command's error boundary. Bad input (options, files, databases
    refused before any work) is one line on stderr and exit status 2; a failure during the
    work (a file that cannot be written, a database error, a bug) is one line and exit status
    1. `paradnn --debug …` lets the exception through with its traceback."""
    _DEBUG["on"] = False
    interrupted, code = False, None
    try:
        with signals.terminating():  # SIGTERM, SIGHUP: handled as Ctrl-C is
            code = app(standalone_mode=False)
    except UsageError as e:  # click's own checks: unknown option, not an integer, …
        if type(e).__name__ == "NoArgsIsHelpError":  # the help is printed already (as typer)
            sys.exit(0)
        hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx else ""
        message = LONG_WORD.sub(lambda m: shown(m[0])[1:].replace("'…", "…", 1), e.format_message())
        code = _fail(message.replace("Value error, ", "") + hint, 2)
    except (typer.Abort, KeyboardInterrupt) as e:  # Ctrl-C or SIGTERM outside a run
        code, interrupted = signals.exit_code(e), True
        if isinstance(e, signals.Terminated):
            error_line(f"terminated by {e.args[0]}: every child process was ended", "stopped:")
    except ParadnnError as e:
        if _DEBUG["on"]:
            raise
        code = _fail(str(e), getattr(e, "exit_code", 2))  # WorkFailed: 1
    except OSError as e:
        if _DEBUG["on"]:
            raise
        code = _fail(_os_error(e), 1)
    except sqlite3.Error as e:
        if _DEBUG["on"]:
            raise
        code = _fail(f"database: {e}", 1)
    except Exception as e:
        if _DEBUG["on"]:
            raise
        what = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        code = _fail(f"{what} (a paradnn bug: `paradnn --debug …` shows where)", 1)
    finally:
        # no worker, resource tracker or other child outlives the command (issue 46)
        signals.end_children(interrupted=interrupted or code in (130, 143, 129))
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
