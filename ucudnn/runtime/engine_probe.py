"""Whether cuDNN's graph-API engine configurations can run in this process: a cuDNN that says
a configuration's workspace before building it (9.2 or newer), and heuristics that offer at
least one configuration for a small problem on the current device. Asked once per process.

Native modules are imported when asked, not with this module, so that `ucudnn info` can report
the answer (no) where they cannot be loaded at all.
"""

from __future__ import annotations

import functools
import logging
from typing import NamedTuple

from ucudnn.core.engines import MIN_ENGINES_CUDNN
from ucudnn.core.problem import ConvProblem
from ucudnn.errors import UcudnnError

logger = logging.getLogger(__name__)

# Small enough to cost nothing, common enough that any cuDNN offers configurations for it:
# float32 (every GPU computes it), 3x3, channels first, forward.
PROBE_PROBLEM = ConvProblem.from_shapes((1, 8, 8, 8), (8, 8, 3, 3), padding=1, dtype="float32")
PROBE_ALIGNMENT = 16  # bytes, as a fresh device allocation has at least


class EngineAvailability(NamedTuple):
    available: bool
    reason: str | None  # why not; None when they can run


@functools.cache
def engine_availability() -> EngineAvailability:
    """Whether engine configurations can run here, and why not; the answer is logged when it
    is no. Cached: call `engine_availability.cache_clear()` to ask the device again."""
    answer = _probe()
    if not answer.available:
        logger.info("graph-API engines cannot run here: %s", answer.reason)
    return answer


def _probe() -> EngineAvailability:
    try:
        from ucudnn._native import _cudnn
        from ucudnn.core.device import device_facts
        from ucudnn.core.facts import cudnn_version_string
        from ucudnn.runtime import graph
    except ImportError as exc:
        return EngineAvailability(False, f"native modules did not import: {exc}")
    try:
        facts = device_facts()  # first: without a device, that is the reason
    except UcudnnError as exc:
        return EngineAvailability(False, f"no usable device: {exc}")
    if facts.cudnn_version < MIN_ENGINES_CUDNN:
        found, needed = (cudnn_version_string(v) for v in (facts.cudnn_version, MIN_ENGINES_CUDNN))
        return EngineAvailability(False, f"cuDNN {found} is older than {needed}")
    alignments = (PROBE_ALIGNMENT,) * 3
    try:
        # The graph holds its handle, so both are freed together when it goes.
        operation = graph.operation_graph(
            _cudnn.Handle(), PROBE_PROBLEM, "forward", alignments, 1.0, 0.0
        )
        choices = graph.heuristic_choices(operation)
    except UcudnnError as exc:
        return EngineAvailability(False, f"the heuristics failed on the probe problem: {exc}")
    if not choices:
        return EngineAvailability(
            False,
            "heuristics offered no configuration for the probe problem "
            f"({PROBE_PROBLEM.describe()}, forward)",
        )
    return EngineAvailability(True, None)
