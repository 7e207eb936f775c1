"""The engine configurations of one kernel at one micro-batch size, measured for the search:
what the heuristics offer, plans built in waves (on threads when there are several), timings
with CUDA events, and the beta-1 plans a split of backward filter runs.

Plans are built for the byte alignments of the pointers the size is timed at."""

from __future__ import annotations

import dataclasses
import logging

from ucudnn._native import _cudnn
from ucudnn.core import engines
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import Measurement
from ucudnn.planner.search import ENGINE, Offer, Trial
from ucudnn.runtime import graph
from ucudnn.runtime.size_bench import AtSize, status_of

logger = logging.getLogger(__name__)

PRUNED = "PRUNED"  # a configuration the search did not build: it could not win (no time)
# A backward-filter configuration measured at a split size whose beta-1 plan was never built
# (nothing needed to know): it serves no split until it is measured again.
BETA1_UNCHECKED = "BETA1_UNCHECKED"

EngineId = tuple[str, str]  # (ENGINE, tag)
Built = graph.GraphPlan | CudnnError  # a plan, or why it did not build


@dataclasses.dataclass
class EnginesAtSize(AtSize):
    """The heuristics' offers, their plans and timings."""

    def __post_init__(self) -> None:
        self._choices: dict[EngineId, graph.EngineChoice] = {}
        self._plans: dict[EngineId, graph.GraphPlan] = {}
        self._beta1: dict[EngineId, graph.GraphPlan] = {}
        self._beta1_graph: _cudnn.BackendDescriptor | None = None
        at = self.at
        self._alignments = (
            graph.alignment(at["x"]),
            graph.alignment(at["w"]),
            graph.alignment(at["y"]),
        )

    def offers(self) -> list[Offer]:
        """The configurations the heuristics offer that the problem's math type and the cap
        allow, in the heuristics' order; none when cuDNN offers none."""
        try:
            op_graph = self._operation_graph(beta=0.0)
            choices = graph.heuristic_choices(op_graph, graph.HEURISTIC_MODES)
        except CudnnError as exc:
            logger.info(
                "no engine configurations for %s of %s: %s",
                self.kernel, self.problem.describe(), exc,
            )  # fmt: skip
            return []
        offers = []
        for choice in choices:
            key: EngineId = (ENGINE, choice.config.tag)
            self._choices[key] = choice
            if engines.refusal(choice.notes, self.problem.dtype, self.problem.math_type, False):
                self._failed(key, "REFUSED_BY_NOTES")
            elif (choice.workspace_bytes or 0) > self.bench.workspace_cap:
                self._failed(key, "WORKSPACE_OVER_CAP")
            else:
                deterministic = engines.deterministic_of(choice.notes)
                offers.append(Offer(key, choice.workspace_bytes, deterministic))
        return offers

    def build(self, offers: list[Offer]) -> list[Built]:
        """The plans of `offers`, built together on the build threads (cuDNN built 6,000 plans
        alike on 1, 4 and 8 threads sharing one handle: benchmarks/results/
        2026-11-27-h200-plan-build-threads.md); nothing is launched meanwhile."""
        if self.bench.builders is None or len(offers) == 1:
            return [self._build(offer) for offer in offers]
        return list(self.bench.builders.map(self._build, offers))

    def _build(self, offer: Offer) -> Built:
        choice = self._choices[offer.config]  # type: ignore[index]
        try:
            return graph.build_plan(self.bench.handle, choice.descriptor, choice.config.tag)
        except CudnnError as exc:
            return exc

    def time_built(self, offer: Offer, built: Built, warmup: int, runs: int) -> Trial | None:
        key: EngineId = offer.config  # type: ignore[assignment]
        if isinstance(built, CudnnError):
            self._failed(key, built.status_name)
            return None
        if built.workspace_bytes > self.bench.workspace_cap:
            self._failed(key, "WORKSPACE_OVER_CAP")
            return None
        self._plans[key] = built
        times = self._time_plan(key, built, warmup, runs)
        if times is None:
            return None
        return Trial(key, ENGINE, built.workspace_bytes, times, offer.deterministic)

    def split_ok(self, trial: Trial) -> bool:
        """Whether the configuration's beta-1 plan builds within the cap; its workspace then
        counts in the candidate's (on an H100 it may need more than the beta-0 plan)."""
        key: EngineId = trial.config  # type: ignore[assignment]
        config = self._choices[key].config
        try:
            if self._beta1_graph is None:
                self._beta1_graph = self._operation_graph(beta=1.0)
            plan = graph.build_plan(
                self.bench.handle, graph.engine_config(self._beta1_graph, config), config.tag
            )
        except CudnnError as exc:
            logger.debug("%s does not build with beta 1: %s", config.tag, exc)
            return False
        if plan.workspace_bytes > self.bench.workspace_cap:
            return False
        self._beta1[key] = plan
        trial.workspace_bytes = max(trial.workspace_bytes, plan.workspace_bytes)
        return True

    def time(self, trial: Trial, beta: float, warmup: int, runs: int) -> list[float] | None:
        """`trial`'s plan timed again: the beta-1 plan when `beta` is 1."""
        key: EngineId = trial.config  # type: ignore[assignment]
        plan = self._beta1[key] if beta == 1.0 else self._plans[key]
        return self._time_plan(key, plan, warmup, runs)

    def pruned(self, keys: list[object]) -> None:
        """Record the configurations the search left unbuilt."""
        for key in keys:
            self._failed(key, PRUNED)  # type: ignore[arg-type]

    def candidate_fields(self, trial: Trial) -> tuple[int, str, str, bool, tuple[str, ...]]:
        """(engine index, tag, math type, deterministic, notes) of a timed candidate."""
        choice = self._choices[trial.config]  # type: ignore[index]
        math_type = engines.math_type_of(self.problem.dtype, choice.notes)
        notes = (*choice.notes, *self._split_notes(trial))
        deterministic = engines.deterministic_of(choice.notes)
        return choice.config.index, choice.config.tag, math_type, deterministic, notes

    def _split_notes(self, trial: Trial) -> tuple[str, ...]:
        if not self.split or trial.split_ok:
            return ()
        return (BETA1_UNCHECKED,) if trial.split_ok is None else (engines.BETA1_UNSUPPORTED,)

    def _operation_graph(self, beta: float) -> _cudnn.BackendDescriptor:
        return graph.operation_graph(
            self.bench.handle, self.problem, self.kernel, self._alignments, 1.0, beta
        )

    def _time_plan(
        self, key: EngineId, plan: graph.GraphPlan, warmup: int, runs: int
    ) -> list[float] | None:
        try:
            workspace = self.bench.workspace.ensure(plan.workspace_bytes).ptr
            x, w, y = self.at["x"], self.at["w"], self.at["y"]
            handle = self.bench.handle
            return self.bench.time(
                lambda: graph.run_plan(handle, plan, x, w, y, workspace), warmup, runs
            )
        except (CudnnError, CudaOutOfMemoryError) as exc:
            self._failed(key, status_of(exc))
            return None

    def _failed(self, key: EngineId, status: str) -> None:
        choice = self._choices[key]
        math_type = engines.math_type_of(self.problem.dtype, choice.notes)
        failed = Measurement.failed(
            self.micro_batch, choice.config.index, math_type, status, engine=choice.config.tag
        )
        self.failed[key] = dataclasses.replace(failed, notes=choice.notes)
