"""Chips (database, user TOML, measured ceilings), the step prediction and its validation."""

import itertools

import pandas as pd
import pytest

from paradnn.errors import ConfigError
from paradnn.records import RunRecord
from paradnn.sim import chip as sim_chip
from paradnn.sim.fidelity import predicted_vs_measured, summary, validate_frame
from paradnn.sim.interconnect import Topology
from paradnn.sim.model import predict, scaling
from paradnn.sim.traffic import attainable, roofline
from paradnn.store import open_store

from conftest import TINY

CPU = "Test CPU 9000"
CEILINGS = [
    {"device": "cpu", "device_name": CPU, "kind": "matmul", "precision": "fp32", "value": 1e11},
    {"device": "cpu", "device_name": CPU, "kind": "matmul", "precision": "fp32", "value": 2e11},
    {"device": "cpu", "device_name": CPU, "kind": "copy", "precision": None, "value": 2e10},
    {"device": "cpu", "device_name": CPU, "kind": "triad", "precision": None, "value": 3e10},
    {"device": "cpu", "device_name": "other", "kind": "copy", "precision": None, "value": 1e12},
]


def chip_file(tmp_path, body, name="chip.toml"):
    path = tmp_path / name
    path.write_text(body)
    return str(path)


WHATIF = """
[whatif]
name = "What-if"
vendor = "hypothetical"
kind = "tpu"
peak_dense = { bf16 = 183.5e12 }
mem_bandwidth = 700e9
memory_bytes = 16e9
mxu = { rows = 128, cols = 128, per_core = 4, cores = 2 }
clock_hz = 700e6
link_bw = 62e9
links = 4
topology = "torus2d"
dataflow = "os"
"""


def test_user_toml_chip(tmp_path):
    c = sim_chip.load(chip_file(tmp_path, WHATIF))
    assert (c.id, c.dataflow, c.topology_kind, c.links) == ("whatif", "os", "torus2d", 4)
    assert c.arrays.macs == 4 * 2 * 128 * 128 and c.link.bandwidth == 62e9
    assert c.origin.startswith("file ")


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("mxu_count = 4", "whatif.mxu_count"),
        ('dataflow = "rs"', "whatif.dataflow"),
        ('topology = "mesh"', "whatif.topology"),
        ("links = 0", "whatif.links"),
        ("link_bw = -1", "whatif.link_bw"),
    ],
)
def test_bad_toml_field_is_one_line_naming_it(tmp_path, extra, field):
    key = extra.split("=")[0].strip()
    body = "\n".join(line for line in WHATIF.splitlines() if not line.startswith(key + " "))
    body += "\n" + extra + "\n"
    with pytest.raises(ConfigError) as e:
        sim_chip.load(chip_file(tmp_path, body))
    msg = str(e.value)
    assert msg.startswith(field) and "\n" not in msg


def test_unknown_platform_is_one_line():
    with pytest.raises(ConfigError, match=r"--platform = 'tpu-v9'.*tpu-v2"):
        sim_chip.load("tpu-v9")


def test_measured_ceilings_chip_is_labelled_and_takes_the_best():
    c = sim_chip.from_ceilings(CEILINGS, CPU)
    assert c.peak("fp32") == 2e11 and c.mem_bandwidth == 3e10
    assert "measured ceilings" in c.origin and "measured" in c.platform.notes
    assert c.platform.peak("bf16") is None
    assert sim_chip.from_ceilings(CEILINGS, "other") is None  # bandwidth but no matmul


def _curve_rows():
    sizes = {"128": {"flop_per_s": 5e10}, "512": {"flop_per_s": 1.6e11}, "2048": 2e11}
    return [
        {
            "device": "cpu",
            "device_name": CPU,
            "kind": "matmul",
            "precision": "fp32",
            "value": 1.9e11,
            "detail": {"sizes": {"1024": 1.9e11}},
            "measured_at": "2026-01-01",
        },
        {
            "device": "cpu",
            "device_name": CPU,
            "kind": "matmul",
            "precision": "fp32",
            "value": 2e11,
            "detail": {"sizes": sizes},
            "measured_at": "2026-02-01",
        },
        {"device": "cpu", "device_name": CPU, "kind": "copy", "precision": None, "value": 2e10},
    ]


def test_measured_matmul_rate_by_size_slows_small_gemms():
    c = sim_chip.from_ceilings(_curve_rows(), CPU)
    assert "matmul rate by size" in c.origin
    assert c.gemm_rates == {"fp32": ((128, 5e10), (512, 1.6e11), (2048, 2e11))}  # newest run
    assert c.gemm_rate("fp32", 512, 512, 512) == pytest.approx(1.6e11)
    assert c.gemm_rate("fp32", 4096, 4096, 4096) == pytest.approx(2e11)  # the best, not more
    mid = c.gemm_rate("fp32", 256, 256, 256)  # halfway in log size: the log-log midpoint
    assert mid == pytest.approx((5e10 * 1.6e11) ** 0.5)
    assert c.gemm_rate("fp32", 64, 64, 64) < 5e10  # below the smallest size, slower still
    assert c.gemm_rate("fp32", 64, 64, 64) >= 5e10 / 2  # but never faster than linear decay
    assert c.gemm_rate("fp32", 128, 512, 32) == pytest.approx(5e10)  # equal volume to 128³
    assert sim_chip.from_ceilings(CEILINGS, CPU).gemm_rates is None  # no sizes: the peak
    small = predict("fc", {**TINY["fc"]}, c, "fp32")
    flat = predict("fc", {**TINY["fc"]}, sim_chip.from_ceilings(CEILINGS, CPU), "fp32")
    assert small.compute_s > flat.compute_s


def test_roofline_bounds():
    b = roofline(2e12, 1e9, peak=1e12, bandwidth=1e11)
    assert (b.compute_s, b.memory_s, b.lower_s, b.upper_s) == (2.0, 0.01, 2.0, 2.01)
    assert b.bound == "compute"
    assert attainable(10, 1e12, 1e11) == 1e12 and attainable(1, 1e12, 1e11) == 1e11


def test_prediction_on_a_datasheet_tpu():
    tpu = sim_chip.load("tpu-v2")
    p = predict("cnn", {"filters": 64, "batch": 128}, tpu, "bf16")
    assert p.kind == "prediction" and p.platform == "tpu-v2" and p.origin == "datasheet"
    assert p.step_lower_s <= p.predicted_step_s <= p.step_upper_s <= 2 * p.step_lower_s
    assert 0 < p.utilization < 1
    assert p.bottleneck in ("compute", "memory")
    assert p.memory["fits"] is True
    for op in p.ops:
        assert 0 < op.array_utilization <= 1
    with pytest.raises(ConfigError, match="tpu-v2 has no dense fp32 peak; it has bf16"):
        predict("cnn", {}, tpu, "fp32")


def test_fc_is_memory_bound_at_batch_one_and_compute_bound_at_large_batch():
    h100 = sim_chip.load("h100-sxm")
    small = predict("fc", {"nodes": 4096, "batch": 1}, h100, "bf16")
    big = predict("fc", {"nodes": 4096, "batch": 8192}, h100, "bf16")
    assert small.bottleneck == "memory" and big.bottleneck == "compute"
    assert small.utilization < big.utilization


def test_more_mxus_help_until_memory_binds(tmp_path):
    base = WHATIF.replace('dataflow = "os"', "")
    single = base.replace("per_core = 4", "per_core = 1").replace("183.5e12", "45.875e12")
    one = sim_chip.load(chip_file(tmp_path, single, "a.toml"))
    four = sim_chip.load(chip_file(tmp_path, base, "b.toml"))
    cfg = {"filters": 64, "batch": 64}
    assert predict("cnn", cfg, four).compute_s < predict("cnn", cfg, one).compute_s


def test_capacity_check_replicates_the_model():
    tpu = sim_chip.load("tpu-v2")  # 16 GiB
    huge = predict("fc", {"layers": 64, "nodes": 8192, "batch": 64}, tpu, "bf16")
    assert huge.memory["fits"] is False
    assert huge.memory["lower_bound_bytes"] > tpu.memory_bytes


def test_data_parallel_step_adds_the_exposed_all_reduce():
    tpu = sim_chip.load("tpu-v2")
    one = predict("cnn", {"filters": 32, "batch": 64}, tpu)
    pod = predict("cnn", {"filters": 32, "batch": 64}, tpu, chips=256)
    assert pod.topology == "torus2d:16x16"
    assert pod.predicted_step_s == pytest.approx(one.predicted_step_s + pod.exposed_comm_s)
    assert pod.exposed_comm_s == pytest.approx(pod.allreduce_s)
    hidden = predict("cnn", {"filters": 32, "batch": 64}, tpu, chips=256, overlap=1.0)
    assert hidden.exposed_comm_s < pod.exposed_comm_s
    with pytest.raises(ConfigError, match="has 64 chips but --chips is 256"):
        predict("cnn", {}, tpu, chips=256, topology=Topology("torus2d", (8, 8)))
    with pytest.raises(ConfigError, match="--chips"):
        predict("cnn", {}, sim_chip.load("titan-x-pascal"), "fp32", chips=2)  # no link figures


def test_scaling_curve_to_1024_chips():
    rows = scaling("cnn", {"filters": 32, "batch": 64}, sim_chip.load("tpu-v3"), max_chips=1024)
    assert [r["chips"] for r in rows] == [2**i for i in range(11)]
    eff = [r["efficiency"] for r in rows]
    assert eff[0] == 1.0 and all(a >= b for a, b in itertools.pairwise(eff))
    assert 0 < eff[-1] < 1
    assert rows[-1]["topology"] == "torus2d:32x32"
    assert rows[-1]["bisection_bytes_per_s"] == pytest.approx(64 * 656e9 / 8)


def _frame():
    rows = []
    for i, (fam, measured) in enumerate([("fc", 0.01), ("fc", 0.02), ("fc", 0.03), ("cnn", 0.05)]):
        cfg = dict(TINY[fam], batch=TINY[fam]["batch"] * (i + 1))
        rows.append(
            {
                "family": fam,
                "config": cfg,
                "precision": "fp32",
                "optimizer": "sgd",
                "status": "ok",
                "step_time_s": measured,
                "device_name": CPU,
            }
        )
    rows.append({**rows[0], "status": "oom", "step_time_s": None})
    rows.append({**rows[0], "precision": "bf16"})  # the chip has no bf16 ceiling: left out
    return pd.DataFrame(rows)


def test_predicted_vs_measured_and_mdape():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    df = predicted_vs_measured(_frame(), chip)
    assert list(df["family"]) == ["fc", "fc", "fc", "cnn"]
    assert (df["kind"] == "prediction").all()
    assert df["ape"].tolist() == pytest.approx(
        ((df["predicted_s"] - df["measured_s"]).abs() / df["measured_s"]).tolist()
    )
    # Leave-one-out: fc row 0 is scaled by the median ratio of fc rows 1 and 2 only.
    ratios = (df["measured_s"] / df["predicted_s"]).tolist()
    assert df["calibrated_s"][0] == pytest.approx(
        df["predicted_s"][0] * (ratios[1] + ratios[2]) / 2
    )
    assert pd.isna(df["calibrated_s"][3])  # cnn has no other run
    s = summary(df).set_index("family")
    assert s.loc["fc", "mdape"] == pytest.approx(df["ape"][:3].median())
    assert s.loc["fc", "runs"] == 3 and pd.isna(s.loc["cnn", "mdape_calibrated"])


def make_db(path):
    with open_store(path) as store:
        for i, r in enumerate(_frame().to_dict("records")):
            store.insert(
                RunRecord.flat(run_key=f"k{i}", device="cpu", **{k: v for k, v in r.items()})
            )
        store.insert_rows(
            "ceilings",
            [
                {**c, "fingerprint": "f", "unit": "x", "measured_at": "2026-01-01T00:00:00"}
                for c in CEILINGS
            ],
        )
    return str(path)


def validate_db(path):
    """What `paradnn simulate validate` does: the caller reads the store, sim predicts."""
    with open_store(path, readonly=True) as store:
        frame, ceilings = store.frame(), store.rows("ceilings")
    return validate_frame(frame, ceilings, db=str(path))


def test_validate_frame_uses_the_measured_ceilings(tmp_path):
    df, s = validate_db(make_db(tmp_path / "v.db"))
    assert len(df) == 4 and set(s["family"]) == {"fc", "cnn"}
    assert df["basis"].str.startswith("measured ceilings").all()


def test_validate_frame_without_any_chip_is_one_line(tmp_path):
    path = tmp_path / "n.db"
    with open_store(path) as store:
        store.insert(
            RunRecord.flat(
                run_key="k",
                family="fc",
                config=TINY["fc"],
                precision="fp32",
                optimizer="sgd",
                device="cpu",
                status="ok",
                device_name="Unknown CPU",
                step_time_s=0.1,
            )
        )
    with pytest.raises(ConfigError, match="run `paradnn calibrate") as e:
        validate_db(str(path))
    assert str(e.value).startswith(f"--db = {str(path)!r}: no chip describes its devices")


def test_every_registered_family_can_be_predicted():
    from paradnn import families
    from paradnn.families.lowering import lower_all

    tpu = sim_chip.load("tpu-v4")
    for name in families.names():
        if name == "fault":
            continue
        fam = families.get(name)
        cfg = fam.default_config()
        p = predict(name, cfg, tpu, "bf16")
        assert p.predicted_step_s > 0 and 0 < p.utilization <= 1, name
        assert p.flops_per_chip == sum(o.flops for o in lower_all(fam.shapes(cfg)))


def test_report_entry_point_reads_analysis_data(tmp_path):
    from paradnn.analysis import frames
    from paradnn.sim.fidelity import validate_data

    data = frames.load([make_db(tmp_path / "r.db")])
    df, summary = validate_data(data)
    assert (summary["model"] == "step").all() and (df["model"] == "step").all()
    assert len(df) == 4 and (df["kind"] == "prediction").all()
    assert {"family", "measured_s", "predicted_s", "ape"} <= set(df.columns)


def test_what_if_peak_must_match_arrays_and_clock(tmp_path):
    body = WHATIF.replace("183.5e12", "400e12")
    with pytest.raises(
        ConfigError, match=r"whatif\.peak_dense\.bf16 = 400000000000000\.0: must be 2·rows"
    ):
        sim_chip.load(chip_file(tmp_path, body))


def test_a_remeasured_config_counts_once_with_its_latest_attempt():
    frame = _frame().iloc[:4].copy()
    frame["run_key"] = ["a", "b", "c", "d"]
    frame["attempt"] = 1
    again = frame.iloc[[0]].assign(attempt=2, step_time_s=0.5)
    df = predicted_vs_measured(pd.concat([frame, again]), sim_chip.from_ceilings(CEILINGS, CPU))
    assert len(df) == 4 and df["measured_s"].tolist()[0] == 0.5


def test_report_entry_point_without_ceilings_uses_the_datasheet_and_without_runs_is_empty():
    from types import SimpleNamespace

    from paradnn.sim.fidelity import validate_data

    runs = _frame().assign(device_name="Tesla V100-SXM2-16GB")  # a datasheet entry matches
    df, _ = validate_data(SimpleNamespace(runs=runs, ceilings=None))
    assert len(df) == 4 and (df["device_name"] == "Tesla V100-SXM2-16GB").all()
    want = predicted_vs_measured(runs, sim_chip.load("v100-sxm2"))
    assert df["predicted_s"].tolist() == pytest.approx(want["predicted_s"].tolist())
    assert validate_data(SimpleNamespace(runs=None, ceilings=None)) is None
    unknown = runs.assign(device_name="no such device")
    assert validate_data(SimpleNamespace(runs=unknown, ceilings=None)) is None


def test_a_chip_file_fp16_peak_must_match_its_arrays_and_clock(tmp_path):
    body = WHATIF.replace("bf16 = 183.5e12", "bf16 = 183.5e12, fp16 = 400e12")
    with pytest.raises(ConfigError) as e:
        sim_chip.load(chip_file(tmp_path, body))
    assert e.value.field == "whatif.peak_dense.fp16" and "must be 2·rows" in e.value.allowed


def test_a_chip_file_key_the_simulator_does_not_know_is_named_with_the_allowed_ones(tmp_path):
    with pytest.raises(ConfigError) as e:
        sim_chip.load(chip_file(tmp_path, WHATIF + "colour = 1\n"))
    assert e.value.field == "whatif.colour"
    assert (
        e.value.allowed.startswith("unknown key; allowed: ") and "mem_bandwidth" in e.value.allowed
    )


def test_an_unknown_platform_lists_the_database_and_the_file_option():
    with pytest.raises(ConfigError) as e:
        sim_chip.load("tpu-v9")
    assert str(e.value).startswith("--platform = 'tpu-v9': must be one of ")
    assert str(e.value).endswith(" or a .toml file") and "tpu-v2, " in str(e.value)


def test_fidelity_rows_keep_their_config_and_the_summary_names_families_in_order():
    import json

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    df = predicted_vs_measured(_frame(), chip)
    assert [json.loads(c)["batch"] for c in df["config"]] == [
        TINY["fc"]["batch"] * (i + 1) for i in range(3)
    ] + [TINY["cnn"]["batch"] * 4]
    s = summary(df)  # fc runs come first in the frame; the summary is sorted by family
    assert s["family"].tolist() == ["cnn", "fc"]
    assert set(s["basis"]) == {chip.origin}


def test_runs_the_chip_cannot_predict_give_an_empty_table_with_its_columns():
    from paradnn.sim.fidelity import COLUMNS

    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    frame = _frame()
    unpredictable = frame[(frame["status"] != "ok") | (frame["precision"] == "bf16")]
    assert len(unpredictable) == 2  # an OOM run and a bf16 run the chip has no peak for
    df = predicted_vs_measured(unpredictable, chip)
    assert df.empty and list(df.columns) == list(COLUMNS)


def test_a_measured_chip_is_dated_by_its_newest_ceiling():
    rows = [
        {**CEILINGS[0], "measured_at": "2026-01-01T10:00:00"},
        {**CEILINGS[2], "measured_at": "2026-03-05T09:00:00"},
    ]
    c = sim_chip.from_ceilings(rows, CPU)
    assert c.origin == f"measured ceilings ({CPU}, 2026-03-05)"
    assert c.platform.sources["calibrate"] == f"paradnn calibrate on {CPU}, 2026-03-05"


# -- the host profile and the runs validate uses (sim/fidelity.py; issue 41) -----------------

PROFILE = {"id": 7, "hostname": "box", "device_type": "cpu", "forward_op_s": 40e-6,
           "autograd_node_s": 60e-6, "optimizer_loop_s": 9e-6, "optimizer_step_s": 80e-6,
           "sync_s": 0.0, "measured_at": "2026-11-20", "status": "ok"}  # fmt: skip


def test_a_run_is_predicted_with_the_profile_stored_for_its_own_host():
    from paradnn.sim.fidelity import host_for

    p, words = host_for([PROFILE], "box", "cpu")
    assert p.source == "measured" and p.forward_op_s == 40e-6
    assert "host_profile row 7 of box" in words
    other, words = host_for([PROFILE], "elsewhere", "cpu")  # another host's: the defaults
    assert other.source == "defaults" and "assumed defaults" in words
    assert host_for([], "", "cpu")[0].source == "defaults"
    gpu = {**PROFILE, "id": 8, "device_type": "cuda", "kernel_launch_s": 6e-6,
           "measured_at": "2026-11-01"}  # fmt: skip
    p, words = host_for([PROFILE, gpu], "box", "cuda")  # the one that timed its launches
    assert p.kernel_launch_s == 6e-6 and "row 8" in words
    p, _ = host_for([PROFILE], "box", "cuda")  # a CPU profile lends a GPU its host costs
    assert p.forward_op_s == 40e-6 and p.kernel_launch_s is not None


def test_a_damaged_profile_row_falls_back_to_the_defaults_and_says_why():
    from paradnn.sim.fidelity import host_for

    p, words = host_for([{**PROFILE, "forward_op_s": -1.0}], "box", "cpu")
    assert p.source == "defaults" and "host_profile row 7 of box not used" in words


def test_validate_uses_the_stored_profile_and_leaves_noisy_runs_out_unless_asked():
    chip = sim_chip.from_ceilings(CEILINGS, CPU)
    frame = _frame().iloc[:4].assign(hostname="box", run_key=["a", "b", "c", "d"])
    plain = predicted_vs_measured(frame, chip)
    mine = predicted_vs_measured(frame, chip, host_profiles=[PROFILE])
    assert (mine["host_profile"].str.contains("row 7 of box")).all()
    assert (mine["predicted_s"] > plain["predicted_s"]).all()  # 40 µs per op, not the default
    noisy = frame.assign(quality=["good", "noisy", "good", "good"])
    assert len(predicted_vs_measured(noisy, chip)) == 3
    assert len(predicted_vs_measured(noisy, chip, include_noisy=True)) == 4
    roof = predicted_vs_measured(frame, chip, "roofline", host_profiles=[PROFILE])
    assert (roof["model"] == "roofline").all() and roof["host_profile"].isna().all()
