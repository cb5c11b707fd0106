"""One Python environment per torch version, built once and cached, for the software-version
study (`paradnn versions`, docs/versions.md). Standard library only, torch-free.

An environment is a virtual environment of this interpreter's Python with `torch` (and its own
dependencies: a CUDA build needs its NVIDIA libraries; `deps=False` installs torch alone, enough
for a CPU wheel) installed in it; then a `.pth` file appends paradnn's source and this
environment's site-packages after its own, so its torch comes first and every other dependency
of paradnn (numpy, typer, …) is the one this paradnn already runs with. uv builds it when `uv`
is on PATH (faster), else `python -m venv` and pip. A version that cannot be installed raises
`InstallError` with one line (the installer's telling words); its half-built directory is
removed so the next try starts clean.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from paradnn.errors import ConfigError, ParadnnError

VERSION = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?([a-z]+[0-9]+)?", re.ASCII)  # not ٣.١.٠
MAX_VERSIONS = 8  # environments per study (each is a torch install: ~1 GB)
PROBE = "import torch, sys; sys.stdout.write(torch.__version__)"
PTH = "paradnn-versions.pth"

Runner = Callable[..., Any]  # subprocess.run's signature; tests pass a fake


class InstallError(ParadnnError):
    """A torch version that could not be installed (one line: version and why)."""


@dataclass(frozen=True)
class TorchEnv:
    version: str  # as asked, e.g. 2.13.0
    python: Path  # the environment's interpreter
    torch: str  # torch.__version__ inside it, e.g. 2.13.0+cpu
    cached: bool  # found ready in the cache (nothing installed)


def parse_versions(text: str | Sequence[str]) -> list[str]:
    """`2.11.0,2.13.0` (or a list) → distinct versions in the order given; bad input raises
    ConfigError naming the value and what is allowed."""
    if isinstance(text, str):
        items = text.split(",")
    elif isinstance(text, Sequence) and all(isinstance(t, str) for t in text):
        items = [v for t in text for v in t.split(",")]
    else:
        raise ConfigError("--torch", text, "must be torch versions, e.g. 2.11.0,2.13.0")
    for item in items:  # checked as typed, before pip sees it: a newline is not stripped away
        odd = next((ch for ch in item if not " " <= ch <= "~"), None)
        if odd is not None:
            raise ConfigError(
                "--torch", item, f"must be a release version such as 2.13.0 (it holds {odd!r})"
            )
    versions = list(dict.fromkeys(v.strip(" ") for v in items if v.strip(" ")))
    if not versions:
        raise ConfigError("--torch", text, "give one or more torch versions, e.g. 2.11.0,2.13.0")
    for v in versions:
        if not VERSION.fullmatch(v):
            raise ConfigError("--torch", v, "must be a release version such as 2.13.0")
    if len(versions) > MAX_VERSIONS:
        raise ConfigError("--torch", text, f"at most {MAX_VERSIONS} versions (one env each)")
    return versions


def check_index_url(url: str | None) -> str | None:
    """A package index for pip or uv: an http(s) URL with a host, or a file URL with a path,
    in printable ASCII without spaces (percent-encode the rest); checked before pip sees it."""
    if url is None:
        return None
    allowed = (
        "must be a package index URL, http(s)://host/path or file:///folder (printable ASCII, "
        "no spaces), e.g. https://download.pytorch.org/whl/cpu"
    )
    if not isinstance(url, str) or not url or any(not " " < ch <= "~" for ch in url):
        raise ConfigError("--index-url", url, allowed)
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed [IPv6 address
        raise ConfigError("--index-url", url, allowed) from None
    if (parts.scheme in ("http", "https") and host) or (parts.scheme == "file" and parts.path):
        return url
    raise ConfigError("--index-url", url, allowed)


def default_cache() -> Path:
    """$PARADNN_ENV_CACHE, else $XDG_CACHE_HOME/paradnn/envs, else ~/.cache/paradnn/envs."""
    if os.environ.get("PARADNN_ENV_CACHE"):
        return Path(os.environ["PARADNN_ENV_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "paradnn" / "envs"


def env_dir(cache: Path, version: str) -> Path:
    return Path(cache) / f"torch-{version}-py{sys.version_info.major}{sys.version_info.minor}"


def matches(found: str, version: str) -> bool:
    """torch reports `2.13.0+cpu` for 2.13.0: the local label does not count."""
    return found.split("+")[0] == version


def installer() -> str:
    """`uv` when it is on PATH, else `pip`."""
    return "uv" if shutil.which("uv") else "pip"


def commands(
    version: str,
    where: Path,
    *,
    tool: str,
    index_url: str | None = None,
    offline: bool = False,
    deps: bool = True,
) -> list[list[str]]:
    """The commands that create the environment and install torch into it."""
    python = str(where / "bin" / "python")
    spec = f"torch=={version}"
    nodeps = [] if deps else ["--no-deps"]
    extra = (["--index-url", index_url] if index_url else []) + (["--offline"] if offline else [])
    if tool == "uv":
        uv = shutil.which("uv") or "uv"
        return [
            [uv, "venv", "--quiet", "--python", sys.executable, str(where)],
            [uv, "pip", "install", "--quiet", "--python", python, *nodeps, spec, *extra],
        ]
    pip_extra = [("--no-index" if a == "--offline" else a) for a in extra]
    return [
        [sys.executable, "-m", "venv", str(where)],
        [python, "-m", "pip", "install", "--quiet", *nodeps, spec, *pip_extra],
    ]


def _link(where: Path) -> None:
    """The .pth that lets the environment import paradnn and its other dependencies."""
    sites = sorted((where / "lib").glob("python*/site-packages"))
    if not sites:
        raise InstallError(f"{where}: the new environment has no site-packages")
    import paradnn

    lines = [str(Path(paradnn.__file__).resolve().parents[1])]
    lines += [p for p in site.getsitepackages() if Path(p).is_dir()]
    (sites[0] / PTH).write_text("\n".join(dict.fromkeys(lines)) + "\n")


def probe(python: Path, run: Runner = subprocess.run) -> str | None:
    """torch.__version__ in that interpreter, or None (missing, broken)."""
    if not Path(python).exists():
        return None
    p = run([str(python), "-c", PROBE], capture_output=True, text=True, timeout=600)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def build(
    version: str,
    cache: Path,
    *,
    index_url: str | None = None,
    offline: bool = False,
    deps: bool = True,
    run: Runner = subprocess.run,
    say: Callable[[str], None] | None = None,
) -> TorchEnv:
    """The environment for torch `version`: the cached one when it is ready, else a new one."""
    where = env_dir(cache, version)
    python = where / "bin" / "python"
    found = probe(python, run)
    if found is not None and matches(found, version):
        return TorchEnv(version, python, found, cached=True)
    if where.exists():
        shutil.rmtree(where)  # broken or another torch: start clean
    where.parent.mkdir(parents=True, exist_ok=True)
    tool = installer()
    if say:
        say(f"torch {version}: building {where} with {tool}")
    steps = commands(version, where, tool=tool, index_url=index_url, offline=offline, deps=deps)
    for cmd in steps:
        p = run(cmd, capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            shutil.rmtree(where, ignore_errors=True)
            raise InstallError(f"torch {version}: cannot be installed ({_last_words(p)})")
    _link(where)  # after the install: the installer must not see this paradnn's own torch
    found = probe(python, run)
    if found is None or not matches(found, version):
        shutil.rmtree(where, ignore_errors=True)
        got = "does not import" if found is None else f"reports {found}"
        raise InstallError(f"torch {version}: installed, but torch {got}")
    return TorchEnv(version, python, found, cached=False)


def _last_words(p: Any) -> str:
    """The installer's most telling line: pip's "No matching distribution" or first ERROR line,
    uv's "╰─▶ Because …"; else its last line."""
    lines = [ln.strip() for ln in (p.stderr or p.stdout or "").splitlines() if ln.strip()]
    telling = ("no matching distribution", "could not find a version", "╰─▶")
    best = [ln for ln in lines if any(t in ln.lower() for t in telling)]
    errors = [ln for ln in lines if ln.lower().startswith(("error", "×"))]
    text = (best or errors[:1] or lines[-1:] or [f"exit code {p.returncode}"])[0]
    return text if len(text) <= 200 else text[:197] + "…"
