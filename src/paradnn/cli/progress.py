"""What a running command tells its user: one-line notes and warnings on stderr, and the run
reporters — a live bar on a terminal, a line log otherwise, JSON lines for scripts."""

from __future__ import annotations

import math
import sys
from collections import deque
from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.text import Text

from paradnn.cli import tables
from paradnn.cli.common import err, error_line
from paradnn.measure.timer import progress_words

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console, RenderableType
    from rich.progress import Progress
    from rich.table import Table

    from paradnn.host import LoadSample
    from paradnn.runner.supervisor import Event


class ProgressMode(StrEnum):
    bar = "bar"
    jsonl = "jsonl"
    quiet = "quiet"


def say(msg: str) -> None:
    """One line of progress on stderr (long commands are never silent for more than seconds)."""
    err.print(Text(msg, style="dim"), highlight=False)  # literally: a user's `[x]` stays


def warn_noisy(rows: list[dict[str, Any]]) -> None:
    """One warning on stderr for the noisy runs among `rows`, however many there are
    (quality.noisy_summary: counts, the worst CI, the load, what would help)."""
    from paradnn.measure.quality import kept_noisy, noisy_summary

    line = noisy_summary(
        rows, lambda r: f"{r['family']} {tables.compact_config(r['config'])} {r['precision']}"
    )
    if line and kept_noisy(rows):
        error_line(line, "warning:", "yellow")
    elif line:  # every noisy config was good once measured again: news, not a warning
        say(line)


# a failure during the work (docs/limits.md#a-command-that-measured-nothing)
NOTHING_MEASURED_EXIT = 1


def exit_if_nothing_measured(statuses: Iterable[str]) -> None:
    """After a measuring command printed what it stored: when it attempted runs and none ended
    `ok`, one `error:` line on stderr counting how they ended, and exit status 1. A command
    that had nothing left to do (a resumed sweep) measured nothing wrongly and exits 0."""
    from collections import Counter

    import typer

    from paradnn.records import Status

    counts = Counter(statuses)
    total = sum(counts.values())
    if not total or counts[Status.OK]:
        return
    runs = "the run" if total == 1 else f"all {total} runs"
    if len(counts) == 1:
        how = next(iter(counts))
    else:
        how = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    error_line(f"nothing was measured: {runs} ended {how} (the reasons are above)")
    raise typer.Exit(NOTHING_MEASURED_EXIT)


QUIET_WINDOW_S = 1.0  # `paradnn run`'s load sample before a sweep
WAIT_SAY_EVERY_S = 10.0  # --wait-for-idle says how it waits at most this often
MAX_WAIT_S = 7 * 86_400.0


def quiet_check(
    wait: bool, max_wait_s: float, sampler: Callable[[], LoadSample] | None = None
) -> LoadSample:
    """The machine's load before a sweep (about a second): one warning line when it is busy,
    and with `wait` a bounded hold until it is quiet, saying how it waits on stderr. Returns
    the last sample (the sweep's threads are chosen from it). Ctrl-C while waiting runs
    nothing and exits 130."""
    import time

    import typer
    from rich.markup import escape

    from paradnn import host
    from paradnn.measure.quality import busy_line, wait_for_quiet

    take = sampler or (lambda: host.sample_load(QUIET_WINDOW_S))
    if not wait:
        sample = take()
        line = busy_line(sample)
        if line:
            err.print(f"[yellow]warning[/]: {escape(line)}", highlight=False)
        return sample
    said = [-math.inf]

    def heard(sample: LoadSample, waited: float) -> None:
        if time.monotonic() - said[0] >= WAIT_SAY_EVERY_S:
            said[0] = time.monotonic()
            say(
                f"waiting for a quiet machine ({waited:.0f} of at most {max_wait_s:.0f} s): "
                f"{escape(sample.words())}"
            )

    try:
        sample, quiet = wait_for_quiet(take, max_wait_s, heard)
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/] while waiting for a quiet machine: nothing was run.")
        raise typer.Exit(130) from None
    if not quiet:
        err.print(
            f"[yellow]warning[/]: still busy after {max_wait_s:.0f} s ({escape(sample.words())}): "
            "running anyway; runs under load are flagged noisy",
            highlight=False,
        )
    elif math.isfinite(said[0]):
        say(f"quiet now: {escape(sample.words())}")
    return sample


def reporter(mode: ProgressMode) -> BarReporter | JsonlReporter:
    return JsonlReporter() if mode is ProgressMode.jsonl else BarReporter(mode)


LIVE_ROWS = 8  # the live table's latest results (fewer when the terminal is short)
BAR_WIDTH = 24  # the bar, its counts and its ETA fit one line of 80 columns


class BarReporter:
    """Progress on stderr: on a terminal a live view — the bar (done/total, elapsed, ETA from
    predicted costs, counts by status) and a line saying what is running, under a table of
    the latest results, one line each, as many as the terminal's height leaves room for (the
    bar stays on screen at 80×24); otherwise one plain line per result."""

    def __init__(self, mode: ProgressMode, console: Console | None = None):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.table import Column

        self.console = console or err
        self.skipped = 0
        self.quiet = mode is ProgressMode.quiet
        self.phase = ""
        self.now = ""  # what is running: the line under the bar
        self.last_line = 0.0
        self.latest: deque[dict[str, Any]] = deque(maxlen=LIVE_ROWS)
        one_line = Column(no_wrap=True)
        self.bar = _live_view(
            self,
            TextColumn("[bold]run", table_column=one_line),
            BarColumn(bar_width=BAR_WIDTH),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TimeElapsedColumn(table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[eta]}", table_column=Column(no_wrap=True)),
            TextColumn("{task.fields[status]}", table_column=Column(no_wrap=True)),
            console=self.console,
            disable=mode is ProgressMode.quiet or not self.console.is_terminal,
            transient=True,
        )
        self.task = self.bar.add_task("run", total=None, status="", eta="")

    def __enter__(self) -> BarReporter:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def latest_table(self, width: int | None = None, lines: int | None = None) -> Table | None:
        """The latest results (newest last) as `results` shows runs, `width` columns wide and at
        most `lines` tall (the oldest rows left out first); None before the first result or
        when not even one row fits."""
        if not self.latest:
            return None
        rows = list(self.latest)
        done = self.bar.tasks[0].completed if self.bar.tasks else len(rows)
        for n in range(len(rows), 0, -1):
            title = f"latest {n} of {done:.0f} results"
            table = tables.rich_table(rows[-n:], title=title, width=width)
            if lines is None:
                return table
            options = self.console.options.update(width=width or self.console.width)
            if len(self.console.render_lines(table, options, pad=False)) <= lines:
                return table
        return None

    def now_line(self) -> Text:
        """What is running, on one line: cut at the terminal's edge, never wrapped."""
        line = Text.from_markup(self.now, overflow="ellipsis")
        line.no_wrap = True
        return line

    def __call__(self, e: Event) -> None:
        if e.kind == "start":
            self.skipped = e.skipped
            if not self.quiet:
                for note in e.notes:
                    say(note)
                say(f"{e.total} runs to do" + (f", {e.skipped} already done" if e.skipped else ""))
        if e.kind in ("remeasure", "note") and not self.quiet:  # a config measured again,
            # another sweep sharing the database (runner/sharing.py)
            for note in e.notes:
                say(note)
            return
        if e.kind == "result" and e.record is not None:
            self.latest.append(e.record.as_dict())
        if not self.quiet and not self.console.is_terminal:  # a log, not a live view
            self._line(e)
            return
        if e.kind == "progress" and e.progress is not None:
            self.phase = progress_words(e.progress)
        elif e.kind != "progress":
            self.phase = ""
        counts = " ".join(f"{k}:{v}" for k, v in sorted(e.counts.items()))
        if getattr(e, "nodes", None):  # a cluster executor: results per host
            counts += "  [" + " ".join(f"{h}:{n}" for h, n in sorted(e.nodes.items())) + "]"
        now = "; ".join(
            f"{s.family} {tables.short_config(s.family, dict(s.config))} {s.precision}"
            for s in e.running
        )
        eta = "" if e.eta_s is None else f"ETA {tables.duration(e.eta_s)}"
        phase = f" · [dim]{escape(self.phase)}[/]" if self.phase else ""
        self.now = f"now: {escape(now)}{phase}" if now else ""
        self.bar.update(self.task, total=e.total, completed=e.done, status=escape(counts), eta=eta)

    def _line(self, e: Event) -> None:
        import time

        if e.kind == "result" and e.record is not None:
            r = e.record
            took = f" {r.step_time_s * 1e3:.3g} ms/step" if r.step_time_s else ""
            flag = " (noisy)" if r.quality == "noisy" else ""
            node = f" on {(r.env or {}).get('hostname')}" if getattr(e, "nodes", None) else ""
            say(
                f"[{e.done}/{e.total}] {r.family} {r.precision} "
                f"{tables.compact_config(r.config)}: {r.status}{took}{flag}{node}"
            )
        elif e.kind == "progress" and e.progress and time.monotonic() - self.last_line >= 4.0:
            self.last_line = time.monotonic()  # a heartbeat, not a flood
            now = "; ".join(f"{s.family} {s.precision}" for s in e.running)
            say(f"[{e.done}/{e.total}] {now}: {progress_words(e.progress)}")


def _live_view(reporter: BarReporter, *columns: Any, **kw: Any) -> Progress:
    """rich's Progress (one live region on the terminal) showing the reporter's table of
    latest results over the bar; rich.progress is imported here, when a run starts."""
    from rich.progress import Progress

    class LiveView(Progress):
        def get_renderables(self) -> Iterable[RenderableType]:
            width, height = reporter.console.size
            now = reporter.now_line() if reporter.now else None
            # the bar, the line of what runs, and the cursor's line stay on screen
            room = height - 1 - (1 if now is not None else 0) - 1
            table = reporter.latest_table(width, room)
            if table is not None:
                yield table
            yield self.make_tasks_table(self.tasks)
            if now is not None:
                yield now

    return LiveView(*columns, **kw)


# What a `result` event of --progress jsonl says of its run (record fields, in this order).
RESULT_FIELDS = (
    *("run_key", "family", "config", "precision", "status", "error", "step_time_s"),
    *("ci_rel", "converged", "quality", "examples_per_s"),
)


class JsonlReporter:
    """One JSON object per event on stdout, for scripts."""

    skipped = 0

    def __enter__(self) -> JsonlReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __call__(self, e: Event) -> None:
        import json

        if e.kind in ("run", "progress"):
            return
        event: dict[str, Any] = {
            "event": e.kind,
            "done": e.done,
            "total": e.total,
            "counts": e.counts,
            "eta_s": e.eta_s,
        }
        if e.kind == "start":
            event["skipped"] = e.skipped
        if e.kind in ("remeasure", "note"):
            event["notes"] = e.notes
        if getattr(e, "nodes", None):
            event["nodes"] = e.nodes
        if e.record is not None:
            r = e.record
            event.update({name: getattr(r, name) for name in RESULT_FIELDS})
            if r.ci_rel is not None and not math.isfinite(r.ci_rel):
                event["ci_rel"] = None
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()
