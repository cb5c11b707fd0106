"""`paradnn versions`: environments per torch version (fakes: nothing is installed), the same
sweep in each into one database, the comparison between versions, and one line for a version
that cannot be installed."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from paradnn import api
from paradnn.errors import ConfigError
from paradnn.runner import envs

import synth
from conftest import run_cli


class FakeRun:
    """subprocess.run for envs.build: venv creation makes the directory, pip/uv install
    succeeds or fails, the probe reports `torch` (None: not importable yet)."""

    def __init__(self, torch=None, fail=None):
        self.torch, self.fail, self.calls = torch, fail, []

    def __call__(self, cmd, **kw):
        self.calls.append(cmd)
        if cmd[-2:-1] == ["-c"]:  # the probe
            ok = self.torch is not None
            return subprocess.CompletedProcess(cmd, 0 if ok else 1, self.torch or "", "")
        if "venv" in cmd:
            where = Path(cmd[-1])
            (where / "bin").mkdir(parents=True)
            (where / "bin" / "python").write_text("")
            (where / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
            return subprocess.CompletedProcess(cmd, 0, "", "")
        if self.fail:
            return subprocess.CompletedProcess(cmd, 1, "", f"noise\nERROR: {self.fail}\n")
        spec = next(a for a in cmd if a.startswith("torch=="))
        self.torch = spec.split("==")[1] + "+cpu"
        return subprocess.CompletedProcess(cmd, 0, "", "")


def test_versions_are_parsed_and_checked():
    assert envs.parse_versions("2.11.0, 2.13.0,2.11.0") == ["2.11.0", "2.13.0"]
    assert envs.parse_versions(["2.12", "2.13.0"]) == ["2.12", "2.13.0"]
    for bad in ("", "latest", "2.13.0;rm", ",".join(f"2.{i}.0" for i in range(9))):
        with pytest.raises(ConfigError, match="--torch"):
            envs.parse_versions(bad)


def test_bad_input_is_one_line_before_anything_is_built(capsys, tmp_path):
    code, _, err = run_cli(capsys, "versions", "--torch", "two", "--cache", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "--torch = 'two'" in err
    code, _, err = run_cli(
        capsys, "versions", "--torch", "2.13.0", "--preset", "nope", "--cache", str(tmp_path)
    )
    assert code == 2 and "preset" in err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--threads", "3.0"], "--threads = '3.0': must be an integer in [1, 4096]"),
        (["--max-time", "0.1"], "--max-time = 0.1: must be ≥ the minimum time, 0.3 s"),
        (["-p", "fp64"], "--precision = 'fp64': must be one of fp32"),
        (["--device", "gpu"], "--device = 'gpu': must be auto, cpu, cuda or cuda:N"),
    ],
)
def test_every_option_is_checked_before_anything_is_installed(
    capsys, tmp_path, monkeypatch, args, needle
):
    def build(*a, **kw):
        raise AssertionError("an environment was built before the options were checked")

    monkeypatch.setitem(api.versions.__kwdefaults__, "build", build)  # what the CLI gets
    code, _, err = run_cli(
        capsys, "versions", "--torch", "2.13.0", "--cache", str(tmp_path / "c"), *args
    )
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "c").exists()


def test_the_api_checks_its_options_before_building(tmp_path):
    def build(*a, **kw):
        raise AssertionError("built")

    bad = [{"threads": 0}, {"device": "gpu"}, {"precisions": ["fp64"]}, {"max_time": -1.0}]
    bad += [{"min_time": 5.0, "max_time": 1.0}, {"progress": "loud"}]
    for kwargs in bad:
        with pytest.raises(ConfigError):
            api.versions("2.13.0", db=str(tmp_path / "r.db"), build=build, **kwargs)


def test_commands_use_uv_when_present_else_venv_and_pip(monkeypatch, tmp_path):
    monkeypatch.setattr(envs.shutil, "which", lambda name: None)
    assert envs.installer() == "pip"
    create, install = envs.commands("2.13.0", tmp_path, tool="pip", offline=True, deps=False)
    assert create == [sys.executable, "-m", "venv", str(tmp_path)]
    assert install[-4:] == ["--quiet", "--no-deps", "torch==2.13.0", "--no-index"]
    monkeypatch.setattr(envs.shutil, "which", lambda name: "/usr/bin/uv")
    assert envs.installer() == "uv"
    create, install = envs.commands("2.11.0", tmp_path, tool="uv", index_url="https://i/x")
    assert create[:2] == ["/usr/bin/uv", "venv"] and install[:3] == [
        "/usr/bin/uv",
        "pip",
        "install",
    ]
    assert install[-3:] == ["torch==2.11.0", "--index-url", "https://i/x"]
    assert "--no-deps" not in install  # a CUDA build needs its NVIDIA libraries


def test_build_installs_once_then_reuses_the_cached_environment(monkeypatch, tmp_path):
    monkeypatch.setattr(envs.shutil, "which", lambda name: None)
    fake = FakeRun()
    env = envs.build("2.13.0", tmp_path, run=fake)
    assert env.torch == "2.13.0+cpu" and not env.cached
    assert env.python == envs.env_dir(tmp_path, "2.13.0") / "bin" / "python"
    pth = next(env.python.parent.parent.glob("lib/*/site-packages")) / envs.PTH
    lines = pth.read_text().splitlines()
    assert Path(lines[0], "paradnn", "__init__.py").exists()  # paradnn's source comes along
    installs = [c for c in fake.calls if "install" in c]
    assert len(installs) == 1
    again = envs.build("2.13.0", tmp_path, run=fake)
    assert again.cached and again.torch == "2.13.0+cpu"
    assert [c for c in fake.calls if "install" in c] == installs  # nothing installed again


def test_a_version_that_cannot_be_installed_is_one_line_and_leaves_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(envs.shutil, "which", lambda name: None)
    fake = FakeRun(fail="No matching distribution found for torch==2.11.0")
    with pytest.raises(envs.InstallError) as e:
        envs.build("2.11.0", tmp_path, run=fake)
    assert str(e.value) == (
        "torch 2.11.0: cannot be installed (ERROR: No matching distribution found for "
        "torch==2.11.0)"
    )
    assert not envs.env_dir(tmp_path, "2.11.0").exists()


def _fake_sweep(db, speed):
    """A sweep that stores 4 FC configs under the environment's torch version, its step time
    scaled by speed[version] (so the answer is known)."""
    space = {"layers": [1], "nodes": [16, 32], "input": [8], "output": [4], "batch": [2, 4]}

    def sweep(env, args):
        assert args[:2] == ["run", "--preset"] and str(Path(db).resolve()) in args
        util = 0.2 * speed[env.version]
        rows = synth.rows("fc", space, lambda c: util, torch_version=env.torch, n_samples=15)
        synth.write_db(db, rows)
        return 0

    return sweep


def test_study_runs_each_built_version_and_compares_them(tmp_path):
    db = str(tmp_path / "v.db")
    said, failures = [], []

    def build(version, cache, **kw):
        if version == "2.11.0":
            raise envs.InstallError("torch 2.11.0: cannot be installed (no wheel)")
        return envs.TorchEnv(version, Path(sys.executable), f"{version}+cpu", cached=False)

    sweep = _fake_sweep(db, {"2.12.0": 1.0, "2.13.0": 1.25})
    study = api.versions(
        "2.11.0,2.12.0,2.13.0", "quick", db=db, cache=tmp_path, build=build, sweep=sweep,
        say=said.append, on_failure=failures.append,
    )  # fmt: skip
    assert study.failed == ["torch 2.11.0: cannot be installed (no wheel)"]
    assert [e.version for e in study.envs] == ["2.12.0", "2.13.0"]
    assert study.stored == {"2.12.0": "2.12.0+cpu", "2.13.0": "2.13.0+cpu"}
    (c,) = study.comparisons
    assert (c.by, c.a, c.b) == ("torch_version", "2.12.0+cpu", "2.13.0+cpu")
    g = c.overall()
    assert g["n"] == 4 and g["geomean"] == pytest.approx(1.25, rel=0.02)
    assert (c.pairs["ci_low"] <= c.pairs["speedup"]).all()
    assert (c.pairs["speedup"] <= c.pairs["ci_high"]).all()
    assert failures == study.failed
    assert any("torch 2.13.0: built (2.13.0+cpu" in s for s in said)


def test_cli_prints_the_failure_in_one_line_and_the_speedups(capsys, monkeypatch, tmp_path):
    db = str(tmp_path / "v.db")

    def build(version, cache, **kw):
        if version == "9.9.9":
            raise envs.InstallError("torch 9.9.9: cannot be installed (no wheel)")
        return envs.TorchEnv(version, Path(sys.executable), f"{version}+cpu", cached=True)

    real = api.versions
    sweep = _fake_sweep(db, {"2.12.0": 1.0, "2.13.0": 2.0})
    monkeypatch.setattr(api, "versions", lambda *a, **kw: real(*a, **kw, build=build, sweep=sweep))
    code, out, err = run_cli(capsys, "versions", "--torch", "2.12.0,9.9.9,2.13.0", "--db", db,
                             "--cache", str(tmp_path))  # fmt: skip
    assert code == 0, err
    (line,) = [ln for ln in err.splitlines() if "9.9.9" in ln]
    assert line == "error: torch 9.9.9: cannot be installed (no wheel)"
    assert "speedup of 2.13.0+cpu over 2.12.0+cpu" in out
    # each config's speedup with its 95% CI (1.99–2.01×), in the one form every table uses
    assert re.search(r"2× ±0\.\d%", out) and "faster" in out


def test_the_installers_telling_line_is_kept():
    pip = subprocess.CompletedProcess(
        [], 1, "", "Looking in links: /w\nERROR: Cannot install torch==2.11.0 because these "
        "package versions have conflicting dependencies.\n\nERROR: ResolutionImpossible: …\n"
    )  # fmt: skip
    assert envs._last_words(pip).startswith("ERROR: Cannot install torch==2.11.0")
    uv = subprocess.CompletedProcess(
        [], 1, "", "  × No solution found when resolving dependencies:\n  ╰─▶ Because there is "
        "no version of torch==9.9.9 and you require torch==9.9.9, we can conclude …\n"
    )  # fmt: skip
    assert envs._last_words(uv).startswith("╰─▶ Because there is no version of torch==9.9.9")
