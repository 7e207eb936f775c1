"""What the Benchmarker measures of engine configurations, and what it keeps, on the simulated
device (whose backend API answers its documented model: see ucudnn.testing.simulator.engines):
both families side by side, what the fast search confirms and what the exhaustive one does, the
notes, the beta-1 restriction of backward-filter configurations, the cap, failures stored and
never tried again, build threads, and the switch."""

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


def _engine_sets(cache: BenchmarkCache, kernel: str, sizes=(4, 2, 1), problem=PROBLEM, **settings):
    """The engine measurements stored for each size (the batch is 4: smaller sizes are splits)."""
    stored = _stored_sets(cache, kernel, sizes, problem, **settings)
    return {b: [m for m in found if m.engine] for b, found in stored.items()}


def _stored_sets(cache: BenchmarkCache, kernel: str, sizes=(4, 2, 1), problem=PROBLEM, **settings):
    """Every measurement stored for each size, both families."""
    from ucudnn.core.device import device_facts

    facts, benchmarker = device_facts(), _benchmarker(**settings)

    def source(b: int) -> str:
        # The fast search's set of a split size names the sizes measured above it: here every
        # size of the batch of 4 down to b.
        above = [a for a in (4, 2, 1) if a > b] if benchmarker.settings.search == "fast" else []
        return benchmarker.source(kernel, b < 4, above)

    return {b: cache.lookup(problem, kernel, b, facts, source(b)) or [] for b in sizes}


def test_engines_are_measured_beside_the_legacy_algorithms_and_kept(tmp_path) -> None:
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        benchmarker = _benchmarker(cache)
        tables = benchmarker.tables([Work("conv", PROBLEM, "forward")], [1, 2, 4])
        table = tables[("conv", "forward")]
        assert {bool(c.engine) for c in table.candidates[4]} == {False, True}
        for b, stored in _stored_sets(cache, "forward").items():
            families = {bool(m.engine) for m in stored if m.ok}
            assert families == {False, True}, f"both families measured at micro-batch {b}"
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
        assert again.counts == {"measured": 0, "cached": 3}


def test_the_fast_search_confirms_the_frontier_and_keeps_the_rest_brief(tmp_path) -> None:
    """Every candidate on or within 5 % of the (workspace, time) front is timed in full and
    marked confirmed; the model's generic FALLBACK engines, 1.5 and 2 times slower than a
    workspace-free configuration, keep their brief time."""
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        tables = _benchmarker(cache, repeats=7).tables([Work("conv", PROBLEM, "forward")], [4])
        from ucudnn.core.device import device_facts

        source = _benchmarker().source("forward", False)
        found = [m for m in cache.lookup(PROBLEM, "forward", 4, device_facts(), source) if m.ok]
    assert {bool(m.engine) for m in found} == {False, True}
    for m in found:
        fastest_within = min(o.time_ms for o in found if o.workspace_bytes <= m.workspace_bytes)
        near = m.time_ms <= 1.05 * fastest_within
        assert m.confirmed is (m.repeats == 7), m
        if near:
            assert m.confirmed, f"{m} is on or near the front but was not confirmed"
    assert any(not m.confirmed for m in found), "the slow FALLBACK engines stay screened"
    # Only confirmed times are planned with.
    planned = {(c.engine, c.algo, c.math_type) for c in tables[("conv", "forward")]}
    assert planned == {(m.engine, m.algo, m.math_type) for m in found if m.confirmed}


def test_a_split_sizes_set_names_the_sizes_measured_above_it(tmp_path) -> None:
    """What the fast search keeps at a split size depends on the sizes above it (its rivals):
    a mini-batch with other sizes above measures that size anew."""
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache).tables([Work("conv", PROBLEM, "forward")], [1, 2, 4])
        smaller = _benchmarker(cache)
        smaller.tables([Work("conv", PROBLEM.with_batch(2), "forward")], [1, 2])
        assert smaller.counts == {"measured": 2, "cached": 0}  # 2 undivided, 1 below 2 only
        again = _benchmarker(cache)
        again.tables([Work("conv", PROBLEM, "forward")], [1, 2, 4])
        assert again.counts == {"measured": 0, "cached": 3}
    source = smaller.source("forward", True, [4, 2])
    assert source.endswith("/above=4,2") and source.startswith("fast/")
    assert _benchmarker(search="exhaustive").source("forward", True) == (
        source.replace("fast/", "exhaustive/").removesuffix("/above=4,2")
    )


def test_the_exhaustive_search_times_everything_in_full(tmp_path) -> None:
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        settings = {"repeats": 7, "search": "exhaustive"}
        _benchmarker(cache, **settings).tables([Work("conv", PROBLEM, "forward")], [4])
        from ucudnn.core.device import device_facts

        source = _benchmarker(**settings).source("forward", False)
        assert source.startswith("exhaustive/")
        found = [m for m in cache.lookup(PROBLEM, "forward", 4, device_facts(), source) if m.ok]
    assert found and all(m.confirmed and m.repeats == 7 for m in found)


def test_build_threads_change_nothing_measured_but_the_times(tmp_path) -> None:
    """Plans built on one thread or on four: the same candidates, failures and workspaces."""
    work = [Work("conv", PROBLEM, "forward"), Work("conv", PROBLEM, "backward_filter")]
    outcomes = []
    for threads in (1, 4):
        with BenchmarkCache(tmp_path / f"db{threads}.sqlite") as cache:
            tables = _benchmarker(cache, build_threads=threads).tables(work, [1, 2, 4])
        outcomes.append(
            {
                k: sorted((c.engine, c.micro_batch, c.workspace_bytes) for c in t)
                for k, t in tables.items()
            }
        )
    assert outcomes[0] == outcomes[1]


def test_backward_filter_configurations_without_beta_1_serve_only_undivided_runs(tmp_path):
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        tables = _benchmarker(cache).tables([Work("conv", PROBLEM, "backward_filter")], [1, 2, 4])
        measured = _engine_sets(cache, "backward_filter")
    table = tables[("conv", "backward_filter")]
    for b in (1, 2):  # splits: only what was built with beta 1 serves them
        usable = {c.engine for c in table.candidates.get(b, []) if c.engine}
        unusable = {
            m.engine
            for m in measured[b]
            if set(m.notes) & {engines.BETA1_UNSUPPORTED, "BETA1_UNCHECKED"}
        }
        assert not usable & unusable
        assert all(m.confirmed for m in measured[b] if m.engine in usable and m.confirmed)
    refused = {
        m.engine for b in (1, 2) for m in measured[b] if engines.BETA1_UNSUPPORTED in m.notes
    }
    assert refused, "the simulator's model refuses beta 1 for its fast backward-filter config"
    # The undivided size needs no beta-1 plan: the same configurations serve it.
    assert refused <= {c.engine for c in table.candidates[4]}


def test_backward_filter_workspace_covers_the_plan_that_adds_to_dw(tmp_path) -> None:
    """Every part after the first of a split backward-filter run adds to dW (beta 1). On an
    H100 that plan needed more workspace than the beta-0 one that is timed (the simulator
    models it: dW's bytes more), so the workspace recorded must cover both, or the part
    cannot run within what it was planned with."""
    from ucudnn.runtime import graph

    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        benchmarker = _benchmarker(cache, search="exhaustive")  # every beta-1 plan is built
        benchmarker.tables([Work("conv", PROBLEM, "backward_filter")], [2, 4])
        (found,) = _engine_sets(cache, "backward_filter", (2,), search="exhaustive").values()
    blending = [
        m for m in found if m.ok and m.workspace_bytes and engines.BETA1_UNSUPPORTED not in m.notes
    ]
    assert blending, "the model has backward-filter configurations with workspace that blend"
    handle = benchmarker.handle
    part = PROBLEM.with_batch(2)
    adding = graph.operation_graph(handle, part, "backward_filter", (16, 16, 16), 1.0, 1.0)
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
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache, workspace_cap=0).tables([Work("conv", problem, "forward")], [4])
        (found,) = _engine_sets(cache, "forward", (4,), problem, workspace_cap=0).values()
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
    from ucudnn.runtime.families import ENGINE_CONFIGURATIONS, ENGINE_FAMILY

    source = ENGINE_CONFIGURATIONS.source
    assert source({}) == ENGINE_FAMILY
    assert source({"CUDNN_CONV_WSCAP_DBG": " 4096 "}) == f"{ENGINE_FAMILY}/wscap=4096"
    assert source({"CUDNN_CONV_WSCAP_DBG": "4 GiB\n"}) == f"{ENGINE_FAMILY}/wscap=4_GiB"
    work = [Work("conv", PROBLEM, "forward")]
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        _benchmarker(cache).tables(work, [4])
        monkeypatch.setenv("CUDNN_CONV_WSCAP_DBG", "4096")
        capped = _benchmarker(cache)
        capped.tables(work, [4])
        assert capped.counts == {"measured": 1, "cached": 0}
        assert "wscap=4096" in capped.source("forward", False)


def test_a_deterministic_benchmark_keeps_deterministic_candidates_in_sets_of_their_own(tmp_path):
    """Plans of deterministic candidates only (a deterministic Handle's) have rivals of their
    own: the fast search measures for them apart, and plans with nothing else."""
    work = [Work("conv", PROBLEM, "backward_filter")]
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        anything = _benchmarker(cache).tables(work, [1, 2, 4])
        only = _benchmarker(cache, deterministic_only=True)
        tables = only.tables(work, [1, 2, 4])
        assert only.counts == {"measured": 3, "cached": 0}
    table = tables[("conv", "backward_filter")]
    assert list(table) and all(c.deterministic for c in table)
    assert not all(c.deterministic for c in anything[("conv", "backward_filter")])
    assert "/deterministic" in only.source("backward_filter", True, [4])
    assert "/deterministic" not in _benchmarker(
        search="exhaustive", deterministic_only=True
    ).source("backward_filter", True)
