"""sim/hostprofile.py pinned field by field: what a profile table, a stored row or a file becomes
(every field, every refusal's one line), the GPU defaults' arithmetic, which stored profile is
newest, the bounds, a CPU profile lent to a GPU target, and the line that names the profile."""

from __future__ import annotations

import json
import math
from types import MappingProxyType

import pytest

from paradnn.errors import ConfigError
from paradnn.sim import hostprofile as hp

FULL = {
    "forward_op_s": 9e-6,
    "autograd_node_s": 7,  # an int is seconds too, kept as a float
    "optimizer_tensor_s": {"loop": 30e-6, "foreach": 0, "fused": 1e-6},
    "optimizer_step_s": 2e-5,
    "sync_s": 0,
    "kernel_launch_s": 4,
    "source": "measured",
    "host": 17,
    "device_type": "cuda",
    "measured_at": 20261127,
    "detail": {"a": 1},
    "step_s": 1,
    "cast_s": 2e-6,
    "rnn_call_s": 0,
    "scaler_s": 3e-4,
    "launches_included": True,
}
MIN = {
    "forward_op_s": 1e-6,
    "autograd_node_s": 2e-6,
    "optimizer_tensor_s": {"foreach": 3e-6},
    "optimizer_step_s": 4e-6,
    "sync_s": 5e-6,
}


def _msg(fn, *args, **kw) -> str:
    with pytest.raises(ConfigError) as e:
        fn(*args, **kw)
    return str(e.value)


# -- from_mapping ----------------------------------------------------------------------------


def test_every_field_of_a_full_table_is_read_and_typed():
    p = hp.HostProfile.from_mapping(FULL)
    assert p.forward_op_s == 9e-6 and p.autograd_node_s == 7.0
    assert type(p.autograd_node_s) is float and type(p.sync_s) is float
    assert type(p.kernel_launch_s) is float and p.kernel_launch_s == 4.0
    assert dict(p.optimizer_tensor_s) == {"loop": 30e-6, "foreach": 0.0, "fused": 1e-6}
    assert type(p.optimizer_tensor_s["foreach"]) is float
    assert isinstance(p.optimizer_tensor_s, MappingProxyType)
    assert p.optimizer_step_s == 2e-5 and p.sync_s == 0.0
    assert p.source == "measured" and p.device_type == "cuda"
    assert p.host == "17" and p.measured_at == "20261127"
    assert isinstance(p.detail, MappingProxyType) and dict(p.detail) == {"a": 1}
    assert p.step_s == 1.0 and type(p.step_s) is float
    assert p.cast_s == 2e-6 and p.rnn_call_s == 0.0 and type(p.rnn_call_s) is float
    assert p.scaler_s == 3e-4 and p.launches_included is True


def test_a_minimal_table_takes_each_default():
    p = hp.HostProfile.from_mapping(MIN)
    assert p == hp.HostProfile(
        forward_op_s=1e-6,
        autograd_node_s=2e-6,
        optimizer_tensor_s={"foreach": 3e-6},
        optimizer_step_s=4e-6,
        sync_s=5e-6,
        kernel_launch_s=None,
        source="file",
        host=None,
        device_type="cpu",
        measured_at=None,
        detail={},
        step_s=None,
        cast_s=None,
        rnn_call_s=None,
        scaler_s=None,
        launches_included=False,
    )
    assert isinstance(p.detail, MappingProxyType)
    explicit_none = {**MIN, "host": None, "measured_at": None, "detail": None}
    q = hp.HostProfile.from_mapping(explicit_none)
    assert q.host is None and q.measured_at is None and dict(q.detail) == {}


def test_a_profile_round_trips_through_as_dict():
    p = hp.HostProfile.from_mapping(FULL)
    d = p.as_dict()
    assert type(d["optimizer_tensor_s"]) is dict and type(d["detail"]) is dict
    assert set(d) == set(hp.HostProfile.__dataclass_fields__)
    assert d["forward_op_s"] == 9e-6 and d["launches_included"] is True and d["host"] == "17"
    assert hp.HostProfile.from_mapping(d) == p
    assert json.loads(json.dumps(d)) == d


def test_what_is_not_a_table_is_refused_naming_its_type():
    assert _msg(hp.HostProfile.from_mapping, [1]) == (
        "host profile = 'list': a table of the profile's fields"
    )
    assert _msg(hp.HostProfile.from_mapping, 3, where="here") == (
        "here = 'int': a table of the profile's fields"
    )


def test_an_unknown_field_is_refused_with_the_known_ones():
    known = ", ".join(sorted(hp.HostProfile.__dataclass_fields__))
    assert _msg(hp.HostProfile.from_mapping, {**MIN, "colour": "red"}, where="f") == (
        f"f: colour = 'red': one of {known}"
    )


@pytest.mark.parametrize("name", ["forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s"])
def test_each_required_figure_missing_is_named(name):
    m = {k: v for k, v in MIN.items() if k != name}
    assert _msg(hp.HostProfile.from_mapping, m, where="w") == (
        f"w: {name} = None: seconds, a finite number ≥ 0"
    )


@pytest.mark.parametrize("bad", [-1e-9, math.inf, math.nan, True, False, "1e-6", None])
@pytest.mark.parametrize("name", ["forward_op_s", "sync_s", "step_s", "kernel_launch_s"])
def test_a_figure_that_is_not_finite_non_negative_seconds_is_refused(name, bad):
    if bad is None and name in ("step_s", "kernel_launch_s"):
        return  # optional: None is "not measured"
    msg = _msg(hp.HostProfile.from_mapping, {**MIN, name: bad}, where="w")
    assert msg.startswith(f"w: {name} = ") and msg.endswith(": seconds, a finite number ≥ 0")


def test_zero_seconds_is_allowed_and_the_largest_float_too():
    p = hp.HostProfile.from_mapping({**MIN, "forward_op_s": 0, "cast_s": 1.7976931348623157e308})
    assert p.forward_op_s == 0.0 and p.cast_s == 1.7976931348623157e308


@pytest.mark.parametrize("opt", [None, {}, [("loop", 1e-6)], 3.0])
def test_the_optimizer_table_must_be_a_non_empty_table(opt):
    m = {**MIN, "optimizer_tensor_s": opt}
    if opt is None:
        del m["optimizer_tensor_s"]
    msg = _msg(hp.HostProfile.from_mapping, m, where="w")
    assert msg.startswith("w: optimizer_tensor_s = ")
    assert msg.endswith(": a table of loop, foreach, fused → seconds per parameter tensor")


def test_an_unknown_optimizer_implementation_or_a_bad_figure_is_named():
    m = {**MIN, "optimizer_tensor_s": {"loop": 1e-6, "adamw": 1e-6}}
    assert _msg(hp.HostProfile.from_mapping, m, where="w") == (
        "w: optimizer_tensor_s = 'adamw': one of loop, foreach, fused"
    )
    m = {**MIN, "optimizer_tensor_s": {"fused": -1.0}}
    assert _msg(hp.HostProfile.from_mapping, m, where="w") == (
        "w: optimizer_tensor_s.fused = -1.0: seconds, a finite number ≥ 0"
    )


def test_source_device_type_and_launches_included_are_checked():
    assert _msg(hp.HostProfile.from_mapping, {**MIN, "source": "guess"}, where="w") == (
        "w: source = 'guess': one of measured, defaults, file"
    )
    assert _msg(hp.HostProfile.from_mapping, {**MIN, "device_type": "tpu"}, where="w") == (
        "w: device_type = 'tpu': cpu or cuda"
    )
    assert _msg(hp.HostProfile.from_mapping, {**MIN, "launches_included": 1}, where="w") == (
        "w: launches_included = 1: true or false"
    )
    for source in hp.SOURCES:
        assert hp.HostProfile.from_mapping({**MIN, "source": source}).source == source
    assert hp.HostProfile.from_mapping({**MIN, "device_type": "cpu"}).device_type == "cpu"


def test_optimizer_seconds_fall_back_to_the_loop_figure_then_to_zero():
    p = hp.HostProfile.from_mapping({**MIN, "optimizer_tensor_s": {"loop": 1e-5}})
    assert p.optimizer_s("fused", 3) == pytest.approx(4e-6 + 3e-5)
    assert p.optimizer_s("loop", 0) == pytest.approx(4e-6)
    q = hp.HostProfile.from_mapping(MIN)  # foreach only
    assert q.optimizer_s("foreach", 2) == pytest.approx(4e-6 + 6e-6)
    assert q.optimizer_s("fused", 5) == pytest.approx(4e-6)


# -- the GPU defaults ------------------------------------------------------------------------


def test_the_gpu_defaults_are_the_derivation_s_arithmetic():
    p = hp._cuda_defaults()
    # one fp32 FC layer less its two foreach tensors, over 2 calls × 1.25 + 5 nodes
    node = (0.19e-3 - 2 * 5e-6) / (2 * 1.25 + 5)
    assert p.autograd_node_s == pytest.approx(node) and node == pytest.approx(24e-6)
    assert p.forward_op_s == pytest.approx(1.25 * node)
    assert dict(p.optimizer_tensor_s) == pytest.approx(
        {"loop": 4 * 1.25 * node, "foreach": 5e-6, "fused": 2.5e-6}
    )
    assert p.optimizer_step_s == 20e-6 and p.sync_s == 15e-6 and p.kernel_launch_s == 5e-6
    assert p.source == "defaults" and p.device_type == "cuda" and p.host is None
    assert p.step_s == 1.1e-3 and p.cast_s == pytest.approx((0.33e-3 - 0.19e-3) / 2)
    assert p.rnn_call_s == 1.2e-3 and p.scaler_s == 0.5e-3 and p.launches_included is True
    assert dict(p.detail) == {"derived": dict(hp.CUDA_DERIVATION)}
    assert hp.DEFAULTS["cuda"] == p


def test_the_gpu_defaults_follow_another_derivation():
    d = {
        **hp.CUDA_DERIVATION,
        "fixed_s": 2e-3,
        "fc_layer_fp32_s": 0.5e-3,
        "fc_layer_bf16_s": 0.9e-3,
        "fc_layer_units": {"calls": 3, "nodes": 4, "tensors": 5, "casts": 4},
        "foreach_tensor_s": 1e-5,
        "call_per_node": 2.0,
        "loop_calls_per_tensor": 3,
        "rnn_call_s": 7e-4,
        "scaler_s": 6e-4,
    }
    p = hp._cuda_defaults(d)
    node = (0.5e-3 - 5 * 1e-5) / (3 * 2.0 + 4)
    assert p.autograd_node_s == pytest.approx(node) and p.forward_op_s == pytest.approx(2 * node)
    assert dict(p.optimizer_tensor_s) == pytest.approx(
        {"loop": 3 * 2 * node, "foreach": 1e-5, "fused": 5e-6}
    )
    assert p.step_s == 2e-3 and p.cast_s == pytest.approx(1e-4)
    assert p.rnn_call_s == 7e-4 and p.scaler_s == 6e-4
    assert p.detail["derived"]["fixed_s"] == 2e-3


def test_the_default_profile_of_a_device_kind():
    assert hp.default("cpu") is hp.DEFAULTS["cpu"] and hp.default("cpu").kernel_launch_s is None
    assert hp.default("cuda") is hp.DEFAULTS["cuda"]
    assert hp.default("rocm") is hp.DEFAULTS["cuda"]


# -- stored rows -----------------------------------------------------------------------------

ROW = {
    "id": 4,
    "hostname": "box",
    "host": "AMD EPYC",
    "device_type": "cpu",
    "measured_at": "2026-11-27T10:00:00",
    "status": "ok",
    "quality": "good",
    "quality_reasons": [],
    "nulls": {},
    "threads": 2,
    "forward_op_s": 8e-6,
    "autograd_node_s": 6e-6,
    "optimizer_step_s": 1e-5,
    "sync_s": 0.0,
    "optimizer_loop_s": 2e-5,
    "optimizer_foreach_s": None,
    "optimizer_fused_s": 1e-6,
    "kernel_launch_s": None,
    "step_s": 3e-4,
    "cast_s": None,
    "rnn_call_s": 5e-4,
    "scaler_s": None,
    "launches_included": None,
    "detail": {"forward_op": {"points": []}},
}


def test_a_stored_row_becomes_a_measured_profile_field_by_field():
    p = hp.from_row(ROW)
    assert p.source == "measured" and p.device_type == "cpu" and p.host == "AMD EPYC"
    assert p.measured_at == "2026-11-27T10:00:00"
    assert (p.forward_op_s, p.autograd_node_s, p.optimizer_step_s, p.sync_s) == (
        8e-6,
        6e-6,
        1e-5,
        0.0,
    )
    assert dict(p.optimizer_tensor_s) == {"loop": 2e-5, "fused": 1e-6}  # NULL foreach left out
    assert p.kernel_launch_s is None and p.launches_included is False
    assert (p.step_s, p.cast_s, p.rnn_call_s, p.scaler_s) == (3e-4, None, 5e-4, None)
    assert dict(p.detail) == {
        "forward_op": {"points": []},
        "id": 4,
        "hostname": "box",
        "quality": "good",
        "quality_reasons": [],
        "nulls": {},
        "threads": 2,
    }


def test_a_row_s_launch_figures_and_a_detail_that_is_not_a_table():
    row = {
        **ROW,
        "device_type": "cuda",
        "kernel_launch_s": 6e-6,
        "launches_included": 1,
        "detail": "text",
        "id": None,
        "threads": None,
    }
    p = hp.from_row(row)
    assert p.device_type == "cuda" and p.kernel_launch_s == 6e-6 and p.launches_included is True
    assert dict(p.detail) == {
        "hostname": "box",
        "quality": "good",
        "quality_reasons": [],
        "nulls": {},
    }


def test_a_row_s_null_per_op_figure_is_the_kind_s_default_and_named():
    row = {**ROW, "forward_op_s": None, "sync_s": None, "device_type": None}
    p = hp.from_row(row)
    cpu = hp.DEFAULTS["cpu"]
    assert p.device_type == "cpu"
    assert p.forward_op_s == cpu.forward_op_s and p.sync_s == cpu.sync_s
    assert p.autograd_node_s == 6e-6
    assert p.detail["assumed"] == {"forward_op_s": cpu.forward_op_s, "sync_s": cpu.sync_s}
    cuda = hp.DEFAULTS["cuda"]
    q = hp.from_row({**row, "device_type": "cuda", "detail": {"assumed": {"x": 1}}})
    assert q.forward_op_s == cuda.forward_op_s and q.sync_s == cuda.sync_s
    assert q.detail["assumed"] == {"x": 1, "forward_op_s": cuda.forward_op_s, "sync_s": 15e-6}


def test_a_row_with_no_measured_optimizer_figure_takes_the_defaults_and_names_them():
    row = {**ROW, "optimizer_loop_s": None, "optimizer_fused_s": None}
    p = hp.from_row(row)
    assert dict(p.optimizer_tensor_s) == dict(hp.DEFAULTS["cpu"].optimizer_tensor_s)
    assert p.detail["assumed"] == {
        "optimizer_tensor_s": dict(hp.DEFAULTS["cpu"].optimizer_tensor_s)
    }
    q = hp.from_row({**row, "device_type": "cuda"})
    assert dict(q.optimizer_tensor_s) == dict(hp.DEFAULTS["cuda"].optimizer_tensor_s)
    assert q.detail["assumed"]["optimizer_tensor_s"] == dict(hp.DEFAULTS["cuda"].optimizer_tensor_s)
    assert _msg(hp.from_row, {**row, "device_type": "xpu"}) == (
        "host_profile row: device_type = 'xpu': cpu or cuda"
    )


def test_a_row_without_the_columns_assumes_nothing_and_is_refused():
    row = {k: v for k, v in ROW.items() if not k.startswith("optimizer_")}
    row["optimizer_step_s"] = 1e-5
    msg = _msg(hp.from_row, row)
    assert msg.startswith("host_profile row: optimizer_tensor_s = {}")
    m = {k: v for k, v in ROW.items() if k != "sync_s"}
    assert _msg(hp.from_row, m, where="r") == "r: sync_s = None: seconds, a finite number ≥ 0"
    assert _msg(hp.from_row, [ROW]) == "host_profile row = 'list': a row of the host_profile table"
    assert "assumed" not in hp.from_row(ROW).detail


def test_the_newest_ok_profile_of_a_host():
    rows = [
        {"hostname": "a", "measured_at": "2026-01-02", "id": 1},
        {"hostname": "a", "measured_at": "2026-01-03", "id": 2, "status": "failed"},
        {"hostname": "a", "measured_at": "2026-01-02", "id": 3, "status": "ok"},
        {"hostname": "b", "measured_at": "2026-12-01", "id": 9},
        {"hostname": "a", "measured_at": None, "id": 8},
    ]
    assert hp.newest_for(rows, "a")["id"] == 3
    assert hp.newest_for(rows, "b")["id"] == 9
    assert hp.newest_for(rows, "c") is None
    assert hp.newest_for(rows[4:], "a")["id"] == 8
    no_id = [{"hostname": "a", "measured_at": "x"}, {"hostname": "a", "measured_at": "x", "id": 1}]
    assert hp.newest_for(no_id, "a") is no_id[1]


# -- files -----------------------------------------------------------------------------------


def test_a_file_s_forms_are_parsed(tmp_path):
    assert hp.parse(MIN, "w") == hp.HostProfile.from_mapping(MIN)
    assert hp.parse({"host": MIN}, "w") == hp.HostProfile.from_mapping(MIN)
    assert hp.parse({"mychip": {"peak": 1, "host": MIN}}, "w") == hp.HostProfile.from_mapping(MIN)
    msg = _msg(hp.parse, {"mychip": {"host": {**MIN, "sync_s": -1}}}, "w")
    assert msg.startswith("w: mychip.host: sync_s = -1")
    msg = _msg(hp.parse, {"host": {**MIN, "sync_s": -1}}, "w")
    assert msg.startswith("w: host: sync_s = -1")
    # two tables: not a chip file's one table, read as a profile (and refused by name)
    msg = _msg(hp.parse, {"a": {"host": MIN}, "b": {"host": MIN}}, "w")
    assert msg.startswith("w: a = ")
    # a chip table without a host table is no profile either
    assert _msg(hp.parse, {"a": {"peak": 1}}, "w").startswith("w: a = ")
    # top-level figures are a profile, even one whose only table holds a host table
    lone = {k: v for k, v in MIN.items() if k != "optimizer_tensor_s"}
    msg = _msg(hp.parse, {**lone, "detail": {"host": MIN}}, "w")
    assert msg.startswith("w: optimizer_tensor_s = None")
    # the top-level figures win over a lone table
    top = {**MIN, "detail": {"host": MIN}}
    assert hp.parse(top, "w").detail == {"host": MIN}
    assert _msg(hp.parse, "text", "w") == "w = 'str': a table of the host profile's fields"


def test_rows_in_a_file_give_the_last_ok_row_as_a_file_profile():
    older = {**ROW, "forward_op_s": 1e-6}
    failed = {**ROW, "forward_op_s": 2e-6, "status": "failed"}
    p = hp.parse([older, ROW, failed, "junk"], "w")
    assert p.forward_op_s == 8e-6 and p.source == "file" and p.detail["measured"] is True
    assert p.detail["hostname"] == "box"
    assert hp.parse({"rows": [older]}, "w").forward_op_s == 1e-6
    assert _msg(hp.parse, [failed, 3], "w") == "w = '2 rows': a list with an ok host_profile row"
    assert _msg(hp.parse, [], "w") == "w = '0 rows': a list with an ok host_profile row"
    one = hp.parse(ROW, "w")  # one stored row, not in a list
    assert one.source == "file" and one.forward_op_s == 8e-6 and one.detail["measured"] is True
    # a row without its status column counts as ok
    assert hp.parse([{k: v for k, v in ROW.items() if k != "status"}], "w").host == "AMD EPYC"


def test_a_file_is_loaded_checked_and_named(tmp_path):
    t = tmp_path / "h.TOML"
    t.write_text(
        "forward_op_s = 1e-6\nautograd_node_s = 2e-6\noptimizer_step_s = 0\nsync_s = 0\n"
        "optimizer_tensor_s = { loop = 1e-5 }\n",
        encoding="utf-8",
    )
    p = hp.load_file(t)
    assert p.source == "file" and p.forward_op_s == 1e-6
    assert dict(p.detail) == {"origin": f"--host-profile {t}"}
    j = tmp_path / "h.JSON"
    j.write_text(json.dumps({**MIN, "detail": {"k": 1}}), encoding="utf-8")
    q = hp.load_file(str(j))
    assert dict(q.detail) == {"k": 1, "origin": f"--host-profile {j}"}
    big = tmp_path / "big.json"
    big.write_text(json.dumps({**MIN, "forward_op_s": 2}))
    assert _msg(hp.load_file, big) == (
        f"--host-profile {big}: forward_op_s = 2.0: seconds ≤ 1 (1e-5 is 10 µs)"
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**MIN, "sync_s": "x"}))
    assert (
        _msg(hp.load_file, bad)
        == f"--host-profile {bad}: sync_s = 'x': seconds, a finite number ≥ 0"
    )


def test_a_file_that_cannot_be_read_is_one_line(tmp_path):
    missing = tmp_path / "no.toml"
    assert _msg(hp.load_file, missing) == (
        f"--host-profile = {str(missing)!r}: a TOML or JSON file of a host profile"
    )
    assert _msg(hp.load_file, tmp_path) == (
        f"--host-profile = {str(tmp_path)!r}: a TOML or JSON file of a host profile"
    )
    assert _msg(hp.load_file, "") == "--host-profile = '': a TOML or JSON file of a host profile"
    latin = tmp_path / "l.toml"
    latin.write_bytes(b"host = '\xe9'\n")
    assert (
        _msg(hp.load_file, latin)
        == f"--host-profile = {str(latin)!r}: cannot be read: must be UTF-8"
    )
    js = tmp_path / "x.json"
    js.write_text("{nope")
    msg = _msg(hp.load_file, js)
    assert msg.startswith(f"--host-profile = {str(js)!r}: is not valid JSON (Expecting")
    tm = tmp_path / "x.toml"
    tm.write_text("a = [")
    msg = _msg(hp.load_file, tm)
    assert msg.startswith(f"--host-profile = {str(tm)!r}: is not valid TOML (")
    # a .json suffix reads JSON only, anything else TOML: a TOML text named .json is refused
    j2 = tmp_path / "t.json"
    j2.write_text("forward_op_s = 1e-6\n")
    assert "is not valid JSON" in _msg(hp.load_file, j2)


def test_a_file_the_os_cannot_read_names_the_os_reason(tmp_path, monkeypatch):
    f = tmp_path / "h.toml"
    f.write_text("x = 1")

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(f), "read_text", refuse)
    assert _msg(hp._read, f) == f"--host-profile = {str(f)!r}: cannot be read: Permission denied"


@pytest.mark.parametrize(
    "field", ["forward_op_s", "autograd_node_s", "optimizer_step_s", "sync_s", "kernel_launch_s"]
)
def test_each_figure_past_one_second_is_a_unit_mistake(field):
    ok = hp.HostProfile.from_mapping({**MIN, field: 1.0})
    hp.check_bounds(ok, "w")  # exactly 1 s passes
    p = hp.HostProfile.from_mapping({**MIN, field: 1.5})
    assert _msg(hp.check_bounds, p, "w") == f"w: {field} = 1.5: seconds ≤ 1 (1e-5 is 10 µs)"


@pytest.mark.parametrize("field", hp.ROW_FIGURES)
def test_each_once_a_step_figure_past_one_second_is_a_unit_mistake(field):
    hp.check_bounds(hp.HostProfile.from_mapping({**MIN, field: 1.0}), "w")
    p = hp.HostProfile.from_mapping({**MIN, field: 3})
    assert _msg(hp.check_bounds, p, "w") == f"w: {field} = 3.0: seconds ≤ 1 (1e-5 is 10 µs)"


def test_an_optimizer_figure_past_one_second_is_a_unit_mistake():
    p = hp.HostProfile.from_mapping({**MIN, "optimizer_tensor_s": {"loop": 1e-6, "fused": 2}})
    assert _msg(hp.check_bounds, p, "w") == (
        "w: optimizer_tensor_s.fused = 2.0: seconds ≤ 1 (1e-5 is 10 µs)"
    )


# -- a profile for a device ------------------------------------------------------------------


def test_a_cpu_target_drops_launches_and_syncs():
    cpu = hp.HostProfile.from_mapping(MIN)  # sync 5 µs, no launch
    p = hp.for_device(cpu, "cpu")
    assert p.kernel_launch_s is None and p.sync_s == 0.0 and p.device_type == "cpu"
    assert p.forward_op_s == cpu.forward_op_s
    plain = hp.HostProfile.from_mapping({**MIN, "sync_s": 0})
    assert hp.for_device(plain, "cpu") is plain
    gpu = hp.HostProfile.from_mapping(
        {**MIN, "sync_s": 0, "kernel_launch_s": 1e-6, "device_type": "cuda"}
    )
    q = hp.for_device(gpu, "cpu")
    assert q.kernel_launch_s is None and q.sync_s == 0.0 and q.device_type == "cpu"


def test_a_gpu_target_borrows_launch_and_sync_from_the_defaults_and_names_them():
    cpu = hp.HostProfile.from_mapping({**MIN, "detail": {"assumed": {"x": 1}, "k": 2}})
    p = hp.for_device(cpu, "cuda")
    assert p.kernel_launch_s == 5e-6 and p.sync_s == 15e-6 and p.device_type == "cuda"
    assert p.forward_op_s == 1e-6
    assert dict(p.detail) == {
        "assumed": {"x": 1, "kernel_launch_s": 5e-6, "sync_s": 15e-6},
        "k": 2,
    }
    q = hp.for_device(hp.HostProfile.from_mapping(MIN), "cuda")
    assert dict(q.detail) == {"assumed": {"kernel_launch_s": 5e-6, "sync_s": 15e-6}}
    has = hp.HostProfile.from_mapping({**MIN, "kernel_launch_s": 0})
    assert hp.for_device(has, "cuda") is has


# -- the line that names the profile ---------------------------------------------------------


def test_the_defaults_line():
    assert hp.describe(hp.DEFAULTS["cpu"]) == (
        "host profile: the assumed defaults for cpu (docs/simulate.md; "
        "`paradnn calibrate --host-only` measures this host's)"
    )
    assert hp.describe(hp.DEFAULTS["cuda"], "ignored") == (
        "host profile: the assumed defaults for cuda (derived from issue 42's H100 host, "
        "docs/simulate.md; `paradnn calibrate --host-only` measures this host's)"
    )


def test_a_measured_or_read_profile_s_line():
    p = hp.HostProfile.from_mapping(
        {**MIN, "source": "measured", "host": "EPYC", "measured_at": "2026-11-27T10:00:00"}
    )
    assert hp.describe(p, "the store") == (
        "host profile: measured, from the store (EPYC, 2026-11-27)"
    )
    q = hp.HostProfile.from_mapping({**MIN, "detail": {"quality": "noisy"}})
    assert hp.describe(q) == "host profile: read (host not named, noisy)"
    r = hp.HostProfile.from_mapping({**MIN, "detail": {"quality": "good"}})
    assert hp.describe(r, "") == "host profile: read (host not named)"
    g = hp.for_device(hp.HostProfile.from_mapping({**MIN, "host": "h"}), "cuda")
    assert hp.describe(g, "f") == (
        "host profile: read from f (h); launch and sync assumed (cuda defaults)"
    )
    one = hp.HostProfile.from_mapping({**MIN, "detail": {"assumed": {"forward_op_s": 1}}})
    assert hp.describe(one) == (
        "host profile: read (host not named); forward_op assumed (cpu defaults)"
    )
