"""`paradnn report --watch`: keep the HTML report current while a sweep writes its database.
The report is built again whenever a database file changes (its size or modification time,
the write-ahead log's included), and the page reloads itself (a meta refresh, written only in
watch mode and taken out when watching stops). Clock and sleep are parameters: tests drive the
loop without waiting."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

MIN_INTERVAL_S = 1.0  # a page reloading faster than this cannot be read
MAX_INTERVAL_S = 86_400.0
REFRESH = re.compile(r'<meta http-equiv="refresh" content="\d+" data-paradnn-watch>\n?')

State = tuple[tuple[str, int, int], ...]


def db_state(paths: Sequence[str]) -> State:
    """What changes when a run is stored: each database's and its WAL's size and mtime."""
    found = []
    for p in paths:
        for f in (Path(p), Path(f"{p}-wal")):
            try:
                st = f.stat()
            except OSError:
                continue
            found.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(found)


def with_refresh(html: Path, seconds: float) -> None:
    """Make the page reload itself every `seconds` (replacing an earlier refresh)."""
    text = REFRESH.sub("", html.read_text(encoding="utf-8"))
    tag = f'<meta http-equiv="refresh" content="{max(1, round(seconds))}" data-paradnn-watch>\n'
    at = text.find("<head>")
    at = at + len("<head>") + 1 if at >= 0 else 0
    if at and text[at - 1 : at] != "\n":
        at -= 1
    _replace(html, text[:at] + tag + text[at:])


def without_refresh(html: Path) -> None:
    """The page as a plain report again (watching stopped: nothing will change it)."""
    if html.exists():
        text = html.read_text(encoding="utf-8")
        _replace(html, REFRESH.sub("", text))


def _replace(html: Path, text: str) -> None:
    """Write the page beside itself and move it into place: a reader (or a kill) never meets
    half a page."""
    tmp = html.with_name(f".{html.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, html)
    finally:
        tmp.unlink(missing_ok=True)


def watch(
    build: Callable[[], Path],
    paths: Sequence[str],
    interval_s: float,
    *,
    on_build: Callable[[Path, int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    state: Callable[[Sequence[str]], State] = db_state,
    rounds: int | None = None,
) -> Path | None:
    """Build the report, then every `interval_s` build it again if a database changed; each
    page refreshes itself. Runs until interrupted (Ctrl-C: KeyboardInterrupt, the page left
    without its refresh) or for `rounds` checks. Returns the report's HTML path."""
    seen: State | None = None
    html: Path | None = None
    builds = 0
    try:
        n = 0
        while rounds is None or n < rounds:
            now = state(paths)  # read before building: a write during the build shows next
            if now != seen:
                html = build()
                with_refresh(html, interval_s)
                seen, builds = now, builds + 1
                if on_build is not None:
                    on_build(html, builds)
            n += 1
            if rounds is None or n < rounds:
                sleep(interval_s)
    finally:
        if html is not None:
            without_refresh(html)
    return html
