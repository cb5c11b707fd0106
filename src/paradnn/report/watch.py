"""`paradnn report --watch`: keep the HTML report current while a sweep writes its database.

The report is built again only when a database's data changed: SQLite's `PRAGMA data_version`
through one read-only connection per database, kept open while watching, moves when another
connection commits and never when one only reads (before, the file's size and modification
time moved when the report's own read closed the write-ahead log, or a checkpoint ran, and the
report was built again for nothing). The page reloads itself only when it was built again: a
small script in it loads `report-watch.js` beside it every SECONDS and reloads when the build
that file names is not its own (before, a meta refresh reloaded it every SECONDS whatever
happened). Both go when watching stops. Clock, sleep and state are parameters: tests drive the
loop without waiting."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import quote

MIN_INTERVAL_S = 1.0  # a page reloading faster than this cannot be read
MAX_INTERVAL_S = 86_400.0
SIDECAR = "report-watch.js"  # beside the page: the build it should show
# the watch script (and the meta refresh of pages written before it)
TAG = re.compile(
    r'(<meta http-equiv="refresh" content="\d+" data-paradnn-watch>'
    r"|<script data-paradnn-watch>.*?</script>)\n?",
    re.DOTALL,
)

State = tuple[tuple[str, int, int], ...]


class Versions:
    """What changes when a run is stored: per database (path, inode, data_version), read
    through one read-only connection each that stays open between checks (data_version is
    only comparable on one connection). A database replaced by another file (new inode) is
    opened again; one that cannot be opened as SQLite falls back to its size and mtime."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[int, sqlite3.Connection]] = {}

    def __call__(self, paths: Sequence[str]) -> State:
        found = []
        for p in map(str, paths):
            try:
                st = os.stat(p)
            except OSError:
                self._close(p)
                continue
            version = self._version(p, st.st_ino)
            if version is None:  # not readable as SQLite now: what the file itself says
                found.append((p, st.st_mtime_ns, st.st_size))
            else:
                found.append((p, st.st_ino, version))
        return tuple(found)

    def _version(self, path: str, inode: int) -> int | None:
        held = self._open.get(path)
        if held is not None and held[0] != inode:
            self._close(path)
            held = None
        try:
            if held is None:
                uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
                held = (inode, sqlite3.connect(uri, uri=True, timeout=5.0))
                self._open[path] = held
            return int(held[1].execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            self._close(path)
            return None

    def _close(self, path: str) -> None:
        held = self._open.pop(path, None)
        if held is not None:
            held[1].close()

    def close(self) -> None:
        for p in list(self._open):
            self._close(p)


def with_reload(html: Path, seconds: float, build: str) -> None:
    """Make the page check every `seconds` whether it is still the latest build (`build`
    names this one) and reload when it is not; `report-watch.js` beside it names the latest."""
    text = TAG.sub("", html.read_text(encoding="utf-8"))
    ms = max(1, round(seconds)) * 1000
    tag = (
        "<script data-paradnn-watch>(function () {\n"
        f"  /* paradnn report --watch: reload when {SIDECAR} names a newer build */\n"
        f'  const mine = "{build}";\n'
        "  setInterval(function () {\n"
        '    const s = document.createElement("script");\n'
        f'    s.src = "{SIDECAR}?" + Date.now();\n'
        "    s.onload = s.onerror = function () {\n"
        "      s.remove();\n"
        "      if (window.paradnnBuild && window.paradnnBuild !== mine) location.reload();\n"
        "    };\n"
        "    document.head.appendChild(s);\n"
        f"  }}, {ms});\n"
        "})();</script>\n"
    )
    at = text.find("<head>")
    at = at + len("<head>") + 1 if at >= 0 else 0
    if at and text[at - 1 : at] != "\n":
        at -= 1
    _replace(html, text[:at] + tag + text[at:])
    _replace(html.with_name(SIDECAR), f'window.paradnnBuild = "{build}";\n')


def without_reload(html: Path) -> None:
    """The page as a plain report again (watching stopped: nothing will change it)."""
    if html.exists():
        text = html.read_text(encoding="utf-8")
        _replace(html, TAG.sub("", text))
    html.with_name(SIDECAR).unlink(missing_ok=True)


def _replace(html: Path, text: str) -> None:
    """Write the file beside itself and move it into place: a reader (or a kill) never meets
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
    state: Callable[[Sequence[str]], State] | None = None,
    rounds: int | None = None,
) -> Path | None:
    """Build the report, then every `interval_s` build it again if a database's data changed
    (`Versions`, unless `state` is given); an open page reloads only after a new build. Runs
    until interrupted (Ctrl-C: KeyboardInterrupt, the page left without its reload script)
    or for `rounds` checks. Returns the report's HTML path."""
    versions = Versions() if state is None else None
    look = state or versions
    assert look is not None
    seen: State | None = None
    html: Path | None = None
    builds = 0
    try:
        n = 0
        while rounds is None or n < rounds:
            now = look(paths)  # read before building: a write during the build shows next
            if now != seen:
                html = build()
                builds += 1
                with_reload(html, interval_s, f"{os.getpid()}-{builds}")
                seen = now
                if on_build is not None:
                    on_build(html, builds)
            n += 1
            if rounds is None or n < rounds:
                sleep(interval_s)
    finally:
        if html is not None:
            without_reload(html)
        if versions is not None:
            versions.close()
    return html
