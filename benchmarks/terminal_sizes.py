"""How paradnn's output reads at 80, 100 and 160 columns (issue 45), for one source tree: each
command run in a real pseudo-terminal of that size, and its lines, widest line and table cells
cut with `…` counted. Compare two trees by running this once per tree with --src:

    python benchmarks/terminal_sizes.py --db demo.db --out benchmarks/results/terminal_sizes.json
    python benchmarks/terminal_sizes.py --db demo.db --src /tmp/old/src --out old.json

`--db` is a database like the demo's (`paradnn run --preset quick --db demo.db`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def in_pty(argv: list[str], src: str, columns: int, lines: int = 24) -> str:
    """What a command writes to a terminal of `columns`×`lines`, colours stripped."""
    import fcntl
    import pty
    import struct
    import termios

    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env |= {"PYTHONPATH": src, "TERM": "xterm"}
    proc = subprocess.Popen(argv, stdin=child, stdout=child, stderr=child, env=env)
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=600)
    os.close(main)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace"))


def measure(text: str) -> dict[str, int]:
    rows = [ln for ln in text.splitlines() if ln.startswith("│")]
    return {
        "lines": len(text.splitlines()),
        "widest": max((len(ln) for ln in text.splitlines()), default=0),
        # `<str>…` in --help marks a repeatable option, not a cut
        "cells_cut": sum(len(re.findall(r"(?<!>)…", ln)) for ln in rows),
        "table_lines": len(rows),
        # a table wider than the terminal, its right edge cut off by rich (columns unseen)
        "tables_cropped": sum(
            1 for ln in text.splitlines() if ln.startswith("┏") and not ln.rstrip().endswith("┓")
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    paradnn = [sys.executable, "-m", "paradnn"]
    commands = {
        "results": [*paradnn, "results", "--db", args.db],
        "compare": [
            *paradnn, "compare", "--db", args.db, "--by", "precision", "--a", "fp32",
            "--b", "bf16", "--include-noisy",
        ],
        "simulate step --preset quick --platform tpu-v3": [
            *paradnn, "simulate", "step", "--preset", "quick", "--platform", "tpu-v3",
        ],
        "run --help": [*paradnn, "run", "--help"],
        "--help": [*paradnn, "--help"],
    }  # fmt: skip
    figures = {
        name: {str(w): measure(in_pty(argv, args.src, w)) for w in (80, 100, 160)}
        for name, argv in commands.items()
    }
    doc = {"src": args.src, "db": args.db, "figures": figures}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
