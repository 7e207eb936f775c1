"""WD's last resort: the integer linear program over the groups still undecided, solved by
python-mip (HiGHS, or CBC where HiGHS cannot be loaded) in a background thread under a time
limit, so that Ctrl-C is answered at once."""

from __future__ import annotations

import importlib.util
import logging
import os
import time
import warnings
from typing import TYPE_CHECKING

from ucudnn.errors import SolverWarning
from ucudnn.planner.background import Background
from ucudnn.planner.errors import SolverError
from ucudnn.planner.wd.groups import Group

if TYPE_CHECKING:
    import mip  # untyped: its names are Any to mypy

logger = logging.getLogger(__name__)

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


def settle_by_ilp(
    groups: list[Group], start: list[dict[int, int]], budget: int, solver: str, time_limit_s: float
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
