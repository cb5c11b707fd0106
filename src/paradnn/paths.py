"""Files and folders a command will write, checked before any work: one line naming the option,
the path and what is wrong (a folder where a file belongs, a missing or read-only folder, a file
in the middle of the path), instead of an OSError after the work is done."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from paradnn.errors import ConfigError


def plain(option: str, path: str | Path) -> str:
    """A path as typed, refused (ConfigError) when it holds a character that ends or hides a
    line: a control character (a newline, a tab, NUL, escape, DEL) or a Unicode line or
    paragraph separator. SQLite, pip and a shell would take such a name as it is, and a file
    called `r.db\n` is one no listing shows for what it is. Non-ASCII letters are fine."""
    text = str(path)
    bad = next((ch for ch in text if unicodedata.category(ch) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:
        raise ConfigError(
            option, text, f"must be a plain file name: it holds the control character {bad!r}"
        )
    return text


def writable(path: str | Path) -> bool:
    """Whether this process may write `path` (a file, or a folder to create files in)."""
    return os.access(path, os.W_OK)


def nearest_existing(path: Path) -> Path:
    """The longest leading part of `path` that exists (the folder a new path would grow from)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def output_file(option: str, path: str | Path) -> Path:
    """A file to write: not a folder, in an existing folder this process may write, and itself
    writable when it exists. Returns it as a Path."""
    if str(path) == "":
        raise ConfigError(option, "", "must be a file path")
    p = Path(plain(option, path))
    if p.is_dir():
        raise ConfigError(option, str(path), "is a folder; give a file path")
    folder = p.parent
    if not folder.exists():
        found = nearest_existing(folder)
        if found.exists() and not found.is_dir():
            raise ConfigError(option, str(path), f"{found} is a file, not a folder")
        raise ConfigError(option, str(path), f"its folder {folder} does not exist")
    if not folder.is_dir():
        raise ConfigError(option, str(path), f"{folder} is a file, not a folder")
    if p.exists() and not writable(p):
        raise ConfigError(option, str(path), "the file is read-only")
    if not p.exists() and not writable(folder):
        raise ConfigError(option, str(path), f"the folder {folder} is read-only")
    return p


def output_folder(option: str, path: str | Path) -> Path:
    """A folder to write into, created (with its parents) later if missing: not an existing
    file, under no file, and writable (or creatable in a writable folder). Returns it."""
    if str(path) == "":
        raise ConfigError(option, "", "must be a folder path")
    p = Path(plain(option, path))
    found = nearest_existing(p)
    if found.exists() and not found.is_dir():
        what = "is a file" if found == p else f"{found} is a file"
        raise ConfigError(option, str(path), f"{what}, not a folder")
    if not writable(found):
        where = "the folder is read-only" if found == p else f"the folder {found} is read-only"
        raise ConfigError(option, str(path), where)
    return p


def make_folder(option: str, path: str | Path) -> Path:
    """`output_folder`, then created with its parents; an OSError is one line naming it."""
    p = output_folder(option, path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(option, str(path), f"cannot be created ({e.strerror or e})") from None
    return p
