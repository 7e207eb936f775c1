"""The planner's large works pause Python's cyclic garbage collector (ucudnn.planner.collector)
and make no reference cycles, so that the pause keeps no garbage: what they make is freed by
its reference count as soon as it is dropped."""

from __future__ import annotations

import collections
import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import ucudnn.planner.plan
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import DesirableSets
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import TimingTables
from ucudnn.planner.tune import tune

MiB = 1 << 20
MEASURED = Path(__file__).parent / "data" / "engines-resnet50-fp16-nchw.csv.gz"
RESNET = builtin_network("resnet18", batch=64)


@pytest.fixture(scope="module")
def measured() -> TimingTables:
    return TimingTables.read_csv(MEASURED)


def resnet_tables(policy: str) -> TimingTables:
    layers = ((n, RESNET.problem(n), RESNET.kernels(n)) for n in RESNET.layers())
    return model_tables(layers, policy)


def plans_twice_on_kept_sets(tables: TimingTables) -> None:
    sets = DesirableSets()
    for budget in (64 * MiB, 512 * MiB):
        make_plan_wd(tables, budget, sets=sets)


WORKS: dict[str, Callable[[TimingTables], object]] = {
    "read_csv": lambda _: TimingTables.read_csv(MEASURED),
    "model_tables": lambda _: resnet_tables("all"),
    "WR": lambda tables: make_plan_wr(tables, 64 * MiB),
    "WD": lambda tables: make_plan_wd(tables, 64 * MiB),
    "WD on kept sets": plans_twice_on_kept_sets,
    # No divisor chain: WD on partial fronts, its programs solved at each size.
    "WD, policy all": lambda _: make_plan_wd(resnet_tables("all"), 8 * MiB, "all"),
    "tune": lambda _: tune(RESNET, resnet_tables("powerOfTwo"), "8GiB"),
}


@pytest.fixture
def saving_garbage() -> Iterator[list[object]]:
    """gc.garbage, into which a collection then puts every unreachable object it finds."""
    gc.collect()
    flags = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(flags)
        gc.garbage.clear()


@pytest.mark.parametrize("work", WORKS)
def test_the_work_leaves_no_cycles(
    work: str, measured: TimingTables, saving_garbage: list[object]
) -> None:
    WORKS[work](measured)  # what it returns is dropped at once
    gc.collect()
    kinds = collections.Counter(type(o).__qualname__ for o in saving_garbage)
    assert not saving_garbage, f"{work} left cycles of {dict(kinds.most_common(8))}"


@pytest.fixture(params=[True, False], ids=["collector on", "collector off"])
def collector_before(request: pytest.FixtureRequest) -> Iterator[bool]:
    was = gc.isenabled()
    (gc.enable if request.param else gc.disable)()
    try:
        yield request.param
    finally:
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("work", WORKS)
def test_the_collector_is_as_it_was_after_the_work(
    work: str, measured: TimingTables, collector_before: bool
) -> None:
    WORKS[work](measured)
    assert gc.isenabled() is collector_before


def test_the_collector_is_as_it_was_after_a_plan_that_fails(
    measured: TimingTables, collector_before: bool
) -> None:
    with pytest.raises(ValueError, match="solver"):
        make_plan_wd(measured, 64 * MiB, solver="no such solver")
    assert gc.isenabled() is collector_before


def test_the_collector_is_off_while_a_plan_solves(
    measured: TimingTables, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    solve = ucudnn.planner.plan.plan_wd

    def watched(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return solve(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ucudnn.planner.plan, "plan_wd", watched)
    assert gc.isenabled()
    make_plan_wd(measured, 64 * MiB)
    assert seen and not any(seen)
    assert gc.isenabled()
