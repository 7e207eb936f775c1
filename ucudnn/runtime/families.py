"""The families of candidates a part can run: cuDNN's legacy algorithms (`backend`) and its
graph-API engine configurations (`graph`, `engine_calls`).

A family says its name in the cache's sources, how a part of it is prepared to run, why it
could not run within its workspace, what it builds ahead of the first call, and what workspace
an undivided run of it needs. The benchmark names the families it measures
(`measured_families`); the executor and the Handle dispatch on a part's family (`family_of`)
and know no family's calls. A new family is one more class here.
"""

from __future__ import annotations

import abc
import os
import re
from collections.abc import Mapping

from ucudnn._native import _cudnn
from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.engines import parse_tag
from ucudnn.errors import CudnnError
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend, graph
from ucudnn.runtime.engine_calls import EngineRuns, prepared_engine_run
from ucudnn.runtime.steps import Step

# Every configuration the heuristics' modes (A, then FALLBACK) rank.
ENGINE_FAMILY = "graph/" + "+".join(graph.HEURISTIC_MODES)
# cuDNN reads this variable itself and leaves out configurations needing more workspace (MiB),
# so what the heuristics offer depends on it: it is part of the engine family's name.
WORKSPACE_CAP_VARIABLE = "CUDNN_CONV_WSCAP_DBG"


class Family(abc.ABC):
    """What the benchmark, the executor and the Handle ask of a family of candidates. The
    defaults suit a family whose parts build nothing ahead and whose fit is only known when
    they run."""

    builds_ahead = False  # whether `build_ahead` builds anything

    @abc.abstractmethod
    def source(self, environ: Mapping[str, str]) -> str:
        """The family's name in the cache's sources, in a process with `environ`."""

    @abc.abstractmethod
    def prepared_run(
        self, descs: backend.ProblemDescriptors, kernel: str, step: Step, runs: EngineRuns
    ) -> backend.PreparedRun:
        """The launch of `step` (see `backend.PreparedRun`); `runs` keeps what it builds."""

    def unfit(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        step: Step,
        workspace_bytes: int,
    ) -> str | None:
        """Why `step` cannot run within `workspace_bytes` on this device, said for people; None
        if it can, or if that is only known when it runs."""
        return None

    def build_ahead(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        step: Step,
        beta: float,
        runs: EngineRuns,
    ) -> None:
        """Build now what the first call of `step` with alpha 1 and `beta` would build."""
        return None

    def workspace(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        part: Candidate,
    ) -> int:
        """The workspace of `part` run undivided on this device: as measured, unless the
        family can ask."""
        return part.workspace_bytes


class LegacyFamily(Family):
    """cuDNN's legacy algorithms: an enum value and a math type, run by one call each."""

    def source(self, environ: Mapping[str, str]) -> str:
        return "legacy"

    def prepared_run(
        self, descs: backend.ProblemDescriptors, kernel: str, step: Step, runs: EngineRuns
    ) -> backend.PreparedRun:
        return backend.prepared_run(descs, kernel, step.micro_batch, step.algo, step.math_type)

    def unfit(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        step: Step,
        workspace_bytes: int,
    ) -> str | None:
        # A plan made elsewhere (say, `Plan.from_json`) may state less than this cuDNN asks.
        try:
            need = backend.workspace_size(
                handle, descs, kernel, step.micro_batch, step.algo, step.math_type
            )
        except CudnnError as exc:
            return f"is refused by cuDNN ({exc.status_name})"
        if need <= workspace_bytes:
            return None
        return f"needs {need} bytes of workspace, more than the {workspace_bytes} its plan gives it"

    def workspace(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        part: Candidate,
    ) -> int:
        whole = descs.axis.extent(descs.problem)
        return backend.workspace_size(handle, descs, kernel, whole, part.algo, part.math_type)


class EngineFamily(Family):
    """cuDNN's graph-API engine configurations: a tag, run by an execution plan built for the
    part's shapes, alignments and scalars, with the legacy algorithms behind it
    (`engine_calls`, which checks a plan's workspace when it is built)."""

    builds_ahead = True

    def source(self, environ: Mapping[str, str]) -> str:
        """ENGINE_FAMILY, with cuDNN's own workspace cap when CUDNN_CONV_WSCAP_DBG sets one
        (the heuristics then offer less)."""
        cap = environ.get(WORKSPACE_CAP_VARIABLE, "").strip()
        if not cap:
            return ENGINE_FAMILY
        return f"{ENGINE_FAMILY}/wscap={re.sub(r'[^0-9A-Za-z._-]', '_', cap)[:32]}"

    def prepared_run(
        self, descs: backend.ProblemDescriptors, kernel: str, step: Step, runs: EngineRuns
    ) -> backend.PreparedRun:
        return prepared_engine_run(descs, kernel, step.micro_batch, step.engine, runs)

    def build_ahead(
        self,
        handle: _cudnn.Handle,
        descs: backend.ProblemDescriptors,
        kernel: str,
        step: Step,
        beta: float,
        runs: EngineRuns,
    ) -> None:
        # For tensors that start aligned as cudaMalloc and the frameworks' allocators give.
        aligned = CUDNN_ALIGNMENT
        alignments = (
            graph.alignment(aligned + step.x_offset_bytes),
            graph.alignment(aligned),
            graph.alignment(aligned + step.y_offset_bytes),
        )
        config = parse_tag(step.engine)
        runs.plan(handle, descs, kernel, step.micro_batch, config, alignments, 1.0, beta)


LEGACY_ALGORITHMS = LegacyFamily()
ENGINE_CONFIGURATIONS = EngineFamily()


def measured_families(engines_on: bool) -> tuple[Family, ...]:
    """The families a benchmark measures, in the order the cache's sources name them."""
    return (LEGACY_ALGORITHMS, ENGINE_CONFIGURATIONS) if engines_on else (LEGACY_ALGORITHMS,)


def families_source(engines_on: bool, environ: Mapping[str, str] = os.environ) -> str:
    """The families' part of the cache's sources: their names joined by "+"."""
    return "+".join(family.source(environ) for family in measured_families(engines_on))


def family_of(part: Candidate | Step) -> Family:
    """The family that runs `part`: engine configurations are named by their tag."""
    return ENGINE_CONFIGURATIONS if part.engine else LEGACY_ALGORITHMS
