"""The Handle's planning methods: the kernels it has seen, the plan it keeps, and the calls
that change the plan (register, finalize, replan, use_plan) or ask about it (schedule,
workspace_size).

They are the public face of the plan book (`plan_book.py`). `Handle` inherits them and keeps,
in `handle.py`, the calls that run convolutions, so that their path reads in one file.
"""

from __future__ import annotations

from collections.abc import Iterable

from ucudnn.core.argtypes import Size
from ucudnn.core.problem import KERNELS, ConvProblem, check_kernel, check_problem
from ucudnn.planner.plan import Plan
from ucudnn.planner.policies import Policy
from ucudnn.planner.tables import Schedule
from ucudnn.runtime.engines_setting import EnginesSetting
from ucudnn.runtime.launches import Launches
from ucudnn.runtime.options import layer_option, replan_limit
from ucudnn.runtime.plan_book import PlanBook
from ucudnn.runtime.slots import Slot


class HandlePlanning:
    """What a Handle plans with: its plan book, its compiled kernels (dropped whenever the plan
    changes) and its engine setting."""

    def __init__(self, book: PlanBook, launches: Launches, engines: EnginesSetting) -> None:
        self._book, self._launches, self.engines = book, launches, engines
        self._workspace = book.workspace

    @property
    def mode(self) -> str:
        """The mode: "wr" (a limit per kernel) or "wd" (one budget for the network)."""
        return self._book.mode

    @property
    def limit(self) -> int:
        """The workspace limit per kernel (WR) or the budget (WD), in bytes."""
        return self._book.limit

    @property
    def policy(self) -> Policy:
        """The micro-batch sizes planned with."""
        return self._book.policy

    @property
    def slab_policy(self) -> Policy:
        """The slab extents planned with, at each micro-batch size."""
        return self._book.slab_policy

    @property
    def plan(self) -> Plan | None:
        """The plan in use; None before the first kernel is planned."""
        return self._book.plan

    # -- queries ----------------------------------------------------------------------------
    def schedule(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> Schedule:
        """The micro-batches and algorithms this kernel runs with (plans it if needed).

        Raises:
            TypeError: `problem` is not a ConvProblem, or the layer name is not text.
            ValueError: an unknown kernel, or a layer name that cannot be one.
            InfeasibleError, SolverError, CudaError, CudnnError: planning fails, as for
                `forward`.
        """
        return self._book.kernel_plan(self._slot(problem, kernel, layer)).schedule

    def workspace_size(self, problem: ConvProblem, kernel: str, layer: str | None = None) -> int:
        """Workspace bytes the kernel's schedule uses (the handle owns and provides them).

        Raises:
            TypeError, ValueError, InfeasibleError, SolverError, CudaError, CudnnError: as
                `schedule` does.
        """
        return self.schedule(problem, kernel, layer).workspace_bytes

    @property
    def workspace_in_use(self) -> int:
        """Bytes of device memory the handle holds for workspaces now."""
        return self._workspace.capacity

    # -- network-wide planning (WD) ---------------------------------------------------------
    def register(
        self, problem: ConvProblem, kernels: Iterable[str] = KERNELS, layer: str | None = None
    ) -> None:
        """Declare kernels that will run, so WD can plan the network as a whole.

        Raises:
            TypeError: `problem` is not a ConvProblem, or the layer name is not text.
            ValueError: an unknown kernel, or a layer name that cannot be one.
        """
        for kernel in [kernels] if isinstance(kernels, str) else kernels:
            self._slot(problem, kernel, layer)

    def finalize(self) -> Plan:
        """Plan every kernel seen so far together (WD), or each alone (WR), and keep it; build
        now the execution plans of the parts that engine configurations run, so that the first
        convolution compiles nothing.

        A kernel that cannot be planned (InfeasibleError, or NoAlgorithmError when cuDNN runs
        none of its algorithms) is forgotten and named in the error; the others are planned
        without it, and those planned before keep their schedules in WR.

        Raises:
            InfeasibleError: a kernel has no schedule within the limit or budget;
                NoAlgorithmError, a subclass, when cuDNN runs none of its algorithms.
            SolverError: in WD mode, the solver fails.
            CudaError, CudnnError: a CUDA or cuDNN call fails while measuring or building.
        """
        plan = self._book.plan_missing()
        self._launches.build_ahead(plan, self._book.slots)
        return plan

    def replan(
        self,
        *,
        workspace_limit: Size | None = None,
        total_workspace: Size | None = None,
    ) -> Plan:
        """Change the limit (or budget) and plan again; measurements come from the cache.

        Raises:
            TypeError: a size neither an integer nor text.
            ValueError: the limit of the other mode (workspace_limit in WD mode,
                total_workspace in WR mode), or text that is no size.
            InfeasibleError, SolverError, CudaError, CudnnError: planning fails, as for
                `finalize`; the previous plan and limit are kept.
        """
        return self._book.replan(
            replan_limit(self.mode, self.limit, workspace_limit, total_workspace)
        )

    def use_plan(self, plan: Plan) -> None:
        """Run `plan` from now on: one made offline (`Plan.from_json` of `ucudnn plan
        --json`), or by the planner from this handle's own tables.

        Its kernels must be ones this handle has seen (register them first), under the names it
        knows them by (their layer names), at their problems' batch; it must be a plan of this
        handle's mode within its limit or budget, and deterministic if the handle is. Kernels it
        leaves out are planned when first used, as before (in WD mode, with the whole network).

        Its parts run within the workspace the plan gives their kernel. Where cuDNN asks more
        for a legacy part than that (or refuses its algorithm), that part runs the legacy
        algorithm with the least workspace instead, with one WorkspaceFallbackWarning per
        handle, as a part whose engine configuration fails falls back with an
        EngineFallbackWarning; the answer is the same, the time may not be.

        Raises:
            TypeError: `plan` is not a Plan.
            ValueError: the plan is of the other mode, needs more workspace than the limit or
                budget, names a kernel the Handle has not seen or another batch, runs an
                algorithm that is not deterministic on a deterministic Handle, or runs engine
                configurations on a Handle whose engines are off (`self.engines`).
        """
        self._book.use(plan, self.engines)

    def release_workspace(self) -> None:
        """Free the workspace now (say, before a memory-hungry phase); the next call that
        needs it allocates it again, falling back to smaller plans if memory is short."""
        self._workspace.release()

    def _slot(self, problem: ConvProblem, kernel: str, layer: str | None) -> Slot:
        check_kernel(kernel)
        check_problem(problem)
        return self._book.slots.get(problem, kernel, layer_option(layer))
