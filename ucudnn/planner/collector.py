"""Python's cyclic garbage collector paused while the planner builds its large structures."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (or the decorated call), then as it was.

    For work that makes many objects and no reference cycles, as reading tables and planning
    do (tests/test_planner_collector.py holds them to it): what they make is either freed by
    its reference count or lives on, so the collector's passes over it free nothing, and each
    full pass also goes through all the rest the process holds. Those passes took a third of
    the time a large table takes to read, and a fifth of a plan over 1,800 kernels.

    As a decorator it puts a frame of its own between the function and its caller: a function
    that warns with a fixed stacklevel, to name its caller (make_plan_wr, make_plan_wd), pauses
    it in a `with` block instead.

    A pause begun with the collector off leaves it off, so nested pauses leave it to the
    outermost. The collector is one per process: where two threads pause it at once, the pause
    that found it on turns it back on when it ends, though the other's work may go on."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
