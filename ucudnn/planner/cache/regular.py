"""Opening the files beside a cache (the database, its journal, its lock files) only where they
are regular files: anyone who can write a shared directory can put a FIFO there, whose opening
waits for a writer forever, or a symbolic link that sends ucudnn's files elsewhere."""

from __future__ import annotations

import contextlib
import errno
import os
import stat


def open_regular(path: str, flags: int) -> int:
    """A descriptor of the regular file at `path`, opened with `flags` (O_CREAT makes it), or
    OSError naming what is there instead. Opening does not block (a FIFO would wait for a
    writer) nor follow a symbolic link (one planted in a shared directory would send ucudnn's
    files elsewhere); the type is checked on what was opened, so nothing can swap it."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        require_regular(path)  # names what is there
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(_not_regular(path, mode))
    return fd


def require_regular(path: str) -> None:
    """OSError if `path` names something else than a regular file (a missing one is fine)."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(_not_regular(path, mode))


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(path: str, mode: int) -> str:
    kind = next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")
    return f"{path} is not a regular file ({kind})"
