"""WD: the network-wide ILP, against exhaustive search, WR, and its arena layout."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tests.planner_oracles import best_wd, kernel_tables, repeated_kernels
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import desirable_set
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, Schedule
from ucudnn.planner.wd import aligned, plan_wd, search
from ucudnn.planner.wd.solver import CBC_PACKAGE, HIGHS_PACKAGE
from ucudnn.planner.wr import plan_wr

MiB = 1 << 20


def single(time_ms: float, workspace: int) -> Schedule:
    return Schedule((Candidate(1, 0, time_ms, workspace),))


schedule_lists = st.lists(
    st.builds(single, st.integers(0, 400).map(lambda t: t / 8), st.integers(0, 2000)),
    min_size=1,
    max_size=4,
)


def check_layout(solution, budget: int, alignment: int) -> None:
    end = 0
    for k, schedule in solution.choices.items():
        offset = solution.offsets[k]
        assert offset % alignment == 0 and offset >= end
        end = offset + schedule.workspace_bytes
    assert end <= solution.arena_bytes <= budget


@settings(max_examples=60, deadline=None)
@given(
    st.lists(schedule_lists, min_size=1, max_size=4),
    st.integers(0, 6000),
    st.sampled_from([1, 64, 256]),
)
def test_wd_equals_exhaustive_search(lists, budget: int, alignment: int) -> None:
    sets = {(f"layer{i}", "forward"): s for i, s in enumerate(lists)}
    best = best_wd(sets, budget, alignment)
    if best is None:
        with pytest.raises(InfeasibleError) as info:
            plan_wd(sets, budget, alignment=alignment)
        need = sum(min(aligned(s.workspace_bytes, alignment) for s in v) for v in lists)
        assert info.value.required_bytes == need
        return
    solution = plan_wd(sets, budget, alignment=alignment)
    assert solution.status == "optimal"
    assert solution.time_ms == pytest.approx(best, rel=1e-12, abs=1e-12)
    assert list(solution.choices) == list(sets)
    assert all(solution.choices[k] in sets[k] for k in sets)
    check_layout(solution, budget, alignment)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(schedule_lists, st.integers(1, 3)), min_size=1, max_size=3),
    st.integers(0, 8000),
)
def test_wd_with_repeated_kernels_equals_exhaustive_search(lists, budget: int) -> None:
    """Kernels with identical options share the solver's variables (a count per option)."""
    sets = repeated_kernels(lists)
    best = best_wd(sets, budget, 256)
    if best is None:
        with pytest.raises(InfeasibleError):
            plan_wd(sets, budget)
        return
    solution = plan_wd(sets, budget)
    assert solution.time_ms == pytest.approx(best, rel=1e-12, abs=1e-12)
    assert all(solution.choices[k] in sets[k] for k in sets)
    check_layout(solution, budget, 256)


@settings(max_examples=25, deadline=None)
@given(st.lists(kernel_tables(max_batch=8), min_size=1, max_size=4), st.integers(0, 64))
def test_wd_at_the_sum_of_wr_workspaces_is_never_slower_than_wr(tables, limit: int) -> None:
    wr = {}
    for i, table in enumerate(tables):
        try:
            wr[(f"l{i}", table.kernel)] = (table, plan_wr(table, limit))
        except InfeasibleError:
            continue
    if not wr:
        return
    budget = sum(aligned(s.workspace_bytes, 256) for _, s in wr.values())
    sets = {k: desirable_set(t, budget) for k, (t, _) in wr.items()}
    solution = plan_wd(sets, budget)
    assert solution.time_ms <= sum(s.time_ms for _, s in wr.values()) + 1e-9


def test_wd_beats_wr_on_a_model_network() -> None:
    graph = builtin_network("resnet18", batch=64)
    tables = model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())
    for limit in (0, 4 * MiB, 32 * MiB):
        wr = {k: plan_wr(t, limit) for k, t in tables.items()}
        budget = sum(aligned(s.workspace_bytes, 256) for s in wr.values())
        sets = {k: desirable_set(t, budget) for k, t in tables.items()}
        solution = plan_wd(sets, budget)
        assert solution.time_ms <= sum(s.time_ms for s in wr.values()) + 1e-9
        check_layout(solution, budget, 256)


def test_every_fastest_schedule_fitting_skips_the_solver_with_the_same_answer() -> None:
    sets = {
        ("a", "forward"): [single(4.0, 0), single(1.0, 300)],
        ("b", "forward"): [single(2.0, 0), single(1.5, 200)],
    }
    roomy = plan_wd(sets, 10_000)
    assert roomy.solver == "none" and roomy.time_ms == 2.5
    assert roomy.offsets == {("a", "forward"): 0, ("b", "forward"): 512}
    tight = plan_wd(sets, 768)  # 512 + 256: both fastest fit exactly, aligned
    assert tight.solver == "none" and tight.time_ms == 2.5
    traded = plan_wd(sets, 700)
    # a's 300 B beats b's 200 B; the greedy finds it and the LP bound proves it optimal.
    assert traded.solver == "none" and traded.time_ms == 3.0
    assert traded.choices[("a", "forward")].workspace_bytes == 300


def knapsack_the_greedy_gets_wrong() -> dict:
    """a saves 6 ms for 3 units, b and c 4 ms for 2 units each, in a budget of 4 units: the
    greedy takes a (6 ms), the optimum is b and c (8 ms), and no bound can tell them apart."""
    return {
        ("a", "forward"): [single(10.0, 0), single(4.0, 3 * 256)],
        ("b", "forward"): [single(10.0, 0), single(6.0, 2 * 256)],
        ("c", "forward"): [single(10.0, 0), single(6.0, 2 * 256)],
    }


@pytest.fixture
def ilp_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exact search gives up at once, as on a problem too large for it: the ILP decides."""
    monkeypatch.setattr(search, "DP_WORK_LIMIT", 0)


def test_what_the_bounds_cannot_settle_the_exact_search_does() -> None:
    solution = plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256)
    assert (solution.solver, solution.status, solution.time_ms) == ("dp", "optimal", 22.0)
    assert [s.workspace_bytes for s in solution.choices.values()] == [0, 512, 512]


@pytest.mark.usefixtures("ilp_only")
@pytest.mark.parametrize("solver", ["highs", "cbc"])
def test_what_the_exact_search_gives_up_on_goes_to_the_solver(solver: str) -> None:
    solution = plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256, solver=solver)
    assert (solution.solver, solution.status, solution.time_ms) == (solver, "optimal", 22.0)
    assert [s.workspace_bytes for s in solution.choices.values()] == [0, 512, 512]


def test_identical_kernels_share_variables_and_still_get_one_schedule_each() -> None:
    # Five identical kernels (one shared set, as make_plan_wd shares those of identical tables)
    # save 3 ms for 3 units, "odd" 2.5 ms for 4: in 9 units the best is three of the five at
    # their fast schedule, the other two and "odd" at their slow one.
    shared = [single(5.0, 0), single(2.0, 3 * 256)]
    sets = {(f"l{i}", "forward"): shared for i in range(5)}
    sets[("odd", "forward")] = [single(3.0, 0), single(0.5, 4 * 256)]
    solution = plan_wd(sets, 9 * 256)
    assert solution.time_ms == best_wd(sets, 9 * 256, 256) == 3 * 2.0 + 2 * 5.0 + 3.0
    assert [s.time_ms for s in solution.choices.values()] == [5.0, 5.0, 2.0, 2.0, 2.0, 3.0]
    check_layout(solution, 9 * 256, 256)


@pytest.mark.usefixtures("ilp_only")
def test_a_solver_stopped_by_its_time_limit_still_gives_a_plan() -> None:
    # The solver starts from the greedy solution, so even no time at all leaves a plan.
    solution = plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256, time_limit_s=1e-9)
    assert solution.status in ("optimal", "feasible") and solution.solver == "highs"
    assert solution.time_ms in (22.0, 24.0)  # the optimum, or the greedy it started from
    check_layout(solution, 4 * 256, 256)


def test_budget_counts_aligned_sizes() -> None:
    sets = {("a", "forward"): [single(1.0, 100)], ("b", "forward"): [single(1.0, 100)]}
    with pytest.raises(InfeasibleError, match="need 512 bytes") as info:
        plan_wd(sets, 300)  # 200 raw bytes would fit, but not at aligned offsets
    assert info.value.required_bytes == 512 and info.value.kernel is None
    assert plan_wd(sets, 300, alignment=1).arena_bytes == 200
    with pytest.raises(InfeasibleError, match="a/forward, needs 1024 bytes") as info:
        plan_wd({("a", "forward"): [single(1.0, 1000)]}, 512)
    assert info.value.kernel == ("a", "forward")


def test_bad_arguments() -> None:
    sets = {("a", "forward"): [single(1.0, 0)]}
    with pytest.raises(ValueError, match="budget_bytes=-1 is not a size"):
        plan_wd(sets, -1)
    for budget in (float("nan"), float("inf"), 1.5, True, None):
        with pytest.raises(TypeError, match=r"budget_bytes=.* is not a size"):
            plan_wd(sets, budget)
    assert plan_wd(sets, np.int64(256)).arena_bytes == 0
    assert plan_wd(sets, "64MiB").arena_bytes == 0
    with pytest.raises(ValueError, match="alignment must be >= 1"):
        plan_wd(sets, 0, alignment=0)
    with pytest.raises(ValueError, match="unknown solver 'glpk'"):
        plan_wd(sets, 0, solver="glpk")
    with pytest.raises(ValueError, match="time_limit_s must be a positive number"):
        plan_wd(sets, 0, time_limit_s=float("nan"))
    for limit in (True, "5"):
        with pytest.raises(TypeError, match="time_limit_s must be a number of seconds"):
            plan_wd(sets, 0, time_limit_s=limit)
    with pytest.raises(InfeasibleError, match="a/forward has no schedules"):
        plan_wd({("a", "forward"): []}, 0)
    assert plan_wd({}, 0).choices == {}


def test_without_highs_cbc_solves_and_says_so(tmp_path) -> None:
    """python-mip finds no HiGHS library at a bogus path: WD warns and solves with CBC."""
    probe = (
        "import warnings\n"
        "from tests.test_planner_wd import knapsack_the_greedy_gets_wrong\n"
        "from ucudnn.planner.wd import search\n"
        "from ucudnn.planner.wd import plan_wd\n"
        "search.DP_WORK_LIMIT = 0  # the ILP decides\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    solution = plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256)\n"
        "print(solution.solver, solution.time_ms)\n"
        "print([f'{w.category.__name__}: {w.message}' for w in caught])\n"
    )
    env = {**os.environ, "PMIP_HIGHS_LIBRARY": str(tmp_path / "no-libhighs.so")}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True,
        cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    solved, warned = result.stdout.splitlines()
    assert solved == "cbc 22.0"
    # python-mip's own advice (pip install mip[highs]) would not mend a too new highspy.
    assert (
        "SolverWarning: the HiGHS solver cannot be loaded: python-mip loads it from the highspy "
        "package, which is missing, broken or too new (pip install 'highspy>=1.9,<1.16'); "
        "solving with CBC instead"
    ) in warned


CBC_MISSING = (
    "the CBC solver cannot be loaded: python-mip loads it from the cbcbox package, which is "
    "missing or broken (pip install cbcbox)"
)


def _without_libraries(monkeypatch: pytest.MonkeyPatch, *solvers: str) -> None:
    """Creating a python-mip model on these solvers fails as python-mip 2.0 fails when their
    libraries did not load: FileNotFoundError for HiGHS, NameError (of its unset library
    handle) for CBC."""
    import mip

    errors = {
        mip.HIGHS: FileNotFoundError("HiGHS not found. Please install the `highspy` package"),
        mip.CBC: NameError("name 'cbclib' is not defined"),
    }
    failing = {name: errors[name] for name in solvers}
    model = mip.Model

    def fake_model(*args: object, **kwargs: object) -> object:
        if kwargs.get("solver_name") in failing:
            raise failing[kwargs["solver_name"]]
        return model(*args, **kwargs)

    monkeypatch.setattr(mip, "Model", fake_model)


@pytest.mark.usefixtures("ilp_only")
def test_cbc_that_does_not_load_is_one_error_naming_the_package(monkeypatch) -> None:
    _without_libraries(monkeypatch, "CBC")
    with pytest.raises(SolverError) as caught:
        plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256, solver="cbc")
    expected = f"{CBC_MISSING}; or plan with HiGHS, the default (--solver highs)"
    assert str(caught.value) == expected


@pytest.mark.usefixtures("ilp_only")
def test_cbc_missing_is_found_before_python_mip_logs_about_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "cbcbox", None)  # as if it were not installed
    monkeypatch.delenv("PMIP_CBC_LIBRARY", raising=False)
    with pytest.raises(SolverError, match=r"^the CBC solver cannot be loaded: .*cbcbox"):
        plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256, solver="cbc")


@pytest.mark.usefixtures("ilp_only")
def test_neither_solver_loading_is_one_error_naming_both(monkeypatch) -> None:
    _without_libraries(monkeypatch, "HiGHS", "CBC")
    with pytest.raises(SolverError) as caught:
        plan_wd(knapsack_the_greedy_gets_wrong(), 4 * 256)
    assert str(caught.value) == (
        "the HiGHS solver cannot be loaded: python-mip loads it from the highspy package, which "
        f"is missing, broken or too new (pip install 'highspy>=1.9,<1.16'), and {CBC_MISSING}"
    )


def test_plan_with_cbc_missing_says_so_in_one_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['cbcbox'] = None\n"
        "import ucudnn.planner.wd.search\n"
        "ucudnn.planner.wd.search.DP_WORK_LIMIT = 0  # the ILP decides\n"
        "from ucudnn.faces.cli import main\n"
        "sys.exit(main(['plan', 'resnet50', '--model', '--mode', 'wd', '--total-workspace',"
        " '8MiB', '--solver', 'cbc', '-q']))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PMIP_CBC_LIBRARY"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env,
        cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"ucudnn plan: error: {CBC_MISSING}; or plan with HiGHS, the default (--solver highs)\n"
    )


def test_the_packages_the_solver_errors_name_are_the_ones_depended_on() -> None:
    """HiGHS's as ucudnn pins it; CBC's as python-mip requires it."""
    with (Path(__file__).resolve().parents[1] / "pyproject.toml").open("rb") as file:
        metadata = tomllib.load(file)["tool"]["scikit-build"]["metadata"]
    assert HIGHS_PACKAGE in metadata["dependencies"]["result"]
    mip_needs = [r.split(">")[0].split(";")[0].strip() for r in importlib.metadata.requires("mip")]
    assert CBC_PACKAGE in mip_needs
