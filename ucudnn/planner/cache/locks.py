"""The lock files beside a cache, which keep every operation off a file while a recovery moves
it aside (`FileLock`), and who holds a lock, as Linux's /proc/locks tells (`holders`). Every
wait is bounded: see docs/design/cache.md."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import weakref
from collections.abc import Iterator

from ucudnn.planner.cache.regular import open_regular


class LockTimeout(TimeoutError):
    """A lock file stayed locked for the whole timeout. ucudnn holds them for milliseconds, so
    its holder is stopped or hung, and every later operation would wait as long: the process
    stops using the file."""


class FileLock:
    """flock on two files beside the cache. `<cache>.lock` is held shared by every operation
    and exclusively by a recovery. `<cache>.gate` gives a recovery precedence: new operations
    pass it shared, for an instant, and a recovery holds it exclusively while it waits, so it
    waits only for the operations in flight (flock alone would let a stream of overlapping
    shared holders keep it waiting). A flock belongs to one open file description, so each
    BenchmarkCache holds its own, even within one process.

    No wait is unbounded: each ends in LockTimeout after `timeout` seconds, naming the holder,
    and the files are opened with open_regular, which never waits on a FIFO."""

    _SUFFIXES = (".lock", ".gate")

    def __init__(self, main: int, gate: int, path: str, timeout: float) -> None:
        self._main = main
        self._gate = gate
        self._names = {main: path + ".lock", gate: path + ".gate"}
        self._timeout = timeout
        # Closes both once, on close() or when an unclosed cache is collected; it must not
        # refer to self, or self would never be collected.
        self._release = weakref.finalize(self, _close_descriptors, main, gate)

    @classmethod
    def beside(cls, path: str, create: bool, timeout: float) -> FileLock | None:
        """The lock of the cache at `path`; None when its files are missing or unreadable and
        may not be created. flock needs no write access, so one user's lock files serve every
        reader. Something else than a regular file there is refused (OSError)."""
        flags = os.O_RDONLY | (os.O_CREAT if create else 0)
        fds: list[int] = []
        try:
            for suffix in cls._SUFFIXES:
                fds.append(open_regular(path + suffix, flags))
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            if create or not isinstance(exc, (FileNotFoundError, PermissionError)):
                raise
            return None
        main, gate = fds
        return cls(main, gate, path, timeout)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        deadline = time.monotonic() + self._timeout
        self._take(self._gate, fcntl.LOCK_SH, deadline)  # waits while a recovery is pending
        try:
            self._take(self._main, fcntl.LOCK_SH, deadline)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._main, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """For a holder of the shared lock, which it holds again afterwards. It lets go of the
        shared lock first (two recoveries, each keeping it while waiting for the other to let
        go, would deadlock), so the holder must look again at what the lock guards."""
        fcntl.flock(self._main, fcntl.LOCK_UN)
        deadline = time.monotonic() + self._timeout
        self._take(self._gate, fcntl.LOCK_EX, deadline)
        try:
            self._take(self._main, fcntl.LOCK_EX, deadline)
            try:
                yield
            finally:
                self._take(self._main, fcntl.LOCK_SH, time.monotonic() + self._timeout)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    def _take(self, fd: int, operation: int, deadline: float) -> None:
        """flock without blocking, tried again until `deadline` (time.monotonic())."""
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, operation | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    # A shared lock waits only for exclusive holders; an exclusive one for all.
                    who = holders(os.fstat(fd), writers_only=operation == fcntl.LOCK_SH)
                    raise LockTimeout(
                        f"{self._names[fd]} is locked by {who}: gave up after waiting "
                        f"{self._timeout:g} s"
                    ) from None
            time.sleep(min(pause, left))
            pause = min(2 * pause, 0.05)  # quick for a short wait, few wake-ups for a long one

    def close(self) -> None:
        """Idempotent. The numbers are forgotten: once closed they may name another file of
        this process, which a later flock must fail on (-1) rather than lock."""
        self._release()
        self._main = self._gate = -1


def _close_descriptors(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def holders(status: os.stat_result, writers_only: bool) -> str:
    """Who holds a lock (flock or SQLite's fcntl locks) on the file `status` describes, as
    Linux's /proc/locks tells: "process 4242 (python3, stopped)", or "another process" where
    it cannot tell (another system, a process in another PID namespace)."""
    file_id = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            lines = table.read().splitlines()
    except OSError:
        lines = []
    pids = set()
    for line in lines:
        # "1: FLOCK  ADVISORY  WRITE 4242 fe:00:2147361 0 EOF"; a waiter's line has "->" after
        # "1:", so no file there; an OFD lock's pid is -1, not digits.
        fields = line.split()
        held = len(fields) >= 6 and fields[5] == file_id and fields[4].isdigit()
        if held and (not writers_only or fields[3] == "WRITE"):
            pids.add(int(fields[4]))
    others = sorted(pids - {os.getpid()})
    if others:
        return ("process " if len(others) == 1 else "processes ") + ", ".join(
            _process(pid) for pid in others
        )
    return "this process" if pids else "another process"


def _process(pid: int) -> str:
    """ "4242 (python3)", with ", stopped" for a process stopped by a signal or a debugger."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as file:
            name, _, rest = file.read().partition("(")[2].rpartition(")")
    except OSError:  # gone meanwhile
        return str(pid)
    stopped = ", stopped" if rest.split()[:1] in (["T"], ["t"]) else ""
    return f"{pid} ({name}{stopped})"
