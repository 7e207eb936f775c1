"""The device side of the first-use search (`ucudnn.planner.search`) for one kernel of one
problem at one micro-batch size: cuDNN Find's trial of the legacy algorithms, engine plans
built in waves (on threads when there are several), timings with CUDA events, and the beta-1
plans of backward filter. What it measured comes back as the cache's Measurements.

Everything runs where a part of this size is least aligned (`steps.benchmark_first_sample`),
and engine plans are built for the byte alignments of those pointers. A split of backward
filter adds each later part to dW with beta = 1, so at a split size a confirmed time is the
beta-1 plan's (engines) or the call with beta 1 (legacy): the time of what will run.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
from collections.abc import Callable

from ucudnn._native import _cudnn
from ucudnn.core import engines
from ucudnn.core.arena import Arena, GrowingArena
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import Measurement
from ucudnn.planner.search import ENGINE, LEGACY, Device, Offer, SizeSearch, Trial
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend, graph
from ucudnn.runtime.timing import Timer

logger = logging.getLogger(__name__)

PRUNED = "PRUNED"  # a configuration the search did not build: it could not win (no time)
# A backward-filter configuration measured at a split size whose beta-1 plan was never built
# (nothing needed to know): it serves no split until it is measured again.
BETA1_UNCHECKED = "BETA1_UNCHECKED"

LegacyId = tuple[str, int, str]  # (LEGACY, algorithm, math type)
EngineId = tuple[str, str]  # (ENGINE, tag)
Built = graph.GraphPlan | CudnnError  # a plan, or why it did not build


def config_id(measurement: Measurement) -> LegacyId | EngineId:
    """What names a measurement's candidate across sizes."""
    if measurement.engine:
        return (ENGINE, measurement.engine)
    return (LEGACY, measurement.algo, measurement.math_type)


@dataclasses.dataclass
class Bench:
    """What every size measured in one benchmark shares: the handle and its stream's timer,
    one growing workspace, the caps and counts of the settings, and the build threads."""

    handle: _cudnn.Handle
    timer: Timer
    workspace: GrowingArena
    workspace_cap: int
    builders: concurrent.futures.ThreadPoolExecutor | None  # None: build on this thread
    wave: int = 1  # configurations built together: one per build thread

    def time(self, launch: Callable[[], object], warmup: int, runs: int) -> list[float]:
        return self.timer.times_ms(launch, warmup, runs)


class SizeOnDevice:
    """One size of one kernel, measured for `ucudnn.planner.search.search_size`."""

    def __init__(
        self,
        bench: Bench,
        problem: ConvProblem,
        kernel: str,
        at: dict[str, int],
        split: bool,
        engines_on: bool,
    ) -> None:
        self.bench = bench
        self.problem = problem  # its batch is the micro-batch
        self.kernel = kernel
        self.at = at  # x, w and y where this size is timed
        self.split = split
        self.engines_on = engines_on
        self.micro_batch = problem.batch
        self.failed: dict[object, Measurement] = {}  # by candidate: why it has no time
        self._legacy: dict[LegacyId, tuple[int, bool]] = {}  # workspace, deterministic
        self._runs: dict[LegacyId, backend.PreparedRun] = {}
        self._choices: dict[EngineId, graph.EngineChoice] = {}
        self._plans: dict[EngineId, graph.GraphPlan] = {}
        self._beta1: dict[EngineId, graph.GraphPlan] = {}
        self._beta1_graph: _cudnn.BackendDescriptor | None = None
        self._descs = backend.ProblemDescriptors(problem)
        self._alignments = (
            graph.alignment(at["x"]),
            graph.alignment(at["w"]),
            graph.alignment(at["y"]),
        )

    def device(self) -> Device[Built]:
        return Device(
            legacy_screen=self.legacy_screen,
            build=self.build,
            time_engine=self.time_engine,
            time_again=self.time_again,
            split_ok=self.split_ok,
            wave=self.bench.wave,
        )

    # -- legacy algorithms --------------------------------------------------------------------
    def legacy_screen(self) -> list[Trial]:
        """Find's own trial of every algorithm, one launch each, as the legacy screen."""
        workspace, find_bytes = self._find_workspace(self._find_workspace_bytes())
        x, w, y = self.at["x"], self.at["w"], self.at["y"]
        perfs = backend.find(
            self.bench.handle, self._descs, self.kernel, self.micro_batch, x, w, y,
            workspace.ptr, find_bytes,
        )  # fmt: skip
        trials: dict[LegacyId, Trial] = {}
        for perf in perfs:
            # A caller who turned TF32 off (FMA) must never get a tensor-op variant, nor one
            # who allowed TF32 a float16 conversion.
            math_type = backend.candidate_math_type(self.problem.math_type, perf.math_type)
            key: LegacyId = (LEGACY, perf.algo, math_type)
            if key in trials or (key in self.failed and perf.status != 0):
                continue  # a run that worked beats one that failed, and counts once
            need = perf.status_name if perf.status != 0 else self._legacy_workspace(key)
            if isinstance(need, str):
                self.failed[key] = Measurement.failed(self.micro_batch, perf.algo, math_type, need)
                continue
            self.failed.pop(key, None)
            self._legacy[key] = (need, perf.deterministic)
            trials[key] = Trial(key, LEGACY, need, [perf.time_ms], perf.deterministic)
        return list(trials.values())

    def _legacy_workspace(self, key: LegacyId) -> int | str:
        """The workspace of a legacy variant under its own math type (which may need more than
        Find had), or the status that rules it out."""
        _, algo, math_type = key
        try:
            need = backend.workspace_size(
                self.bench.handle, self._descs, self.kernel, self.micro_batch, algo, math_type
            )
        except CudnnError as exc:
            return exc.status_name
        return "WORKSPACE_OVER_CAP" if need > self.bench.workspace_cap else need

    def _find_workspace(self, nbytes: int) -> tuple[Arena, int]:
        """Find's workspace: `nbytes`, or, when the device cannot give that much, the most it
        can, halving down to none (Find then reports what needs more as not run)."""
        while True:
            try:
                return self.bench.workspace.ensure(nbytes), nbytes
            except CudaOutOfMemoryError:
                if nbytes == 0:
                    raise
                logger.info("no memory for %d bytes of Find workspace; trying half", nbytes)
                nbytes = nbytes // 2 if nbytes > 1024 else 0

    def _find_workspace_bytes(self) -> int:
        """As much workspace as the hungriest algorithm within the cap needs, under the
        problem's math type (Find runs under it)."""
        need = 0
        # Every enum value of the kernel's algorithms. Not the max count: that sizes Find's
        # result list, which may count an algorithm once per math type, so it can exceed them.
        for algo in range(len(_cudnn.ALGORITHMS[self.kernel])):
            try:
                size = backend.workspace_size(
                    self.bench.handle, self._descs, self.kernel, self.micro_batch, algo,
                    self.problem.math_type,
                )  # fmt: skip
            except CudnnError:
                continue  # unsupported here; Find reports it with its status
            if size <= self.bench.workspace_cap:
                need = max(need, size)
        return need

    # -- engine configurations ------------------------------------------------------------
    def offers(self) -> list[Offer]:
        """The configurations the heuristics offer that the problem's math type and the cap
        allow, in the heuristics' order; none when engines are off or cuDNN offers none."""
        if not self.engines_on:
            return []
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
                self._engine_failed(key, "REFUSED_BY_NOTES")
            elif (choice.workspace_bytes or 0) > self.bench.workspace_cap:
                self._engine_failed(key, "WORKSPACE_OVER_CAP")
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

    def time_engine(self, offer: Offer, built: Built, warmup: int, runs: int) -> Trial | None:
        key: EngineId = offer.config  # type: ignore[assignment]
        if isinstance(built, CudnnError):
            self._engine_failed(key, built.status_name)
            return None
        if built.workspace_bytes > self.bench.workspace_cap:
            self._engine_failed(key, "WORKSPACE_OVER_CAP")
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
            self._engine_failed(key, _status(exc))
            return None

    def _engine_failed(self, key: EngineId, status: str) -> None:
        choice = self._choices[key]
        math_type = engines.math_type_of(self.problem.dtype, choice.notes)
        failed = Measurement.failed(
            self.micro_batch, choice.config.index, math_type, status, engine=choice.config.tag
        )
        self.failed[key] = dataclasses.replace(failed, notes=choice.notes)

    # -- timing again ---------------------------------------------------------------------
    def time_again(self, trial: Trial, warmup: int, runs: int, full: bool) -> list[float] | None:
        """A second look (the plan or call screened), or the full timing of what will run."""
        beta1 = full and self.split
        if trial.family == ENGINE:
            key: EngineId = trial.config  # type: ignore[assignment]
            plan = self._beta1[key] if beta1 else self._plans[key]
            return self._time_plan(key, plan, warmup, runs)
        return self._time_legacy(trial.config, 1.0 if beta1 else 0.0, warmup, runs)  # type: ignore[arg-type]

    def _time_legacy(
        self, key: LegacyId, beta: float, warmup: int, runs: int
    ) -> list[float] | None:
        _, algo, math_type = key
        need = self._legacy[key][0]
        try:
            workspace = self.bench.workspace.ensure(need).ptr
            # Prepared once, so the timed calls do only what a Handle's planned call does.
            if key not in self._runs:
                self._runs[key] = backend.prepared_run(
                    self._descs, self.kernel, self.micro_batch, algo, math_type
                )
            run, handle = self._runs[key], self.bench.handle
            x, w, y = self.at["x"], self.at["w"], self.at["y"]
            return self.bench.time(
                lambda: run(handle, 1.0, beta, x, w, y, workspace, need), warmup, runs
            )
        except (CudnnError, CudaOutOfMemoryError) as exc:
            self.failed[key] = Measurement.failed(self.micro_batch, algo, math_type, _status(exc))
            return None

    # -- the outcome ----------------------------------------------------------------------
    def measurements(self, size: SizeSearch) -> list[Measurement]:
        """Every candidate of the size: timed (screened or confirmed), pruned, or failed."""
        measured = [self._measurement(trial) for trial in size.trials.values()]
        for key in size.pruned:
            self._engine_failed(key, PRUNED)  # type: ignore[arg-type]
        failed = [m for key, m in self.failed.items() if key not in size.trials]
        return measured + failed

    def _measurement(self, trial: Trial) -> Measurement:
        notes: tuple[str, ...] = ()
        if trial.family == LEGACY:
            _, algo, math_type = trial.config  # type: ignore[misc]
            deterministic = self._legacy[trial.config][1]  # type: ignore[index]
            engine = ""
        else:
            choice = self._choices[trial.config]  # type: ignore[index]
            algo, engine = choice.config.index, choice.config.tag
            math_type = engines.math_type_of(self.problem.dtype, choice.notes)
            deterministic = engines.deterministic_of(choice.notes)
            notes = (*choice.notes, *self._split_notes(trial))
        candidate = Candidate(
            micro_batch=self.micro_batch,
            algo=algo,
            time_ms=trial.time_ms,
            workspace_bytes=trial.workspace_bytes,
            math_type=math_type,
            deterministic=deterministic,
            engine=engine,
        )
        return Measurement.timed(candidate, trial.times, notes, confirmed=trial.confirmed)

    def _split_notes(self, trial: Trial) -> tuple[str, ...]:
        if not self.split or trial.split_ok:
            return ()
        return (BETA1_UNCHECKED,) if trial.split_ok is None else (engines.BETA1_UNSUPPORTED,)


def _status(exc: CudnnError | CudaOutOfMemoryError) -> str:
    return exc.status_name if isinstance(exc, CudnnError) else exc.name
