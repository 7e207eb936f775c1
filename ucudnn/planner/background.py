"""Work in a daemon thread that the caller waits for in short steps.

The WD solver spends its time in C without Python's lock; run there, the waiting thread stays
free to take Ctrl-C at once instead of when the solver returns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_POLL_S = 0.05


class Background(Generic[T]):
    """`function()` started in a daemon thread named `name`."""

    def __init__(self, function: Callable[[], T], name: str) -> None:
        self._function = function
        self._outcome: tuple[bool, object] | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome = (True, self._function())
        except BaseException as exc:  # raised again in the waiting thread
            self._outcome = (False, exc)

    def result(self) -> T:
        """The function's result, or its exception raised here."""
        while self._thread.is_alive():
            self._thread.join(_POLL_S)
        assert self._outcome is not None
        finished, value = self._outcome
        if not finished:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]
