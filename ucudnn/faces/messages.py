"""What the `ucudnn` command shows on stderr besides its own errors: the library's log records
and UcudnnWarnings, one line each, at the verbosity that -v and -q ask for. Every line starts
as its errors do (`line_prefix`): "ucudnn plan: warning: ...", "ucudnn plan: error: ...".

The library only logs and warns; the command is the application, so it attaches the handler.
All of it is undone on exit, as `main` may run more than once in a process (tests, notebooks).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import TextIO

from ucudnn.errors import UcudnnWarning

QUIET = -1  # errors only
# Verbosity (-q, neither, -v, -vv) to the lowest level shown.
_LEVELS = {QUIET: logging.ERROR, 0: logging.WARNING, 1: logging.INFO, 2: logging.DEBUG}


def _level(verbosity: int) -> int:
    """The lowest level shown: -q errors only, by default warnings, -v INFO, -vv DEBUG."""
    return _LEVELS[max(QUIET, min(verbosity, 2))]


def line_prefix(command: str | None) -> str:
    """What every line on stderr starts with: "ucudnn plan" within a command, else "ucudnn"."""
    return "ucudnn" if command is None else f"ucudnn {command}"


class _LineFormatter(logging.Formatter):
    """ "ucudnn plan: message", and from WARNING up "ucudnn plan: warning: message"."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        return f"{self._prefix}: {text}"


@contextlib.contextmanager
def shown(verbosity: int, command: str | None = None) -> Iterator[None]:
    """Within the block, records of the "ucudnn" loggers at `_level(verbosity)` or above, and
    UcudnnWarnings unless quiet, go to stderr one line each, naming `command` when given;
    other warnings as Python shows them."""
    logger = logging.getLogger("ucudnn")
    handler = logging.StreamHandler()  # the stderr of now: a test's capture, say
    handler.setFormatter(_LineFormatter(line_prefix(command)))
    saved = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(_level(verbosity))
    logger.propagate = False  # the command owns stderr: each record once, from this handler
    try:
        with warnings.catch_warnings():  # restores showwarning and the filters on exit
            _log_ucudnn_warnings(logger)
            yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _log_ucudnn_warnings(logger: logging.Logger) -> None:
    """Show UcudnnWarnings as WARNING records of `logger` (one line, no source line), after
    the warning filters have let them through."""
    show_others = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, UcudnnWarning):
            logger.warning("%s", message)
        else:
            show_others(message, category, filename, lineno, file, line)

    warnings.showwarning = show
