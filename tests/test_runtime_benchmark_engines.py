"""What the Benchmarker measures of engine configurations, and what it keeps, on the simulated
device (whose backend API answers its documented model: see ucudnn.testing.simulator.engines):
both families side by side, the screening, the notes, the beta-1 restriction of backward-filter
configurations, the cap, failures stored and never tried again, and the switch."""

from __future__ import annotations

import dataclasses

import pytest

from ucudnn.core import engines
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.runtime.work import Work

pytestmark = pytest.mark.simulator

PROBLEM = ConvProblem.create(4, 8, 8, (6, 6), 3, padding=1, dtype="float16", math_type="tensor_op")


def _benchmarker(cache: BenchmarkCache | None = None, **settings: object):
    from ucudnn._native import _cudnn
    from ucudnn.core.device import device_facts
    from ucudnn.runtime.benchmark import Benchmarker, BenchmarkSettings

    chosen = BenchmarkSettings(**{"engines": True, "progress": False, **settings})  # type: ignore[arg-type]
    return Benchmarker(_cudnn.Handle(), device_facts(), cache, chosen)


def _engine_sets(cache: BenchmarkCache, kernel: str, sizes=(4, 2, 1)):
    from ucudnn.core.device import device_facts
    from ucudnn.runtime.benchmark import ENGINE_SEARCH

    facts = device_facts()
    return {b: cache.lookup(PROBLEM, kernel, b, facts, source=ENGINE_SEARCH) for b in sizes}


def test_engines_are_measured_beside_the_legacy_algorithms_and_kept(tmp_path) -> None:
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        benchmarker = _benchmarker(cache)
        tables = benchmarker.tables([Work("conv", PROBLEM, "forward")], [1, 2, 4])
        table = tables[("conv", "forward")]
        for b in (1, 2, 4):
            families = {bool(c.engine) for c in table.candidates[b]}
            assert families == {False, True}, f"both families at micro-batch {b}"
        measured = _engine_sets(cache, "forward")
        assert all(found for found in measured.values())
        for found in measured.values():
            assert all(m.engine and m.algo == engines.parse_tag(m.engine).index for m in found)
            # Half-type tensor-core configurations run under tensor_op, the others under FMA.
            for m in found:
                expected = "tensor_op" if "TENSOR_CORE" in m.notes else "fma"
                assert m.math_type == expected
        # A second process finds both families in the cache and measures nothing.
        again = _benchmarker(cache)
        assert again.tables([Work("conv", PROBLEM, "forward")], [1, 2, 4]) == tables
        assert again.counts == {"measured": 0, "cached": 6}


def test_screening_times_fully_only_what_could_be_chosen(tmp_path) -> None:
    """The model's generic FALLBACK engines need no workspace and are 1.5 and 2 times slower
    than another workspace-free configuration: two brief runs each, then no more."""
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache, repeats=7).tables([Work("conv", PROBLEM, "forward")], [4])
        (found,) = _engine_sets(cache, "forward", (4,)).values()
    assert found
    repeats = {m.engine: m.repeats for m in found if m.ok}
    fastest_free = min(m.time_ms for m in found if m.ok and m.workspace_bytes == 0)
    for m in found:
        if not m.ok:
            continue
        beaten = any(
            o.ok and o.workspace_bytes <= m.workspace_bytes and o.time_ms * 1.25 < m.time_ms
            for o in found
        )
        assert repeats[m.engine] == (2 if beaten else 7), m.engine
    assert sorted(repeats.values()).count(2) >= 1 and fastest_free > 0


def test_backward_filter_configurations_without_beta_1_serve_only_undivided_runs(tmp_path):
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        tables = _benchmarker(cache).tables([Work("conv", PROBLEM, "backward_filter")], [1, 2, 4])
        measured = _engine_sets(cache, "backward_filter")
    table = tables[("conv", "backward_filter")]
    refused = {m.engine for m in measured[4] if m.ok and engines.BETA1_UNSUPPORTED in m.notes}
    assert refused, "the simulator's model refuses beta 1 for its fast backward-filter config"
    assert refused <= {c.engine for c in table.candidates[4]}
    for b in (1, 2):
        assert not refused & {c.engine for c in table.candidates[b]}


def test_backward_filter_workspace_covers_the_plan_that_adds_to_dw(tmp_path) -> None:
    """Every part after the first of a split backward-filter run adds to dW (beta 1). On an
    H100 that plan needed more workspace than the beta-0 one that is timed (the simulator
    models it: dW's bytes more), so the workspace recorded must cover both, or the part
    cannot run within what it was planned with."""
    from ucudnn.runtime import graph

    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        benchmarker = _benchmarker(cache)
        benchmarker.tables([Work("conv", PROBLEM, "backward_filter")], [4])
        (found,) = _engine_sets(cache, "backward_filter", (4,)).values()
    blending = [
        m for m in found if m.ok and m.workspace_bytes and engines.BETA1_UNSUPPORTED not in m.notes
    ]
    assert blending, "the model has backward-filter configurations with workspace that blend"
    handle = benchmarker.handle
    adding = graph.operation_graph(handle, PROBLEM, "backward_filter", (16, 16, 16), 1.0, 1.0)
    for m in blending:
        config = graph.engine_config(adding, engines.parse_tag(m.engine))
        plan = graph.build_plan(handle, config, m.engine)
        assert plan.workspace_bytes > 0 and m.workspace_bytes >= plan.workspace_bytes, m.engine


@pytest.mark.parametrize(
    ("problem", "status"),
    [
        # TF32 under FMA math: tensor-core configurations are refused before building.
        (dataclasses.replace(PROBLEM, dtype="float32", math_type="fma"), "REFUSED_BY_NOTES"),
        # No workspace allowed: the model's fast configuration (x and y in its workspace).
        (PROBLEM, "WORKSPACE_OVER_CAP"),
    ],
)
def test_the_notes_and_the_cap_are_failures_kept_in_the_cache(tmp_path, problem, status) -> None:
    from ucudnn.core.device import device_facts
    from ucudnn.runtime.benchmark import ENGINE_SEARCH

    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache, workspace_cap=0).tables([Work("conv", problem, "forward")], [4])
        found = cache.lookup(problem, "forward", 4, device_facts(), source=ENGINE_SEARCH)
    assert found
    failed = [m for m in found if m.status == status]
    assert failed, f"no configuration failed with {status}: {found}"
    for m in found:
        assert m.ok == (m.status == "ok")
        if status == "REFUSED_BY_NOTES":
            assert ("TENSOR_CORE" in m.notes) == (m.status == status)
        if m.ok:
            assert m.workspace_bytes == 0


def test_a_configuration_that_fails_is_stored_and_not_tried_again(tmp_path) -> None:
    from ucudnn.testing import simulator

    tag = "eng28_k2=4_k3=0"  # the model's workspace-free forward configuration
    rule = simulator.fail_engine(tag, at="plan")
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        first = _benchmarker(cache).tables([Work("conv", PROBLEM, "forward")], [4])
        assert tag not in {c.engine for c in first[("conv", "forward")]}
        (found,) = _engine_sets(cache, "forward", (4,)).values()
        assert {m.engine: m.status for m in found}[tag] == "CUDNN_STATUS_NOT_SUPPORTED"
        simulator.DEVICE.faults.rules.remove(rule)
        again = _benchmarker(cache)
        assert again.tables([Work("conv", PROBLEM, "forward")], [4]) == first
        assert again.counts["measured"] == 0


@pytest.mark.parametrize("why", ["switched off", "cuDNN before 9.2"])
def test_without_engines_only_the_legacy_family_is_measured(tmp_path, why) -> None:
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        if why == "switched off":
            benchmarker = _benchmarker(cache, engines=False)
        else:
            benchmarker = _benchmarker(cache)
            benchmarker.facts = dataclasses.replace(benchmarker.facts, cudnn_version=90100)
        table = benchmarker.tables([Work("conv", PROBLEM, "forward")], [4])[("conv", "forward")]
    assert table.candidates[4] and not any(c.engine for c in table)


def test_cudnns_own_workspace_cap_names_another_search(tmp_path, monkeypatch) -> None:
    """CUDNN_CONV_WSCAP_DBG changes what cuDNN's heuristics offer: what was measured under it
    is kept apart from what was measured without."""
    from ucudnn.runtime.benchmark import ENGINE_SEARCH, engine_search

    assert engine_search({}) == ENGINE_SEARCH
    assert engine_search({"CUDNN_CONV_WSCAP_DBG": " 4096 "}) == f"{ENGINE_SEARCH}/wscap=4096"
    assert engine_search({"CUDNN_CONV_WSCAP_DBG": "4 GiB\n"}) == f"{ENGINE_SEARCH}/wscap=4_GiB"
    work = [Work("conv", PROBLEM, "forward")]
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache).tables(work, [4])
        monkeypatch.setenv("CUDNN_CONV_WSCAP_DBG", "4096")
        capped = _benchmarker(cache)
        capped.tables(work, [4])
        assert capped.counts == {"measured": 1, "cached": 1}  # legacy from the cache
