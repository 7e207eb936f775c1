"""Micro-batches run by cuDNN graph-API engine configurations, with the legacy API behind them.

An execution plan is built for fixed shapes, byte alignments, alpha and beta, so a part's
launch builds (once) the plan for the pointers and scalars it is called with: the alignment
declared is the one the pointers really have (`graph.alignment`), never more. Plans live in the
Handle's `EngineRuns` and in each launch's own small table, so a repeated call costs one lookup.

Any failure to build or run a plan falls back, for that part, to the legacy algorithm with the
least workspace that runs within the part's workspace: the answer is still right, the Handle
warns once, and that configuration's parts of that size and kernel run legacy algorithms from
then on, in every launch of the Handle (which plans the kernel again without them). A plan
that failed to build has run nothing, so running its part again cannot apply beta twice; an
execution refused with a status is taken to have written nothing either (cuDNN checks before
it launches), which only hardware can confirm.
"""

from __future__ import annotations

import logging

from ucudnn._native import _cudnn
from ucudnn.core.engines import EngineConfig, parse_tag
from ucudnn.errors import CudnnError, EngineFallbackWarning, warn_caller
from ucudnn.runtime import backend, graph
from ucudnn.runtime.graph import GraphPlan, GraphPlans

logger = logging.getLogger(__name__)


class EngineRuns:
    """One Handle's built plans and the engine configurations that failed at run time."""

    def __init__(self, turn_off: str | None = None) -> None:
        """`turn_off` says how its user turns engines off (the fallback warning advises it);
        None: no advice (say, engines are off already)."""
        self.plans = GraphPlans()
        self._turn_off = turn_off
        # (problem key, kernel, tag, micro-batch): parts that now run legacy algorithms.
        self.failed: set[tuple[str, str, str, int]] = set()
        self._warned = False

    def plan(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        micro_batch: int,
        config: EngineConfig,
        alignments: tuple[int, int, int],
        alpha: float,
        beta: float,
    ) -> GraphPlan:
        problem = descs.part(micro_batch)
        return self.plans.plan(handle, problem, kernel, config, alignments, alpha, beta)

    def fell_back(self, where: str, tag: str, reason: str, algo: int) -> None:
        """Note a part that left its engine for legacy `algo`; the first time, warn."""
        logger.info(
            "%s: engine %s failed (%s); legacy algorithm %d runs it", where, tag, reason, algo
        )
        if not self._warned:
            self._warned = True
            advice = f"; {self._turn_off} avoids engines" if self._turn_off else ""
            warn_caller(
                f"{where}: cuDNN could not run engine configuration {tag} "
                f"({reason}); that part runs the legacy algorithm {algo} instead, "
                f"with the same result (warned once per handle{advice})",
                EngineFallbackWarning,
            )

    def clear(self) -> None:
        """Forget every built plan (the Handle is closing)."""
        self.plans.clear()


def prepared_engine_run(
    descs: backend.ProblemDescriptors,
    kernel: str,
    micro_batch: int,
    tag: str,
    runs: EngineRuns,
) -> backend.PreparedRun:
    """The launch of one part by engine configuration `tag`, called like
    `backend.prepared_run`'s: (handle, alpha, beta, x, w, y, workspace, workspace_bytes)."""
    config = parse_tag(tag)
    key = (descs.problem.key(), kernel, config.tag, micro_batch)
    built: dict[tuple[int, int, int, float, float], GraphPlan] = {}
    legacy: list[backend.PreparedRun] = []  # the fallback, once a plan failed

    def call(
        handle: _cudnn.Handle,
        alpha: float,
        beta: float,
        x: int,
        w: int,
        y: int,
        workspace: int,
        workspace_bytes: int,
    ) -> bool:
        if legacy:
            return legacy[0](handle, alpha, beta, x, w, y, workspace, workspace_bytes)
        if key in runs.failed:  # failed in another launch of this Handle: warned already
            found = legacy_fallback(handle, descs, kernel, micro_batch, workspace_bytes)
            if found is not None:
                legacy.append(found[0])
                return found[0](handle, alpha, beta, x, w, y, workspace, workspace_bytes)
        plan_key = (graph.alignment(x), graph.alignment(w), graph.alignment(y), alpha, beta)
        try:
            plan = built.get(plan_key)
            if plan is None:
                plan = runs.plan(
                    handle, descs, kernel, micro_batch, config, plan_key[:3], alpha, beta
                )
                if plan.workspace_bytes > workspace_bytes:
                    raise _Unusable(
                        f"its plan needs {plan.workspace_bytes} bytes of workspace, more than "
                        f"the {workspace_bytes} its part was planned with"
                    )
                built[plan_key] = plan
            graph.run_plan(handle, plan, x, w, y, workspace)
            return False
        except (CudnnError, _Unusable) as exc:
            reason = exc.status_name if isinstance(exc, CudnnError) else str(exc)
            where = f"{kernel} of {descs.problem.describe()} at micro-batch {micro_batch}"
            found = legacy_fallback(handle, descs, kernel, micro_batch, workspace_bytes)
            if found is None:
                exc.add_note(
                    f"while running {where} with engine configuration {config.tag}; no legacy "
                    f"algorithm runs it within {workspace_bytes} bytes of workspace either"
                )
                raise
            fallback, algo = found
            fallback(handle, alpha, beta, x, w, y, workspace, workspace_bytes)
            legacy.append(fallback)
            runs.failed.add(key)
            runs.fell_back(where, config.tag, reason, algo)
            return True

    return call


class _Unusable(Exception):
    """A plan that built but cannot serve its part (it wants more workspace than planned)."""


def legacy_fallback(
    handle: _cudnn.Handle,
    descs: backend.ProblemDescriptors,
    kernel: str,
    micro_batch: int,
    workspace_bytes: int,
) -> tuple[backend.PreparedRun, int] | None:
    """The legacy algorithm with the least workspace that cuDNN accepts for this part within
    `workspace_bytes`, under the problem's own math type, prepared; None if there is none."""
    math_type = descs.problem.math_type
    sizes = []
    for algo in range(len(_cudnn.ALGORITHMS[kernel])):
        try:
            need = backend.workspace_size(handle, descs, kernel, micro_batch, algo, math_type)
        except CudnnError:
            continue  # not for this problem
        if need <= workspace_bytes:
            sizes.append((need, algo))
    if not sizes:
        return None
    algo = min(sizes)[1]
    return backend.prepared_run(descs, kernel, micro_batch, algo, math_type), algo
