"""The what-if accelerator model (`paradnn.sim`, torch-free): one config or a preset on a chip,
its scaling curve, the seeds' MXU-size and precision studies, and validation against a store."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from paradnn import families
from paradnn.api.returns import Rows, SimFit, Validation, rows
from paradnn.api.runs import _mapping, plan
from paradnn.config import RunSpec, with_fields
from paradnn.errors import ABSENT, ConfigError, StoreError
from paradnn.store import DEFAULT_DB

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from paradnn.sim.chip import Chip
    from paradnn.sim.hostprofile import HostProfile
    from paradnn.sim.interconnect import Topology

MAX_LOADER_RATE = 1e12  # `--loader-rate`: examples/s per chip, far past any input pipeline
MAX_HOLDOUT = 90  # `fit --holdout`: percent of configs held out; a fit needs the rest


def default_precision(chip: Chip) -> str:
    """The precision a prediction uses when none is given: the chip's native one
    (`Platform.native_precision`: the 16-bit format of its matrix units when it beats fp32 —
    a TPU bf16, a V100 fp16 as the seeds ran them, an H100 bf16 — else fp32, as on a CPU).
    `-p` overrides it on every chip."""
    return chip.platform.native_precision()


def simulate(
    platform: str,
    family: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    preset: str | None = None,
    precision: str | None = None,
    optimizer: str | None = None,
    chips: int = 1,
    topology: str | None = None,
    overlap: float = 0.0,
    concurrent: bool = False,
    loader_rate: float | None = None,
    loader_overlapped: bool = True,
    model: str = "step",
    host_profile: str | None = None,
    db: str | None = None,
    host: HostProfile | None = None,
    policy: str = "mixed",
) -> Rows:
    """Predicted step time, utilization and bottleneck of one config (``family`` + ``config``)
    or of every run of a preset, on ``platform`` (a database id or a TOML file). Rows are
    predictions (``kind = "prediction"``); a preset run at a precision the chip has no peak for
    gets a row with null predictions and the reason. ``loader_rate`` (examples/s a host loader
    delivers per chip, e.g. a run's measured ``loader_examples_per_s``) adds the host/input
    term (docs/infeed.md). ``host_profile`` (a TOML/JSON file, or "defaults") and ``db`` (where
    `paradnn calibrate` stored this host's profile) choose the host profile of the step-time
    model (`host_profile_for`), unless ``host`` (a `sim.hostprofile.HostProfile`) is given;
    each row names it in ``host_profile``. ``policy`` (mixed or pure 16-bit) goes to the
    step-time model. ``model``: step (default, as the CLI: the step-time model, the one `fit`
    fits and `validate` checks) or roofline (the bare roofline, the one that takes
    ``overlap``/``concurrent``). Each row names its ``model`` and carries the validated error
    band of its chip's kind (``band``, ``band_label``; sim/error_bands.json, the step-time
    model's: a roofline row says it has none). Bad input raises before any work."""
    from paradnn.config import OPTIMIZERS, PRECISIONS
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.curve import check_options
    from paradnn.sim.interconnect import MAX_CHIPS, parse_topology
    from paradnn.sim.model import KIND, predict
    from paradnn.sim.steptime import POLICIES
    from paradnn.validate import int_at_least, number_in, one_of

    if (family is None) == (preset is None):
        if family is None:
            raise ConfigError("FAMILY", ABSENT, "required (or --preset, to predict a sweep)")
        raise ConfigError(
            "--preset", preset, f"cannot be given with a FAMILY ({family}): give one of them"
        )
    if precision is not None:
        one_of("--precision", precision, PRECISIONS)
    one_of("--policy", policy, POLICIES)
    if optimizer is not None:
        one_of("--optimizer", optimizer, OPTIMIZERS)
    int_at_least("--chips", chips, 1, MAX_CHIPS)
    number_in("--overlap", overlap, 0.0, 1.0)
    if loader_rate is not None:
        number_in("--loader-rate", loader_rate, 0.0, MAX_LOADER_RATE, strict=True)
    check_options(model, overlap, concurrent)
    topo = parse_topology(topology) if topology else None
    if topo is not None and chips == 1:
        chips = topo.chips
    chip = sim_chip.load(platform)
    if chips > 1:
        chip.require_link()
    host_words = None
    if model == "step" and host is None:
        host, host_words = host_profile_for(chip, host_profile, db)
    elif host is not None:
        host_words = f"given ({host.source})"
    if preset is not None:
        # every config of the preset once, at -p or else the chip's native precision (the
        # preset's own precisions are the measuring host's: a TPU has no fp32 to predict)
        prec = precision or default_precision(chip)
        specs = list(plan(preset, precisions=[prec], optimizer=optimizer).specs)
        if policy != "mixed":  # given: every run's; else each run's own (a sweep may vary it)
            specs = [_with_policy(s, policy) for s in specs]
    else:
        cfg = families.get(family).config(_mapping(family, config))
        precision = precision or default_precision(chip)
        chip.peak(precision)
        chosen = {"precision": precision, "optimizer": optimizer or "rmsprop"}
        run = with_fields(None, "simulate", {**chosen, "precision_policy": policy})
        specs = [RunSpec(family, dict(cfg.__dict__), run)]
    found = []
    band = {"model": model, **_band(chip, model)}
    for spec in specs:
        if chip.platform.peak(spec.precision) is None:
            found.append(
                {
                    "kind": KIND,
                    "family": spec.family,
                    "config": dict(spec.config),
                    "platform": chip.id,
                    "precision": spec.precision,
                    "predicted_step_s": None,
                    "reason": f"{chip.id} has no dense {spec.precision} peak",
                    **band,
                }
            )
            continue
        p = predict(
            spec.family,
            spec.config,
            chip,
            spec.precision,
            optimizer=spec.optimizer,
            chips=chips,
            topology=topo,
            overlap=overlap,
            concurrent=concurrent,
            loader_examples_per_s=loader_rate,
            loader_overlapped=loader_overlapped,
            policy=spec.options.precision_policy,
        )
        loader = (loader_rate, loader_overlapped)
        if model == "roofline":
            row = p.row()
        else:
            row = _with_steptime(p.row(), spec, chip, topo, loader, host=host)
            row["host_profile"] = host_words
        found.append(row | band)
    keys = list(dict.fromkeys(k for r in found for k in r))  # skipped rows: same columns, null
    return rows("predictions", [{k: r.get(k) for k in keys} for r in found])


def _band(chip: Chip, model: str) -> dict[str, Any]:
    """The validated error band a prediction on `chip` carries (sim/error_bands.json: the
    step-time model's, per device kind); the roofline has none, and says so."""
    from paradnn.sim import errorbands

    kind = chip.platform.kind
    if model != "step":
        return {"band": None, "band_label": f"{kind}: no error band (the {model} is not validated)"}
    b = errorbands.read().of(kind)
    return {"band": b.p90, "band_label": b.label()}


MAX_PLATFORMS = 32  # `simulate step --platform a,b,c`: one table, one row per platform and config


# `simulate step --precision-policy`: each platform's first format with a dense peak, in order
# (16-bit: the papers' accelerator comparisons — a TPU in bf16 against a V100 in fp16).
PRECISION_POLICIES = {"16-bit": ("bf16", "fp16")}


def precision_policy(
    precision: str | None,
    policy: str | None = None,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """The words a multi-platform table states its precisions by; with its `rows`, each
    platform's precision is named (`tpu-v2 bf16, v100-sxm2 fp16`), so the title says which
    precision each row used even where the table has no room for the column."""
    used = ""
    if rows is not None:
        per = dict.fromkeys(f"{r['platform']} {r['precision']}" for r in rows if r.get("platform"))
        used = ": " + ", ".join(per) if per else ""
    if policy is not None:
        order = " else ".join(PRECISION_POLICIES[policy])
        return f"{policy}: each platform's {order}, the first it has a dense peak for{used}"
    if precision is not None:
        return f"{precision} on every platform"
    return f"each platform at its native precision{used}"


def _by_policy(chip: Chip, precision: str | None, policy: str | None) -> str | None:
    """The precision a platform is predicted at under the policy (None: the chip's default)."""
    if policy is None:
        return precision
    order = PRECISION_POLICIES[policy]
    return next((p for p in order if chip.platform.peak(p) is not None), order[-1])


def simulate_platforms(
    platforms: Sequence[str],
    family: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    precision: str | None = None,
    policy: str | None = None,
    **options: Any,
) -> Rows:
    """`simulate` on several platforms, their rows in one list, at one precision policy
    (`precision_policy`): ``precision`` on every chip — a chip without a dense peak for it gets
    a row with null predictions and the reason, as a preset's runs do — or a ``policy`` of
    PRECISION_POLICIES, or each chip's native one (`default_precision`). Every platform is
    read before any prediction."""
    from paradnn.errors import OptionError
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.model import KIND
    from paradnn.validate import one_of

    if policy is not None:
        one_of("--precision-policy", policy, tuple(PRECISION_POLICIES))
        if precision is not None:
            raise OptionError("--precision-policy", policy, "cannot be given with -p/--precision")

    if not platforms:
        raise ConfigError("--platform", ABSENT, "required: a platform id or a chip .toml file")
    if len(platforms) > MAX_PLATFORMS:
        raise OptionError("--platform", ",".join(platforms), f"at most {MAX_PLATFORMS} platforms")
    if len(set(platforms)) != len(platforms):
        twice = next(p for p in platforms if platforms.count(p) > 1)
        raise OptionError("--platform", twice, "is given twice (give each platform once)")
    chips = [sim_chip.load(p) for p in platforms]  # ids, unique prefixes, chip files
    named: dict[str, str] = {}
    for name, chip in zip(platforms, chips, strict=True):
        if chip.id in named:  # `v100` and `v100-sxm2`: one chip twice
            raise OptionError(
                "--platform",
                name,
                f"is given twice (as {named[chip.id]} too: give each platform once)",
            )
        named[chip.id] = name
    found: list[dict[str, Any]] = []
    for name, chip in zip(platforms, chips, strict=True):
        prec = _by_policy(chip, precision, policy)
        if family is not None and prec is not None and chip.platform.peak(prec) is None:
            cfg = families.get(family).config(_mapping(family, config))
            found.append(
                {
                    "kind": KIND,
                    "family": family,
                    "config": dict(cfg.__dict__),
                    "platform": chip.id,
                    "precision": prec,
                    "predicted_step_s": None,
                    "reason": f"{chip.id} has no dense {prec} peak",
                }
            )
            continue
        found += simulate(name, family, config, precision=prec, **options)
    keys = list(dict.fromkeys(k for r in found for k in r))
    return rows("predictions", [{k: r.get(k) for k in keys} for r in found])


def _with_policy(spec: RunSpec, policy: str) -> RunSpec:
    """The run under another precision policy (its description otherwise whole)."""
    options = with_fields(spec.options, "simulate", {"precision_policy": policy})
    return dataclasses.replace(spec, options=options)


def _with_steptime(
    roof: dict[str, Any],
    spec: RunSpec,
    chip: Chip,
    topo: Topology | None,
    loader: tuple[float | None, bool] = (None, True),
    *,
    host: HostProfile | None = None,
) -> dict[str, Any]:
    """The step-time model's terms (`sim.steptime`) over the roofline row: predicted_step_s,
    utilization, bottleneck and examples/s become the step-time model's; the roofline's own
    step time stays as ``roofline_step_s`` (its bounds as step_lower_s / step_upper_s)."""
    from paradnn.sim.steptime import predict_step

    s = predict_step(
        spec.family,
        spec.config,
        chip,
        spec.precision,
        optimizer=spec.optimizer,
        chips=roof["chips"],
        topology=topo,
        loader_examples_per_s=loader[0],  # the host/input term (docs/infeed.md)
        loader_overlapped=loader[1],
        host=host,
        policy=spec.options.precision_policy,
    ).row()
    out = dict(roof)
    out["roofline_step_s"] = out.pop("predicted_step_s")
    for k in ("allreduce_s", "exposed_comm_s", "compute_s", "memory_s"):
        out.pop(k, None)
    out.update(s)
    return out


def host_profile_for(
    chip: Chip, host_profile: str | None = None, db: str | None = None
) -> tuple[HostProfile, str]:
    """The host profile a step-time prediction on `chip` uses, and one line saying which:
    ``host_profile`` ("defaults", or a TOML/JSON file) first; else the chip file's [ID.host]
    table; else the newest profile `paradnn calibrate` stored in ``db`` for this host (by
    hostname; ``db`` None: the default database when it exists); else the assumed defaults
    for the chip's kind. A profile measured on a CPU-only host lends a GPU target its
    dispatch costs, with the launch and sync assumed (`sim.hostprofile.for_device`)."""
    import platform as _platform
    from pathlib import Path

    from paradnn.sim import hostprofile as hp
    from paradnn.store import open_store

    device_type = "cpu" if chip.platform.kind == "cpu" else "cuda"
    if host_profile == "defaults":
        p = hp.default(device_type)
        return p, hp.describe(p)
    if host_profile is not None:
        p = hp.for_device(hp.load_file(host_profile), device_type)
        return p, hp.describe(p, f"--host-profile {host_profile}")
    if chip.host is not None:
        p = hp.for_device(chip.host, device_type)
        return p, hp.describe(p, f"the platform {chip.origin} [{chip.platform.id}.host]")
    path = db if db is not None else (DEFAULT_DB if Path(DEFAULT_DB).is_file() else None)
    if path is not None:
        try:
            with open_store(path, readonly=True) as store:
                found = store.rows("host_profile")
        except StoreError as e:
            if db is not None:  # asked for: its problem is the answer
                raise
            p = hp.default(device_type)  # the default database, not asked for: set aside
            return p, hp.describe(p) + f"; {path} not read ({e})"
        me = _platform.node()
        row = hp.newest_for(found, me)
        if row is not None:
            p = hp.for_device(
                hp.from_row(row, where=f"{path}: host_profile row {row.get('id')}"), device_type
            )
            return p, hp.describe(p, f"{path} row {row.get('id')}")
        p = hp.default(device_type)
        others = sorted({str(r.get("hostname")) for r in found})
        why = f"other hosts' only ({', '.join(others)})" if others else "none"
        return p, hp.describe(p) + f"; {path} holds no profile of {me}: {why}"
    return hp.default(device_type), hp.describe(hp.default(device_type))


def simulate_scaling(
    platform: str,
    family: str,
    config: Mapping[str, Any] | None = None,
    *,
    precision: str | None = None,
    optimizer: str = "rmsprop",
    max_chips: int = 1024,
    overlap: float = 0.0,
    concurrent: bool = False,
    model: str = "step",
) -> Rows:
    """Predicted weak-scaling curve (1, 2, 4 … ``max_chips`` chips) of one config under
    ``model`` (step: the step-time model, as `simulate`'s and `fit`'s; roofline: the bare
    roofline, the one that takes ``overlap``/``concurrent``); the precision defaults as in
    `simulate` (`default_precision`)."""
    from paradnn.config import OPTIMIZERS, PRECISIONS
    from paradnn.sim import chip as sim_chip
    from paradnn.sim.curve import check_options, scaling
    from paradnn.sim.interconnect import MAX_CHIPS
    from paradnn.validate import int_at_least, number_in, one_of

    if precision is not None:
        one_of("--precision", precision, PRECISIONS)
    one_of("--optimizer", optimizer, OPTIMIZERS)
    int_at_least("--max-chips", max_chips, 1, MAX_CHIPS)
    number_in("--overlap", overlap, 0.0, 1.0)
    check_options(model, overlap, concurrent)
    config = families.get(family).config(_mapping(family, config))
    chip = sim_chip.load(platform)
    chip.require_link()
    curve = scaling(
        family,
        dict(config.__dict__),
        chip,
        precision or default_precision(chip),
        max_chips=max_chips,
        optimizer=optimizer,
        overlap=overlap,
        concurrent=concurrent,
        model=model,
    )
    return rows("scaling", curve)


def simulate_mxu_study(batch: int = 8, dataflow: str = "ws") -> Rows:
    """The seed's MXU-size argument: utilization of 1×256², 4×128² and 16×64² on CNNs."""
    from paradnn.sim.studies import mxu_study

    return rows("mxu_study", mxu_study(batch, dataflow))


def simulate_precision_study() -> Rows:
    """bf16 vs fp16 vs fp32 inputs to a matmul (fp32 accumulation), against float64."""
    from paradnn.sim.rounding import precision_study

    return rows("precision_study", precision_study())


def simulate_validate(
    db: str = DEFAULT_DB,
    platform: str | None = None,
    model: str = "step",
    include_noisy: bool = False,
    host_profile: str | None = None,
) -> Validation:
    """Predict every measured ok run in ``db`` on its device's chip: (per-run rows, per-family
    MdAPE rows). ``model``: step (the step-time model, as `simulate step` and `fit`) or
    roofline. Each config's chosen attempt; noisy runs left out unless ``include_noisy`` (as
    `compare`). ``host_profile`` (the step model's): a TOML/JSON file or "defaults"; by default
    the platform file's [ID.host], else the newest ok profile `paradnn calibrate` stored in
    ``db`` for the host that measured each run, else the defaults for the chip's kind; each row
    and the result say which (``host_profile``). The report's "Predicted vs measured" section
    is the same computation (`sim.fidelity.validate_frame`) and prints the same numbers."""
    from paradnn.sim import hostprofile as hp
    from paradnn.sim.curve import check_options
    from paradnn.sim.fidelity import validate_frame
    from paradnn.store import open_store

    check_options(model)
    given = None
    if host_profile is not None and host_profile != "defaults":
        given = hp.load_file(host_profile)
    with open_store(db, readonly=True) as store:  # sim never opens the store: its caller reads
        frame, ceilings = store.frame(), store.rows("ceilings")
        profiles = store.rows("host_profile")
    host = "defaults" if host_profile == "defaults" else given
    df, summary = validate_frame(
        frame,
        ceilings,
        platform,
        db=db,
        model=model,
        host=host,
        host_profiles=profiles,
        include_noisy=include_noisy,
    )
    words = None
    if model == "step" and len(df):
        words = "; ".join(dict.fromkeys(str(w) for w in df["host_profile"] if w))
    return Validation(
        rows("validation", _records(df)), rows("validation_summary", _records(summary)), words
    )


def simulate_fit(
    db: str,
    out: str | None = None,
    *,
    device: str | None = None,
    platform: str | None = None,
    holdout: int = 30,
    statistic: str = "median",
    source: str = "runs",
    holdout_ops: str | None = None,
    host: HostProfile | None = None,
) -> SimFit:
    """Fit a device's step-time parameters on the runs of ``db`` outside the held-out part
    (config hash), write them as a chip file to ``out``, and report the error on both parts.
    ``source="ops"``: fit the GEMM parameters from the op micro-benchmarks (`paradnn ops`)
    instead, holding out the ops named in ``holdout_ops`` (comma-separated; default
    `sim.opfit.HOLDOUT_OPS`; "" holds none out). ``host``: the host profile of the machine the
    runs were measured on (None: the defaults for the device's kind; on a GPU its scale is
    fitted as ``host_scale``).
    """
    from pathlib import Path

    from paradnn import paths
    from paradnn.sim import fit as sim_fit
    from paradnn.store import open_store
    from paradnn.validate import int_at_least, one_of

    one_of("--from", source, ("runs", "ops"))
    int_at_least("--holdout", holdout, 0, MAX_HOLDOUT)
    if statistic not in sim_fit.STATISTICS:
        raise ConfigError("--statistic", statistic, "must be one of median, min")
    if out is not None and not out.endswith(".toml"):
        raise ConfigError("--out", out, "must be a .toml path in an existing folder")
    if out is not None:
        paths.output_file("--out", out)
    if holdout_ops is not None and source != "ops":
        raise ConfigError("--holdout-ops", holdout_ops, "applies to --from ops only")
    if source == "ops":
        return _fit_ops(db, out, device, platform, statistic, holdout_ops)
    with open_store(db, readonly=True) as store:  # sim never opens the store: its caller reads
        frame, ceilings = store.frame(), store.rows("ceilings")
    chip, name, mine = sim_fit.device_chip(frame, ceilings, device, platform)
    data = sim_fit.samples(mine, chip, holdout=holdout, statistic=statistic, host=host)
    result = sim_fit.fit(
        chip,
        data,
        source=f"fitted by `paradnn simulate fit` on {db} ({statistic} step time)",
        holdout=holdout,
    )
    text = sim_fit.chip_toml(chip, result, name)
    if out is not None:
        Path(out).write_text(text)
    return SimFit(
        device_name=name,
        params=result.params.as_dict(),
        fitted_runs=result.fitted_runs,
        holdout_runs=result.holdout_runs,
        status=result.status,
        summary=rows("fit_summary", _records(sim_fit.summary(result.rows))),
        rows=rows("fit", _records(result.rows)),
        chip_toml=text,
        out=out,
        identified=rows(
            "fit_identified", [r.as_dict() for _, r in sorted(result.identified.items())]
        ),
        regimes=result.regime_counts(),
    )


def _fit_ops(
    db: str,
    out: str | None,
    device: str | None,
    platform: str | None,
    statistic: str,
    holdout_ops: str | None,
) -> SimFit:
    """`simulate_fit` from the ``ops`` table (`sim.opfit`); same result keys, plus which
    parameters were fitted and which kept (with why)."""
    from pathlib import Path

    from paradnn.sim import fit as sim_fit
    from paradnn.sim import opfit
    from paradnn.store import open_store

    with open_store(db, readonly=True) as store:  # sim never opens the store: its caller reads
        measured, ceilings = store.rows("ops"), store.rows("ceilings")
    chip, name, mine = opfit.device_chip(measured, ceilings, device, platform, db)
    if holdout_ops is None:
        held = list(opfit.HOLDOUT_OPS)
    else:
        held = [h.strip() for h in holdout_ops.split(",") if h.strip()]
        known = sorted({opfit.base_name(n) for n in mine["name"]})
        for h in held:
            if opfit.base_name(h) not in known:
                raise ConfigError("--holdout-ops", h, "must name ops in --db: " + ", ".join(known))
    data = opfit.samples(mine, chip, holdout=held, statistic=statistic)
    result = opfit.fit(
        chip,
        data,
        source=f"fitted by `paradnn simulate fit --from ops` on {db} ({statistic} op time)",
        holdout=held,
    )
    header = [
        f"Fitted by `paradnn simulate fit --from ops` from op micro-benchmarks of {name}.",
        f"{result.fitted_rows} op rows fitted, {result.holdout_rows} held out (ops "
        f"{', '.join(result.holdout_ops) or 'none'}); peaks and bandwidth: {chip.origin}.",
        *(f"Kept at its base value: {k} ({v})." for k, v in result.kept.items()),
        *(f"WARNING: {w}" for w in result.warnings),
    ]
    text = sim_fit.chip_toml(chip, result, name, header)
    if out is not None:
        Path(out).write_text(text)
    return SimFit(
        device_name=name,
        source="ops",
        params=result.params.as_dict(),
        fitted=result.fitted,
        kept=result.kept,
        fitted_runs=result.fitted_rows,
        holdout_runs=result.holdout_rows,
        holdout_ops=list(result.holdout_ops),
        warnings=list(result.warnings),
        status=result.status,
        summary=rows("fit_summary", _records(opfit.summary(result.rows))),
        rows=rows("fit", _records(result.rows)),
        chip_toml=text,
        out=out,
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts, NaN as None (JSON null)."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")
