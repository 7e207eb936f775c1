"""The simulated cuDNN's capability model, on the H100 tables it was built from (no device).

What was measured is answered as measured; the first H100 run's log facts hold in "log" mode
only; the model has a cost per launch; fuzzing never touches what was measured; a probe file
overrides the model.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ucudnn.testing.simulator import capabilities
from ucudnn.testing.simulator.capabilities import ALGORITHMS, load
from ucudnn.testing.simulator.problem import NOT_SUPPORTED, SimProblem

LOG = load("log")


def _problem(kernel="forward", batch=1, layout="NCHW", dtype="float32", math_type="fma",
             channels=(64, 64), size=(56, 56), filt=(3, 3), padding=(1, 1), stride=(1, 1),
             groups=1) -> SimProblem:  # fmt: skip
    c, k = channels
    out = tuple(
        (s + 2 * p - f) // t + 1 for s, p, f, t in zip(size, padding, filt, stride, strict=True)
    )
    return SimProblem(
        kernel=kernel, dtype=dtype, compute_dtype="float64" if dtype == "float64" else "float32",
        math_type=math_type, layout=layout, filter_layout=layout, x_dims=(batch, c, *size),
        w_dims=(k, c // groups, *filt), y_dims=(batch, k, *out), padding=padding, stride=stride,
        dilation=(1,) * len(size), groups=groups, mode="cross_correlation",
    )  # fmt: skip


def test_a_measured_layer_gets_what_was_measured_even_where_it_is_not_monotone() -> None:
    """ResNet-50 layer1.0.conv2, float32: backward-filter algo_1 needs 1.75 MB at one sample
    and 148 KB at eight (the table's rows)."""
    one = LOG.facts(_problem("backward_filter", batch=1))
    eight = LOG.facts(_problem("backward_filter", batch=8))
    assert (one[1].workspace_bytes, eight[1].workspace_bytes) == (1_753_104, 147_760)
    assert one[1].provenance == "measured:h100-cudnn-9.19.0/resnet50-float32-NCHW/layer1.0.conv2"
    assert one[1].time_ms == pytest.approx(0.153856)
    assert not one[4].ok and one[4].provenance.endswith("(did not run)")  # winograd


def test_between_measured_sizes_an_algorithm_runs_if_it_ran_at_both() -> None:
    two, three, four = (LOG.facts(_problem("forward", batch=b)) for b in (2, 3, 4))
    for low, mid, high in zip(two, three, four, strict=True):
        assert mid.ok == (low.ok and high.ok)
        if mid.ok:
            assert min(low.time_ms, high.time_ms) <= mid.time_ms <= max(low.time_ms, high.time_ms)
            assert "interpolated at 3" in mid.provenance


def test_the_tables_nondeterministic_algorithms_are_exactly_three() -> None:
    tables = capabilities._tables()
    seen = {
        (kernel, ALGORITHMS[kernel][algo], deterministic)
        for layer in tables["layers"]
        for kernel, sizes in layer["kernels"].items()
        for rows in sizes.values()
        for algo, _, _, deterministic in rows
    }
    assert {(k, a) for k, a, d in seen if not d} == {
        ("backward_data", "algo_0"), ("backward_filter", "algo_0"), ("backward_filter", "algo_3")
    }  # fmt: skip
    assert not any(a in ("direct", "winograd") for k, a, _ in seen if k == "forward")


def test_the_first_h100_runs_log_facts_hold_in_log_mode_only() -> None:
    ndhwc64 = _problem("forward", 2, "NDHWC", "float64", "default", (3, 4), (6, 5, 7),
                       (3, 3, 3), (1, 1, 1), (1, 1, 1))  # fmt: skip
    assert all(f.status == NOT_SUPPORTED and f.provenance.startswith("observed:")
               for f in LOG.facts(ndhwc64))  # fmt: skip
    assert any(f.ok and f.workspace_bytes == 0 for f in load("optimistic").facts(ndhwc64))
    nhwc64 = _problem("backward_data", 6, "NHWC", "float64", "default", (4, 8), (9, 10))
    assert not any(f.ok and f.workspace_bytes == 0 for f in LOG.facts(nhwc64))
    assert any(f.ok for f in LOG.facts(nhwc64))
    for layout, size in (("NCHW", (9, 10)), ("NCDHW", (5, 6, 4))):
        for dtype in ("float32", "float16", "float64"):
            for kernel in ALGORITHMS:
                rank = len(size)
                p = _problem(kernel, 3, layout, dtype, "default", (4, 8), size, (3,) * rank,
                             (1,) * rank, (1,) * rank)  # fmt: skip
                assert any(f.ok and f.workspace_bytes == 0 for f in LOG.facts(p)), p


def test_the_model_charges_each_launch() -> None:
    """One undivided call beats the same samples in three calls, as on the GPU."""
    small = dataclasses.replace(_problem(channels=(3, 4), size=(5, 5)))

    def fastest(batch: int) -> float:
        p = dataclasses.replace(small, x_dims=(batch, 3, 5, 5), y_dims=(batch, 4, 5, 5))
        return min(f.time_ms for f in LOG.facts(p) if f.ok)

    assert fastest(7) < fastest(1) + 2 * fastest(3)


def test_fuzzing_keeps_what_was_measured_and_reshuffles_the_rest() -> None:
    measured = _problem("forward", batch=8)
    assert load("fuzz:1").facts(measured) == LOG.facts(measured)
    unmeasured = [
        _problem(kernel, 2, layout, dtype, "default", (4, 8), (9, 10))
        for kernel in ALGORITHMS
        for layout in ("NCHW", "NHWC")
        for dtype in ("float32", "float16", "float64")
    ]
    first, again, other = (
        [load(mode).facts(p) for p in unmeasured] for mode in ("fuzz:1", "fuzz:1", "fuzz:2")
    )
    assert first == again and first != other
    assert first != [LOG.facts(p) for p in unmeasured]
    assert all(f.provenance == "fuzz:1" for facts in first for f in facts)


def test_a_probe_file_overrides_the_model(tmp_path) -> None:
    p = _problem("forward", 2, "NHWC", "float32", "fma", (4, 8), (9, 10))
    row = {"cell": list(capabilities.cell(p, 0)), "results": {"1": [0, 0], "2": [3000, 0]}}
    contract = {"workspace_too_small": 2006, "misaligned_pointer": "failed: x"}
    probe = {"format": "ucudnn-capability-probe", "version": 1, "cells": [row],
             "contract": contract}  # fmt: skip
    (tmp_path / "probe-test.json").write_text(json.dumps(probe))
    probed = load("log", probe_dir=tmp_path)
    assert LOG.facts(p)[0].ok
    assert probed.facts(p)[0].status == NOT_SUPPORTED
    assert probed.facts(p)[0].provenance == "probed:probe-test.json"
    assert probed.contract_status("workspace_too_small") == (2006, "probed:probe-test.json")
    assert probed.contract_status("misaligned_pointer") == (2003, "assumed")
    assert probed.name.endswith("+probed")


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="UCUDNN_SIM_CAPS must be 'log', 'optimistic'"):
        load("bogus")
