"""One-way layers (docs/architecture.md): the import-linter contracts in pyproject.toml hold
(every import counted, lazy ones inside functions too), they name every top-level module, and
the torch-free side really imports without torch."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "paradnn"


def _contracts() -> list[dict]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def test_the_import_contracts_hold():
    from importlinter.cli import lint_imports

    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, "lint-imports found a broken contract: run it to see which import"


def test_the_layers_name_every_top_level_module():
    (layers,) = [c for c in _contracts() if c["type"] == "layers"]
    assert layers["containers"] == ["paradnn"] and layers["exhaustive"] is True
    named = {m.strip() for layer in layers["layers"] for m in layer.replace(":", "|").split("|")}
    present = {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert named == present


def test_every_ignored_import_says_why():
    text = (ROOT / "pyproject.toml").read_text()
    for contract in _contracts():
        for line in contract.get("ignore_imports", []):
            before = text[: text.index(f'"{line}"')]
            assert "# removed by the one-pipeline change" in before.rsplit("ignore_imports", 1)[1]


def test_the_torch_free_side_imports_without_torch():
    """The torch contract checks direct imports; this checks what importing really loads:
    analysis, plots, report, sim, the store, sweeps and every family's analytic side."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import paradnn\n"
        "top = [m.name for m in pkgutil.iter_modules(paradnn.__path__)]\n"
        "skip = {'__main__', 'runner', 'measure', 'ops'}\n"
        "for name in top:\n"
        "    if name in skip: continue\n"
        "    mod = importlib.import_module('paradnn.' + name)\n"
        "    for sub in pkgutil.walk_packages(getattr(mod, '__path__', []), mod.__name__ + '.'):\n"
        "        if not sub.name.rsplit('.', 1)[1].endswith('_torch'):\n"
        "            importlib.import_module(sub.name)\n"
        "from paradnn import families\n"
        "for n in families.names():\n"
        "    f = families.get(n); c = f.default_config(); f.params(c); f.train_flops(c)\n"
        "    f.activation_memory(c, 'bf16')\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print(len(bad)); sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
