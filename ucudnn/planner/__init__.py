"""The planner: pure Python, importable and testable with no GPU and no native module.

Benchmark tables go in (`TimingTables`), plans come out: `make_plan_wr` (a workspace limit per
kernel, by dynamic programming) or `make_plan_wd` (one budget for the whole network, by an
integer linear program over desirable sets); `explain_plan` says why each kernel got its
schedule; `ucudnn.planner.tune.tune` finds the training mini-batch size that runs fastest
within a memory size.

The names below load on first use, so importing one planner module does not load them all
(the solvers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ucudnn.core.lazy import lazy_exports

if TYPE_CHECKING:  # the lazily loaded names, for type checkers and IDEs
    from ucudnn.planner.cache import (
        BenchmarkCache as BenchmarkCache,
        inspect_cache as inspect_cache,
    )
    from ucudnn.planner.candidate import Candidate as Candidate
    from ucudnn.planner.config import (
        Config as Config,
        parse_policy as parse_policy,
        parse_size as parse_size,
    )
    from ucudnn.planner.errors import (
        InfeasibleError as InfeasibleError,
        NoAlgorithmError as NoAlgorithmError,
        SolverError as SolverError,
    )
    from ucudnn.planner.explain import (
        PlanExplanation as PlanExplanation,
        explain_plan as explain_plan,
    )
    from ucudnn.planner.graph import LayerGraph as LayerGraph
    from ucudnn.planner.kernel_table import KernelTable as KernelTable
    from ucudnn.planner.memory import (
        FrameworkOverhead as FrameworkOverhead,
        TrainingMemory as TrainingMemory,
        training_memory as training_memory,
    )
    from ucudnn.planner.networks import builtin_network as builtin_network
    from ucudnn.planner.pareto import (
        desirable_set as desirable_set,
        pareto_front as pareto_front,
        smallest_workspace as smallest_workspace,
    )
    from ucudnn.planner.plan import (
        baseline as baseline,
        make_plan_wd as make_plan_wd,
        make_plan_wr as make_plan_wr,
    )
    from ucudnn.planner.plan_types import KernelPlan as KernelPlan, Plan as Plan
    from ucudnn.planner.policies import (
        DEFAULT_POLICY as DEFAULT_POLICY,
        sizes_for_policy as sizes_for_policy,
    )
    from ucudnn.planner.schedule import Schedule as Schedule
    from ucudnn.planner.tables import TimingTables as TimingTables
    from ucudnn.planner.tune import TuneResult as TuneResult
    from ucudnn.planner.wd import WDSolution as WDSolution, plan_wd as plan_wd
    from ucudnn.planner.wr import plan_wr as plan_wr

_EXPORTS = {
    **dict.fromkeys(["BenchmarkCache", "inspect_cache"], ".cache"),
    **dict.fromkeys(["Config", "parse_policy", "parse_size"], ".config"),
    **dict.fromkeys(["InfeasibleError", "NoAlgorithmError", "SolverError"], ".errors"),
    **dict.fromkeys(["PlanExplanation", "explain_plan"], ".explain"),
    "LayerGraph": ".graph",
    "builtin_network": ".networks",
    **dict.fromkeys(["desirable_set", "pareto_front", "smallest_workspace"], ".pareto"),
    **dict.fromkeys(["KernelPlan", "Plan"], ".plan_types"),
    **dict.fromkeys(["baseline", "make_plan_wd", "make_plan_wr"], ".plan"),
    **dict.fromkeys(["DEFAULT_POLICY", "sizes_for_policy"], ".policies"),
    "Candidate": ".candidate",
    "KernelTable": ".kernel_table",
    "Schedule": ".schedule",
    "TimingTables": ".tables",
    **dict.fromkeys(["FrameworkOverhead", "TrainingMemory", "training_memory"], ".memory"),
    "TuneResult": ".tune",
    **dict.fromkeys(["WDSolution", "plan_wd"], ".wd"),
    "plan_wr": ".wr",
}
__all__ = sorted(_EXPORTS)
if not TYPE_CHECKING:  # checkers see the imports above, and so flag a name that is not there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
