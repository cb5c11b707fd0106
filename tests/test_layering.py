"""One-way layers: the store, analysis, plots, report, sim and the analytic half of the families
never import torch, so a laptop without a GPU (or torch) can analyse a GPU sweep."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "paradnn"
TORCH_FREE_PACKAGES = ("analysis", "plots", "report", "sim")
TORCH_FREE_MODULES = (
    "paradnn.records",
    "paradnn.store",
    "paradnn.store.db",
    "paradnn.presets",
    "paradnn.tables",
    "paradnn.space",
    "paradnn.config",
    "paradnn.api",
    "paradnn.cli",
    "paradnn.measure.stats",
    "paradnn.measure.timer",
    "paradnn.measure.energy",
    "paradnn.measure.energy.base",
    "paradnn.measure.energy.fakes",
    "paradnn.measure.energy.meter",
    "paradnn.measure.energy.nvml",
    "paradnn.measure.energy.rapl",
    "paradnn.measure.energy.sampler",
    "paradnn.families",
    "paradnn.families.shapes",
    "paradnn.families.fc",
    "paradnn.families.cnn",
    "paradnn.families.rnn",
    "paradnn.families.transformer",
    "paradnn.zoo",
    "paradnn.zoo.layers",
    "paradnn.zoo.images",
    "paradnn.zoo.resnet",
    "paradnn.zoo.vgg",
    "paradnn.zoo.inception",
    "paradnn.zoo.mobilenet",
    "paradnn.zoo.densenet",
    "paradnn.zoo.squeezenet",
    "paradnn.zoo.retinanet",
    "paradnn.zoo.translation",
    "paradnn.zoo.lstm_lm",
    "paradnn.zoo.deepspeech",
    "paradnn.memory",
    "paradnn.sweep",
    "paradnn.sweep.spec",
    "paradnn.sweep.sampling",
    "paradnn.runner.supervisor",
    "paradnn.platforms",
    "paradnn.sim.chip",
    "paradnn.sim.interconnect",
    "paradnn.sim.lowering",
    "paradnn.sim.memory",
    "paradnn.sim.model",
    "paradnn.sim.precision",
    "paradnn.sim.render",
    "paradnn.sim.studies",
    "paradnn.sim.systolic",
    "paradnn.sim.topologies",
    "paradnn.sim.validate",
)


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", TORCH_FREE_PACKAGES)
def test_layer_packages_never_import_torch(package):
    root = SRC / package
    if not root.exists():
        pytest.skip(f"paradnn.{package} does not exist yet")
    offenders = [p for p in root.rglob("*.py") if "torch" in _imports(p)]
    assert offenders == []


def test_torch_free_modules_import_without_torch():
    code = (
        "import sys, importlib\n"
        f"mods = {TORCH_FREE_MODULES!r} + tuple('paradnn.' + p for p in {TORCH_FREE_PACKAGES!r}"
        f" if (__import__('pathlib').Path({str(SRC)!r}) / p).exists())\n"
        "for m in mods: importlib.import_module(m)\n"
        "from paradnn import families\n"
        "for n in families.names():\n"
        "    f = families.get(n); c = f.default_config(); f.params(c); f.train_flops(c)\n"
        "bad = sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.'))\n"
        "print(len(bad)); sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
