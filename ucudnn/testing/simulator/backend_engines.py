"""The simulated cuDNN's backend descriptors that choose and run an engine, finalized:
heuristics rank the configurations an operation graph offers, an engine and its knob choices
name one, a plan holds one for a handle, and a variant pack gives it pointers. `FINALIZE` says
what finalizes each kind of descriptor."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

from ucudnn.core.engines import EngineConfig, math_type_of
from ucudnn.core.problem import ITEMSIZE
from ucudnn.testing.simulator import engines
from ucudnn.testing.simulator.backend_graph import (
    OPERATIONS,
    Graph,
    Operation,
    convolution,
    graph,
    operation,
    tensor,
)
from ucudnn.testing.simulator.backend_names import NOT_SUPPORTED
from ucudnn.testing.simulator.backend_states import Entry, Reader, State, live_handle
from ucudnn.testing.simulator.engines import EngineFacts
from ucudnn.testing.simulator.problem import SimProblem


@dataclasses.dataclass(frozen=True)
class KnobInfo(State):
    KIND = "KNOB_INFO"

    knob: int
    least: int
    most: int

    def readable(self) -> dict[str, Entry]:
        return {
            "KNOB_INFO_TYPE": ("KNOB_TYPE", (self.knob,)),
            "KNOB_INFO_MINIMUM_VALUE": ("INT64", (self.least,)),
            "KNOB_INFO_MAXIMUM_VALUE": ("INT64", (self.most,)),
            "KNOB_INFO_STRIDE": ("INT64", (1,)),
        }


@dataclasses.dataclass(frozen=True)
class KnobChoice(State):
    KIND = "KNOB_CHOICE"

    knob: int
    value: int

    def readable(self) -> dict[str, Entry]:
        return {
            "KNOB_CHOICE_KNOB_TYPE": ("KNOB_TYPE", (self.knob,)),
            "KNOB_CHOICE_KNOB_VALUE": ("INT64", (self.value,)),
        }


def knob_choice(reader: Reader) -> KnobChoice:
    return KnobChoice(reader.one("KNOB_CHOICE_KNOB_TYPE"), reader.one("KNOB_CHOICE_KNOB_VALUE"))


@dataclasses.dataclass(frozen=True)
class Engine(State):
    """An engine of a graph; its notes and knobs are those of its configurations (the
    simulator's notes are per engine)."""

    KIND = "ENGINE"

    graph: Graph
    index: int
    sm_count: int = 0

    @property
    def configs(self) -> list[EngineFacts]:
        return self.graph.offer.engines()[self.index]

    def readable(self) -> dict[str, Entry]:
        first = self.configs[0]
        ranges: dict[int, list[int]] = {}
        for facts in self.configs:
            for knob, value in facts.config.knobs:
                ranges.setdefault(knob, []).append(value)
        infos = tuple(KnobInfo(k, min(v), max(v)) for k, v in sorted(ranges.items()))
        return {
            "ENGINE_OPERATION_GRAPH": ("BACKEND_DESCRIPTOR", (self.graph,)),
            "ENGINE_GLOBAL_INDEX": ("INT64", (self.index,)),
            "ENGINE_KNOB_INFO": ("BACKEND_DESCRIPTOR", infos),
            "ENGINE_NUMERICAL_NOTE": ("NUMERICAL_NOTE", first.numerical_notes),
            "ENGINE_BEHAVIOR_NOTE": ("BEHAVIOR_NOTE", first.behavior_notes),
            "ENGINE_SM_COUNT_TARGET": ("INT32", (self.sm_count,)),
        }

    def faults(self) -> dict[str, Any]:
        return {**self.graph.faults(), "algo": self.index}


def engine(reader: Reader) -> Engine:
    found = reader.state("ENGINE_OPERATION_GRAPH", Graph)
    index: int = reader.one("ENGINE_GLOBAL_INDEX")
    reader.refuse_deviceprop("ENGINE_DEVICEPROP")
    count = engines.engine_count()
    if not 0 <= index < count:
        raise reader.fail(f"engine {index} is not in 0..{count - 1}", NOT_SUPPORTED)
    if index not in found.offer.engines():
        problem = found.operation.problem
        raise reader.fail(f"engine {index} does not run {problem.describe()}", NOT_SUPPORTED)
    return Engine(found, index, reader.sm_count("ENGINE_SM_COUNT_TARGET"))


@dataclasses.dataclass(frozen=True)
class Config(State):
    KIND = "ENGINECFG"

    engine: Engine
    facts: EngineFacts

    @functools.cached_property
    def workspace_bytes(self) -> int:
        """The configuration's workspace for its graph. One of backward filter that blends into
        dw (beta != 0) with workspace needs room for dw besides, as on an H100 with cuDNN 9.19:
        8552480 bytes where beta 0 needed 8028176, for a 1024x256 half-precision filter (the
        configuration and its plan said the same)."""
        own = self.facts.workspace_bytes
        operation = self.engine.graph.operation
        if own and operation.kernel == "backward_filter" and operation.beta != 0:
            filter_elements = math.prod(operation.tensors[1].dims)
            return own + filter_elements * ITEMSIZE[operation.problem.dtype]
        return own

    def readable(self) -> dict[str, Entry]:
        choices = tuple(KnobChoice(k, v) for k, v in self.facts.config.knobs)
        return {
            "ENGINECFG_ENGINE": ("BACKEND_DESCRIPTOR", (self.engine,)),
            "ENGINECFG_KNOB_CHOICES": ("BACKEND_DESCRIPTOR", choices),
            "ENGINECFG_WORKSPACE_SIZE": ("INT64", (self.workspace_bytes,)),
            "ENGINECFG_SHARED_MEMORY_USED": ("INT64", (0,)),  # not modelled
        }

    def faults(self) -> dict[str, Any]:
        return {**self.engine.faults(), "engine": self.facts.tag}


def config(reader: Reader) -> Config:
    found = reader.state("ENGINECFG_ENGINE", Engine)
    choices = reader.states("ENGINECFG_KNOB_CHOICES", KnobChoice, optional=True)
    knobs = [(c.knob, c.value) for c in choices]
    if len({k for k, _ in knobs}) != len(knobs):
        raise reader.fail(f"knob choices {knobs} choose a knob twice")
    wanted = EngineConfig(found.index, tuple(knobs))
    facts = found.graph.offer.find(wanted)
    if facts is None:
        known = ", ".join(f.tag for f in found.configs)
        raise reader.fail(
            f"{wanted.tag} is not a configuration the simulator knows for this graph (engine "
            f"{found.index} has {known}; knobs left to their defaults are not modelled)",
            NOT_SUPPORTED,
        )
    return Config(found, facts)


@dataclasses.dataclass(frozen=True)
class Heuristics(State):
    KIND = "ENGINEHEUR"

    graph: Graph
    mode: str
    sm_count: int

    def readable(self) -> dict[str, Entry]:
        ranked = self.graph.offer.ranked(self.mode)
        results = tuple(Config(Engine(self.graph, f.config.index), f) for f in ranked)
        return {
            "ENGINEHEUR_OPERATION_GRAPH": ("BACKEND_DESCRIPTOR", (self.graph,)),
            "ENGINEHEUR_MODE": ("HEUR_MODE", (self.mode,)),
            "ENGINEHEUR_RESULTS": ("BACKEND_DESCRIPTOR", results),
            "ENGINEHEUR_SM_COUNT_TARGET": ("INT32", (self.sm_count,)),
        }

    def faults(self) -> dict[str, Any]:
        return self.graph.faults()


def heuristics(reader: Reader) -> Heuristics:
    found = reader.state("ENGINEHEUR_OPERATION_GRAPH", Graph)
    mode = reader.one("ENGINEHEUR_MODE")
    reader.refuse_deviceprop("ENGINEHEUR_DEVICEPROP")
    return Heuristics(found, mode, reader.sm_count("ENGINEHEUR_SM_COUNT_TARGET"))


@dataclasses.dataclass(frozen=True)
class Plan(State):
    KIND = "EXECUTION_PLAN"

    handle: Any
    config: Config

    @property
    def operation(self) -> Operation:
        return self.config.engine.graph.operation

    @property
    def workspace_bytes(self) -> int:
        return self.config.workspace_bytes

    @functools.cached_property
    def problem(self) -> SimProblem:
        """What it computes: the graph's problem in the math its configuration's notes say."""
        problem = self.operation.problem
        math_type = math_type_of(problem.dtype, self.config.facts.numerical_notes)
        return dataclasses.replace(problem, math_type=math_type)

    @functools.cached_property
    def context(self) -> dict[str, Any]:
        return self.config.faults()

    def readable(self) -> dict[str, Entry]:
        return {
            "EXECUTION_PLAN_HANDLE": ("HANDLE", (self.handle,)),
            "EXECUTION_PLAN_ENGINE_CONFIG": ("BACKEND_DESCRIPTOR", (self.config,)),
            "EXECUTION_PLAN_WORKSPACE_SIZE": ("INT64", (self.workspace_bytes,)),
        }

    def faults(self) -> dict[str, Any]:
        return self.context


def plan(reader: Reader) -> Plan:
    handle = live_handle(reader, "EXECUTION_PLAN_HANDLE")
    if reader.has("EXECUTION_PLAN_JSON_REPRESENTATION"):
        raise reader.fail("the simulator does not deserialize plans", NOT_SUPPORTED)
    reader.refuse_deviceprop("EXECUTION_PLAN_DEVICEPROP")
    found = reader.state("EXECUTION_PLAN_ENGINE_CONFIG", Config)
    facts, operation = found.facts, found.engine.graph.operation
    if not facts.blends and operation.beta != 0:
        raise reader.fail(
            f"{facts.tag} builds no plan with beta = {operation.beta} (the simulator's rule: "
            "a backward-filter configuration choosing the workspace knob k25=1 does not blend "
            "into dw)",
            NOT_SUPPORTED,
        )
    if not facts.pads_unequally and not operation.problem.symmetric:
        raise reader.fail(
            f"{facts.tag} builds no plan for {operation.problem.describe()}, whose pre and "
            f"post paddings differ (the simulator's rule: engines "
            f"{', '.join(map(str, sorted(engines.PAD_ALIKE_ONLY)))} pad both ends alike)",
            NOT_SUPPORTED,
        )
    return Plan(handle, found)


@dataclasses.dataclass(frozen=True)
class VariantPack(State):
    KIND = "VARIANT_PACK"

    uids: tuple[int, ...]
    pointers: tuple[int, ...]
    workspace: int

    def readable(self) -> dict[str, Entry]:
        return {
            "VARIANT_PACK_UNIQUE_IDS": ("INT64", self.uids),
            "VARIANT_PACK_DATA_POINTERS": ("VOID_PTR", self.pointers),
            "VARIANT_PACK_WORKSPACE": ("VOID_PTR", (self.workspace,)),
        }


def variant_pack(reader: Reader) -> VariantPack:
    made = VariantPack(
        reader.values("VARIANT_PACK_UNIQUE_IDS"), reader.values("VARIANT_PACK_DATA_POINTERS"),
        reader.one("VARIANT_PACK_WORKSPACE"),
    )  # fmt: skip
    if len(made.uids) != len(made.pointers) or len(set(made.uids)) != len(made.uids):
        raise reader.fail(f"unique ids {made.uids} must be distinct, one per data pointer")
    return made


def unsupported(reader: Reader) -> State:
    if reader.kind == "DEVICEPROP":
        raise reader.fail("DEVICEPROP descriptors are not simulated", NOT_SUPPORTED)
    raise reader.fail(f"{reader.kind} descriptors are cuDNN's to fill, not to finalize")


FINALIZE: dict[str, Callable[[Reader], State]] = {
    "TENSOR": tensor,
    "CONVOLUTION": convolution,
    **dict.fromkeys(OPERATIONS, operation),
    "OPERATIONGRAPH": graph,
    "ENGINEHEUR": heuristics,
    "ENGINE": engine,
    "KNOB_CHOICE": knob_choice,
    "ENGINECFG": config,
    "EXECUTION_PLAN": plan,
    "VARIANT_PACK": variant_pack,
    "KNOB_INFO": unsupported,
    "DEVICEPROP": unsupported,
}
