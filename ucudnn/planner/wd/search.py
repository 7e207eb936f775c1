"""WD's exact search: a dynamic programme over the groups that still have a choice, pruned by
the LP's reduced costs, in rounds of growing slack; it gives up past a work limit, leaving the
problem to the ILP solver. Why its answer is optimal: docs/design/wd-planning.md."""

from __future__ import annotations

import bisect
import functools
import itertools
import logging
import math
import operator
import time
from typing import TypeVar

from ucudnn.planner.wd.bounds import Start, lower_hull, saves
from ucudnn.planner.wd.groups import Group

logger = logging.getLogger(__name__)

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


# A partial solution over the first groups: (units, time, reduced cost, that with the least
# the later groups add to it, the partial of the previous layer it extends, the group's choice
# it adds). Tuples: there are up to a million.
_Partial = tuple[int, float, float, float, int, int]
# A group's choice for all its kernels: (units, time, reduced cost, kernels per allowed option).
_Choice = tuple[int, float, float, tuple[int, ...]]
_Sized = TypeVar("_Sized", _Partial, _Choice)


def settle_exactly(groups: list[Group], start: Start, budget: int, deadline: float) -> bool:
    """Settle the groups that still have a choice by an exact dynamic programme over them,
    unless it would take more than DP_WORK_LIMIT partial solutions or run past `deadline`
    (False: nothing is settled).

    The result is optimal: partial solutions are dropped only where their reduced cost, with
    the least the later groups add to it, exceeds the slack, or where another dominates them
    (docs/design/wd-planning.md says why). The slack is measured from T0, the faster of the
    start and what a narrow search finds first (one that keeps only the BEAM_WIDTH partials of
    least bound per layer); rounds of growing slack come next, and a round that finds a
    solution within its slack has found the optimum.
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

    def __init__(self, groups: list[Group], multiplier: float, room: int, deadline: float) -> None:
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


def _rest_bounds(groups: list[Group], multiplier: float, slack: float) -> list[_RestBound]:
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


def _allowed_steps(g: Group) -> tuple[int, list[tuple[float, int]]]:
    """The units all the group's kernels take at its least allowed option, and (saving per
    unit, units for all its kernels) of each step along the lower convex hull of its allowed
    options, savings falling."""
    hull = lower_hull(g, g.allowed)
    n = len(g.kernels)
    units = [n * (g.units[b] - g.units[a]) for a, b in itertools.pairwise(hull)]
    return n * g.units[hull[0]], list(zip(saves(g, hull), units, strict=True))


def _lp_width(g: Group, multiplier: float) -> int:
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
    layers: list[list[_Partial]], fronts: list[list[_Choice]], groups: list[Group]
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
