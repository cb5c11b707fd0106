"""What every command shares: the consoles, the options that recur, the output formats, the
timing-policy override, and the option parsers: every number, choice and path a user types is
read by one of them, so a bad one is one line naming the option as typed, the value and what
is allowed — while the command line is read, before any work (docs/limits.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from paradnn import families, paths
from paradnn.axes import listing
from paradnn.config import (
    DEVICES,
    MAX_ENERGY_IDLE_S,
    MAX_THREADS,
    MAX_TIMING_S,
    PRECISIONS,
    check_device,
)
from paradnn.errors import ConfigError, OptionError
from paradnn.validate import one_of, parse_int, parse_number

if TYPE_CHECKING:  # pragma: no cover
    from paradnn.config import TimingPolicy

MAX_ROWS = 1_000_000_000  # `--limit` of results and compare

# Piped output (CI logs, `| less`) gets a wide table instead of rich's 80-column default.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, soft_wrap=True)  # an error stays one line


def error_line(message: str, label: str = "error:", style: str = "bold red") -> None:
    """`error: message` on stderr, the message printed literally: a user's `[x]` stays."""
    err.print(Text.assemble((label, style), " ", message), highlight=False)


def option(flag: str, read: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A typer parser: `read` the value (None, an omitted option, passes); its ConfigError
    becomes an OptionError naming `flag`, which the parser passes on unchanged."""

    def parse(value: Any) -> Any:
        if value is None:
            return None
        try:
            return read(value)
        except ConfigError as e:
            raise OptionError(flag, e.value, e.allowed) from None

    return parse


def integer(flag: str, low: int, high: int) -> Callable[[Any], Any]:
    """An integer option in [low, high]: ASCII digits only ('3.0', '1_000', '٣', '+3' and
    ' 3' are refused, as config fields refuse them)."""
    return option(flag, lambda v: parse_int(flag, v, low, high))


def number(
    flag: str, low: float, high: float, *, strict: bool = False, why: str = ""
) -> Callable[[Any], Any]:
    """A finite number option in [low, high] ((low, high] with `strict`); `why` the bound."""

    def read(v: Any) -> float:
        try:
            return parse_number(flag, v, low, high, strict=strict)
        except ConfigError as e:
            raise ConfigError(flag, e.value, f"{e.allowed} ({why})" if why else e.allowed) from None

    return option(flag, read)


def choice(flag: str, allowed: Iterable[str] | Callable[[], Iterable[str]]) -> Callable[[Any], Any]:
    """A word from a closed set (or from a registry, read when the option is: `allowed` a
    function); the message lists the set. The parser's `accepts()` says what it takes (the
    help test holds every option's help against it)."""
    words = allowed if callable(allowed) else (lambda fixed=tuple(allowed): fixed)

    def read(v: Any) -> str:
        one_of(flag, v, tuple(words()))
        return v

    parse = option(flag, read)
    parse.accepts = lambda: tuple(words())  # type: ignore[attr-defined]
    return parse


def path(flag: str) -> Callable[[Any], Any]:
    """A file path: not empty (`--db ''` would store the results nowhere anyone can find)."""

    def read(v: Any) -> str:
        if not isinstance(v, str) or not v.strip() or "\x00" in v:
            raise ConfigError(flag, v, "must be a file path (not empty)")
        return paths.plain(flag, v)  # no newline or other control character (issue 46)

    return option(flag, read)


def device_spec(v: Any) -> str:
    check_device(v)
    return v


DEVICE = option("--device", device_spec)
DEVICE.accepts = lambda: DEVICES  # type: ignore[attr-defined]


def distinct(flag: str, values: Sequence[Any] | None) -> None:
    """A repeatable option (or a list) names each value once: a repeat is a typo, not a wish."""
    seen: set[Any] = set()
    for v in values or ():
        if v in seen:
            raise OptionError(flag, v, "is given twice (give each value once)")
        seen.add(v)


def unique(flag: str) -> Callable[[Any], Any]:
    """A typer callback refusing a repeated value of a repeatable option."""

    def check(value: Any) -> Any:
        distinct(flag, value)
        return value

    return check


def parsed(
    kind: Any, flag: str, read: Callable[[Any], Any], help: str, *names: str, **kw: Any
) -> Any:
    """An option of type `kind` read by `read` (one of the parsers above), in one line."""
    return Annotated[kind, typer.Option(flag, *names, parser=read, help=help, **kw)]


def words_option(
    kind: Any,
    flag: str,
    read: Callable[[Any], Any],
    help: str,
    *names: str,
    notes: dict[str, str] | None = None,
    **kw: Any,
) -> Any:
    """An option that takes one word `read` accepts (a `choice` or `enum_choice`): `{values}`
    in `help` becomes the list of those words, each with its note, so the help cannot leave
    one out (tests/test_cli_help.py)."""
    words = listing(read.accepts(), notes)  # type: ignore[attr-defined]
    return parsed(kind, flag, read, help.replace("{values}", words), *names, **kw)


def int_option(flag: str, low: int, high: int, help: str, kind: Any = int | None, **kw: Any) -> Any:
    """An integer option in [low, high]."""
    return parsed(kind, flag, integer(flag, low, high), help, **kw)


def number_option(
    flag: str, low: float, high: float, help: str, kind: Any = float | None, **kw: Any
) -> Any:
    """A number option in [low, high]; `strict` and `why` as for `number`."""
    bounds = {k: kw.pop(k) for k in ("strict", "why") if k in kw}
    return parsed(kind, flag, number(flag, low, high, **bounds), help, **kw)


def flag_option(flag: str, help: str, *names: str, **kw: Any) -> Any:
    """An on/off option (`--json`, `--force`, `--checks/--no-checks`)."""
    return Annotated[bool, typer.Option(flag, *names, help=help, **kw)]


def text_option(flag: str, help: str, **kw: Any) -> Any:
    """A free-text option (an address, a folder): None unless given."""
    return Annotated[str | None, typer.Option(flag, help=help, **kw)]


DbOpt = parsed(str, "--db", path("--db"), "Result database (SQLite file).")
DbsOpt = parsed(
    list[str] | None,
    "--db",
    path("--db"),
    "Result database; repeat to merge several (machines).",
    callback=unique("--db"),
    show_default=False,
)
AUTO = {"auto": "first GPU, else CPU"}
DeviceOpt = words_option(str, "--device", DEVICE, "{values}.", notes=AUTO)
ThreadsOpt = int_option(
    "--threads",
    1,
    MAX_THREADS,
    "CPU threads for torch (default: the cores this process may use that other processes leave "
    "free, within the cgroup's CPU quota; docs/runner.md).",
)
LIMIT = integer("--limit", 1, MAX_ROWS)  # rows shown by results and compare
FamilyOpt = parsed(
    str | None,
    "--family",
    choice("--family", lambda: [*families.names(), families.USER]),
    f"Only this family: {listing(families.names())} (`paradnn families`), or user (models of "
    "your own, `bench --model`).",
)
PRECISION = choice("--precision", PRECISIONS)  # -p too: the message names the long form


def precisions_option(help: str) -> Any:
    """-p/--precision, repeatable, each precision once; `help` says what for (the values are
    added)."""
    return parsed(
        list[str] | None,
        "--precision",
        PRECISION,
        f"{help}: {listing(PRECISIONS)}.",
        "-p",
        callback=unique("--precision"),
    )


JsonOpt = flag_option("--json", "Machine-readable output.")
ForceRunOpt = flag_option(  # bench and scale: `run` stores such runs predicted_oom instead
    "--force",
    "Run even when the predicted memory (of every rank) cannot fit in what the device has free "
    "(without it: refused, exit 2, before any work).",
)
ProfileOpt = typer.Option(
    "--profile",
    help="Also profile 5 extra steps per run: per-op time per step, FLOPs and bytes "
    "(`paradnn results --table op_profile`).",
)
MinTimeOpt = number_option(
    "--min-time", 0.0, MAX_TIMING_S, "Seconds of timed steps before stopping is allowed."
)
MaxTimeOpt = number_option(
    "--max-time", 0.0, MAX_TIMING_S, "Cap on the timed phase of each run, in seconds."
)
EnergyOpt = flag_option(
    "--energy",
    "Also measure energy over the timed window (NVML on GPUs, RAPL for CPU packages; the window "
    "grows to what the counter needs for ≤1% error). See docs/energy.md.",
)
EnergyPeriodOpt = number_option(
    "--energy-period",
    0.05,
    10.0,
    "Power sampling period in seconds (0.05 to 10).",
    float,
    why="NVML polled faster than 50 ms returns zeros",
)
EnergyIdleOpt = number_option(
    "--energy-idle",
    0.0,
    MAX_ENERGY_IDLE_S,
    "Seconds of idle power measured before the runs (0: none).",
    float,
)
EmulatedOpt = flag_option(
    "--allow-emulated",
    "Run a low precision this device has no native arithmetic for (e.g. bf16 on an AVX2 CPU); "
    "stored and shown as emulated. Without it such runs are `unsupported`.",
)
AssignmentsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Config values as key=value, e.g. layers=8 nodes=1024 batch=256.",
        show_default=False,
    ),
]


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


def enum_choice(flag: str, cls: type[StrEnum]) -> Callable[[Any], Any]:
    """A word from a StrEnum's values, read by the same rule as every choice."""
    names = tuple(m.value for m in cls)

    def read(v: Any) -> StrEnum:
        one_of(flag, v, names)
        return cls(v)

    parse = option(flag, read)
    parse.accepts = lambda: names  # type: ignore[attr-defined]
    return parse


FormatOpt = words_option(Format, "--format", enum_choice("--format", Format), "{values}.", "-f")


def timing(
    min_time: float | None, max_time: float | None, base: TimingPolicy | None = None
) -> TimingPolicy:
    """The timing policy with --min-time/--max-time applied (a longer minimum lifts the cap)."""
    import dataclasses

    from paradnn.measure.timer import TimingPolicy

    policy = base or TimingPolicy()
    changes = {
        k: v for k, v in (("min_time_s", min_time), ("max_time_s", max_time)) if v is not None
    }
    if "min_time_s" in changes and "max_time_s" not in changes:
        changes["max_time_s"] = max(policy.max_time_s, changes["min_time_s"])
    if max_time is not None and max_time < changes.get("min_time_s", policy.min_time_s):
        floor = changes.get("min_time_s", policy.min_time_s)
        allowed = (
            f"must be ≥ --min-time ({floor:g} s)"
            if min_time is not None
            else f"must be ≥ the minimum time, {floor:g} s (a lower one: --min-time)"
        )
        raise OptionError("--max-time", max_time, allowed)
    return dataclasses.replace(policy, **changes) if changes else policy
