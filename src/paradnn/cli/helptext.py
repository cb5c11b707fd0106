"""Every command's --help, readable in 80 columns (issue 45): the description reflowed (a line
break in a docstring is not a line break on screen), the summary in the command list its first
sentence, an `Examples:` epilog per command, and short value hints (`<word>`, not the whole
choice list the option's help already names; none for an on/off flag)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

from typer.core import TyperCommand

# Each command's examples, by its path after `paradnn`. tests/test_cli_help.py parses each one
# with the command's own parsers, so an example cannot name an option that does not exist.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": (
        "paradnn run",
        "paradnn results",
        "paradnn report",
        "paradnn bench fc layers=4 nodes=2048 batch=256",
        "paradnn simulate step fc batch=256 --platform tpu-v3",
    ),
    "run": (
        "paradnn run",
        "paradnn run --preset paper-fc --db fc.db --wait-for-idle",
        "paradnn run --preset quick -p fp32 -p bf16 --mode eager --mode compile",
        "paradnn run --preset sweep.toml --dry-run",
    ),
    "bench": (
        "paradnn bench fc layers=4 nodes=2048 batch=256",
        "paradnn bench cnn batch=32 -p bf16 --mode compile",
        "paradnn bench resnet50 batch=16 --device cuda --energy",
        "paradnn bench --model mymodels:small",
    ),
    "scale": (
        "paradnn scale fc batch=64 --procs 1,2,4",
        "paradnn scale cnn --procs 1,2 --strategy ddp --scaling weak",
    ),
    "results": (
        "paradnn results",
        "paradnn results --family fc --status ok --chosen",
        "paradnn results --precision bf16 --format csv > bf16.csv",
        "paradnn results --table ceilings",
    ),
    "families": ("paradnn families", "paradnn families --json"),
    "calibrate": (
        "paradnn calibrate",
        "paradnn calibrate --if-missing --budget 20",
        "paradnn calibrate --host-only",
    ),
    "ops": ("paradnn ops", "paradnn ops --name matmul_2048 -p fp32 --thread-sweep"),
    "platforms": ("paradnn platforms", "paradnn platforms --json"),
    "report": (
        "paradnn report",
        "paradnn report --db a.db --db b.db --out report",
        "paradnn report --what-if v100,tpu-v3",
        "paradnn report --watch 30",
    ),
    "compare": (
        "paradnn compare --by precision --a fp32 --b bf16",
        "paradnn compare --by mode --a eager --b compile --fail-if-slower 5",
        "paradnn compare --db old.db --db new.db --by db --a old.db --b new.db -f csv",
        "paradnn compare --baseline main --fail-if-slower 5 -f junit > compare.xml",
    ),
    "baseline": ("paradnn baseline save main", "paradnn baseline list"),
    "baseline save": (
        "paradnn baseline save main",
        "paradnn baseline save before-upgrade --family fc --replace",
    ),
    "baseline list": ("paradnn baseline list", "paradnn baseline list -f json"),
    "baseline delete": ("paradnn baseline delete before-upgrade",),
    "history": (
        "paradnn history fc layers=4 nodes=1024 batch=128",
        "paradnn history fc batch=128 -p bf16 --db a.db --db b.db -f csv",
    ),
    "versions": (
        "paradnn versions --torch 2.11,2.13 --preset quick",
        "paradnn versions --torch 2.12,2.13 --offline --db versions.db",
    ),
    "doctor": ("paradnn doctor", "paradnn doctor --no-checks --json"),
    "simulate": (
        "paradnn simulate step fc batch=256 --platform tpu-v3",
        "paradnn simulate scaling resnet50 batch=32 --platform tpu-v3",
    ),
    "simulate step": (
        "paradnn simulate step fc layers=4 nodes=2048 batch=256 --platform h100-sxm",
        "paradnn simulate step --preset quick --platform v100-sxm2,tpu-v3",
        "paradnn simulate step cnn batch=64 --platform tpu-v3 --chips 8 -f csv",
    ),
    "simulate scaling": (
        "paradnn simulate scaling resnet50 batch=32 --platform tpu-v3",
        "paradnn simulate scaling fc batch=64 --platform h100-sxm --max-chips 64",
    ),
    "simulate mxu-study": ("paradnn simulate mxu-study", "paradnn simulate mxu-study -f csv"),
    "simulate precision-study": (
        "paradnn simulate precision-study",
        "paradnn simulate precision-study -f json",
    ),
    "simulate validate": (
        "paradnn simulate validate",
        "paradnn simulate validate --db runs.db --model roofline",
    ),
    "simulate fit": (
        "paradnn simulate fit --db runs.db --out mychip.toml",
        "paradnn simulate fit --db runs.db --from ops --out mychip.toml",
    ),
}


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph on one line (rich markup keeps a docstring's
    line breaks, which a terminal of another width shows mid-sentence)."""
    paragraphs = inspect.cleandoc(doc).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])")


def summary(doc: str) -> str:
    """The command list's line for a command: the first sentence of its description."""
    first = reflow(doc).split("\n\n")[0]
    return SENTENCE_END.split(first, maxsplit=1)[0]


def epilog(path: str) -> str:
    """The `Examples:` block shown at the end of a command's --help."""
    lines = "\n".join(f"[dim]$[/dim] {x}" for x in EXAMPLES[path])
    return f"[bold]Examples:[/bold]\n\n{lines}"


def metavar(param: Any, ctx: Any) -> str | None:
    """A short value hint: nothing for an on/off flag, `<word>` for a choice (its help lists
    the words), `…` after a repeatable one."""
    if getattr(param, "param_type_name", None) != "option" or param.metavar is not None:
        return None  # (typer may vendor its own click: the classes are not click's)
    if getattr(param, "is_flag", False):
        return ""
    shown = param.display_type_rich(ctx) if hasattr(param, "display_type_rich") else None
    if not shown:
        return None
    many = shown.startswith("<list[")
    base = shown.removeprefix("<list[").removesuffix("]>").strip("<>")
    base = "word" if "|" in base else base
    return f"<{base}>" + ("…" if many or getattr(param, "multiple", False) else "")


class Command(TyperCommand):
    """A typer command whose --help fits 80 columns: short value hints (`metavar`), and an
    on/off flag's `--no-…` form said in its help instead of a column of its own (that column
    left the help a third of the width and cut option names)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        saved = []
        for param in self.get_params(ctx):
            saved.append((param, param.metavar, param.secondary_opts, getattr(param, "help", None)))
            hint = metavar(param, ctx)
            if hint is not None:
                param.metavar = hint
            if param.secondary_opts and getattr(param, "help", None) is not None:
                param.help = f"{param.help} Off: {', '.join(param.secondary_opts)}."
                param.secondary_opts = []
        try:
            super().format_help(ctx, formatter)
        finally:  # the command's parameters as they were (a later parse or --help)
            for param, meta, secondary, help_ in saved:
                param.metavar, param.secondary_opts = meta, secondary
                if help_ is not None:
                    param.help = help_


def tidy(infos: list[Any], prefix: str = "") -> None:
    """Give each registered command (typer's CommandInfo) its reflowed help, its first
    sentence as the summary, its examples and the short value hints."""
    for info in infos:
        callback: Callable[..., Any] = info.callback
        name = info.name or callback.__name__.replace("_", "-")
        doc = info.help or inspect.getdoc(callback) or ""
        info.help = reflow(doc)
        info.short_help = summary(doc)
        info.epilog = epilog(f"{prefix}{name}")
        if info.cls in (None, TyperCommand):  # a command's own class, if it has one, stays
            info.cls = Command
