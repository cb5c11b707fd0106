"""benchmarks/gpu_check.py without a GPU: the plan, the time budget on a fake clock, the result
files (a failed and a timed-out step still recorded), the headline figures, and the dry mode end
to end on this CPU (two steps; `gpu_check.py --dry` runs them all by hand)."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
gc = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gc
spec.loader.exec_module(gc)

ISSUE_STEPS = (
    "doctor", "pytest_gpu", "calibrate", "ops", "quick", "modes", "pipeline", "jax",
    "profile", "memory", "overhead", "simfit",
)  # fmt: skip
STEP_KEYS = {
    "schema_version", "step", "what", "cap_s", "min_s", "timeout_s", "started_at", "command",
    "status", "reason", "returncode", "seconds", "stdout_tail", "stderr_tail", "log", "data",
    "data_error",
}  # fmt: skip


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_the_plan_has_every_step_and_fits_one_device_call():
    names = [s.name for s in gc.PLAN]
    assert set(ISSUE_STEPS) <= set(names)
    # the headline steps first; the fit reads the runs of quick and sweep
    assert names[:3] == ["doctor", "calibrate", "quick"]
    assert names.index("simfit") > max(names.index("quick"), names.index("sweep"))
    assert len(set(names)) == len(names)
    assert sum(s.cap_s for s in gc.PLAN) <= gc.TOTAL_BUDGET_S <= 570
    for s in gc.PLAN:
        assert 0 < s.min_s <= s.cap_s, s


@pytest.mark.parametrize("dry", [False, True])
def test_every_step_has_a_command_with_real_flags(tmp_path, dry):
    ctx = gc.Ctx(out=tmp_path, dry=dry, sizes=gc.DRY_SIZES if dry else gc.GPU_SIZES)
    ctx.work.mkdir()
    for step in gc.PLAN:
        argv = gc.command(step.name, ctx)
        assert argv[0] == sys.executable
        text = " ".join(argv)
        assert ("--device cpu" in text) == (dry and step.name not in ("pytest_gpu", "simfit"))
        assert "--device cuda" not in text if dry else "--device cpu" not in text
    quick = (tmp_path / "work" / "gpu-quick.toml").read_text()
    assert 'precisions = ["fp32", "tf32", "bf16", "fp16"]' in quick
    with pytest.raises(ValueError, match="must be one of"):
        gc.command("nope", ctx)


def test_the_commands_use_real_cli_flags(tmp_path):
    """Every paradnn command line of the plan names a real command and only its real options."""
    from typer.main import get_command

    from paradnn.cli import app

    ctx = gc.Ctx(out=tmp_path, dry=False, sizes=gc.GPU_SIZES)
    ctx.work.mkdir()
    checked = 0
    for step in gc.PLAN:
        argv = gc.command(step.name, ctx)
        if argv[1:3] != ["-m", "paradnn"]:
            continue
        sub, args = get_command(app), argv[3:]
        while hasattr(sub, "commands"):
            assert args and args[0] in sub.commands, (step.name, args)
            sub, args = sub.commands[args[0]], args[1:]
        opts = {o for p in sub.params for o in (*p.opts, *p.secondary_opts)}
        for flag in [a for a in args if a.startswith("-") and not a[1:2].isdigit()]:
            assert flag in opts, (step.name, flag)
        checked += 1
    assert checked == 10  # all but pytest and the two benchmark scripts


def test_the_budget_caps_each_step_and_skips_what_no_longer_fits():
    clock = FakeClock()
    budget = gc.Budget(100.0, clock)
    step = gc.Step("s", "a step", cap_s=30.0, min_s=10.0)
    assert budget.admit(step) == (30.0, None)
    clock.t += 75.0  # 25 s left: the step gets what is left, not its cap
    assert budget.admit(step) == (25.0, None)
    clock.t += 16.0  # 9 s left: below its minimum
    timeout, why = budget.admit(step)
    assert timeout is None and "9 s of the 100 s budget left" in why and "minimum of 10 s" in why
    assert gc.scaled([step], 4.0)[0].cap_s == 120.0


def _fake_runner(results):
    """A runner that returns canned outcomes and advances the fake clock by their seconds."""
    calls = []

    def run(argv, timeout, env, cwd, log):
        got = results[len(calls)]
        calls.append((argv, timeout))
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("log")
        return got

    return run, calls


def _ok(seconds, stdout=""):
    return {"status": "ok", "returncode": 0, "seconds": seconds, "stdout": stdout, "stderr": "",
            "error": None}  # fmt: skip


def test_failed_timed_out_and_skipped_steps_are_all_recorded(tmp_path):
    ctx = gc.Ctx(out=tmp_path, dry=True, sizes=gc.DRY_SIZES)
    steps = [
        gc.Step("doctor", "d", 10, 5),
        gc.Step("profile", "p", 10, 5),
        gc.Step("jax", "j", 10, 5, ("jax",)),
        gc.Step("simfit", "s", 10, 5),
    ]
    clock = FakeClock()
    budget = gc.Budget(28.0, clock)
    failed = {"status": "failed", "returncode": 2, "seconds": 1.0, "stdout": "",
              "stderr": "error: --db: boom", "error": "exit status 2"}  # fmt: skip
    timeout = {"status": "timeout", "returncode": -15, "seconds": 10.0, "stdout": "partial",
               "stderr": "", "error": "stopped at its 10 s cap"}  # fmt: skip
    runner, calls = _fake_runner([failed, timeout])

    def advancing(*a):
        got = runner(*a)
        clock.t += got["seconds"] + 7.0
        return got

    summary = gc.run(ctx, steps, budget, "Test CPU", {"jax": False}, advancing, lambda m: None)
    recs = {s: json.loads((tmp_path / f"{s}.json").read_text()) for s in
            ("doctor", "profile", "jax", "simfit")}  # fmt: skip
    for rec in recs.values():
        assert set(rec) == STEP_KEYS
    assert recs["doctor"]["status"] == "failed" and "boom" in recs["doctor"]["stderr_tail"]
    assert recs["doctor"]["returncode"] == 2 and recs["doctor"]["reason"] == "exit status 2"
    assert recs["profile"]["status"] == "timeout" and recs["profile"]["stdout_tail"] == "partial"
    assert recs["jax"]["status"] == "skipped" and "not installed: jax" in recs["jax"]["reason"]
    # 28 - 8 - 17 = 3 s left: simfit (min 5 s) is not started
    assert recs["simfit"]["status"] == "skipped" and "minimum of 5 s" in recs["simfit"]["reason"]
    assert len(calls) == 2 and calls[1][1] == 10.0
    assert [s["status"] for s in summary["steps"]] == ["failed", "timeout", "skipped", "skipped"]
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == summary["steps"]
    md = (tmp_path / "summary.md").read_text()
    assert "| doctor | failed |" in md and "n/a (" in md and "dry run" in md


def test_a_real_timeout_kills_the_step_and_its_children(tmp_path):
    child = "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])"
    code = f"import subprocess, sys, time; {child}; print('started', flush=True); time.sleep(60)"
    argv = [sys.executable, "-c", code]
    got = gc.execute(argv, 3.0, dict(os.environ), tmp_path, tmp_path / "log.txt")
    assert got["status"] == "timeout" and "started" in got["stdout"]
    assert got["seconds"] < 30
    assert "--- stdout" in (tmp_path / "log.txt").read_text()
    got = gc.execute([sys.executable, "-c", "import sys; sys.exit(3)"], 30.0, dict(os.environ),
                     tmp_path, tmp_path / "log2.txt")  # fmt: skip
    assert got["status"] == "failed" and got["returncode"] == 3
    got = gc.execute(["/nonexistent/binary"], 5.0, {}, tmp_path, tmp_path / "log3.txt")
    assert got["status"] == "failed" and "could not start" in got["error"]


def test_an_interrupted_run_stops_the_running_step(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM, which main() turns into an exit) while a step runs: the step's
    process group is stopped before the interrupt goes on."""
    started = []
    real_popen = subprocess.Popen

    class Recording(real_popen):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            started.append(self)

        def communicate(self, *a, timeout=None, **k):
            if timeout is not None:
                raise KeyboardInterrupt
            return super().communicate(*a, **k)

    monkeypatch.setattr(gc.subprocess, "Popen", Recording)
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    with pytest.raises(KeyboardInterrupt):
        gc.execute(argv, 30.0, dict(os.environ), tmp_path, tmp_path / "log.txt")
    (p,) = started
    assert p.poll() is not None  # terminated, not left behind


def _run(family, precision, **kw):
    base = dict.fromkeys(gc.RUN_FIELDS)
    return {**base, "family": family, "precision": precision, "status": "ok", "nulls": {}, **kw}


def test_the_headline_picks_the_largest_fc_bf16_and_says_why_when_absent():
    results = {
        "calibrate": {"data": {"ceilings": [
            {"kind": "matmul", "precision": "bf16", "value": 7e14, "unit": "FLOP/s",
             "best_size": 8192, "too_small": None, "datasheet": 989e12,
             "fraction_of_datasheet": 7e14 / 989e12},
            {"kind": "copy", "precision": None, "value": 3e12, "unit": "B/s", "best_size": None,
             "too_small": None, "datasheet": 3.35e12, "fraction_of_datasheet": 3 / 3.35},
            {"kind": "matmul", "precision": "fp16", "value": None, "unit": "FLOP/s",
             "best_size": 1024, "too_small": "the budget stopped at n=1024", "datasheet": 989e12,
             "fraction_of_datasheet": None},
        ]}},
        "quick": {"data": {"runs": [
            _run("fc", "bf16", flops_per_step=10, utilization_measured=0.5, config={"n": 1}),
            _run("fc", "bf16", flops_per_step=99, utilization_measured=0.85, config={"n": 2},
                 avg_power_w=500.0, energy_per_sample_j=0.01, energy_j=5000.0,
                 energy_method="nvml_energy_counter"),
            _run("fc", "fp32", flops_per_step=999, utilization_measured=0.9),
        ]}},
        "overhead": {"status": "timeout", "data": None, "reason": "stopped at its 30 s cap"},
    }  # fmt: skip
    h = gc.headline(results)
    assert h["matmul_ceiling"]["bf16"]["flop_per_s"] == 7e14
    assert h["fc_bf16_utilization_measured"] == 0.85 and h["fc_bf16_config"] == {"n": 2}
    assert h["harness_overhead_ratio"] is None
    assert h["nulls"]["harness_overhead_ratio"] == "overhead: stopped at its 30 s cap"
    assert (
        h["simulator_holdout_mdape"] is None and "simfit" in h["nulls"]["simulator_holdout_mdape"]
    )
    (e,) = [e for e in h["energy"] if e["avg_power_w"] is not None]
    assert e["energy_per_sample_j"] == 0.01
    assert any(e["reason"] == "not measured" for e in h["energy"])
    md = gc.markdown({"headline": h, "dry": False, "device_name": "NVIDIA H100", "wall_s": 1.0,
                      "budget_s": 480.0, "started_at": "t", "git": "abc", "versions": {},
                      "steps": []})  # fmt: skip
    assert "85.0%" in md and "500.0 W" in md and "n/a (overhead: stopped" in md
    assert h["matmul_ceiling"]["fp16"]["reason"] == "the budget stopped at n=1024"
    assert "| matmul ceiling fp16 | n/a (the budget stopped at n=1024) |" in md


def test_steps_and_budget_options_refuse_bad_input(capsys):
    with pytest.raises(SystemExit) as e:
        gc.main(["--dry", "--steps", "doctor,nope"])
    assert e.value.code == 2 and "nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        gc.main(["--dry", "--budget", "0"])
    assert e.value.code == 2 and "--budget" in capsys.readouterr().err
    assert [s.name for s in gc.parse_steps("simfit,doctor")] == ["doctor", "simfit"]


def test_no_gpu_without_dry_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(gc, "gpu_name", lambda: (None, "NVML Shared Library Not Found"))
    assert gc.main(["--steps", "doctor"]) == 2
    assert "--dry" in capsys.readouterr().err


def test_dry_mode_end_to_end_on_this_cpu(tmp_path):
    """doctor for real, then simfit on an empty database: a failed step recorded with its
    error, and summary.json/summary.md written. The whole dry run: `gpu_check.py --dry`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry", "--out",
         str(tmp_path), "--steps", "doctor,simfit"],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip
    assert p.returncode == 1, p.stderr  # simfit failed: the run says so
    doctor = json.loads((tmp_path / "doctor.json").read_text())
    # exit 1 is a check that failed (a busy machine can fail the timer check): still recorded
    assert doctor["returncode"] in (0, 1), doctor["stderr_tail"]
    assert doctor["data"]["device"] == "cpu" and doctor["data"]["checks"]
    simfit = json.loads((tmp_path / "simfit.json").read_text())
    assert simfit["status"] == "failed" and simfit["returncode"] == 2
    assert "error" in simfit["stderr_tail"] and (tmp_path / simfit["log"]).exists()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["dry"] is True and summary["device"] == "cpu"
    assert [s["step"] for s in summary["steps"]] == ["doctor", "simfit"]
    assert summary["versions"]["torch"] and summary["modules"]["torch"] is True
    assert summary["headline"]["nulls"]["simulator_holdout_mdape"].startswith("simfit")
    assert "| simfit | failed |" in (tmp_path / "summary.md").read_text()
