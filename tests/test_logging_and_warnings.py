"""The library never prints: it logs to the "ucudnn" logger and warns with UcudnnWarning, so
that users can filter both. These tests read the source for what it must never do, and run
the planner, the cache and the library loader for what they log and warn."""

from __future__ import annotations

import ast
import inspect
import logging
import re
import warnings
from pathlib import Path

import pytest

import ucudnn
from tests.test_planner_cache import FACTS, PROBLEM, ok
from ucudnn import errors
from ucudnn.core.libraries import library_specs, load_library
from ucudnn.errors import CacheWarning, SlowPlanWarning, UcudnnWarning
from ucudnn.faces.cli import main
from ucudnn.faces.commands import MODEL_NOTE
from ucudnn.planner.cache import BenchmarkCache
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.plan import make_plan_wd, make_plan_wr
from ucudnn.planner.synthetic import model_tables
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables
from ucudnn.planner.units import format_size

MiB = 1 << 20
UNIT = 256  # WD's alignment: workspaces count in these units

PACKAGE = Path(ucudnn.__file__).parent


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


# The command line's own modules: the only ones that may write to the terminal.
CLI_MODULES = {"ucudnn/faces/cli.py", "ucudnn/faces/commands.py", "ucudnn/faces/parser.py"}
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}


def terminal_writes(tree: ast.AST) -> list[int]:
    """Lines that print, or use sys.stdout or sys.stderr for anything but asking isatty()."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    return sorted(node.lineno for node in ast.walk(tree) if _writes(node, parents))


def _writes(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "print"
    if isinstance(node, ast.ImportFrom):
        return node.module == "sys" and any(alias.name in STREAMS for alias in node.names)
    if isinstance(node, ast.Attribute) and node.attr in STREAMS:
        parent = parents[node]
        asks = isinstance(parent, ast.Attribute) and parent.attr == "isatty"
        return isinstance(node.value, ast.Name) and node.value.id == "sys" and not asks
    return False


def test_the_library_never_prints_only_the_command_line_does() -> None:
    written = {}
    for path in modules():
        name = path.relative_to(PACKAGE.parent).as_posix()
        lines = terminal_writes(ast.parse(path.read_text(), str(path)))
        if lines and name not in CLI_MODULES:
            written[name] = lines
    assert written == {}
    assert all(terminal_writes(ast.parse((PACKAGE.parent / m).read_text())) for m in CLI_MODULES)


def test_the_search_for_terminal_writes_finds_each_kind() -> None:
    source = """
import sys
from sys import stderr
print("x")
sys.stderr.write("x")
def f(out=sys.stdout): ...
if sys.stderr.isatty(): ...
"""
    assert terminal_writes(ast.parse(source)) == [3, 4, 5, 6]


def warning_classes() -> list[type[Warning]]:
    return [
        c
        for _, c in inspect.getmembers(errors, inspect.isclass)
        if issubclass(c, Warning) and c.__module__ == errors.__name__
    ]


def test_every_warning_class_is_a_ucudnn_warning_and_a_user_warning() -> None:
    assert ucudnn.UcudnnWarning is UcudnnWarning
    assert len(warning_classes()) > 1
    for category in warning_classes():
        assert issubclass(category, UcudnnWarning) and issubclass(category, UserWarning)


def _category(call: ast.Call) -> ast.expr | None:
    keywords = [k.value for k in call.keywords if k.arg == "category"]
    return call.args[1] if len(call.args) > 1 else (keywords[0] if keywords else None)


def test_every_warning_the_library_issues_has_a_ucudnn_category() -> None:
    found = 0
    for path in modules():
        for call in calls(ast.parse(path.read_text(), str(path))):
            func = call.func
            warns = isinstance(func, ast.Attribute) and func.attr == "warn"
            if not (warns or (isinstance(func, ast.Name) and func.id == "warn_caller")):
                continue
            category = _category(call)
            place = f"{path.relative_to(PACKAGE.parent)}:{call.lineno}"
            assert isinstance(category, ast.Name), f"{place}: warns without a category"
            if path.name == "errors.py" and category.id == "category":
                continue  # warn_caller passes on its argument, typed type[UcudnnWarning]
            assert issubclass(getattr(errors, category.id, type), UcudnnWarning), place
            found += 1
    assert found >= 6  # the cache's, the Handle's, the solver's and the slow plan's


def test_filtering_ucudnn_warning_silences_the_librarys_warnings(tmp_path: Path) -> None:
    unusable = tmp_path / "a-file" / "cache.sqlite"  # its parent is a file, not a directory
    unusable.parent.write_text("")
    with pytest.warns(CacheWarning, match="cannot be used"):
        BenchmarkCache(unusable).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=UcudnnWarning)
        BenchmarkCache(unusable).close()


# -- logging ------------------------------------------------------------------------------
LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}


def test_log_calls_format_lazily() -> None:
    """A record's text is built only when it is shown: a literal with %-arguments, never an
    f-string, str.format or % in the call itself."""
    found = 0
    for path in modules():
        for call in calls(ast.parse(path.read_text(), str(path))):
            func = call.func
            if not (isinstance(func, ast.Attribute) and func.attr in LOG_METHODS):
                continue
            if not (isinstance(func.value, ast.Name) and func.value.id == "logger"):
                continue
            message = call.args[1 if func.attr == "log" else 0]
            place = f"{path.relative_to(PACKAGE.parent)}:{call.lineno}"
            assert isinstance(message, ast.Constant) and isinstance(message.value, str), place
            found += 1
    assert found >= 10


def test_every_module_logs_to_its_own_child_of_the_ucudnn_logger() -> None:
    found = 0
    for path in modules():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "logger":
                place = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
                assert ast.unparse(node.value) == "logging.getLogger(__name__)", place
                found += 1
    assert found >= 7


@pytest.fixture(scope="module")
def alexnet() -> TimingTables:
    graph = builtin_network("alexnet", batch=128)
    return model_tables((n, graph.problem(n), graph.kernels(n)) for n in graph.layers())


def test_a_plan_is_summed_up_at_info_and_each_kernel_shown_at_debug(alexnet, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ucudnn")
    plan = make_plan_wr(alexnet, 16 * MiB)
    records = [r for r in caplog.records if r.name == "ucudnn.planner.plan"]
    summary, *kernels = records
    assert summary.levelno == logging.INFO
    assert summary.getMessage().startswith(
        f"WR plan of 15 kernels, per-kernel limit 16 MiB, policy powerOfTwo: "
        f"{plan.time_ms:.3f} ms predicted against {plan.baseline_time_ms:.3f} ms undivided "
        f"(speedup {plan.speedup:.2f}x)"
    )
    assert [r.levelno for r in kernels] == [logging.DEBUG] * 15
    conv1 = plan["conv1", "forward"]
    assert kernels[0].getMessage() == (
        f"kernel conv1/forward: micro-batches {conv1.schedule.micro_batches_text()}, "
        f"algorithms {conv1.schedule.algos_text()}, "
        f"{format_size(conv1.workspace_bytes)} of workspace, {conv1.time_ms:.3f} ms "
        f"(baseline {conv1.baseline.time_ms:.3f} ms)"
    )


def test_a_plan_says_nothing_below_info_when_asked_for_info(alexnet, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ucudnn")
    make_plan_wd(alexnet, 64 * MiB)
    ours = [r for r in caplog.records if r.name.startswith("ucudnn.")]
    assert [(r.levelno, r.getMessage()[:15]) for r in ours] == [(logging.INFO, "WD plan of 15 k")]


def test_cache_hits_and_misses_are_logged_at_debug(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger="ucudnn.planner.cache")
    with BenchmarkCache(tmp_path / "db.sqlite") as cache:
        assert cache.lookup(PROBLEM, "forward", 4, FACTS) is None
        cache.store(PROBLEM, "forward", 4, FACTS, [ok(4, 0), ok(4, 1, 2.0)])
        assert cache.lookup(PROBLEM, "forward", 4, FACTS) is not None
    shape = PROBLEM.describe()
    assert [r.getMessage() for r in caplog.records] == [
        f"benchmark cache {tmp_path / 'db.sqlite'}: opened for writing",
        f"benchmark cache miss: forward of {shape} at micro-batch 4",
        f"benchmark cache hit, 2 results: forward of {shape} at micro-batch 4",
    ]
    assert {r.levelno for r in caplog.records} == {logging.DEBUG}


def test_the_library_files_tried_and_loaded_are_logged_at_debug(tmp_path: Path, caplog) -> None:
    broken, good = tmp_path / "broken", tmp_path / "good"
    for root in (broken, good):
        (root / "lib").mkdir(parents=True)
        (root / "lib" / "libcudnn.so.9").write_bytes(b"")

    def open_library(target: str) -> str:
        if target.startswith(str(broken)):
            raise OSError("invalid ELF header")
        return target

    packages = {"nvidia.cudnn": [str(broken)]}
    caplog.set_level(logging.DEBUG, logger="ucudnn.core.libraries")
    cudnn = library_specs(13)[0]
    load_library(cudnn, open_library, {"CUDNN_ROOT": str(good)}, packages.get, "/e")
    assert [r.getMessage() for r in caplog.records] == [
        f"could not load cuDNN from {broken}/lib/libcudnn.so.9 (the nvidia.cudnn package): "
        "invalid ELF header",
        f"loaded cuDNN from {good}/lib/libcudnn.so.9 (found by CUDNN_ROOT)",
    ]


# -- a plan slower than its baseline --------------------------------------------------------
def greedy_trap(small: int) -> tuple[TimingTables, int]:
    """Tables where WD's greedy start is slower than the undivided baseline, and the budget.

    One kernel saves 100 ms undivided with the whole budget; each of `small` others saves a
    little over 75/small ms per unit of workspace with a micro-batched schedule. The greedy
    spends the budget on those (75 ms saved); the optimum, like the undivided baseline, gives
    it all to the first (100 ms). The baseline's choice fits outright (no solver); the plan's
    needs the solver, which at small=3000 takes about 50 ms to prove it (measured)."""
    budget_units = 2 * small
    tables = [
        KernelTable("big", "forward", 2, [
            Candidate(2, 0, 100.0, 0), Candidate(2, 1, 0.0, budget_units * UNIT),
        ])
    ]  # fmt: skip
    for i in range(small):
        saved_per_unit = (75 + i / small) / small  # each a little different: no shared sets
        tables.append(
            KernelTable(f"small{i}", "forward", 2, [
                Candidate(2, 0, 100.0, 0), Candidate(1, 1, (100.0 - saved_per_unit) / 2, UNIT),
            ])
        )  # fmt: skip
    return TimingTables(tables), budget_units * UNIT


def test_a_wd_solver_stopped_early_can_plan_slower_than_the_baseline_and_warns(caplog) -> None:
    tables, budget = greedy_trap(3000)
    caplog.set_level(logging.INFO, logger="ucudnn")
    # The least time there is: the solver keeps the greedy solution it starts from.
    with pytest.warns(SlowPlanWarning, match="slower than its undivided baseline") as caught:
        plan = make_plan_wd(tables, budget, time_limit_s=1e-9)
    assert plan.solver_status == "feasible" and plan.time_ms > plan.baseline_time_ms
    message = str(caught[0].message)
    assert f"({plan.time_ms:.3f} ms against {plan.baseline_time_ms:.3f} ms)" in message
    assert "give it more time (time_limit_s, or ucudnn plan --time-limit)" in message
    assert caught[0].filename == __file__  # it names the caller of make_plan_wd
    assert "the highs solver stopped at its time limit" in caplog.text
    with warnings.catch_warnings():
        warnings.simplefilter("error", UcudnnWarning)
        optimal = make_plan_wd(tables, budget)  # time enough: the optimum, no warning
    assert optimal.solver_status == "optimal" and optimal.time_ms == optimal.baseline_time_ms


def test_a_kernel_slower_than_its_own_baseline_is_a_fair_trade_in_wd() -> None:
    """Two units of workspace: x saves 5 ms undivided with both; y saves 8 ms micro-batched
    with one. The baseline gives both to x; the plan gives one to y and leaves x slower than
    its own baseline, 3 ms faster in all, which is no reason to warn."""
    tables = TimingTables([
        KernelTable("x", "forward", 2, [Candidate(2, 0, 10.0, 0), Candidate(2, 1, 5.0, 2 * UNIT)]),
        KernelTable("y", "forward", 2, [Candidate(2, 0, 10.0, 0), Candidate(1, 1, 1.0, UNIT)]),
    ])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error", UcudnnWarning)
        plan = make_plan_wd(tables, 2 * UNIT)
    x = plan["x", "forward"]
    assert x.time_ms == 10.0 > x.baseline.time_ms == 5.0
    assert plan.time_ms == 12.0 < plan.baseline_time_ms == 15.0


# -- the command line: -v and -q ----------------------------------------------------------
PLAN = ["plan", "--model", "alexnet", "--batch", "32"]
SUMMARY = "ucudnn plan: WR plan of 15 kernels, per-kernel limit 64 MiB"


def stderr_lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


def test_the_default_shows_no_log_records_only_what_it_always_said(capsys) -> None:
    assert main(PLAN) == 0
    assert stderr_lines(capsys) == [f"planning from {MODEL_NOTE}"]


@pytest.mark.parametrize("argv", [["-v", *PLAN], [*PLAN, "-v"], [*PLAN, "--verbose"]])
def test_v_before_or_after_the_command_shows_the_plan_at_info(capsys, argv) -> None:
    assert main(argv) == 0
    lines = stderr_lines(capsys)
    assert len(lines) == 2 and lines[1].startswith(SUMMARY)


@pytest.mark.parametrize("argv", [["-vv", *PLAN], [*PLAN, "-vv"], ["-v", *PLAN, "-v"]])
def test_vv_shows_each_kernel_and_the_counts_add_up(capsys, argv) -> None:
    assert main(argv) == 0
    lines = stderr_lines(capsys)
    assert lines[1].startswith(SUMMARY) and len(lines) == 2 + 15
    assert lines[2].startswith("ucudnn plan: kernel conv1/forward: micro-batches ")


@pytest.fixture(scope="module")
def trap_csv(tmp_path_factory) -> tuple[Path, int]:
    tables, budget = greedy_trap(3000)
    path = tmp_path_factory.mktemp("trap") / "trap.csv"
    tables.write_csv(path)
    return path, budget


def slow_plan_argv(trap_csv: tuple[Path, int]) -> list[str]:
    path, budget = trap_csv
    argv = ["plan", "--timings", str(path), "--mode", "wd", "--total-workspace", str(budget)]
    return [*argv, "--time-limit", "1e-9"]


def test_a_warning_is_one_line_on_stderr_and_the_report_is_untouched(capsys, trap_csv) -> None:
    assert main(slow_plan_argv(trap_csv)) == 0
    out, err = capsys.readouterr()
    assert out.startswith("WD plan: total budget") and "ucudnn" not in out
    planning, warning = err.splitlines()
    assert planning.startswith("planning from timings file")
    assert warning.startswith("ucudnn plan: warning: the WD plan is predicted slower than its ")
    assert warning.endswith("give it more time (time_limit_s, or ucudnn plan --time-limit)")


@pytest.mark.parametrize("where", ["before", "after"])
def test_q_shows_errors_only(capsys, trap_csv, where: str) -> None:
    argv = slow_plan_argv(trap_csv)
    assert main(["-q", *argv] if where == "before" else [*argv, "-q"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("WD plan: total budget") and err == ""
    assert main(["-q", "plan", "--timings", "no-such.csv"]) == 2  # errors still show
    assert "no-such.csv" in capsys.readouterr().err


def test_q_and_v_together_are_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["-q", *PLAN, "-v"])
    assert exit_.value.code == 2
    assert "give -q or -v, not both" in capsys.readouterr().err


def test_the_command_leaves_logging_and_warnings_as_it_found_them(capsys) -> None:
    logger = logging.getLogger("ucudnn")
    before = (logger.level, logger.propagate, list(logger.handlers), warnings.showwarning)
    assert main(["-vv", *PLAN]) == 0
    assert (logger.level, logger.propagate, list(logger.handlers), warnings.showwarning) == before


def test_other_warnings_go_where_they_went_before(capsys) -> None:
    from ucudnn.faces import messages

    # pytest.warns stands for wherever warnings went before: it is entered first.
    with pytest.warns(DeprecationWarning, match="not ours") as caught, messages.shown(0):
        warnings.warn("not ours", DeprecationWarning, stacklevel=1)
        warnings.warn("ours", UcudnnWarning, stacklevel=1)
    assert [w.category for w in caught] == [DeprecationWarning]
    assert capsys.readouterr().err == "ucudnn: warning: ours\n"


@pytest.mark.gpu
def test_benchmark_progress_says_what_was_measured_and_what_the_cache_served(
    tmp_path: Path, caplog
) -> None:
    from ucudnn.core.problem import ConvProblem
    from ucudnn.runtime.handle import Handle

    problem = ConvProblem.create(8, 16, 16, (16, 16), 3, padding=1, math_type="fma")
    caplog.set_level(logging.DEBUG, logger="ucudnn.runtime.benchmark")
    # The second handle finds the first one's measurements in the cache; legacy algorithms
    # only, so that each benchmark measures one family's set.
    for _ in range(2):
        with Handle(
            workspace_limit="64MiB", policy="undivided", database=tmp_path / "db", engines=False
        ) as h:
            h.workspace_size(problem, "forward")
    records = [r for r in caplog.records if r.name == "ucudnn.runtime.benchmark"]
    first, second = (r.getMessage() for r in records if r.levelno == logging.INFO)
    assert first.startswith("benchmark of 1 kernels (fast search): 1 problem sizes measured, 0 ")
    assert second.startswith("benchmark of 1 kernels (fast search): 0 problem sizes measured, 1 ")
    assert "candidates: 0 screened" in second  # the cache served everything
    assert re.search(
        r"candidates: [1-9]\d* screened, \d+ of them screened out, \d+ pruned "
        r"unbuilt, [1-9]\d* confirmed",
        first,
    )
    measured, served = (r.getMessage() for r in records if r.levelno == logging.DEBUG)
    shape = problem.describe()
    assert measured.startswith(f"forward of {shape} at micro-batch 8: measured in ")
    assert served.startswith(f"forward of {shape} at micro-batch 8: served from the cache (")


@pytest.mark.gpu
def test_run_check_prints_each_result_even_when_quiet(tmp_path: Path, capsys) -> None:
    argv = ["run", "alexnet", "--batch", "8", "--repeats", "1", "--check", "-q"]
    assert main([*argv, "--database", str(tmp_path / "db")]) == 0
    out, err = capsys.readouterr()
    checks = [line for line in out.splitlines() if line.startswith("equivalence check of ")]
    assert len(checks) == 15 and all(line.endswith(" ok") for line in checks)
    assert err == ""
