"""What the simulated cuDNN's graph API offers for one convolution: engine configurations, each
with its workspace, time, notes and where they come from.

Two sources, most trusted first:

1. **probed**: the H100 engine probe (data/h100-engines-cudnn-9.19.0.json.gz, built by
   benchmarks/build_simulator_engines.py): for a problem, kernel and micro-batch it measured,
   the configurations its heuristics returned, in their order, with their measured workspace
   and time (the file keeps a selection of them, see the builder). The probe asked modes A and
   FALLBACK together; the simulator answers FALLBACK with the configurations that have no
   knobs (cuDNN's generic engines: 0, 1 and 28 forward, 0, 1 and 25 backward data, 0, 1 and
   20 backward filter, and runtime-compiled ones) and A with the others, so that A and
   FALLBACK together are what the probe saw. float32 problems get only what the probe kept of
   them: configurations without tensor cores (it deselected TF32).
2. **model**, for every other problem the legacy model runs: three configurations for mode A
   (four for backward filter), a fast one on tensor cores whose workspace holds x and y
   (bytes(x) + bytes(y): the probe's winning NCHW engines transpose both into it) taking half
   the best legacy algorithm's time (default math), for backward filter a second such one
   that blends into dw taking 0.7 of it, one on tensor cores without workspace taking that
   time, and one without tensor cores nor workspace taking the best workspace-free legacy time
   under FMA math; and two generic engines for FALLBACK, without workspace, 1.5 and 2 times
   slower than that.

The probe has no notes; they are modelled, per engine and kernel:
- TENSOR_CORE: every engine of a half-type problem except those the probe saw run float32
  without tensor cores (the model's fast configuration, for all but float64);
- NONDETERMINISTIC: engine 0 of both backward kernels, the generic implicit GEMM, as the
  legacy algo_0 that the H100 tables measured non-deterministic;
- RUNTIME_COMPILATION (a behaviour note): engines 19, 70, 71 and 78, whose plans the probe saw
  compile (issue 26's brief).
The probe's answers hold in every UCUDNN_SIM_CAPS mode; the model's follow the legacy
capabilities of that mode (fuzzed ones included).

A problem whose pre and post paddings differ (a border slab of a spatial micro-batch) is
never one the probe measured, so the model answers it, pricing x padded by both.

And two refusals of the simulator's own, both when the execution plan is finalized (cuDNN's
heuristics may offer a configuration whose plan then fails to build, so callers must try):
- a backward-filter configuration choosing the WORKSPACE knob (k25) = 1 builds no plan whose
  beta is not 0 (`blends`), so that the runtime's beta = 1 check and its undivided-only
  restriction meet a refusal (the model's fast backward-filter configuration is one of them);
- engines `PAD_ALIKE_ONLY` (62, 65 and 73) build no plan for a graph whose pre and post
  paddings differ (`pads_unequally`), so that the runtime's fallback for border slabs meets a
  refusal: the model's fast configurations are on them, for every kernel, and so is its
  tensor-core configuration for backward filter; the others (and FALLBACK's generic engines)
  build. Assumed, never measured: which engines of a real cuDNN refuse is unknown.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import math
from collections.abc import Iterable
from typing import Any

from ucudnn.core.description import describe_convolution
from ucudnn.core.engines import EngineConfig, parse_tag
from ucudnn.core.problem import ITEMSIZE
from ucudnn.testing.simulator.capabilities import DATA
from ucudnn.testing.simulator.device import DEVICE
from ucudnn.testing.simulator.problem import SimProblem

ENGINES = "h100-engines-cudnn-9.19.0.json.gz"
RUNTIME_COMPILED = frozenset({19, 70, 71, 78})
NONDETERMINISTIC = {"backward_data": frozenset({0}), "backward_filter": frozenset({0})}
WORKSPACE_KNOB = 25  # CUDNN_KNOB_TYPE_WORKSPACE
# Engines whose plans need the pre and post paddings equal (the model's rule, see above).
PAD_ALIKE_ONLY = frozenset({62, 65, 73})
_HALF_TYPES = ("float16", "bfloat16")
# The model's configurations per kernel, mode A then FALLBACK: (tag, kind, time factor). Kinds:
# "fast" (tensor cores, workspace bytes(x) + bytes(y), factor x the best legacy time under
# default math), "tensor" (tensor cores, no workspace, the same base), "plain" (no tensor cores
# nor workspace, factor x the best workspace-free legacy time under FMA math). Tags are
# configurations the probe saw for that kernel.
_MODEL = {
    "forward": (
        (("eng62_k2=0_k13=1_k25=1", "fast", 0.5), ("eng58_k25=0", "tensor", 1.0),
         ("eng28_k2=4_k3=0", "plain", 1.0)),
        (("eng1", "plain", 1.5), ("eng0", "plain", 2.0)),
    ),
    "backward_data": (
        (("eng73_k2=0_k13=1_k25=1", "fast", 0.5), ("eng63_k25=0", "tensor", 1.0),
         ("eng25_k2=2_k3=0", "plain", 1.0)),
        (("eng1", "plain", 1.5), ("eng0", "plain", 2.0)),
    ),
    "backward_filter": (
        (("eng65_k2=0_k13=1_k25=1", "fast", 0.5),
         ("eng65_k2=5_k13=1_k18=1_k25=0_k27=1_k28=3", "fast", 0.7),
         ("eng62_k25=0", "tensor", 1.0), ("eng20_k2=6_k3=0", "plain", 1.0)),
        (("eng1", "plain", 1.5), ("eng0", "plain", 2.0)),
    ),
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class EngineFacts:
    """One engine configuration for one problem: what cuDNN would say of it, and where from
    ("probed:<file>" or "model")."""

    config: EngineConfig
    workspace_bytes: int
    time_ms: float
    numerical_notes: tuple[str, ...]
    behavior_notes: tuple[str, ...]
    blends: bool  # whether a plan with beta != 0 builds
    pads_unequally: bool  # whether a plan builds for pre and post paddings that differ
    provenance: str

    @functools.cached_property
    def tag(self) -> str:
        return self.config.tag


@dataclasses.dataclass(frozen=True)
class Offer:
    """A problem's configurations: heuristics mode A's and FALLBACK's, best first."""

    a: tuple[EngineFacts, ...]
    fallback: tuple[EngineFacts, ...]

    def ranked(self, mode: str) -> tuple[EngineFacts, ...]:
        """What heuristics `mode` answers (INSTANT is A; B, more accurate, is modelled as A)."""
        return self.fallback if mode == "FALLBACK" else self.a

    def find(self, config: EngineConfig) -> EngineFacts | None:
        return next((f for f in (*self.a, *self.fallback) if f.config == config), None)

    def engines(self) -> dict[int, list[EngineFacts]]:
        """The configurations by engine index."""
        found: dict[int, list[EngineFacts]] = {}
        for facts in (*self.a, *self.fallback):
            found.setdefault(facts.config.index, []).append(facts)
        return found


@functools.cache
def _data() -> dict[str, Any]:
    with gzip.open(DATA / ENGINES) as data:
        document: dict[str, Any] = json.load(data)
    return document


def engine_count() -> int:
    """OPERATIONGRAPH_ENGINE_GLOBAL_COUNT: one past the highest engine index the probe saw."""
    count: int = _data()["engine_count"]
    return count


@functools.cache
def _probed() -> dict[tuple[str, str], list[tuple[str, int, float]]]:
    document = _data()
    tags = [parse_tag(tag).tag for tag in document["tags"]]
    return {
        (problem, kernel): [(tags[tag], workspace, ms) for tag, workspace, ms in plans]
        for problem, kernel, plans in document["records"]
    }


@functools.cache
def _fma_engines() -> dict[str, frozenset[int]]:
    return {kernel: frozenset(found) for kernel, found in _data()["fma_engines"].items()}


def _facts(
    problem: SimProblem, tag: str, workspace: int, time_ms: float, tensor_core: bool, where: str
) -> EngineFacts:
    config = parse_tag(tag)
    numerical = ["TENSOR_CORE"] if tensor_core else []
    if config.index in NONDETERMINISTIC.get(problem.kernel, ()):
        numerical.append("NONDETERMINISTIC")
    behavior = ("RUNTIME_COMPILATION",) if config.index in RUNTIME_COMPILED else ()
    blends = problem.kernel != "backward_filter" or (WORKSPACE_KNOB, 1) not in config.knobs
    pads_unequally = config.index not in PAD_ALIKE_ONLY
    return EngineFacts(
        config, workspace, time_ms, tuple(numerical), behavior, blends, pads_unequally, where
    )


def _probe_key(problem: SimProblem) -> tuple[str, str] | None:
    """The probe's name of the problem, if it could have measured it: cross-correlation in
    float32 compute, the filter in the data's layout (its probe runs had them so)."""
    if (
        problem.mode != "cross_correlation"
        or problem.compute_dtype != "float32"
        or problem.filter_layout != problem.layout
    ):
        return None
    text = describe_convolution(
        problem.x_dims, problem.w_dims, problem.padding, problem.stride, problem.dilation,
        problem.groups, problem.layout, problem.dtype, problem.padding_after,
    )  # fmt: skip
    return text, problem.kernel


def _from_probe(problem: SimProblem, plans: Iterable[tuple[str, int, float]]) -> Offer:
    fma = _fma_engines().get(problem.kernel, frozenset())
    where = f"probed:{ENGINES}"
    a: list[EngineFacts] = []
    fallback: list[EngineFacts] = []
    for tag, workspace, ms in plans:
        config = parse_tag(tag)
        tensor_core = problem.dtype in _HALF_TYPES and config.index not in fma
        facts = _facts(problem, tag, workspace, ms, tensor_core, where)
        (a if config.knobs else fallback).append(facts)
    return Offer(tuple(a), tuple(fallback))


def _legacy_times(problem: SimProblem, math_type: str) -> tuple[float, float] | None:
    """The best legacy time, and the best without workspace (or the best), under math_type."""
    under = dataclasses.replace(problem, math_type=math_type)
    facts = [f for f in DEVICE.caps.facts(under) if f.ok]
    if not facts:
        return None
    free = [f.time_ms for f in facts if f.workspace_bytes == 0]
    best = min(f.time_ms for f in facts)
    return best, min(free) if free else best


def _modelled(problem: SimProblem) -> Offer | None:
    fast, plain = _legacy_times(problem, "default"), _legacy_times(problem, "fma")
    if fast is None or plain is None:
        return None
    x_y = (math.prod(problem.x_dims) + math.prod(problem.y_dims)) * ITEMSIZE[problem.dtype]
    tensor_core = problem.dtype != "float64"

    def made(tag: str, kind: str, factor: float) -> EngineFacts:
        if kind == "plain":
            return _facts(problem, tag, 0, factor * plain[1], False, "model")
        workspace = x_y if kind == "fast" else 0
        return _facts(problem, tag, workspace, factor * fast[0], tensor_core, "model")

    a, fallback = (tuple(made(*entry) for entry in mode) for mode in _MODEL[problem.kernel])
    return Offer(a, fallback)


@functools.lru_cache(maxsize=4096)
def offer(problem: SimProblem) -> Offer | None:
    """The configurations cuDNN's heuristics offer for `problem` (its math type is ignored:
    a graph has none), or None when no engine runs it."""
    key = _probe_key(problem)
    plans = _probed().get(key) if key is not None else None
    if plans:
        return _from_probe(problem, plans)
    return _modelled(problem)
