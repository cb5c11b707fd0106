"""docs/architecture.md against the code (issue 44): its layer table is pyproject's layers
contract, in order, and every name its glossary ("Words") gives with a file is defined there."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "architecture.md").read_text()
SRC = ROOT / "src" / "paradnn"


def _section(title: str) -> str:
    return DOC.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_layer_table_is_the_contracts():
    with open(ROOT / "pyproject.toml", "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    block = _section("The layers").split("```\n", 2)[1]
    rows = [re.sub(r"\s*\|\s*", " | ", ln) for ln in block.splitlines() if ln[:1] != " "]
    drawn = [re.split(r"\s{2,}", row)[0] for row in rows]  # the module column
    assert drawn == [re.sub(r"\s*\|\s*", " | ", layer) for layer in layers]


NAMED = re.findall(r"`([A-Za-z_]\w*)`, ((?:paradnn/)?[\w/]+\.py)", _section("Words"))


def test_the_glossary_names_something():
    assert len(NAMED) >= 10 and ("RunSpec", "config.py") in NAMED


@pytest.mark.parametrize(("name", "path"), NAMED, ids=[f"{n} {p}" for n, p in NAMED])
def test_each_name_in_the_glossary_is_defined_where_it_says(name, path):
    text = (SRC / path.removeprefix("paradnn/")).read_text()
    pattern = rf"^(class {name}\b|def {name}\b|{name}(: [^=]+)? =)"
    assert re.search(pattern, text, re.M), f"docs/architecture.md: {name} is not in {path}"
