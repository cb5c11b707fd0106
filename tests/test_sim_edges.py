"""Edges of the step-time model that a sampled `make mutation` (group sim) left untested: where
mixed precision's master-weight kernels are charged, what an efficiency table without the asked
precision falls back to, the bounds every entry point checks, and the names of the fields a
caller reads. Torch-free like the simulator."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

from paradnn import families
from paradnn.errors import ConfigError
from paradnn.sim import chip as C
from paradnn.sim import model, steptime, studies
from paradnn.sim.interconnect import MAX_CHIPS
from paradnn.sim.stepparams import defaults

FC = {"layers": 2, "nodes": 256, "batch": 32}


def _plan(platform: str, precision: str) -> steptime.Plan:
    ch = C.load(platform)
    cfg = families.get("fc").config(FC)
    return steptime.build_plan("fc", cfg, ch, precision, "rmsprop", steptime.params_of(ch))


def test_master_weight_kernels_only_for_unfused_low_precision():
    fp32, bf16 = _plan("h100-sxm", "fp32"), _plan("h100-sxm", "bf16")
    assert fp32.master_kernels == 0.0 and fp32.master_bytes == 0.0  # fp32 has no master copy
    assert bf16.master_kernels == 2 * 6 and bf16.master_bytes > 0  # cast down and up, 6 tensors
    tpu = _plan("tpu-v3", "bf16")  # XLA fuses the casts into the optimizer update
    assert tpu.master_kernels == 0.0 and tpu.master_bytes > 0


def test_an_efficiency_table_without_the_precision_falls_back_in_order():
    sp = defaults(C.load("h100-sxm").platform)
    assert dataclasses.replace(sp, efficiency={"fp32": 0.8, "default": 0.6}).eff("bf16") == 0.6
    assert dataclasses.replace(sp, efficiency={"fp32": 0.8}).eff("bf16") == 0.8  # the first
    assert dataclasses.replace(sp, efficiency={}).eff("bf16") == 1.0


def test_entry_points_bound_their_counts():
    h100 = C.load("h100-sxm")
    with pytest.raises(ConfigError, match="--chips"):
        steptime.predict_step("fc", FC, h100, "fp32", chips=MAX_CHIPS + 1)
    with pytest.raises(ConfigError, match="--batch"):
        studies.mxu_study(batch=(1 << 16) + 1)
    with pytest.raises(ConfigError) as e:
        model.input_step(0.01, 32, 0.0)
    assert e.value.field == "loader_examples_per_s"


def test_an_unknown_platform_names_what_is_allowed():
    with pytest.raises(ConfigError) as e:
        C.load("no-such-chip")
    assert e.value.field == "--platform" and e.value.allowed.endswith(" or a .toml file")
    assert "h100-sxm" in e.value.allowed


def test_a_predicted_step_row_names_its_communication_terms():
    row = steptime.predict_step("fc", FC, C.load("h100-sxm"), "fp32", chips=4).row()
    for k in ("allreduce_link_s", "allreduce_hbm_s", "allreduce_latency_s", "comm_s"):
        assert k in row, k
    assert row["allreduce_latency_s"] > 0


def test_a_systolic_chip_times_each_gemm_by_its_array_cycles():
    from paradnn.sim.systolic import array_cycles

    ch = C.load("tpu-v2")
    plan = _plan("tpu-v2", "bf16")
    arrays = ch.arrays
    assert arrays is not None and len(plan.shape) > 0
    for (m, n, k), t, q, count in zip(
        plan.shape, plan.peak_s, plan.quant, plan.kernels, strict=True
    ):
        cycles = array_cycles(m, n, k, arrays, ch.dataflow) * count
        assert t == pytest.approx(cycles / ch.clock("bf16"), rel=1e-12)
        assert q == pytest.approx(m * n * k * count / (cycles * arrays.macs), rel=1e-12)
    assert not plan.fallback.any()  # the arrays never fall off tensor cores


def test_a_fast_convolution_gain_of_one_is_no_alternative():
    ch = C.load("v100-sxm2")
    cfg = families.get("cnn").config({"filters": 64, "batch": 32, "image": 64})
    sp = dataclasses.replace(steptime.params_of(ch), fast_conv=2.25)  # Winograd offered
    fast = steptime.build_plan("cnn", cfg, ch, "fp32", "rmsprop", sp)
    assert (~np.isnan(fast.fast_peak_s)).any()
    same = steptime.build_plan(
        "cnn", cfg, ch, "fp32", "rmsprop", dataclasses.replace(sp, fast_conv=1.0)
    )
    assert np.isnan(same.fast_peak_s).all() and np.isnan(same.fast_bytes).all()


def test_a_gpus_link_comes_from_its_aggregate_interconnect_and_says_so():
    ch = C.load("v100-sxm2")
    assert ch.link is not None and ch.link.bandwidth == pytest.approx(150e9)
    assert ch.links == 1 and ch.topology_kind == "ring"
    assert ch.link_source == "v100-sxm2 interconnect_bw 300 GB/s aggregate ÷ 2 per direction"


def test_a_chip_files_bad_link_latency_names_the_chip(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(
        '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13 }\n'
        "mem_bandwidth = 5e11\nlink_bw = 1e11\nlink_latency_s = -1\n"
    )
    with pytest.raises(ConfigError) as e:
        C.load(str(path))
    assert e.value.field == "xpu.link_latency_s" and e.value.value == -1


def test_a_scaling_check_without_an_all_reduce_error_shows_a_dash():
    from paradnn.sim.scaling_check import Check

    words = Check(rows=[{}], allreduce_error=None, efficiency_error=None).summary()
    assert "all-reduce time error — (geometric mean)" in words
    assert Check(rows=[{}], allreduce_error=0.055).summary().count("5.5%") == 1


def test_the_infeed_check_row_names_the_measured_step():
    from paradnn.sim.infeed_check import check

    run = {
        "family": "cnn", "data_source": "pipeline", "loader_workers": 2,
        "model_only_examples_per_s": 1000.0, "loader_examples_per_s": 4000.0,
        "step_time_s": 0.04, "examples_per_s": 800.0, "infeed_share": 0.2, "input_bound": False,
    }  # fmt: skip
    c = check([run])
    assert len(c.rows) == 1
    row = c.rows[0]
    assert row["measured_step_s"] == 0.04 and row["measured_share"] == 0.2
    assert (row["family"], row["data_source"], row["loader_workers"]) == ("cnn", "pipeline", 2)
    # 32 examples: the model alone 32 ms, the prefetching loader 8 ms behind it
    assert row["predicted_step_s"] == pytest.approx(0.032) and row["predicted_input_bound"] is False
    assert c.agree == 1 and c.step_error == pytest.approx(0.04 / 0.032 - 1)


GPU_FILE = (
    '[xpu]\nname = "x"\nvendor = "v"\nkind = "gpu"\npeak_dense = { fp32 = 1e13 }\n'
    "mem_bandwidth = 5e11\ninterconnect_bw = 2e11\n"
)


def test_a_chip_files_link_figures_positive_latency_may_be_zero(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(GPU_FILE + "link_latency_s = 0\n")  # the aggregate's half is the link
    c = C.load(str(path))
    assert c.link.bandwidth == pytest.approx(1e11) and c.link.latency_s == 0.0
    path.write_text(GPU_FILE + "link_bw = 0\n")
    with pytest.raises(ConfigError) as e:
        C.load(str(path))
    assert e.value.field == "xpu.link_bw" and e.value.allowed.startswith("must be a positive ")
    path.write_text(GPU_FILE + "link_latency_s = -1\n")
    with pytest.raises(ConfigError) as e:
        C.load(str(path))
    assert e.value.allowed.startswith("must be a non-negative number ≤ ")


def test_the_newest_calibration_gives_the_size_curve():
    def ceiling(when, sizes):
        detail = {"sizes": {str(n): {"flop_per_s": r} for n, r in sizes.items()}}
        return {"kind": "matmul", "precision": "fp32", "measured_at": when, "detail": detail}

    new = ceiling("2026-11-25T10:00:00", {256: 2e11, 1024: 4e11})
    old = ceiling("2026-11-20T10:00:00", {128: 1e10, 512: 1e11})
    assert C._size_curves([new, old]) == {"fp32": ((256, 2e11), (1024, 4e11))}
    assert C._size_curves([old, new]) == {"fp32": ((256, 2e11), (1024, 4e11))}


def test_below_the_smallest_calibrated_size_the_rate_falls_at_most_linearly():
    c = dataclasses.replace(C.load("h100-sxm"), gemm_rates={"fp32": ((128, 1e9), (256, 1e11))})
    # the first segment rises 100× per doubling; continued below 128 it is capped at linear
    assert c.gemm_rate("fp32", 64, 64, 64) == pytest.approx(5e8)
    flat = dataclasses.replace(c, gemm_rates={"fp32": ((128, 1e9), (256, 1e9))})
    assert flat.gemm_rate("fp32", 64, 64, 64) == pytest.approx(1e9)


def test_a_multi_core_chip_splits_into_single_core_replicas():
    tpu = C.load("tpu-v3")
    core, n = steptime.core_chip(tpu)
    assert n == 2 and core.arrays.cores == 1 and core.arrays.per_core == tpu.arrays.per_core
    assert core.peak("bf16") == pytest.approx(tpu.peak("bf16") / 2)
    assert core.mem_bandwidth == pytest.approx(tpu.mem_bandwidth / 2)
    gpu = C.load("h100-sxm")
    assert steptime.core_chip(gpu) == (gpu, 1)


def test_a_systolic_chips_dataflow_changes_its_gemm_cycles():
    from paradnn.sim.systolic import array_cycles

    ch = dataclasses.replace(C.load("tpu-v2"), dataflow="os")
    cfg = families.get("fc").config(FC)
    plan = steptime.build_plan("fc", cfg, ch, "bf16", "rmsprop", steptime.params_of(ch))
    for (m, n, k), t, count in zip(plan.shape, plan.peak_s, plan.kernels, strict=True):
        cycles = array_cycles(m, n, k, ch.arrays, "os") * count
        assert t == pytest.approx(cycles / ch.clock("bf16"), rel=1e-12)
    ws = _plan("tpu-v2", "bf16")
    assert not np.allclose(plan.peak_s, ws.peak_s)  # the dataflow matters for these shapes


def test_a_plan_counts_the_steps_flops_and_where_elementwise_kernels_run():
    gpu, tpu = _plan("h100-sxm", "fp32"), _plan("tpu-v3", "bf16")
    fam = families.get("fc")
    assert gpu.flops == fam.train_flops(fam.config(FC))
    assert gpu.elementwise_kernels > 0  # one launch per elementwise op on a GPU
    assert tpu.elementwise_kernels == 0.0  # XLA fuses them into the GEMMs


def test_the_mxu_study_ratio_is_the_second_design_over_the_first():
    for row in studies.mxu_study(batch=8):
        d0, d1 = studies.DESIGNS[0].label(), studies.DESIGNS[1].label()
        assert row[f"{d1} / {d0}"] == pytest.approx(row[d1] / row[d0])


def test_bounds_name_their_flag_exactly():
    with pytest.raises(ConfigError) as e:
        model.predict("fc", FC, C.load("h100-sxm"), "fp32", chips=MAX_CHIPS + 1)
    assert e.value.field == "--chips"


def test_gpu_defaults_fall_back_to_the_tensor_core_efficiency():
    sp = defaults(C.load("h100-sxm").platform)
    assert sp.eff("bf16") == sp.eff("tf32") == 0.7 and sp.eff("fp32") == 0.85


def test_rounding_error_defaults_to_unit_scale_inputs():
    from paradnn.sim.rounding import matmul_error

    assert matmul_error() == matmul_error(scale=1.0)
    assert matmul_error() != matmul_error(scale=2.0)


def test_the_tables_keep_their_columns_and_name_the_winograd_gemms():
    from paradnn.cli.sim_tables import breakdown_table, sim_table

    t = sim_table([{"platform": "x"}])
    assert [c.header for c in t.columns] == ["platform"]  # the only column stays
    t = sim_table([{"zz": 1.0, "precision": "fp32", "family": "fc", "platform": "x"}])
    assert [c.header for c in t.columns][:2] == ["family", "prec"]  # preferred order first
    from importlib import resources

    seed_era = resources.files("paradnn") / "data" / "chips" / "v100-pcie.toml"  # Winograd
    row = steptime.predict_step(
        "cnn", {"filters": 64, "batch": 32, "image": 64}, C.load_file(str(seed_era)), "fp32"
    ).row()
    assert row["fast_conv_ops"] > 0
    assert f"; {row['fast_conv_ops']} GEMMs by Winograd;" in breakdown_table(row).caption


def test_a_link_latency_exactly_at_the_cap_is_allowed(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(GPU_FILE + f"link_latency_s = {C.MAX_LATENCY_S}\n")
    assert C.load(str(path)).link.latency_s == C.MAX_LATENCY_S


def test_a_prediction_row_names_its_bound():
    import pandas as pd

    from paradnn.sim.fidelity import predicted_vs_measured

    h100 = C.load("h100-sxm")
    run = {"family": "fc", "config": FC, "precision": "fp32", "optimizer": "rmsprop",
           "status": "ok", "step_time_s": 0.01, "device_name": "x"}  # fmt: skip
    df = predicted_vs_measured(pd.DataFrame([run]), h100, "roofline")
    # FC on an H100: 1.9 µs of GEMM compute against 10 µs of memory time
    assert df["bound"].tolist() == ["memory"]
    assert model.predict("fc", FC, h100, "fp32").bottleneck == "memory"


def test_validating_an_empty_frame_names_the_database():
    import pandas as pd

    from paradnn.sim.fidelity import validate_frame

    with pytest.raises(ConfigError) as e:
        validate_frame(pd.DataFrame(), [])
    assert e.value.field == "--db"
    assert str(e.value).startswith("--db: holds no runs")


def test_a_one_chip_upper_bound_is_compute_plus_memory_time():
    p = model.predict("fc", FC, C.load("h100-sxm"), "fp32")
    assert p.memory_s > p.compute_s > 0  # FC on an H100 is memory-bound
    # one chip, no all-reduce: the serial sum of every op plus the non-GEMM traffic
    assert p.step_upper_s == pytest.approx(p.compute_s + p.memory_s, rel=1e-12)
    assert p.row()["memory_s"] == p.memory_s


def test_a_concurrent_torus_all_reduce_halves_its_bandwidth_term():
    from paradnn.sim.interconnect import Topology

    tpu, topo = C.load("tpu-v3"), Topology("torus2d", (2, 2))
    seq = model.predict("fc", FC, tpu, "bf16", chips=4, topology=topo)
    both = model.predict("fc", FC, tpu, "bf16", chips=4, topology=topo, concurrent=True)
    # 835 048 fp32 gradients = 3 340 192 B; each dimension a bidirectional ring of 2 × 82 GB/s;
    # dimension 1 moves S, dimension 2 S/2, 4 hops of 1 µs
    bw_s = 1.5 * 835_048 * 4 / (2 * 82e9)
    assert seq.allreduce_s == pytest.approx(4e-6 + bw_s)
    assert both.allreduce_s == pytest.approx(4e-6 + bw_s / 2)


def test_a_predicted_op_on_an_os_chip_uses_its_dataflow():
    from paradnn.sim.systolic import array_cycles

    ch = dataclasses.replace(C.load("tpu-v2"), dataflow="os")
    p = model.predict("fc", FC, ch, "bf16")
    assert len(p.ops) > 0
    for o in p.ops:
        cycles = array_cycles(o.m, o.n, o.k, ch.arrays, "os") * o.count
        assert o.compute_s == pytest.approx(cycles / ch.clock("bf16"), rel=1e-12)
    ws = model.predict("fc", FC, C.load("tpu-v2"), "bf16")
    assert p.compute_s != pytest.approx(ws.compute_s)  # the dataflow matters for these shapes


def test_a_scaling_row_names_its_predicted_step():
    tpu = C.load("tpu-v3")
    rows = model.scaling("fc", FC, tpu, "bf16", max_chips=2)
    one, two = (model.predict("fc", FC, tpu, "bf16", chips=n).predicted_step_s for n in (1, 2))
    assert [r["predicted_step_s"] for r in rows] == pytest.approx([one, two])
    assert rows[1]["efficiency"] == pytest.approx(one / two)


def test_a_non_text_platform_names_what_is_allowed():
    with pytest.raises(ConfigError) as e:
        C.load("")
    assert e.value.field == "--platform" and e.value.allowed.endswith(" or a .toml file")
    assert e.value.allowed.startswith("must be one of ") and "h100-sxm" in e.value.allowed


def test_a_chip_files_unknown_dataflow_names_the_three_allowed(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text(GPU_FILE + 'dataflow = "xs"\n')
    with pytest.raises(ConfigError) as e:
        C.load(str(path))
    assert (e.value.field, e.value.value) == ("xpu.dataflow", "xs")
    assert e.value.allowed == "must be one of os, ws, is"


def test_a_one_size_curve_below_its_size_gives_that_rate():
    c = dataclasses.replace(C.load("h100-sxm"), gemm_rates={"fp32": ((256, 1e11),)})
    # 64³ is below the only calibrated size (256): no slope to continue, its rate holds
    assert c.gemm_rate("fp32", 64, 64, 64) == pytest.approx(1e11)


def test_a_missing_peak_lists_every_dense_precision_the_chip_has():
    with pytest.raises(ConfigError) as e:
        C.load("v100-sxm2").peak("bf16")
    assert e.value.field == "precision" and e.value.value == "bf16"
    assert e.value.allowed == "v100-sxm2 has no dense bf16 peak; it has fp32, fp16"


def test_a_measured_runs_optimizer_sets_its_prediction():
    import pandas as pd

    from paradnn.sim.fidelity import predicted_vs_measured

    h100 = C.load("h100-sxm")
    run = {"family": "fc", "config": FC, "precision": "fp32", "optimizer": "sgd",
           "status": "ok", "step_time_s": 0.01, "device_name": "x"}  # fmt: skip
    df = predicted_vs_measured(pd.DataFrame([run]), h100, "roofline")
    rmsprop = model.predict("fc", FC, h100, "fp32").predicted_step_s
    # SGD moves 3 fp32 words per parameter, RMSProp 7: 4 × 4 B × 835 048 params at 3.35 TB/s
    saved = 4 * 4 * 835_048 / 3.35e12
    assert df["predicted_s"].tolist() == pytest.approx([rmsprop - saved])


def test_validating_runs_no_chip_describes_says_how_to_get_one():
    import pandas as pd

    from paradnn.sim.fidelity import validate_frame

    run = {"family": "fc", "config": FC, "precision": "fp32", "status": "ok",
           "step_time_s": 0.01, "device_name": "Mystery 9000"}  # fmt: skip
    with pytest.raises(ConfigError) as e:
        validate_frame(pd.DataFrame([run]), [], db="r.db")
    assert e.value.field == "--db" and e.value.allowed == (
        "no chip describes its devices (Mystery 9000): run `paradnn calibrate --db r.db` on "
        "that machine, or pass --platform"
    )


def test_the_infeed_check_summary_shows_the_share_error_in_points():
    from paradnn.sim.infeed_check import InfeedCheck

    words = InfeedCheck(rows=[{}], step_error=0.1, share_error=0.05, agree=1).summary()
    assert "infeed-share error 5 points (median)" in words  # 0.05 × 100
    words = InfeedCheck(rows=[{}], step_error=0.1, share_error=None).summary()
    assert "infeed-share error n/a (median)" in words


def test_a_predicted_op_names_its_layer():
    p = model.predict("fc", FC, C.load("h100-sxm"), "fp32")
    # the first layer needs no input gradient (dgrad): 2 + 3 + 3 GEMMs
    assert [o.layer for o in p.ops] == ["fc1"] * 2 + ["fc2"] * 3 + ["head"] * 3


def test_a_scaling_row_names_its_exposed_communication():
    rows = model.scaling("fc", FC, C.load("tpu-v3"), "bf16", max_chips=2)
    # 2 chips on a 2×1 torus: 2 hops of 1 µs and 835 048 × 4 B over a 2 × 82 GB/s ring,
    # none of it hidden (overlap 0)
    assert [r["exposed_comm_s"] for r in rows] == pytest.approx(
        [0.0, 2e-6 + 835_048 * 4 / (2 * 82e9)]
    )


def test_a_scaling_curve_reduces_the_torus_dimensions_concurrently_when_asked():
    tpu = C.load("tpu-v3")
    both = model.scaling("fc", FC, tpu, "bf16", max_chips=16, concurrent=True)
    alone = model.scaling("fc", FC, tpu, "bf16", max_chips=16)
    want = [
        model.predict("fc", FC, tpu, "bf16", chips=n, concurrent=True).allreduce_s
        for n in (2, 4, 8, 16)
    ]
    assert [r["allreduce_s"] for r in both[1:]] == pytest.approx(want)
    assert both[-1]["allreduce_s"] < alone[-1]["allreduce_s"]


def test_a_scaling_curve_reaches_a_million_chips_and_no_further():
    with pytest.raises(ConfigError) as e:
        model.scaling("fc", FC, C.load("tpu-v3"), "bf16", max_chips=(1 << 20) + 1)
    assert str(e.value) == "--scaling = 1048577: must be an integer in [1, 1048576]"


def test_a_breakdown_without_a_predicted_step_shows_no_share():
    from paradnn.cli.sim_tables import breakdown_table

    def shares(row):
        from rich.console import Console

        console = Console(record=True, width=200, file=io.StringIO())
        console.print(breakdown_table(row))
        lines = console.export_text().splitlines()
        cells = [[c.strip() for c in line.split("│")] for line in lines]
        return [c[3] for c in cells if c[1:2] == ["overhead"]]  # term | time | share | what

    row = steptime.predict_step("fc", FC, C.load("v100-sxm2"), "fp32").row()
    share = 100 * row["overhead_s"] / row["predicted_step_s"]
    assert shares(row) == [f"{share:.1f}%"]
    assert shares({**row, "predicted_step_s": None}) == ["—"]  # no step: no share, no crash


def test_a_bandwidth_column_header_is_in_gb_per_s_with_spaces():
    from paradnn.cli.sim_tables import header

    assert header("host_link_bytes_per_s") == "host link (GB/s)"
    assert header("bisection_bytes_per_s") == "bisection (GB/s)"
    assert header("gemm_compute_s") == "gemm compute (ms)"


def test_the_infeed_check_shows_the_model_and_infeed_times_it_predicted_from():
    from paradnn.sim.infeed_check import check

    # 4 examples a step: the model alone at 400/s takes 10 ms, the loader at 200/s 20 ms
    row = dict(family="cnn", config_key="a", data_source="pipeline", loader_workers=2,
               step_time_s=0.021, examples_per_s=4 / 0.021, loader_examples_per_s=200.0,
               model_only_examples_per_s=400.0, infeed_share=0.5, input_bound=True)  # fmt: skip
    (got,) = check([row]).rows
    assert got["model_s"] == pytest.approx(0.010) and got["infeed_s"] == pytest.approx(0.020)
    assert got["predicted_step_s"] == pytest.approx(0.020) and got["config_key"] == "a"


def test_a_stored_config_string_is_shown_as_its_settings():
    from paradnn.cli.sim_tables import breakdown_table

    row = steptime.predict_step("fc", FC, C.load("v100-sxm2"), "fp32").row()
    stored = {**row, "config": '{"batch": 32, "layers": 2}'}  # as a database column holds it
    assert "fc batch=32 layers=2 on v100-sxm2" in breakdown_table(stored).title


def test_a_tf32_config_gets_the_fp32_memory_estimate():
    from paradnn.config import RunOptions, RunSpec
    from paradnn.sim.traffic import capacity

    tf32 = capacity(RunSpec("fc", FC, RunOptions(precision="tf32")), 16e9)
    fp32 = capacity(RunSpec("fc", FC, RunOptions(precision="fp32")), 16e9)
    assert tf32 == fp32  # tf32 is stored in fp32
    assert tf32.fits is True and 0 < tf32.lower_bound_bytes <= tf32.needed_bytes


def test_a_breakdown_row_without_winograd_counts_says_zero():
    from paradnn.cli.sim_tables import breakdown_table

    row = steptime.predict_step("fc", FC, C.load("v100-sxm2"), "fp32").row()
    del row["fast_conv_ops"]
    assert "; 0 GEMMs by Winograd;" in breakdown_table(row).caption


def test_a_long_cell_is_folded_not_cut():
    from rich.console import Console

    from paradnn.cli.sim_tables import sim_table

    name = "q" * 60  # one word: no place to wrap, only to fold or to cut
    console = Console(record=True, width=30, file=io.StringIO())
    console.print(sim_table([{"platform": name, "predicted_step_s": 0.001}]))
    text = console.export_text()
    assert text.count("q") == 60 and "…" not in text


def test_a_prediction_with_a_measured_loader_says_how_long_the_infeed_takes():
    p = model.predict("fc", FC, C.load("tpu-v2"), "bf16", loader_examples_per_s=320.0)
    assert p.input_s == pytest.approx(FC["batch"] / 320.0)  # 32 examples at 320/s: 0.1 s
