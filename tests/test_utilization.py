"""Utilization against the datasheet peak and the measured ceiling, nulls with reasons."""

import pytest

from paradnn import utilization


def _ceiling(store, name, precision, value):
    store.insert_rows(
        "ceilings",
        [
            {
                "device": "cuda:0",
                "device_name": name,
                "fingerprint": "f",
                "kind": "matmul",
                "precision": precision,
                "value": value,
                "unit": "FLOP/s",
                "measured_at": "2026-01-01",
            }
        ],
    )


def test_both_denominators_for_a_known_gpu(store):
    row = {
        "achieved_flops": 494.7e12,
        "device_name": "NVIDIA H100 80GB HBM3",
        "precision": "bf16",
        "status": "ok",
        "nulls": {},
    }
    _ceiling(store, "NVIDIA H100 80GB HBM3", "bf16", 600e12)
    _ceiling(store, "NVIDIA H100 80GB HBM3", "bf16", 700e12)  # the best calibration counts
    utilization.fill(row, store)
    assert row["utilization_datasheet"] == pytest.approx(0.5, rel=1e-3)  # 989.4 TFLOP/s dense
    assert row["utilization_measured"] == pytest.approx(494.7 / 700)
    assert row["nulls"] == {}


def test_unknown_cpu_without_calibration_gets_reasons(store):
    row = {
        "achieved_flops": 1e11,
        "device_name": "AMD EPYC",
        "precision": "fp32",
        "status": "ok",
        "nulls": {},
    }
    utilization.fill(row, store)
    assert row["utilization_datasheet"] is None and row["utilization_measured"] is None
    assert "no datasheet entry" in row["nulls"]["utilization_datasheet"]
    assert "paradnn calibrate" in row["nulls"]["utilization_measured"]
    _ceiling(store, "AMD EPYC", "fp32", 2e11)
    utilization.fill(row, store)
    assert row["utilization_measured"] == pytest.approx(0.5)
    assert "utilization_measured" not in row["nulls"]


def test_a_failed_run_has_no_utilization(store):
    row = {
        "achieved_flops": None,
        "device_name": "x",
        "precision": "fp32",
        "status": "oom",
        "nulls": {},
    }
    utilization.fill(row, store)
    assert row["utilization_datasheet"] is None
    assert row["nulls"]["utilization_measured"] == "no achieved FLOP/s (oom run)"
