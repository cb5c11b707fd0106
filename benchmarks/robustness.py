"""What a user meets with two runs on one database, a full disk, a signal, a rebuilt report, a
value for pip, a resumed sweep and a read-only copy (issue 46), measured on a given checkout:
rows, duplicates, exit codes and messages per scenario. Run it on this checkout and on an
earlier one (`git archive <commit> | tar -x -C DIR`) for the before and after:

    python benchmarks/robustness.py --src src --label after [--only NAME ...]
    python benchmarks/robustness.py --src /tmp/before/src --label before

Each scenario runs `paradnn` in subprocesses with `--src` first on PYTHONPATH and writes its
figures to benchmarks/results/robustness.json under the label (other labels are kept). The
disk-full and read-only scenarios mount a small tmpfs (or bind-mount read-only) in a mount
namespace of their own and need root and `unshare`; without them they say so. Slow on purpose
(real sweeps, a few minutes in all): not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "robustness.json"
TINY = {"layers": 2, "nodes": 16, "input": 12, "output": 5, "batch": 4}
TIMING = {
    "min_samples": 5,
    "min_time_s": 0.0,
    "max_time_s": 0.2,
    "warmup_min_steps": 2,
    "warmup_min_time_s": 0.0,
    "warmup_max_steps": 12,
    "warmup_max_time_s": 0.5,
    "target_ci_rel": 0.5,
}


class Ctx:
    def __init__(self, src: Path, work: Path):
        self.src, self.work = src.resolve(), work
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.src), str(ROOT / "tests")]),
            "PARADNN_REMEASURE": "0",
        }

    def cmd(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "paradnn", *args]

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.cmd(*args), env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def start(self, *args: str, **kw) -> subprocess.Popen:
        return subprocess.Popen(
            self.cmd(*args),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **kw,
        )

    def sweep(self, name: str, n: int, timing: dict | None = None) -> Path:
        body = "".join(
            f'[[runs]]\nfamily = "fc"\nconfig = {{ layers = 2, nodes = {4 + i}, input = 12, '
            "output = 5, batch = 4 }\n"
            for i in range(n)
        )
        t = "".join(f"{k} = {json.dumps(v)}\n" for k, v in (timing or TIMING).items())
        path = self.work / f"{name}.toml"
        path.write_text(f'precisions = ["fp32"]\n{body}[timing]\n{t}')
        return path


def _rows(db: Path) -> dict:
    if not db.exists():
        return {"rows": 0, "keys": 0, "duplicates": 0, "max_attempt": None}
    conn = sqlite3.connect(db)
    try:
        rows, keys, top = conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT run_key), MAX(attempt) FROM runs"
        ).fetchone()
    except sqlite3.Error as e:
        return {"error": str(e)}
    finally:
        conn.close()
    return {"rows": rows, "keys": keys, "duplicates": rows - keys, "max_attempt": top}


def _errors(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith(("error:", "stopped:"))][-3:]


def _notes(text: str, words: tuple[str, ...]) -> list[str]:
    return [ln for ln in text.splitlines() if any(w in ln for w in words)][:4]


# -- scenarios ---------------------------------------------------------------------------------


def concurrent_runs(c: Ctx) -> dict:
    """N `paradnn run` of one 8-config sweep started together on one new database."""
    found = {}
    for n in (2, 4):
        db, sweep = c.work / f"conc{n}.db", c.sweep(f"conc{n}", 8)
        # not --quiet: stderr is a pipe, so the progress is a line log with the notes
        args = ("run", "--preset", str(sweep), "--db", str(db), "--device", "cpu")
        args += ("--threads", "1")
        t0 = time.monotonic()
        procs = [c.start(*args) for _ in range(n)]
        outs = [p.communicate(timeout=900) for p in procs]
        found[f"{n} runs"] = {
            **_rows(db),
            "configs": 8,
            "exit_codes": [p.returncode for p in procs],
            "wall_s": round(time.monotonic() - t0, 1),
            "errors": [e for _, err in outs for e in _errors(err)],
            "notes": [x for _, err in outs for x in _notes(err, ("another sweep", "taking over"))][
                :4
            ],
        }
    return found


def killed_run(c: Ctx) -> dict:
    """Two runs together; one SIGKILLed once 2 rows are stored; the other waited for."""
    db, sweep = c.work / "kill.db", c.sweep("kill", 8)
    args = ("run", "--preset", str(sweep), "--db", str(db), "--device", "cpu", "--threads", "1")
    victim, survivor = c.start(*args), c.start(*args)
    deadline = time.monotonic() + 300
    while victim.poll() is None and _rows(db).get("rows", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    at_kill = _rows(db)
    victim.kill()
    victim.wait()
    _, err = survivor.communicate(timeout=900)
    rows = _rows(db)
    return {
        "rows_at_kill": at_kill.get("rows"),
        **rows,
        "configs": 8,
        "lost": 8 - rows.get("keys", 0),
        "survivor_exit": survivor.returncode,
        "notes": _notes(err, ("another sweep", "taking over")),
    }


def concurrent_opens(c: Ctx) -> dict:
    """8 processes open one new (or schema-v3) database at one moment, 10 times."""
    code = r"""
import multiprocessing as mp, os, sqlite3, sys
from collections import Counter

def opener(path, go, out):
    from paradnn.store import open_store
    go.wait()
    try:
        with open_store(path) as s:
            s.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
        out.put("ok")
    except Exception as e:
        out.put(f"{type(e).__name__}: {str(e).split(': ', 1)[-1]}")

if __name__ == "__main__":
    from paradnn.store.schema import MIGRATIONS
    work, found = sys.argv[1], {}
    ctx = mp.get_context("spawn")
    for old in (None, 3):
        seen = Counter()
        for t in range(10):
            path = os.path.join(work, f"o{old}-{t}.db")
            if old:
                con = sqlite3.connect(path)
                con.executescript("".join(MIGRATIONS[:old]) + f"PRAGMA user_version = {old};")
                con.close()
            go, out = ctx.Barrier(8), ctx.Queue()
            ps = [ctx.Process(target=opener, args=(path, go, out)) for _ in range(8)]
            [p.start() for p in ps]
            seen.update(out.get(timeout=120) for _ in ps)
            [p.join() for p in ps]
        found["new" if old is None else f"schema v{old}"] = dict(seen)
    print(__import__("json").dumps(found))
"""
    script = c.work / "opens.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script), str(c.work)],
        env=c.env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode:
        return {"error": done.stderr[-1000:]}
    found = json.loads(done.stdout)
    return {
        k: {
            "opens": sum(v.values()),
            "failed": sum(n for m, n in v.items() if m != "ok"),
            "messages": sorted(m for m in v if m != "ok")[:4],
        }
        for k, v in found.items()
    }


def _can_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "-m",
            "--propagation",
            "private",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs /mnt",
        ],
        capture_output=True,
    )
    return probe.returncode == 0


def disk_full(c: Ctx) -> dict:
    """A 12-config sweep on a 300 KiB tmpfs; then the tmpfs grown and the command run again."""
    if not _can_mount():
        return {"skipped": "needs root and unshare to mount a tmpfs"}
    mnt, sweep = c.work / "mnt", c.sweep("full", 12)
    mnt.mkdir()
    db = mnt / "r.db"
    run = " ".join(
        c.cmd(
            "run",
            "--preset",
            str(sweep),
            "--db",
            str(db),
            "--device",
            "cpu",
            "--threads",
            "1",
            "--quiet",
        )
    )
    w = c.work
    script = (
        f"mount -t tmpfs -o size=300k tmpfs {mnt} || exit 99\n"
        f"{run} 2> {w}/full1.err; echo $? > {w}/full1.code\n"
        f"cp {db} {w}/full1.db; [ -f {db}-wal ] && cp {db}-wal {w}/full1.db-wal\n"
        f"mount -o remount,size=20m {mnt}\n"
        f"{run} 2> {w}/full2.err; echo $? > {w}/full2.code\n"
        f"cp {db} {w}/full2.db; [ -f {db}-wal ] && cp {db}-wal {w}/full2.db-wal; true\n"
    )
    subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        env=c.env,
        capture_output=True,
        timeout=1200,
    )
    first, second = (w / "full1.err").read_text(), (w / "full2.err").read_text()
    return {
        "first": {
            "exit": int((w / "full1.code").read_text()),
            "errors": _errors(first),
            **_rows(w / "full1.db"),
        },
        "resumed": {
            "exit": int((w / "full2.code").read_text()),
            "errors": _errors(second),
            **_rows(w / "full2.db"),
            "configs": 12,
        },
    }


def _tree(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                kids = []
            found += kids
            todo += kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[-60:]
    except OSError:
        return "?"


def signals(c: Ctx) -> dict:
    """SIGTERM or SIGINT to a sweep whose worker is measuring (a result stored) or still
    starting (spawned, importing torch): exit code, message, children alive when the command
    has exited and one second later."""
    found = {}
    cases = [("SIGTERM, measuring", signal.SIGTERM, "measuring")]
    cases += [("SIGTERM, worker starting", signal.SIGTERM, "starting")]
    cases += [("SIGINT, measuring", signal.SIGINT, "measuring")]
    for i, (name, signum, when) in enumerate(cases):
        db, sweep = c.work / f"sig{i}.db", c.sweep(f"sig{i}", 30)
        args = ("run", "--preset", str(sweep), "--db", str(db), "--device", "cpu")
        p = c.start(
            *args,
            *("--threads", "1", "--quiet"),
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 300
        while p.poll() is None and time.monotonic() < deadline:
            if when == "measuring" and _rows(db).get("rows", 0) >= 1:
                break
            if when == "starting" and any(
                "multiprocessing-fork" in _cmdline(k) for k in _tree(p.pid)
            ):
                break
            time.sleep(0.01)
        kids = _tree(p.pid)
        names = {k: _cmdline(k) for k in kids}  # read while they run
        t0 = time.monotonic()
        p.send_signal(signum)
        _, err = p.communicate(timeout=120)
        took = time.monotonic() - t0
        at_exit = [k for k in kids if _alive(k)]
        time.sleep(1.0)
        later = [k for k in kids if _alive(k)]
        found[name] = {
            "exit": p.returncode,
            "exit_after_s": round(took, 2),
            "children": [names[k] for k in kids],
            "alive_at_exit": [names[k] for k in at_exit],
            "alive_1s_later": [names[k] for k in later],
            "message": [ln for ln in err.splitlines() if ln.strip()][-2:],
        }
        for k in later:
            os.kill(k, signal.SIGKILL)
    return found


def _synth_db(c: Ctx, path: Path, families: tuple[str, ...]) -> str:
    code = (
        "import sys, synth\n"
        "rows = []\n"
        "cfgs = {'fc': dict(layers=2, nodes=16, input=12, output=5, batch=4),\n"
        "        'cnn': dict(blocks=1, filters=4, image=16, output=3, batch=2),\n"
        "        'rnn': dict(layers=2, embed=8, length=5, vocab=7, batch=3, cell='lstm')}\n"
        "for fam in sys.argv[2].split(','):\n"
        "    for i, b in enumerate((2, 4, 8)):\n"
        "        for p in ('fp32', 'bf16'):\n"
        "            rows.append(synth.row(fam, {**cfgs[fam], 'batch': b}, 0.1 + i / 50,\n"
        "                                  precision=p))\n"
        "synth.write_db(sys.argv[1], rows)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(path), ",".join(families)],
        env=c.env,
        check=True,
        capture_output=True,
    )
    return str(path)


def _count(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


def report_folder(c: Ctx) -> dict:
    """A report of fc+cnn+rnn, then one of fc alone into the same folder, against a fresh
    folder; then a build killed mid-way: is the last report whole?"""
    big = _synth_db(c, c.work / "big.db", ("fc", "cnn", "rnn"))
    small = _synth_db(c, c.work / "small.db", ("fc",))
    out, fresh = c.work / "rep", c.work / "fresh"
    codes = [c.run("report", "--db", big, "--out", str(out)).returncode]
    codes.append(c.run("report", "--db", small, "--out", str(out)).returncode)
    codes.append(c.run("report", "--db", small, "--out", str(fresh)).returncode)
    rebuilt, clean = _count(out), _count(fresh)
    # killed mid-build: the big report over the small one
    before = {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    html = (out / "report.html").read_bytes()
    p = c.start("report", "--db", big, "--out", str(out))
    deadline = time.monotonic() + 300
    while p.poll() is None and time.monotonic() < deadline:
        new = [q for q in out.rglob("*.csv") if q.stat().st_mtime_ns > max(before.values())]
        if len(new) >= 3:
            break
        time.sleep(0.01)
    p.kill()
    p.wait()
    visible = [
        q
        for q in out.rglob("*")
        if q.is_file() and not any(part.startswith(".") for part in q.relative_to(out).parts)
    ]
    changed = [q for q in visible if before.get(str(q.relative_to(out))) != q.stat().st_mtime_ns]
    return {
        "exit_codes": codes,
        "files_after_rebuild": rebuilt,
        "files_in_a_fresh_folder": clean,
        "stale_files": rebuilt - clean,
        "killed_build": {
            "html_unchanged": (out / "report.html").read_bytes() == html,
            "files_changed_or_new_beside_it": len(changed),
        },
    }


def values(c: Ctx) -> dict:
    """Values for pip, a database path with a newline, and `bench --device cuda:99` on a new
    database: exit code, whether the installer was reached, what was created."""
    probe = (
        "import sys\n"
        "import paradnn.runner.envs as envs\n"
        "class Reached(BaseException): pass\n"
        "def stop(*a, **k): raise Reached\n"
        "envs.env_dir = stop\n"
        "from paradnn import cli\n"
        "sys.argv = ['paradnn', *sys.argv[1:]]\n"
        "try:\n"
        "    cli.main()\n"
        "except Reached:\n"
        "    print('REACHED THE INSTALLER'); sys.exit(42)\n"
    )
    found: dict = {}
    cache = c.work / "cache"
    for label, args in (
        ("--torch ٣.١.٠", ["--torch", "٣.١.٠"]),
        ("--torch '2.13.0\\n' (a newline)", ["--torch", "2.13.0\n"]),
        ("--index-url 'not a url'", ["--torch", "2.13.0", "--index-url", "not a url"]),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                probe,
                "versions",
                *args,
                "--db",
                str(c.work / "v.db"),
                "--cache",
                str(cache),
            ],
            env=c.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        found[label] = {
            "exit": done.returncode,
            "reached_the_installer": "REACHED THE INSTALLER" in done.stdout,
            "errors": _errors(done.stderr),
        }
    for label, name, device in (
        ("bench --db 'new\\n.db' --device cuda:99", "new\n.db", "cuda:99"),
        ("bench --device cuda:99 --db new.db", "new.db", "cuda:99"),
    ):
        where = Path(tempfile.mkdtemp(dir=c.work))
        done = c.run("bench", "fc", "--device", device, "--db", str(where / name))
        found[label] = {
            "exit": done.returncode,
            "errors": _errors(done.stderr),
            "created": sorted(f"{p.name!r} ({p.stat().st_size:,} bytes)" for p in where.iterdir()),
        }
    return found


def resumed(c: Ctx) -> dict:
    """A 3-config sweep run, its file then asking for more samples, run again."""
    db = c.work / "res.db"
    sweep = c.sweep("res", 3)
    args = ("run", "--preset", str(sweep), "--db", str(db), "--device", "cpu", "--threads", "1")
    first = c.run(*args)
    c.sweep("res", 3, {**TIMING, "min_samples": 7})
    second = c.run(*args)
    return {
        "exits": [first.returncode, second.returncode],
        **_rows(db),
        "said": _notes(second.stderr, ("kept", "already done")),
    }


def readonly_wal(c: Ctx) -> dict:
    """`results` on a WAL database copied with its -wal (results in it) and no -shm onto a
    read-only folder (a read-only bind mount)."""
    if not _can_mount():
        return {"skipped": "needs root and unshare for a read-only bind mount"}
    ro = c.work / "ro"
    ro.mkdir()
    code = (
        "import sys, shutil\n"
        "from paradnn.store import open_store\n"
        "from paradnn.records import RunRecord\n"
        "s = open_store(sys.argv[1] + '/live.db')\n"
        "s.conn.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "for i in range(6):\n"
        "    s.insert(RunRecord.flat(run_key=f'k{i}', family='fc', config={'nodes': i},\n"
        "        precision='fp32', optimizer='sgd', device='cpu', status='ok',\n"
        "        step_time_s=0.01, samples=[0.01] * 10, env={}))\n"
        "shutil.copyfile(sys.argv[1] + '/live.db', sys.argv[2] + '/r.db')\n"
        "shutil.copyfile(sys.argv[1] + '/live.db-wal', sys.argv[2] + '/r.db-wal')\n"
        "s.close()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(c.work), str(ro)], env=c.env, check=True)
    cmd = " ".join(f"'{a}'" for a in c.cmd("results", "--db", str(ro / "r.db"), "--format", "json"))
    script = f"mount --bind {ro} {ro} && mount -o remount,ro,bind {ro} && {cmd}"
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        env=c.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        rows = len(json.loads(done.stdout)["rows"])
    except (ValueError, KeyError):
        rows = None
    return {
        "exit": done.returncode,
        "rows_read": rows,
        "rows_stored": 6,
        "said": [ln for ln in done.stderr.splitlines() if ln.strip()][:2],
    }


SCENARIOS: dict[str, Callable[[Ctx], dict]] = {
    "concurrent_runs": concurrent_runs,
    "killed_run": killed_run,
    "concurrent_opens": concurrent_opens,
    "disk_full": disk_full,
    "signals": signals,
    "report_folder": report_folder,
    "values": values,
    "resumed_sweep": resumed,
    "readonly_wal": readonly_wal,
}


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=str(ROOT / "src"), help="the checkout's src/ to measure")
    ap.add_argument("--label", default="after", help="where in the JSON the figures go")
    ap.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="these scenarios only")
    args = ap.parse_args()
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    entry = results.setdefault(args.label, {})
    entry["machine"] = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "src": args.src,
    }
    for name in args.only or list(SCENARIOS):
        with tempfile.TemporaryDirectory(prefix=f"robust-{name}-") as work:
            t0, load0 = time.monotonic(), _load()
            try:
                found = SCENARIOS[name](Ctx(Path(args.src), Path(work)))
            except Exception as e:  # a scenario that breaks is a finding, not the end
                found = {"error": f"{type(e).__name__}: {e}"}
            found["took_s"] = round(time.monotonic() - t0, 1)
            found["loadavg_before"] = load0
            entry[name] = found
            print(name, json.dumps(found, ensure_ascii=False)[:600], flush=True)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
