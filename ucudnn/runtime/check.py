"""Equivalence checking: run the undivided convolution beside the plan and compare.

The accepted distance depends on the arithmetic: micro-batching only reorders sums, so fp32
without TF32 agrees to about 1e-7, while TF32, fp16 and bf16 round each product and two
different algorithms differ by their rounding.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from ucudnn import _cuda
from ucudnn.core.array import bfloat16_values
from ucudnn.core.problem import ConvProblem

# Bounds on the normalised L2 distance ||planned - undivided|| / ||undivided||.
TOLERANCES = {"float64": 1e-12, "fp32": 1e-6, "tf32": 5e-3, "float16": 5e-3, "bfloat16": 2e-2}


def tolerance(problem: ConvProblem) -> float:
    """The bound for this problem's arithmetic (fp32 is exact-ish only with FMA math)."""
    if problem.dtype == "float32":
        return TOLERANCES["fp32" if problem.math_type == "fma" else "tf32"]
    return TOLERANCES[problem.dtype]


def normalised_l2(result: np.ndarray, reference: np.ndarray) -> float:
    """||result - reference|| / ||reference||, or the plain norm when the reference is 0."""
    result = result.astype(np.float64).ravel()
    reference = reference.astype(np.float64).ravel()
    scale = float(np.linalg.norm(reference))
    diff = float(np.linalg.norm(result - reference))
    return diff / scale if scale > 0 else diff


def host_values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Bytes copied from the device as float64 values."""
    if dtype == "bfloat16":
        return bfloat16_values(raw.view(np.uint16)).astype(np.float64)
    return raw.view(np.dtype(dtype)).astype(np.float64)


def download(ptr: int, nbytes: int, stream: int) -> np.ndarray:
    raw = np.empty(nbytes, dtype=np.uint8)
    _cuda.memcpy_dtoh(raw, ptr, nbytes, stream)
    _cuda.stream_synchronize(stream)
    return raw


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
            f"ucudnn check: {self.layer} {self.kernel}: normalised L2 distance "
            f"{self.distance:.3g} (bound {self.tolerance:g}) {verdict}"
        )


class EquivalenceCheck:
    """Collects one CheckResult per checked call and prints each to stderr."""

    def __init__(self, stream_out=sys.stderr) -> None:
        self.results: list[CheckResult] = []
        self._out = stream_out

    def record(self, layer: str, kernel: str, problem: ConvProblem, planned, undivided) -> None:
        result = CheckResult(
            layer,
            kernel,
            normalised_l2(
                host_values(planned, problem.dtype), host_values(undivided, problem.dtype)
            ),
            tolerance(problem),
        )
        self.results.append(result)
        print(result, file=self._out)
