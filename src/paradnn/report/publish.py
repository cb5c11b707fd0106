"""A report replaces the last one whole (issue 46): it is built in a folder of its own inside
the output folder and moved into place only when it is complete.

So a build that is killed, runs out of disk or fails leaves the last good report as it was
(its HTML, figures and tables together), and a rebuild leaves no file of an earlier build
behind (a figure or table this build did not make goes with the old report). The report's
own parts are exchanged one by one — `figures/`, `tables/`, then `report.html` — atomically
where Linux's renameat2(RENAME_EXCHANGE) exists; anything else in the folder is the user's
and is left alone. Torch-free, standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from paradnn.errors import WorkFailed
from paradnn.store.claims import process_alive

PARTS = ("figures", "tables", "report.html")  # the HTML last: it is what a reader opens
STAGING = ".paradnn-building-"  # + pid + "-" + random: a build in progress (or killed)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def _renameat2() -> object | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None
    return getattr(libc, "renameat2", None)


_EXCHANGE = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux ≥ 3.15, glibc ≥ 2.28); False where the
    system cannot (the caller then renames twice)."""
    if _EXCHANGE is None:
        return False
    done = _EXCHANGE(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A new, empty folder inside `out` to build a report in. When the block ends normally
    its parts replace `out`'s (`publish`); when it raises, the folder is removed and `out` is
    as it was. An OSError while building (a full disk, a quota) is WorkFailed, naming the
    file and saying the last report was kept."""
    out.mkdir(parents=True, exist_ok=True)
    _remove_stale(out)
    stage = Path(tempfile.mkdtemp(prefix=f"{STAGING}{os.getpid()}-", dir=out))
    try:
        yield stage
    except OSError as e:
        shutil.rmtree(stage, ignore_errors=True)
        where = e.filename or stage
        raise WorkFailed(
            f"{where}: {e.strerror or e}: the report could not be written; the last report in "
            f"{out} is kept as it was"
        ) from e
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    publish(stage, out)


def publish(stage: Path, out: Path) -> None:
    """Move the report built in `stage` into `out`, replacing the report there, then remove
    `stage` (which by then holds the old report's parts)."""
    try:
        for name in PARTS:
            new, old = stage / name, out / name
            if not (old.exists() or old.is_symlink()):
                if new.exists():
                    os.rename(new, old)
                continue
            if not new.exists():  # the old report had it, this one does not: stale
                os.rename(old, stage / f".old-{name}")
            elif not exchange(new, old):
                os.rename(old, stage / f".old-{name}")
                os.rename(new, old)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _remove_stale(out: Path) -> None:
    """Remove what a killed build left: a staging folder whose process has ended."""
    for found in out.glob(f"{STAGING}*"):
        pid = found.name[len(STAGING) :].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid), None) and found.is_dir():
            shutil.rmtree(found, ignore_errors=True)


def moved(paths: list[Path], stage: Path, out: Path) -> list[Path]:
    """The paths written under `stage`, where they are now under `out`."""
    return [out / p.relative_to(stage) for p in paths]


__all__ = ["PARTS", "exchange", "moved", "publish", "staged"]
