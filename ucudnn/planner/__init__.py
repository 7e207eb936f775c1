"""The planner: pure Python, importable and testable with no GPU and no native module.

Benchmark tables go in (`TimingTables`), plans come out: `make_plan_wr` (a workspace limit per
kernel, by dynamic programming) or `make_plan_wd` (one budget for the whole network, by an
integer linear program over desirable sets).
"""

from ucudnn.planner.cache import BenchmarkCache, inspect_cache
from ucudnn.planner.config import Config, parse_policy, parse_size
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.pareto import desirable_set, pareto_front, smallest_workspace
from ucudnn.planner.plan import KernelPlan, Plan, baseline, make_plan_wd, make_plan_wr
from ucudnn.planner.policies import DEFAULT_POLICY, sizes_for_policy
from ucudnn.planner.tables import Candidate, KernelTable, Schedule, TimingTables
from ucudnn.planner.wd import WDSolution, plan_wd
from ucudnn.planner.wr import plan_wr

__all__ = [
    "DEFAULT_POLICY",
    "BenchmarkCache",
    "Candidate",
    "Config",
    "InfeasibleError",
    "KernelPlan",
    "KernelTable",
    "LayerGraph",
    "Plan",
    "Schedule",
    "SolverError",
    "TimingTables",
    "WDSolution",
    "baseline",
    "builtin_network",
    "desirable_set",
    "inspect_cache",
    "make_plan_wd",
    "make_plan_wr",
    "pareto_front",
    "parse_policy",
    "parse_size",
    "plan_wd",
    "plan_wr",
    "sizes_for_policy",
    "smallest_workspace",
]
