"""A simulated device: the CUDA runtime and cuDNN of `ucudnn._native`, in Python and numpy.

A strict test double, in the spirit of Numba's CUDA simulator. With UCUDNN_DEVICE=sim,
`ucudnn._native` calls `install()`, and `_cuda` and `_cudnn` are these modules: every layer
above them runs unchanged, on any machine, while the simulator checks what hardware does not
(a pointer past its allocation, a workspace smaller than cuDNN asked for, a use after free,
memory never given back) and answers what it can run from GPU measurements, each answer with
its provenance. It never stands in for hardware evidence: its device is named SIMULATED, and
its times are the tables' and a model's, not measurements. `_dlpack` and `_loader` stay the
real modules: they touch no device.

The control API below is for tests: inject faults (`fail_allocations`, `fail_algorithm`,
`fail_engine`, or any rule on `DEVICE.faults`), shrink free memory, read the call log and the
leak report. Configuration is by environment (see `ucudnn.testing.simulator.device`).
"""

from __future__ import annotations

import atexit
import gc
import logging
import os
import sys
from collections.abc import Callable

from ucudnn.core.engines import canonical_tag
from ucudnn.core.libraries import LoadedLibrary
from ucudnn.testing.simulator.device import DEVICE, CallRecord, Leak, SimDevice
from ucudnn.testing.simulator.faults import Context, Rule
from ucudnn.testing.simulator.memory import ConformanceError, IllegalAddressError
from ucudnn.testing.simulator.problem import SimProblem

__all__ = [
    "DEVICE",
    "CallRecord",
    "ConformanceError",
    "Context",
    "IllegalAddressError",
    "Leak",
    "Rule",
    "SimDevice",
    "SimProblem",
    "fail_algorithm",
    "fail_allocations",
    "fail_engine",
    "install",
    "installed",
    "reset",
    "withhold_memory",
]

logger = logging.getLogger(__name__)
EXECUTION_FAILED = 5000
NOT_SUPPORTED = 3000
LEAKS_VARIABLE = "UCUDNN_SIM_LEAKS"
_CALLS = {"forward": "cudnnConvolutionForward", "backward_data": "cudnnConvolutionBackwardData",
          "backward_filter": "cudnnConvolutionBackwardFilter"}  # fmt: skip
# Where an engine configuration can be made to fail, the call and its default status there.
_ENGINE_STAGES = {"plan": ("cudnnBackendFinalize(EXECUTION_PLAN)", NOT_SUPPORTED),
                  "execute": ("cudnnBackendExecute", EXECUTION_FAILED)}  # fmt: skip


def install() -> tuple[LoadedLibrary, ...]:
    """Make the simulated modules `ucudnn._native._cuda` and `_cudnn`; what to report as
    the libraries loaded (none is)."""
    from ucudnn.testing.simulator import cuda, cudnn

    sys.modules["ucudnn._native._cuda"] = cuda
    sys.modules["ucudnn._native._cudnn"] = cudnn
    package = sys.modules.get("ucudnn._native")
    if package is not None:
        package._cuda = cuda  # type: ignore[attr-defined]
        package._cudnn = cudnn  # type: ignore[attr-defined]
    atexit.register(_report_leaks)
    found_by = f"UCUDNN_DEVICE=sim ({DEVICE.caps.name})"
    return (
        LoadedLibrary("cuDNN", "libcudnn.so.9", "simulated: ucudnn.testing.simulator", found_by),
        LoadedLibrary(
            "CUDA runtime", "libcudart.so.13", "simulated: ucudnn.testing.simulator", found_by
        ),
    )


def _report_leaks() -> None:
    """With UCUDNN_SIM_LEAKS set, log at exit what the program still held, where it was made."""
    if os.environ.get(LEAKS_VARIABLE, "").strip() in ("", "0"):
        return
    gc.collect()
    leaks = DEVICE.leaks()
    if leaks:
        logger.warning(
            "simulated device: %d still held at exit:\n  %s",
            len(leaks),
            "\n  ".join(map(str, leaks)),
        )


def installed() -> bool:
    """Whether `ucudnn._native` is the simulator in this process."""
    from ucudnn.testing.simulator import cuda

    return sys.modules.get("ucudnn._native._cuda") is cuda


def reset() -> None:
    """Clear injected faults and give back withheld memory (between tests)."""
    DEVICE.faults.clear()
    for memory in DEVICE.memories:
        memory.withheld = 0


def fail_allocations(*, times: int | None = 1, at_least: int = 0, status: int = 2) -> Rule:
    """Make cudaMalloc of `at_least` bytes or more fail `times` times (None: until reset)
    with `status` (cudaErrorMemoryAllocation)."""
    return DEVICE.faults.add(
        "cudaMalloc", status, when=lambda c: (c.nbytes or 0) >= at_least, times=times
    )


def fail_algorithm(
    kernel: str,
    algo: int,
    *,
    status: int = EXECUTION_FAILED,
    times: int | None = None,
    when: Callable[[SimProblem], bool] | None = None,
) -> Rule:
    """Make `algo` of `kernel` fail when it runs (not in Find or workspace queries), for the
    problems `when` accepts."""
    if kernel not in _CALLS:
        raise ValueError(f"kernel must be one of {', '.join(_CALLS)}, got {kernel!r}")
    return DEVICE.faults.add(
        _CALLS[kernel],
        status,
        when=lambda c: (
            c.algo == algo and (when is None or (c.problem is not None and when(c.problem)))
        ),
        times=times,
    )


def fail_engine(
    tag: str,
    *,
    at: str = "execute",
    status: int | None = None,
    times: int | None = None,
    when: Callable[[SimProblem], bool] | None = None,
) -> Rule:
    """Make the graph-API engine configuration `tag` fail for the problems `when` accepts:
    building its execution plan (`at="plan"`: cudnnBackendFinalize, CUDNN_STATUS_NOT_SUPPORTED
    unless `status` says otherwise) or running one (`at="execute"`: cudnnBackendExecute,
    CUDNN_STATUS_EXECUTION_FAILED). A graph's problem has math type "default" (a graph has
    none)."""
    if at not in _ENGINE_STAGES:
        raise ValueError(f"at must be one of {', '.join(_ENGINE_STAGES)}, got {at!r}")
    wanted = canonical_tag(tag)
    call, default = _ENGINE_STAGES[at]
    return DEVICE.faults.add(
        call,
        default if status is None else status,
        when=lambda c: (
            c.engine == wanted and (when is None or (c.problem is not None and when(c.problem)))
        ),
        times=times,
    )


def withhold_memory(nbytes: int) -> None:
    """Shrink what cudaMemGetInfo reports free, and what cudaMalloc can give, by nbytes."""
    DEVICE.memory.withheld += nbytes
