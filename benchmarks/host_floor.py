"""The GPU host floor (issue 42): a host profile derived from a sweep's host-bound runs, and the
step model's error below 5 ms with the default profile and with the derived one.

A step on the host floor takes its host time: the step model's host timeline is linear in the
profile's figures (`sim.timeline.host_seconds`), so every run has a row of coefficients (the
host seconds each figure contributes at 1 s) and the derivation is a least-squares fit of
those rows to the measured step times. Which figures the data can tell apart decides what is
fitted; the rest is held as the GPU defaults hold it (`sim.hostprofile.CUDA_DERIVATION`):

* runs: ok runs whose datasheet device time (`h100-sxm`, default parameters) is under a
  quarter of the measured step (host-bound beyond doubt), of the families named by
  ``--families`` (FC and RNN by default: the CNN runs are kept apart as a check on data the
  derivation never saw);
* groups: runs with the same coefficients (same family, depth and precision; batch and width
  change only device work) are one point, their median step time (robust to a noisy run);
* fitted, non-negative, each group weighted by 1 / its median (relative error): ``step_s``,
  ``autograd_node_s`` with ``forward_op_s`` = 1.25 × it (one FC layer's calls and nodes always
  come together: the split is the defaults' assumption), ``cast_s`` (bf16 and fp16 runs),
  ``scaler_s`` (fp16 runs) and ``rnn_call_s`` (RNN runs); a figure with no run where it
  matters is not fitted, says so (``not_identified``) and keeps the default's value;
* held: the foreach optimizer tensor (5 µs), the launch (5 µs, only cuDNN's per-time-step
  kernels pay it) and the sync (15 µs), as in the defaults.

Then `simulate validate`'s error (median |predicted − measured| / measured and the median of
predicted / measured) for the runs under 5 ms, all runs and the CNN check, with (a) the default
host profile and (b) the derived one, each on the datasheet chip.

    PYTHONPATH=src python benchmarks/host_floor.py --db DB [--check DB2]

Writes benchmarks/results/host_floor.{json,md} and the derived profile as a `--host-profile`
file, benchmarks/results/gpu/nvidia-h100-80gb-hbm3/host_profile_derived.toml.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from scipy.optimize import nnls

from paradnn import api
from paradnn.sim import chip as chips
from paradnn.sim import hostprofile as hp
from paradnn.sim import steptime as st
from paradnn.store import open_store

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
PROFILE = RESULTS / "gpu" / "nvidia-h100-80gb-hbm3" / "host_profile_derived.toml"
PLATFORM = "h100-sxm"
HOST_BOUND = 0.25  # device time under this share of the measured step: on the host floor
FAST_S = 5e-3  # the "runs under 5 ms"
FITTED = ("step_s", "autograd_node_s", "cast_s", "scaler_s", "rnn_call_s")


def _unit(figure: str, base: hp.HostProfile) -> hp.HostProfile:
    """A profile whose only cost is 1 s of `figure` (the node figure carries its calls)."""
    zero = replace(
        base,
        forward_op_s=0.0,
        autograd_node_s=0.0,
        optimizer_tensor_s=MappingProxyType({k: 0.0 for k in base.optimizer_tensor_s}),
        optimizer_step_s=0.0,
        sync_s=0.0,
        kernel_launch_s=0.0,
        step_s=0.0,
        cast_s=0.0,
        rnn_call_s=0.0,
        scaler_s=0.0,
    )
    if figure == "autograd_node_s":
        ratio = base.forward_op_s / base.autograd_node_s
        return replace(zero, autograd_node_s=1.0, forward_op_s=ratio)
    if figure == "held":  # what the fit does not move
        return replace(
            zero,
            optimizer_tensor_s=base.optimizer_tensor_s,
            kernel_launch_s=base.kernel_launch_s,
            sync_s=base.sync_s,
        )
    return replace(zero, **{figure: 1.0})


def _host(run: dict[str, Any], chip: Any, prof: hp.HostProfile) -> float:
    p = st.predict_step(run["family"], run["config"], chip, run["precision"], host=prof)
    return p.terms.host_dispatch_s


def load_runs(db: str) -> list[dict[str, Any]]:
    with open_store(db, readonly=True) as store:
        rows = [r for r in store.runs() if r.get("status") == "ok" and r.get("step_time_s")]
    out = []
    for r in rows:
        cfg = r["config"] if isinstance(r["config"], dict) else json.loads(r["config"])
        out.append(
            {
                "family": r["family"],
                "config": cfg,
                "precision": r["precision"],
                "measured_s": float(r["step_time_s"]),
            }
        )
    return out


def derive(runs: list[dict[str, Any]], families: tuple[str, ...]) -> dict[str, Any]:
    """The derived profile and how it was found (groups, coefficients, residuals)."""
    chip = chips.load(PLATFORM)
    base = hp.default("cuda")
    picked, groups = [], {}
    for r in runs:
        p = st.predict_step(r["family"], r["config"], chip, r["precision"], host=base)
        r = {**r, "device_s": p.terms.device_s}
        if r["family"] in families and r["device_s"] < HOST_BOUND * r["measured_s"]:
            picked.append(r)
    units = {f: _unit(f, base) for f in (*FITTED, "held")}
    for r in picked:
        row = tuple(round(_host(r, chip, units[f]), 12) for f in FITTED)
        held = _host(r, chip, units["held"])
        g = groups.setdefault((r["family"], r["precision"], row), {"held": held, "runs": []})
        g["runs"].append(r["measured_s"])
    keys = sorted(groups, key=lambda k: (k[0], k[1], k[2]))
    a = np.array([k[2] for k in keys])
    y = np.array([statistics.median(groups[k]["runs"]) - groups[k]["held"] for k in keys])
    w = 1.0 / np.array([statistics.median(groups[k]["runs"]) for k in keys])
    seen = [bool(np.any(a[:, j] > 0)) for j in range(len(FITTED))]
    cols = [j for j, s in enumerate(seen) if s]
    theta, _ = nnls(a[:, cols] * w[:, None], y * w)
    got = dict.fromkeys(FITTED)
    for j, v in zip(cols, theta, strict=True):
        got[FITTED[j]] = float(v)
    fitted_rows = a[:, cols] @ theta
    node = got["autograd_node_s"] or base.autograd_node_s
    prof = replace(
        base,
        forward_op_s=node * base.forward_op_s / base.autograd_node_s,
        autograd_node_s=node,
        # a figure no run identifies stays the default's (listed in ``not_identified``)
        step_s=got["step_s"] if got["step_s"] is not None else base.step_s,
        cast_s=got["cast_s"] if got["cast_s"] is not None else base.cast_s,
        scaler_s=got["scaler_s"] if got["scaler_s"] is not None else base.scaler_s,
        rnn_call_s=got["rnn_call_s"] if got["rnn_call_s"] is not None else base.rnn_call_s,
        source="file",
        detail=MappingProxyType({}),
    )
    return {
        "profile": prof,
        "fitted": got,
        "not_identified": [FITTED[j] for j, s in enumerate(seen) if not s],
        "runs_used": len(picked),
        "groups": [
            {
                "family": k[0],
                "precision": k[1],
                "runs": len(groups[k]["runs"]),
                "median_s": statistics.median(groups[k]["runs"]),
                "fitted_s": float(fitted_rows[i] + groups[k]["held"]),
            }
            for i, k in enumerate(keys)
        ],
    }


def toml_of(prof: hp.HostProfile, how: str) -> str:
    """The profile as a `--host-profile` file."""
    lines = [f"# {line}" for line in how.splitlines()]
    for k in ("forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s", "kernel_launch_s"):
        lines.append(f"{k} = {getattr(prof, k):.4g}")
    opt = ", ".join(f"{k} = {v:.4g}" for k, v in prof.optimizer_tensor_s.items())
    lines.append(f"optimizer_tensor_s = {{ {opt} }}")
    for k in ("step_s", "cast_s", "rnn_call_s", "scaler_s"):
        v = getattr(prof, k)
        if v is not None:
            lines.append(f"{k} = {v:.4g}")
    lines += [
        "launches_included = true",
        'device_type = "cuda"',
        'host = "H100 80GB HBM3 host (16-core Xeon VM), derived from its runs"',
    ]
    return "\n".join(lines) + "\n"


def errors(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def block(rs: list[dict[str, Any]]) -> dict[str, Any]:
        if not rs:
            return {"n": 0}
        return {
            "n": len(rs),
            "mdape": statistics.median(r["ape"] for r in rs),
            "median_ratio": statistics.median(r["predicted_s"] / r["measured_s"] for r in rs),
        }

    out = {"under_5ms": block([r for r in rows if r["measured_s"] < FAST_S]), "all": block(rows)}
    for fam in sorted({r["family"] for r in rows}):
        for prec in sorted({r["precision"] for r in rows if r["family"] == fam}):
            got = [r for r in rows if r["family"] == fam and r["precision"] == prec]
            out[f"{fam} {prec}"] = block(got)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="a paradnn database of GPU runs")
    ap.add_argument("--families", default="fc,rnn", help="families the derivation uses")
    ap.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="DB",
        help="another database of the same kind of GPU: its error with both profiles too",
    )
    ap.add_argument("--out", default=str(RESULTS / "host_floor"), help="results (.json, .md)")
    ap.add_argument("--profile", default=str(PROFILE), help="where the derived profile goes")
    args = ap.parse_args(argv)
    runs = load_runs(args.db)
    d = derive(runs, tuple(args.families.split(",")))
    how = (
        f"Derived by benchmarks/host_floor.py from {Path(args.db).name} ({d['runs_used']} "
        f"host-bound runs of {args.families}), {datetime.now(UTC):%Y-%m-%d}: a least-squares "
        "fit of the step model's host coefficients to the measured steps (docs/simulate.md)."
    )
    Path(args.profile).write_text(toml_of(d["profile"], how), encoding="utf-8")
    res: dict[str, Any] = {"db": Path(args.db).name, "platform": PLATFORM, "how": how}
    for name, profile in (("defaults", "defaults"), ("derived", args.profile)):
        v = api.simulate_validate(args.db, PLATFORM, model="step", host_profile=profile)
        res[name] = errors(list(v.rows))
    res["checks"] = {}
    for db in args.check:
        res["checks"][Path(db).name] = {
            name: errors(list(api.simulate_validate(db, PLATFORM, host_profile=prof).rows))
            for name, prof in (("defaults", "defaults"), ("derived", args.profile))
        }
    res["derivation"] = {k: v for k, v in d.items() if k != "profile"}
    res["derived_profile"] = {
        k: v for k, v in d["profile"].as_dict().items() if k not in ("detail", "measured_at")
    }
    Path(args.out + ".json").write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    Path(args.out + ".md").write_text(markdown(res), encoding="utf-8")
    print(markdown(res))
    return 0


def markdown(res: dict[str, Any]) -> str:
    lines = [
        f"# The GPU host floor: {res['db']} on `{res['platform']}`",
        "",
        res["how"],
        "",
        "| runs | host profile | n | median abs. error | median predicted/measured |",
        "|---|---|---|---|---|",
    ]
    for key in res["defaults"]:
        for name in ("defaults", "derived"):
            b = res[name].get(key, {"n": 0})
            if b["n"]:
                lines.append(
                    f"| {key} | {name} | {b['n']} | {b['mdape']:.1%} | {b['median_ratio']:.3f} |"
                )
    for db, got in res.get("checks", {}).items():
        lines += ["", f"Check on {db} (not used in the derivation):", ""]
        lines += ["| runs | host profile | n | median abs. error | median predicted/measured |"]
        lines += ["|---|---|---|---|---|"]
        for key in ("under_5ms", "all"):
            for name in ("defaults", "derived"):
                b = got[name].get(key, {"n": 0})
                if b["n"]:
                    lines.append(
                        f"| {key} | {name} | {b['n']} | {b['mdape']:.1%} "
                        f"| {b['median_ratio']:.3f} |"
                    )
    f = res["derivation"]["fitted"]
    lines += [
        "",
        "Fitted (µs): "
        + ", ".join(
            f"{k} {v * 1e6:.1f}" if v is not None else f"{k} not identified" for k, v in f.items()
        ),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
