"""The docs name what the program has: every command and subcommand in the README and in
`paradnn --help`, every shipped preset in the README, docs/sweeps.md and `run --help`, every
family in `bench --help`; no citation of the research notes without docs/references.md."""

import re
from pathlib import Path

import pytest
import typer.main

from paradnn import families, presets
from paradnn.cli import app

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}


def _commands() -> list[tuple[str, ...]]:
    group = typer.main.get_command(app)
    out = []
    for name, cmd in group.commands.items():
        out.append((name,))
        for sub in getattr(cmd, "commands", {}):
            out.append((name, sub))
    return out


def _help(capsys, *args: str) -> str:
    code, out, err = run_cli(capsys, *args, "--help")
    assert code == 0, err
    return " ".join(out.replace("│", " ").split())  # one line: wrapping is the terminal's


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_every_command_is_in_the_readme_and_its_help(capsys, command):
    assert f"paradnn {' '.join(command)}" in README, f"README lacks `paradnn {' '.join(command)}`"
    parent = _help(capsys, *command[:-1])
    assert re.search(rf"\b{re.escape(command[-1])}\b", parent), command


def test_every_preset_is_in_the_readme_sweeps_md_and_run_help(capsys):
    text = _help(capsys, "run")
    table = DOCS["sweeps.md"]
    (line,) = [ln for ln in README.splitlines() if "`paradnn run [--preset " in ln]
    listed = line.split("[--preset ")[1].split("]")[0].split("\\|")
    for name in presets.names():
        assert name in text, f"`run --help` lacks {name}"
        assert f"`{name}`" in table, f"docs/sweeps.md lacks {name}"
        assert name in listed, f"README's `paradnn run [--preset …]` lacks {name}"


def test_bench_help_names_every_family(capsys):
    text = _help(capsys, "bench")
    for name in families.names():
        assert name in text, name


def test_research_notes_are_cited_through_references_md():
    for name, text in {"README.md": README, **DOCS}.items():
        if name == "references.md":
            continue
        for m in re.finditer(r"reference/[a-z-]+\.md", text):
            tail = text[m.end() : m.end() + 40]
            assert "references.md" in tail, f"{name}: {m.group(0)} not linked to references.md"
    for note in re.findall(r"reference/([a-z-]+)\.md", README + "".join(DOCS.values())):
        assert f"reference/{note}.md" in DOCS["references.md"], note


def test_the_readme_says_which_commands_take_db(capsys):
    """`families` and `platforms` have no --db (the README once said every command does)."""
    assert "Every command takes `--db" not in README
    for command in ("families", "platforms"):
        assert "--db" not in _help(capsys, command)
    for command in ("run", "bench", "results", "report", "compare"):
        assert "--db" in _help(capsys, command)
