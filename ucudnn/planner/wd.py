"""WD (workspace division): one schedule per kernel under one total budget, at minimum total time.

An integer linear program over the kernels' desirable sets: pick one schedule per kernel so that
the chosen (aligned) workspaces fit the budget and the sum of times is minimal. Solved exactly
(python-mip with HiGHS, CBC as the fallback, relative and absolute gap 0) after three exact
reductions that keep it small:

- Kernels with identical options (ResNet's repeated blocks) form one group whose variables
  count how many of its kernels take each option.
- A Lagrangian bound: with lambda from the LP relaxation (the greedy over the options' convex
  hulls), any solution that uses option c costs at least L(lambda) + r_c, where r_c is c's
  reduced cost; an option for which that exceeds the cost of a known solution (the integer
  greedy) is in no optimal solution and is dropped. When the known solution meets the bound, it
  is optimal and no solver runs.
- What is left goes to the solver, which runs in a background thread under a time limit, so
  that Ctrl-C is answered at once.

The chosen workspaces are laid out back to back in one arena, each at an offset that is a
multiple of `alignment`. The budget therefore constrains the *aligned* sizes (each rounded up
to the alignment), so offsets plus sizes always fit in an arena of `budget_bytes`.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import importlib.util
import itertools
import logging
import math
import numbers
import operator
import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from ucudnn.core.arena import CUDNN_ALIGNMENT
from ucudnn.core.checks import integer, shown
from ucudnn.errors import SolverWarning
from ucudnn.planner.background import Background
from ucudnn.planner.choices import DEFAULT_TIME_LIMIT_S, SOLVERS
from ucudnn.planner.config import byte_count
from ucudnn.planner.errors import InfeasibleError, SolverError
from ucudnn.planner.kernel_table import KernelId
from ucudnn.planner.pareto import pareto_front
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.units import bytes_text

if TYPE_CHECKING:
    import mip  # untyped: its names are Any to mypy


logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class WDSolution:
    choices: dict[KernelId, Schedule]  # in the order the sets were given
    offsets: dict[KernelId, int]  # byte offset of each kernel's workspace in the arena
    arena_bytes: int  # sum of the aligned workspaces, <= the budget
    status: str  # "optimal", or "feasible" when the time limit stopped the solver first
    solver: str  # "highs" or "cbc"; "none" when the bounds alone proved the answer optimal

    @property
    def time_ms(self) -> float:
        return math.fsum(s.time_ms for s in self.choices.values())


def aligned(nbytes: int, alignment: int) -> int:
    """`nbytes` rounded up to a multiple of `alignment`."""
    return -(-nbytes // alignment) * alignment


@dataclasses.dataclass
class _Group:
    """Kernels with the same options, smallest first; sizes in units of the alignment."""

    kernels: list[KernelId]
    options: list[Schedule]
    units: list[int]
    times: list[float]
    allowed: list[int]  # indices of the options an optimal solution may still use
    counts: dict[int, int] = dataclasses.field(default_factory=dict)  # option -> kernels

    def settle(self, counts: dict[int, int]) -> None:
        self.counts = {i: n for i, n in counts.items() if n}
        self.allowed = sorted(self.counts)


def check_solver(solver: object, time_limit_s: object) -> tuple[str, float]:
    """The solver's name and time limit, checked: a known name and a positive, finite number
    of seconds."""
    if solver not in SOLVERS:
        raise ValueError(f"unknown solver {shown(solver)}; expected one of {', '.join(SOLVERS)}")
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, numbers.Real):
        raise TypeError(f"time_limit_s must be a number of seconds, got {shown(time_limit_s)}")
    # Spelled with `<=` and `<`, the comparisons numbers.Real declares; NaN fails the second.
    if time_limit_s <= 0 or not time_limit_s < math.inf:
        raise ValueError(f"time_limit_s must be a positive number of seconds, got {time_limit_s}")
    return str(solver), float(time_limit_s)


def plan_wd(
    sets: Mapping[KernelId, Sequence[Schedule]],
    budget_bytes: int,
    solver: str = "highs",
    alignment: int = CUDNN_ALIGNMENT,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
) -> WDSolution:
    """Pick one schedule from each kernel's set so that the aligned workspaces fit
    `budget_bytes` and the total time is minimal.

    Determinism filters belong to the sets (see `desirable_set`): filtering a front afterwards
    would lose deterministic schedules that a faster non-deterministic one dominated.
    Raises InfeasibleError with the minimum feasible budget when even the smallest schedules
    do not fit, and SolverError when the solver fails or cannot be loaded (naming the package to
    install; HiGHS that cannot be loaded falls back to CBC, with a SolverWarning). A solver
    stopped by `time_limit_s` returns its best plan with status "feasible" (it starts from a
    known one). Ctrl-C stops the wait at once, but the solver thread runs on, in the
    background, until its time limit.
    """
    budget_bytes = byte_count(budget_bytes, "budget_bytes")
    alignment = integer(alignment, "alignment", minimum=1)
    solver, time_limit_s = check_solver(solver, time_limit_s)
    deadline = time.monotonic() + time_limit_s
    groups = _groups(sets, alignment)
    need = sum(len(g.kernels) * g.units[0] for g in groups) * alignment
    if need > budget_bytes:
        raise _budget_infeasible(groups, budget_bytes, need, alignment)
    budget = budget_bytes // alignment
    status, used = "optimal", "none"
    if sum(len(g.kernels) * g.units[-1] for g in groups) <= budget:
        logger.debug("WD over %d kernels: every fastest schedule fits; nothing to trade", len(sets))
        for g in groups:
            g.settle({len(g.options) - 1: len(g.kernels)})
    elif (start := _prove_greedy_or_prune(groups, budget)) is None:
        logger.debug(
            "WD over %d kernels: the greedy choice meets the LP bound, so it is optimal", len(sets)
        )
    elif _settle_exactly(groups, start, budget, deadline):
        used = "dp"
    else:
        left_s = max(deadline - time.monotonic(), _LEAST_SOLVE_S)
        status, used = _solve(groups, start.counts, budget, solver, left_s)
    choices = _choices(sets, groups)
    offsets, end = {}, 0
    for k, schedule in choices.items():
        offsets[k] = end
        end += aligned(schedule.workspace_bytes, alignment)
    if end > budget_bytes:  # the promise the runtime relies on; never trust a solver blindly
        raise SolverError(f"the {used} solver exceeded the budget: {end} > {budget_bytes} bytes")
    return WDSolution(choices, offsets, end, status, used)


def _group(kernel: KernelId, schedules: Sequence[Schedule], alignment: int) -> _Group:
    """The group of `kernel` alone: its front under aligned sizes, smallest first, each
    schedule's units and time read once (sets hold thousands of schedules)."""
    keyed = [
        ((aligned(s.workspace_bytes, alignment) // alignment, s.time_ms), s) for s in schedules
    ]
    front = pareto_front(keyed, key=_KEY)
    if not front:
        raise InfeasibleError(
            f"{kernel[0]}/{kernel[1]} has no schedules to choose from", kernel=kernel
        )
    options = [s for _, s in front]
    units = [unit for (unit, _), _ in front]
    times = [time for (_, time), _ in front]
    return _Group([kernel], options, units, times, list(range(len(options))))


_KEY = operator.itemgetter(0)


def _groups(sets: Mapping[KernelId, Sequence[Schedule]], alignment: int) -> list[_Group]:
    """Kernels grouped by their sets; a set shared as one object (as `make_plan_wd` shares
    those of identical tables) is one group, and its front is computed once."""
    groups: dict[int, _Group] = {}
    for kernel, schedules in sets.items():
        if (group := groups.get(id(schedules))) is None:
            groups[id(schedules)] = _group(kernel, schedules, alignment)
        else:
            group.kernels.append(kernel)
    return list(groups.values())


def _choices(sets: Mapping[KernelId, object], groups: list[_Group]) -> dict[KernelId, Schedule]:
    """Each group's counts handed out in kernel order, smaller options first."""
    chosen: dict[KernelId, Schedule] = {}
    for g in groups:
        picks = [g.options[i] for i in sorted(g.counts) for _ in range(g.counts[i])]
        chosen.update(zip(g.kernels, picks, strict=True))
    return {k: chosen[k] for k in sets}


def _budget_infeasible(
    groups: list[_Group], budget: int, need: int, alignment: int
) -> InfeasibleError:
    smallest = {k: g.units[0] * alignment for g in groups for k in g.kernels}
    worst = max(smallest, key=lambda k: smallest[k])
    return InfeasibleError(
        f"total workspace budget {bytes_text(budget)} is too small: the smallest schedules of "
        f"all {len(smallest)} kernels need {bytes_text(need)} (each aligned to {alignment} "
        f"bytes); the largest of them, {worst[0]}/{worst[1]}, needs "
        f"{bytes_text(smallest[worst])}",
        kernel=worst if smallest[worst] > budget else None,
        required_bytes=need,
    )


# -- bounds -------------------------------------------------------------------------------
def _increments(groups: list[_Group]) -> list[tuple[float, int, int, int]]:
    """(time saved per unit, group, from option, to option) along each group's lower convex
    hull, best first: the steps of the LP relaxation's greedy."""
    steps = []
    for gi, g in enumerate(groups):
        hull = _lower_hull(g, range(len(g.options)))
        for (a, b), saved in zip(itertools.pairwise(hull), _saves(g, hull), strict=True):
            steps.append((saved, gi, a, b))
    steps.sort(key=lambda step: (-step[0], step[1], step[2]))
    return steps


def _lower_hull(g: _Group, indices: Iterable[int]) -> list[int]:
    """Those of the group's options `indices` (ascending) on their lower convex hull in the
    (units, time) plane, fewest units first: times fall along it, ever more slowly."""
    hull: list[int] = []
    for i in indices:
        while len(hull) >= 2 and _on_or_above(g, hull[-2], hull[-1], i):
            hull.pop()
        hull.append(i)
    return hull


def _saves(g: _Group, hull: list[int]) -> list[float]:
    """The time each step along `hull` saves per unit of workspace, falling along it."""
    return [
        (g.times[a] - g.times[b]) / (g.units[b] - g.units[a]) for a, b in itertools.pairwise(hull)
    ]


def _on_or_above(g: _Group, a: int, b: int, c: int) -> bool:
    """Whether option b lies on or above the segment from a to c in the (units, time) plane."""
    left = (g.times[b] - g.times[a]) * (g.units[c] - g.units[a])
    return left >= (g.times[c] - g.times[a]) * (g.units[b] - g.units[a])


@dataclasses.dataclass(frozen=True)
class _Start:
    """A known solution that uses no dropped option, and the LP's price of a unit."""

    counts: list[dict[int, int]]  # per group: option -> kernels
    time_ms: float
    multiplier: float


def relaxed_choices(
    sets: Mapping[KernelId, Sequence[Schedule]], budget_bytes: int, alignment: int
) -> dict[KernelId, Schedule]:
    """Each kernel's farthest option along its set's convex hull that the LP relaxation's
    optimum weighs: a cheap guess at what the integer optimum needs (the budget in bytes)."""
    groups = _groups(sets, alignment)
    reached, _ = _lp_path(groups, _increments(groups), budget_bytes // alignment)
    return {k: g.options[i] for g, i in zip(groups, reached, strict=True) for k in g.kernels}


def possible_options(
    sets: Mapping[KernelId, Sequence[Schedule]], budget_bytes: int, alignment: int
) -> dict[KernelId, list[Schedule]]:
    """Each kernel's options that an optimal solution may use: those the LP bound does not
    rule out against the cost of the integer greedy's solution (the budget in bytes; all of
    them where the smallest do not fit together, for the solver to say so)."""
    groups = _groups(sets, alignment)
    budget = budget_bytes // alignment
    if sum(len(g.kernels) * g.units[0] for g in groups) <= budget:
        _prove_greedy_or_prune(groups, budget)
    return {k: [g.options[i] for i in g.allowed] for g in groups for k in g.kernels}


def _lp_path(
    groups: list[_Group], steps: list[tuple[float, int, int, int]], budget: int
) -> tuple[list[int], float]:
    """How far the LP relaxation's greedy takes each group along its hull (the option of its
    last step, taken in full or in part), and the LP's price of a unit of workspace."""
    reached = [0] * len(groups)
    left = budget - sum(len(g.kernels) * g.units[0] for g in groups)
    for saved, gi, a, b in steps:
        reached[gi] = b
        need = len(groups[gi].kernels) * (groups[gi].units[b] - groups[gi].units[a])
        if need > left:
            return reached, saved
        left -= need
    return reached, 0.0


def _prove_greedy_or_prune(groups: list[_Group], budget: int) -> _Start | None:
    """Settle every group when the integer greedy is provably optimal (None); otherwise drop
    the options no optimal solution uses, settle the groups left with one, and return the
    greedy's solution to start the exact search from."""
    steps = _increments(groups)
    _, multiplier = _lp_path(groups, steps, budget)
    greedy, greedy_ms = _greedy(groups, steps, budget)
    priced = [[t + multiplier * u for t, u in zip(g.times, g.units, strict=True)] for g in groups]
    bound = math.fsum(len(g.kernels) * min(p) for g, p in zip(groups, priced, strict=True))
    bound -= multiplier * budget
    if greedy_ms <= bound:
        for g, counts in zip(groups, greedy, strict=True):
            g.settle(counts)
        return None
    # A solution using option i costs at least bound + (priced[i] - min(priced)); the margin
    # keeps options whose bound exceeds the greedy's cost by rounding alone, which grows with
    # the largest term of the bound.
    margin = 1e-12 * max(1.0, abs(greedy_ms), multiplier * budget)
    for g, p in zip(groups, priced, strict=True):
        lowest = min(p)
        g.allowed = [i for i in g.allowed if bound + p[i] - lowest <= greedy_ms + margin]
        if len(g.allowed) == 1:
            g.settle({g.allowed[0]: len(g.kernels)})
    return _Start(greedy, greedy_ms, multiplier)


def _greedy(
    groups: list[_Group], steps: list[tuple[float, int, int, int]], budget: int
) -> tuple[list[dict[int, int]], float]:
    """An integer solution: every step's kernels move up the hull while the budget lasts."""
    counts = [{0: len(g.kernels)} for g in groups]
    left = budget - sum(len(g.kernels) * g.units[0] for g in groups)
    for _, gi, a, b in steps:
        step = groups[gi].units[b] - groups[gi].units[a]
        moved = min(counts[gi].get(a, 0), left // step)
        if moved:
            counts[gi][a] -= moved
            counts[gi][b] = counts[gi].get(b, 0) + moved
            left -= moved * step
    time_ms = math.fsum(
        n * g.times[i] for g, c in zip(groups, counts, strict=True) for i, n in c.items()
    )
    return counts, time_ms


# -- the exact search ---------------------------------------------------------------------
# How many partial solutions the exact rounds may build before they leave the problem to the
# ILP solver: about 0.15 s of pure Python. The recorded tables and deep-600 settle within
# 11,000 (deep-600 at 512 MiB, the fp16 engine tables at 4 GiB); a search that gives up costs
# this much on top of the solver's time.
DP_WORK_LIMIT = 150_000
# How many partials per layer the narrow search that starts the exact one keeps (its work
# counts against the limit too: at most this many per group and choice). Eight find
# deep-600's optimum at 512 MiB; more only cost time.
BEAM_WIDTH = 8
# How many pieces each side of a bound on the later groups keeps at most (see _Steps.climb):
# beyond them it goes on at the least rate of a step it dropped, a lower bound, so that the
# bounds of n groups take O(n) pieces whatever the slack.
_MOST_PIECES = 64
# The first round allows this share of the start's distance from the bound; each next one
# this many times more, up to all of it.
_FIRST_SLACK_SHARE = 64.0
_SLACK_GROWTH = 4.0
# A solve past its deadline still gets this long: the solver returns the solution it starts from.
_LEAST_SOLVE_S = 1e-9


# A partial solution over the first groups: (units, time, reduced cost, that with the least
# the later groups add to it, the partial of the previous layer it extends, the group's choice
# it adds). Tuples: there are up to a million.
_Partial = tuple[int, float, float, float, int, int]
# A group's choice for all its kernels: (units, time, reduced cost, kernels per allowed option).
_Choice = tuple[int, float, float, tuple[int, ...]]
_Sized = TypeVar("_Sized", _Partial, _Choice)


def _settle_exactly(groups: list[_Group], start: _Start, budget: int, deadline: float) -> bool:
    """Settle the groups that still have a choice by an exact dynamic programme over them,
    unless it would take more than DP_WORK_LIMIT partial solutions or run past `deadline`
    (False: nothing is settled).

    Why the result is optimal. Let lambda >= 0 be the LP's unit price and, for a group g of
    n_g kernels, m_g the least priced time t_i + lambda * u_i of its options; the reduced cost
    of a choice is its time plus lambda times its units, less n_g * m_g, and is >= 0. Every
    complete solution using U <= R units (R: the budget the free groups share) takes
    T = sum(n_g * m_g) - lambda * R + (sum of reduced costs) + lambda * (R - U), so a solution
    as fast as the start T0 has reduced costs summing to at most T0 - sum(n_g * m_g) +
    lambda * R, the slack; the last two terms are >= 0. A partial solution over the first k
    groups whose reduced cost exceeds the slack therefore extends to no solution as fast as T0,
    and one that uses more units than R to none at all: both are dropped. So is one whose
    reduced cost, with the least that the later groups add to it in the units it leaves them
    (their unused units priced: see _RestBound), exceeds the slack. Of two partial
    solutions over the same groups, one using no more units and no more time (dominating the
    other) extends by the same choices of the later groups to a solution no worse, so only the
    non-dominated ones are kept; within a group of identical kernels the same holds for its
    choices, which are built kernel by kernel. What remains after the last group holds an
    optimal solution if any is faster than T0; the fastest found is compared with T0 (with a
    margin for rounding in the pruning, and exactly by fsum at the end) and the better kept.

    T0 is the faster of the start and what a narrow search finds first (one that keeps only
    the BEAM_WIDTH partials of least bound per layer): the nearer T0 is to the optimum, the
    less slack the exact rounds need, and their work grows steeply with it. Rounds of growing
    slack come next: a round that finds a solution within its slack has found the optimum,
    since every solution it did not see is slower than the bound plus that slack.
    """
    free = [
        (g, counts) for g, counts in zip(groups, start.counts, strict=True) if len(g.allowed) > 1
    ]
    room = budget - sum(
        n * g.units[i] for g in groups if len(g.allowed) == 1 for i, n in g.counts.items()
    )
    best = dict(zip(map(id, (g for g, _ in free)), (counts for _, counts in free), strict=True))
    best_ms = math.fsum(n * g.times[i] for g, counts in free for i, n in counts.items())
    search = _Search([g for g, _ in free], start.multiplier, room, deadline)
    margin = 1e-9 * max(1.0, abs(best_ms), start.multiplier * room)
    search.know_slack(best_ms - search.bound_ms + margin)

    def keep_if_better(found: list[dict[int, int]]) -> None:
        """Make `found` (per search group) the best so far if it is faster."""
        nonlocal best, best_ms
        found_ms = math.fsum(
            n * g.times[i]
            for g, counts in zip(search.groups, found, strict=True)
            for i, n in counts.items()
        )
        if found_ms < best_ms:
            best, best_ms = dict(zip(map(id, search.groups), found, strict=True)), found_ms

    # A narrow search first: its solution, when faster, leaves the exact rounds less slack.
    if (found := search.run(best_ms - search.bound_ms + margin, keep=BEAM_WIDTH)) is None:
        logger.debug("WD: the exact search gave up after %d partial solutions", search.work)
        return False
    if found:
        keep_if_better(found)
    gap = best_ms - search.bound_ms
    slack = gap / _FIRST_SLACK_SHARE
    while True:
        slack = min(slack, gap)
        found = search.run(slack + margin)
        if found is None:
            logger.debug("WD: the exact search gave up after %d partial solutions", search.work)
            return False
        if found or slack >= gap:
            break
        slack *= _SLACK_GROWTH
    logger.debug("WD: the exact search built %d partial solutions", search.work)
    if found:
        keep_if_better(found)
    for g, _ in free:
        g.settle(best[id(g)])
    return True


class _Search:
    """The exact search over the groups that still have a choice, in rounds of growing slack.

    Groups that the LP leaves undecided between options of different units come first, then
    those whose options differ most in units: the later ones, which move few units each, are
    then what the bound on the rest (see _RestBound) prices, and it prunes the partials that
    strayed further from the LP's units than they can make up."""

    def __init__(self, groups: list[_Group], multiplier: float, room: int, deadline: float) -> None:
        lowest = {
            id(g): min(g.times[i] + multiplier * g.units[i] for i in g.allowed) for g in groups
        }
        self.options = {
            id(g): [
                (g.units[i], g.times[i], g.times[i] + multiplier * g.units[i] - lowest[id(g)])
                for i in g.allowed
            ]
            for g in groups
        }
        self.groups = sorted(
            groups,
            key=lambda g: (
                -_lp_width(g, multiplier),
                len(g.kernels) * (g.units[g.allowed[0]] - g.units[g.allowed[-1]]),
            ),
        )
        self.multiplier, self.room, self.deadline = multiplier, room, deadline
        self.bound_ms = (
            math.fsum(len(g.kernels) * lowest[id(g)] for g in groups) - multiplier * room
        )
        self.rests: list[_RestBound] = []
        self.work = 0

    def know_slack(self, slack: float) -> None:
        """Make the bounds on the rest for runs of at most `slack`."""
        self.rests = _rest_bounds(self.groups, self.multiplier, slack)

    def run(self, slack: float, keep: int | None = None) -> list[dict[int, int]] | None:
        """The counts of the fastest solution within `slack` of the bound ([] if none is), or
        None when the work limit or the deadline stops the search first. With `keep`, each
        layer keeps only that many partials, those of the least bound: a good solution fast,
        not a proven one."""
        layers: list[list[_Partial]] = [[(0, 0.0, 0.0, 0.0, -1, -1)]]
        fronts = []
        room = self.room
        for g, rest in zip(self.groups, self.rests[1:], strict=True):
            front = _group_front(len(g.kernels), self.options[id(g)], slack, room)
            self.work += len(front) * len(layers[-1])
            if self.work > DP_WORK_LIMIT or time.monotonic() > self.deadline:
                return None
            fronts.append(front)
            layer = _extend(layers[-1], front, slack, room, rest)
            if not layer:  # no partial extends to a solution within the slack
                return []
            if keep is not None and len(layer) > keep:
                bounds = [partial[3] for partial in layer]
                kept = sorted(range(len(layer)), key=bounds.__getitem__)[:keep]
                layer = [layer[i] for i in sorted(kept)]
            layers.append(layer)
        # The last partial is the fastest; its reduced cost counts the units it leaves unused.
        last = layers[-1][-1]
        if last[2] + self.multiplier * (room - last[0]) > slack:
            return []
        return _trace(layers, fronts, self.groups)


def _group_front(
    kernels: int, options: list[tuple[int, float, float]], slack: float, room: int
) -> list[_Choice]:
    """The group's non-dominated choices (counts of its kernels per allowed option) within the
    slack and the room, built kernel by kernel, fewest units first."""
    # One kernel's are its options within both: a front already, as the options come units
    # ascending and time falling (most groups are of one kernel).
    front: list[_Choice] = [
        (u, t, r, counts)
        for (u, t, r), counts in zip(options, _one_kernel(len(options)), strict=True)
        if r <= slack and u <= room
    ]
    for _ in range(kernels - 1):
        front = _non_dominated(
            [
                (u + du, t + dt, r + dr, (*c[:j], c[j] + 1, *c[j + 1 :]))
                for u, t, r, c in front
                for j, (du, dt, dr) in enumerate(options)
                if r + dr <= slack and u + du <= room
            ]
        )
    return front


@functools.lru_cache(maxsize=64)
def _one_kernel(options: int) -> tuple[tuple[int, ...], ...]:
    """The counts of one kernel taking each of `options` options in turn (kept, so a tuple:
    every caller reads the same one)."""
    return tuple(tuple(int(i == j) for i in range(options)) for j in range(options))


def _extend(
    layer: list[_Partial], front: list[_Choice], slack: float, room: int, rest: _RestBound
) -> list[_Partial]:
    """The non-dominated partials that add one of the group's choices to one of `layer`'s and
    that the groups after it may complete within the slack (see _RestBound)."""
    return _non_dominated(
        [
            (u + du, t + dt, r + dr, bound, p, j)
            for p, (u, t, r, _, _, _) in enumerate(layer)
            for j, (du, dt, dr, _) in enumerate(front)
            if r + dr <= slack
            and u + du <= room
            and (bound := r + dr + rest.least(room - u - du)) <= slack
        ]
    )


class _RestBound:
    """What the groups after a partial add at least to its reduced cost, as a function of the
    room they are left, c units: G(c) = T(c) - sum(n_g * m_g) + lambda * c, where T(c) is the
    least time of their LP relaxation within c units (so no integer choice of theirs adds less).

    G is convex and piecewise linear, and zero from `low` to `high` units, where the LP at
    lambda takes every hull step that saves more than lambda per unit (and then those that save
    exactly lambda). Below `low`, it gives up the steps it takes, those that save least first:
    a unit costs (saving - lambda). Above `high`, it takes the steps it leaves, those that save
    most first: a unit costs (lambda - saving), and one left unused costs lambda. Each side is
    known only until it exceeds the slack, beyond which `least` is infinite (no partial there
    is kept), and for at most _MOST_PIECES pieces (see `_Steps.climb`)."""

    __slots__ = ("_above", "_below", "high", "low")

    def __init__(self, low: int, high: int, below: _Climb, above: _Climb) -> None:
        self.low, self.high, self._below, self._above = low, high, below, above

    def least(self, room: int) -> float:
        if room < self.low:
            ends, costs, rates = self._below
            units = self.low - room
        elif room > self.high:
            ends, costs, rates = self._above
            units = room - self.high
        else:
            return 0.0
        i = bisect.bisect_left(ends, units)
        return costs[i - 1] + rates[i] * (units - ends[i - 1])


# A convex piecewise-linear cost of d > 0 units: (ends, costs, rates), the pieces ending at
# `ends` (ascending from 0, the last infinite), each at its own rate per unit (rising); the
# cost at ends[i] is costs[i].
_Climb = tuple[list[float], list[float], list[float]]


class _Steps:
    """Hull steps on one side of the LP's units, by rate per unit ascending, after an empty
    first one (so that the pieces' ends and costs are running sums), and then `beyond` per
    unit."""

    def __init__(self, beyond: float) -> None:
        self.rates, self.units, self.beyond = [0.0], [0], beyond
        self._dropped = math.inf  # the least rate of a step dropped past the most pieces

    def add(self, rate: float, units: int) -> None:
        if rate >= self._dropped:  # it would come after a dropped step: past the most pieces
            return
        at = bisect.bisect_right(self.rates, rate, 1)
        self.rates.insert(at, rate)
        self.units.insert(at, units)

    def climb(self, slack: float) -> _Climb:
        """The cost of the steps taken in turn, known up to `slack` and for _MOST_PIECES steps.
        Where it exceeds the slack within them, the steps after that one are dropped, and
        beyond it the cost is infinite: a step added later only pushes them further out.
        Otherwise the steps past the most pieces are dropped, for good, and beyond the pieces
        the cost rises at the least rate of a dropped step (or `beyond`, if that is less): no
        faster than the steps it leaves out."""
        ends: list[float] = list(itertools.accumulate(self.units))
        costs: list[float] = list(itertools.accumulate(map(operator.mul, self.rates, self.units)))
        over = bisect.bisect_right(costs, slack)  # rates are positive: costs rise
        if over < len(costs) and over <= _MOST_PIECES:
            keep, beyond = over, math.inf
        else:
            keep = _MOST_PIECES
            if len(costs) > keep + 1:
                self._dropped = self.rates[keep + 1]
            beyond = min(self.beyond, self._dropped)
        del self.rates[keep + 1 :], self.units[keep + 1 :], ends[keep + 1 :], costs[keep + 1 :]
        return [*ends, math.inf], [*costs, math.inf], [*self.rates, beyond]


def _rest_bounds(groups: list[_Group], multiplier: float, slack: float) -> list[_RestBound]:
    """[k]: the _RestBound of groups[k:], for k = 0 .. len(groups), each known up to `slack`.
    Built from the last group back, each adding its steps to those of the ones after it."""
    below = _Steps(math.inf)  # saving - lambda per unit: the steps the LP takes
    above = _Steps(multiplier)  # lambda - saving per unit: those it leaves
    low = high = 0
    bounds = [_RestBound(0, 0, below.climb(slack), above.climb(slack))]
    for g in reversed(groups):
        least, steps = _allowed_steps(g)
        low += least
        high += least
        for save, units in steps:
            if save > multiplier:
                low += units
                high += units
                below.add(save - multiplier, units)
            elif save == multiplier:
                high += units
            else:
                above.add(multiplier - save, units)
        bounds.append(_RestBound(low, high, below.climb(slack), above.climb(slack)))
    return bounds[::-1]


def _allowed_steps(g: _Group) -> tuple[int, list[tuple[float, int]]]:
    """The units all the group's kernels take at its least allowed option, and (saving per
    unit, units for all its kernels) of each step along the lower convex hull of its allowed
    options, savings falling."""
    hull = _lower_hull(g, g.allowed)
    n = len(g.kernels)
    units = [n * (g.units[b] - g.units[a]) for a, b in itertools.pairwise(hull)]
    return n * g.units[hull[0]], list(zip(_saves(g, hull), units, strict=True))


def _lp_width(g: _Group, multiplier: float) -> int:
    """How many units the LP at `multiplier` leaves open for the group: those of its steps that
    save exactly that much per unit."""
    return sum(units for save, units in _allowed_steps(g)[1] if save == multiplier)


def _non_dominated(items: list[_Sized]) -> list[_Sized]:
    """The items no other beats in both units and time, fewest units (so most time) first."""
    items.sort(key=lambda x: (x[0], x[1]))
    kept, fastest = [], math.inf
    for item in items:
        if item[1] < fastest:
            kept.append(item)
            fastest = item[1]
    return kept


def _trace(
    layers: list[list[_Partial]], fronts: list[list[_Choice]], groups: list[_Group]
) -> list[dict[int, int]]:
    """Each group's counts in the fastest complete solution (the last of the last layer)."""
    found = []
    at = len(layers[-1]) - 1
    for layer, front, g in zip(
        reversed(layers[1:]), reversed(fronts), reversed(groups), strict=True
    ):
        _, _, _, _, at, choice = layer[at]
        found.append(dict(zip(g.allowed, front[choice][3], strict=True)))
    return found[::-1]


# -- the solver ---------------------------------------------------------------------------
# The packages python-mip 2.0 loads its solvers' libraries from; HiGHS's as pyproject.toml pins
# it (highspy 1.16 no longer exports the C library python-mip loads, so python-mip's own advice,
# `pip install mip[highs]`, does not mend it).
HIGHS_PACKAGE = "highspy>=1.9,<1.16"
CBC_PACKAGE = "cbcbox"
_HIGHS_MISSING = (
    "the HiGHS solver cannot be loaded: python-mip loads it from the highspy package, which is "
    f"missing, broken or too new (pip install '{HIGHS_PACKAGE}')"
)
_CBC_MISSING = (
    "the CBC solver cannot be loaded: python-mip loads it from the cbcbox package, which is "
    f"missing or broken (pip install {CBC_PACKAGE})"
)


def _model(solver: str) -> tuple[mip.Model, str]:
    """A quiet minimisation model, on CBC if HiGHS cannot be loaded; SolverError in one line,
    saying what to install, if the solver asked for (or both) cannot be."""
    import mip  # here, not at the top: importing the planner must not load the solvers

    if solver == "cbc":
        model = _cbc_model(f"{_CBC_MISSING}; or plan with HiGHS, the default (--solver highs)")
    else:
        try:
            model = mip.Model(sense=mip.MINIMIZE, solver_name=mip.HIGHS)
        except Exception as exc:  # python-mip raises plain exceptions when a library is missing
            logger.debug("python-mip could not load HiGHS: %s", exc)
            model, solver = _cbc_model(f"{_HIGHS_MISSING}, and {_CBC_MISSING}"), "cbc"
            message = f"{_HIGHS_MISSING}; solving with CBC instead"
            warnings.warn(message, SolverWarning, stacklevel=4)
    model.verbose = 0
    model.max_mip_gap = 0.0
    model.max_mip_gap_abs = 0.0
    return model, solver


def _cbc_model(unavailable: str) -> mip.Model:
    """A minimisation model on CBC, or SolverError(`unavailable`)."""
    import mip

    # Without cbcbox, python-mip logs an error of its own and then fails with a NameError:
    # checking first keeps the message to one line. PMIP_CBC_LIBRARY, python-mip's own
    # setting, names a CBC library to load instead of cbcbox's.
    if "PMIP_CBC_LIBRARY" not in os.environ and importlib.util.find_spec(CBC_PACKAGE) is None:
        raise SolverError(unavailable)
    try:
        return mip.Model(sense=mip.MINIMIZE, solver_name=mip.CBC)
    except Exception as exc:  # a library that is there but does not load
        raise SolverError(unavailable) from exc


def _solve(
    groups: list[_Group], start: list[dict[int, int]], budget: int, solver: str, time_limit_s: float
) -> tuple[str, str]:
    """Settle the groups that still have a choice by integer programming, from the solution
    `start` (so a time limit still leaves a plan): (status, solver)."""
    import mip

    free = [(g, counts) for g, counts in zip(groups, start, strict=True) if len(g.allowed) > 1]
    taken = sum(n * g.units[i] for g in groups if len(g.allowed) == 1 for i, n in g.counts.items())
    model, used = _model(solver)
    variables = []  # per free group, per allowed option: how many of its kernels take it
    for g, _ in free:
        kind = mip.BINARY if len(g.kernels) == 1 else mip.INTEGER
        xs = [model.add_var(var_type=kind, lb=0, ub=len(g.kernels)) for _ in g.allowed]
        model += mip.xsum(xs) == len(g.kernels)
        variables.append(xs)
    terms = [
        (g, i, x, counts.get(i, 0))
        for (g, counts), xs in zip(free, variables, strict=True)
        for i, x in zip(g.allowed, xs, strict=True)
    ]
    model += mip.xsum(g.units[i] * x for g, i, x, _ in terms) <= budget - taken
    model.objective = mip.xsum(g.times[i] * x for g, i, x, _ in terms)
    model.start = [(x, count) for _, _, x, count in terms]
    logger.debug(
        "WD: the %s solver chooses for %d kernels among %d options, starting from the greedy's",
        used, sum(len(g.kernels) for g, _ in free), len(terms),
    )  # fmt: skip
    started = time.monotonic()
    status = _optimize(model, used, time_limit_s)
    if status not in (mip.OptimizationStatus.OPTIMAL, mip.OptimizationStatus.FEASIBLE):
        raise SolverError(
            f"the {used} solver stopped with status {status.name} after at most "
            f"{time_limit_s:g} s; no plan was found"
        )
    if status == mip.OptimizationStatus.OPTIMAL:
        logger.debug("the %s solver proved the optimum in %.2f s", used, time.monotonic() - started)
    else:
        logger.info(
            "the %s solver stopped at its time limit of %.3g s with a plan not proven optimal",
            used, time_limit_s,
        )  # fmt: skip
    for (g, _), xs in zip(free, variables, strict=True):
        settled = {i: round(x.x) for i, x in zip(g.allowed, xs, strict=True)}
        if sum(settled.values()) != len(g.kernels) or min(settled.values()) < 0:
            raise SolverError(f"the {used} solver returned a solution that is not one")
        g.settle(settled)
    return ("optimal" if status == mip.OptimizationStatus.OPTIMAL else "feasible"), used


def _optimize(model: mip.Model, solver: str, time_limit_s: float) -> mip.OptimizationStatus:
    """model.optimize in the background, so that Ctrl-C interrupts the wait at once."""
    try:
        return Background(lambda: model.optimize(max_seconds=time_limit_s), solver).result()
    except Exception as exc:  # python-mip raises plain exceptions for solver faults
        raise SolverError(f"the {solver} solver failed: {exc}") from exc
