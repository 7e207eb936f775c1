"""The legacy algorithms of one kernel at one micro-batch size, measured for the search: cuDNN
Find's trial of every algorithm as their screen, then timings with CUDA events of the calls a
Handle makes (with beta 1 where a split of backward filter adds to dW)."""

from __future__ import annotations

import dataclasses
import logging

from ucudnn._native import _cudnn
from ucudnn.core.arena import Arena
from ucudnn.errors import CudaOutOfMemoryError, CudnnError
from ucudnn.planner.cache import Measurement
from ucudnn.planner.search import LEGACY, Trial
from ucudnn.runtime import backend
from ucudnn.runtime.size_bench import AtSize, status_of

logger = logging.getLogger(__name__)

LegacyId = tuple[str, int, str]  # (LEGACY, algorithm, math type)


@dataclasses.dataclass
class LegacyAtSize(AtSize):
    """Find's screen and the timings of the legacy algorithms."""

    def __post_init__(self) -> None:
        self._legacy: dict[LegacyId, tuple[int, bool]] = {}  # workspace, deterministic
        self._runs: dict[LegacyId, backend.PreparedRun] = {}
        self._descs = backend.ProblemDescriptors(self.problem)
        self._whole = self.problem.batch  # the part's problem runs undivided

    def screen(self) -> list[Trial]:
        """Find's own trial of every algorithm, one launch each."""
        workspace, find_bytes = self._find_workspace(self._find_workspace_bytes())
        x, w, y = self.at["x"], self.at["w"], self.at["y"]
        perfs = backend.find(
            self.bench.handle, self._descs, self.kernel, self._whole, x, w, y,
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
            need = perf.status_name if perf.status != 0 else self._workspace(key)
            if isinstance(need, str):
                self.failed[key] = Measurement.failed(self.micro_batch, perf.algo, math_type, need)
                continue
            self.failed.pop(key, None)
            self._legacy[key] = (need, perf.deterministic)
            trials[key] = Trial(key, LEGACY, need, [perf.time_ms], perf.deterministic)
        return list(trials.values())

    def time(self, trial: Trial, beta: float, warmup: int, runs: int) -> list[float] | None:
        """The call a Handle makes for `trial`'s candidate, timed with `beta`."""
        key: LegacyId = trial.config  # type: ignore[assignment]
        _, algo, math_type = key
        need = self._legacy[key][0]
        try:
            workspace = self.bench.workspace.ensure(need).ptr
            # Prepared once, so the timed calls do only what a Handle's planned call does.
            if key not in self._runs:
                self._runs[key] = backend.prepared_run(
                    self._descs, self.kernel, self._whole, algo, math_type
                )
            run, handle = self._runs[key], self.bench.handle
            x, w, y = self.at["x"], self.at["w"], self.at["y"]
            return self.bench.time(
                lambda: run(handle, 1.0, beta, x, w, y, workspace, need), warmup, runs
            )
        except (CudnnError, CudaOutOfMemoryError) as exc:
            self.failed[key] = Measurement.failed(self.micro_batch, algo, math_type, status_of(exc))
            return None

    def candidate_fields(self, trial: Trial) -> tuple[int, str, str, bool, tuple[str, ...]]:
        """(algorithm, engine tag, math type, deterministic, notes) of a timed candidate."""
        key: LegacyId = trial.config  # type: ignore[assignment]
        _, algo, math_type = key
        return algo, "", math_type, self._legacy[key][1], ()

    def _workspace(self, key: LegacyId) -> int | str:
        """The workspace of a legacy variant under its own math type (which may need more than
        Find had), or the status that rules it out."""
        _, algo, math_type = key
        try:
            need = backend.workspace_size(
                self.bench.handle, self._descs, self.kernel, self._whole, algo, math_type
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
                    self.bench.handle, self._descs, self.kernel, self._whole, algo,
                    self.problem.math_type,
                )  # fmt: skip
            except CudnnError:
                continue  # unsupported here; Find reports it with its status
            if size <= self.bench.workspace_cap:
                need = max(need, size)
        return need
