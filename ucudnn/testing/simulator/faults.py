"""Fault injection: make chosen calls of the simulated libraries fail, as hardware rarely does
on demand (an allocation refused, an algorithm failing at execution).

A rule names the C call it applies to ("cudaMalloc", "cudnnConvolutionForward",
"cudnnGetConvolutionBackwardDataWorkspaceSize", ...; for the backend API
"cudnnBackendFinalize(<KIND>)", e.g. "cudnnBackendFinalize(EXECUTION_PLAN)", and
"cudnnBackendExecute"), the status that call then returns (a
cudaError_t code for the runtime, a cudnnStatus_t for cuDNN), an optional predicate on the
call's `Context`, and how many times it fires (None: until cleared).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ucudnn.testing.simulator.problem import SimProblem


@dataclasses.dataclass(frozen=True)
class Context:
    """What a rule's predicate can look at."""

    call: str
    nbytes: int | None = None  # cudaMalloc
    kernel: str | None = None  # convolution calls
    algo: int | None = None
    problem: SimProblem | None = None
    engine: str | None = None  # backend engine configurations and plans: its tag


@dataclasses.dataclass
class Rule:
    call: str
    status: int
    when: Callable[[Context], bool] | None = None
    times: int | None = 1
    hits: int = 0  # how many times it fired

    def fires(self, context: Context) -> bool:
        if context.call != self.call or self.times == 0:
            return False
        return self.when is None or self.when(context)


class Faults:
    """The rules in force, first added first asked."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []

    def add(
        self,
        call: str,
        status: int,
        *,
        when: Callable[[Context], bool] | None = None,
        times: int | None = 1,
    ) -> Rule:
        if status == 0:
            raise ValueError("a fault needs a failing status, not 0")
        rule = Rule(call, status, when, times)
        self.rules.append(rule)
        return rule

    def clear(self) -> None:
        self.rules.clear()

    def status(self, context: Context) -> int | None:
        """The status the call fails with, or None; a rule that fires uses up one time."""
        for rule in self.rules:
            if rule.fires(context):
                rule.hits += 1
                if rule.times is not None:
                    rule.times -= 1
                return rule.status
        return None
