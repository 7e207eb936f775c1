"""Equivalence checking: run the undivided convolution beside the plan and compare.

The reference is one call on the whole batch with one algorithm: the plan's baseline (the
fastest undivided candidate within the limit), or algorithm 0 when none fits or when the
baseline is an engine configuration and the Handle's engines are off. That algorithm may differ
from the plan's, so the check has two bounds on the normalised L2 distance
||planned - reference|| / ||reference||:

- Same algorithm (every part runs the reference's algorithm and math type): micro-batching
  only regroups the sums (backward-filter adds the parts' sums; forward and backward-data
  compute each output from the same products), so float32 without TF32 agrees within 1e-6,
  float64 within 1e-12 (unit roundoff 6e-8 and 1.1e-16; GPU kernels sum in blocks, so the
  rounding error grows slowly with the number of terms).
- Different algorithms: FFT and Winograd transform the data and round in other places than
  GEMM; in float32 each is about 1e-6..1e-5 from the exact result, so two of them differ by up
  to about 2e-5. The bound is 1e-4: five times that, and still far below what a slicing bug
  gives (a wrong or missing micro-batch of b samples out of N moves the result by about
  sqrt(b/N) for forward and backward-data, b/N for backward-filter: >= 1e-4 up to N = 10^4).

TF32, float16 and bfloat16 round every input or output to 10, 10 or 7 mantissa bits (unit
roundoff 4.9e-4, 4.9e-4, 3.9e-3), which dominates: 5e-3, 5e-3 and 2e-2 for the same algorithm,
twice that between algorithms, which round different intermediate values. All bounds are
stated from these arguments; none has been measured on a GPU yet.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from ucudnn._native import _cuda, _cudnn
from ucudnn.core.dtypes import host_dtype
from ucudnn.core.problem import ConvProblem
from ucudnn.planner.plan import KernelPlan
from ucudnn.planner.tables import Candidate
from ucudnn.runtime import backend, executor
from ucudnn.runtime.engine_calls import EngineRuns
from ucudnn.runtime.families import family_of
from ucudnn.runtime.launches import Ready
from ucudnn.runtime.steps import ROLES

logger = logging.getLogger(__name__)

# Bounds on the normalised L2 distance, for the same algorithm and between algorithms.
TOLERANCES = {"float64": 1e-12, "fp32": 1e-6, "tf32": 5e-3, "float16": 5e-3, "bfloat16": 2e-2}
CROSS_ALGORITHM_TOLERANCES = {
    "float64": 1e-12,
    "fp32": 1e-4,
    "tf32": 1e-2,
    "float16": 1e-2,
    "bfloat16": 4e-2,
}


def arithmetic(problem: ConvProblem) -> str:
    """The rounding regime of a problem: float32 is "fp32" only with FMA math (TF32 off)."""
    if problem.dtype == "float32":
        return "fp32" if problem.math_type == "fma" else "tf32"
    return problem.dtype


def tolerance(problem: ConvProblem, same_algorithm: bool = True) -> float:
    """The bound for this problem's arithmetic, when the compared results come from the same
    algorithm or (same_algorithm=False) from different ones, an exact reference included."""
    table = TOLERANCES if same_algorithm else CROSS_ALGORITHM_TOLERANCES
    return table[arithmetic(problem)]


def normalised_l2(result: np.ndarray, reference: np.ndarray) -> float:
    """||result - reference|| / ||reference||, or the plain norm when the reference is 0."""
    result = result.astype(np.float64).ravel()
    reference = reference.astype(np.float64).ravel()
    scale = float(np.linalg.norm(reference))
    diff = float(np.linalg.norm(result - reference))
    return diff / scale if scale > 0 else diff


def host_values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes copied from the device as float64 values."""
    return raw.view(host_dtype(dtype)).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class CheckResult:
    layer: str
    kernel: str
    distance: float
    tolerance: float

    @property
    def ok(self) -> bool:
        return self.distance <= self.tolerance

    def __str__(self) -> str:
        verdict = "ok" if self.ok else "TOO FAR"
        return (
            f"equivalence check of {self.layer} {self.kernel}: normalised L2 distance "
            f"{self.distance:.3g} (bound {self.tolerance:g}) {verdict}"
        )


class EquivalenceCheck:
    """Collects one CheckResult per checked call, and logs each: within its bound at INFO,
    too far at WARNING."""

    def __init__(self) -> None:
        self.results: list[CheckResult] = []

    def record(
        self,
        layer: str,
        kernel: str,
        problem: ConvProblem,
        planned: np.ndarray,
        undivided: np.ndarray,
        same_algorithm: bool,
    ) -> None:
        """Compare raw output bytes of the plan and of the undivided reference."""
        result = CheckResult(
            layer,
            kernel,
            normalised_l2(
                host_values(planned, problem.dtype), host_values(undivided, problem.dtype)
            ),
            tolerance(problem, same_algorithm),
        )
        self.results.append(result)
        logger.log(logging.INFO if result.ok else logging.WARNING, "%s", result)


def reference_part(kernel_plan: KernelPlan, problem: ConvProblem, engines_on: bool) -> Candidate:
    """The undivided run a check compares with: the plan's baseline, else algorithm 0; also
    algorithm 0 where the baseline is an engine configuration and engines are off."""
    baseline = kernel_plan.baseline
    if baseline is None or (baseline.engine and not engines_on):
        whole = kernel_plan.axis.extent(problem)
        return Candidate(whole, 0, 0.0, 0, problem.math_type)
    return baseline


def _same_algorithm(part: Candidate, reference: Candidate) -> bool:
    """Whether `part` runs the reference's algorithm, cut into slabs or not (a slab computes
    each output as the whole does)."""
    return (part.algo, part.engine, part.math_type) == (
        reference.algo, reference.engine, reference.math_type,
    )  # fmt: skip


class ReferenceRuns:
    """A Handle's side of checking: it keeps a call's old output, runs the undivided reference
    on that copy after the call, and gives both results to an EquivalenceCheck. The reference
    runs in a workspace of its own, beside the Handle's limit (checking is for debugging)."""

    def __init__(self, handle: _cudnn.Handle, engine_runs: EngineRuns, engines_on: bool) -> None:
        self._handle = handle  # its stream is the calls' stream, which set_stream may change
        self._engine_runs, self._engines_on = engine_runs, engines_on

    def output_before(self, ready: Ready, pointers: dict[str, int]) -> _cuda.DeviceBuffer:
        """A copy of the call's output as it is before the call overwrites it."""
        output = ROLES[ready.slot.kernel][2]
        nbytes = ready.slot.problem.nbytes(output)
        copy = _cuda.DeviceBuffer(nbytes)
        _cuda.memcpy_dtod(copy.ptr, pointers[output], nbytes, self._handle.stream)
        return copy

    def compare(
        self,
        check: EquivalenceCheck,
        ready: Ready,
        pointers: dict[str, int],
        before: _cuda.DeviceBuffer,
        alpha: float,
        beta: float,
    ) -> None:
        """Run the reference on `before` (then released) and record its distance to the
        call's output."""
        slot, parts = ready.slot, ready.kernel_plan.schedule.parts
        output = ROLES[slot.kernel][2]
        reference = reference_part(ready.kernel_plan, slot.problem, self._engines_on)
        try:
            on_copy = {**pointers, output: before.ptr}
            self._run(ready.launch.descs, slot.kernel, reference, on_copy, alpha, beta)
            nbytes = slot.problem.nbytes(output)
            check.record(
                slot.name, slot.kernel, slot.problem,
                self._download(pointers[output], nbytes), self._download(before.ptr, nbytes),
                same_algorithm=all(_same_algorithm(part, reference) for part in parts),
            )  # fmt: skip
        finally:
            before.release()

    def _run(
        self,
        descs: backend.ProblemDescriptors,
        kernel: str,
        reference: Candidate,
        pointers: dict[str, int],
        alpha: float,
        beta: float,
    ) -> None:
        need = family_of(reference).workspace(self._handle, descs, kernel, reference)
        workspace = _cuda.DeviceBuffer(need)
        try:
            executor.execute(
                self._handle, descs, kernel, [dataclasses.replace(reference, workspace_bytes=need)],
                **pointers, workspace=workspace.ptr, workspace_bytes=need, alpha=alpha, beta=beta,
                engine_runs=self._engine_runs,
            )  # fmt: skip
        finally:
            workspace.release()

    def _download(self, ptr: int, nbytes: int) -> np.ndarray:
        raw = np.empty(nbytes, dtype=np.uint8)
        _cuda.memcpy_dtoh(raw, ptr, nbytes, self._handle.stream)
        _cuda.stream_synchronize(self._handle.stream)
        return raw
