"""The `ucudnn` command: info, bench, plan, tune, run, plot and demo.

Its arguments are in `ucudnn.faces.parser`, what each subcommand does in
`ucudnn.faces.commands`; here, what every run of the command shares: the verbosity, interrupts
and the exit statuses they end with."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from ucudnn.faces import messages
from ucudnn.faces.parser import build_parser

# The options that name a file or folder, by their dest. An empty one is refused: unchecked, it
# would skip the output (`if args.plot`), write to the current folder (--out) or fall back to a
# default (--database) without a word.
_PATH_OPTIONS = {
    "timings": "--timings",
    "export": "--export",
    "plot": "--plot",
    "out": "--out",
    "database": "--database",
}


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be, so that the same cleanup runs
    (atomic_write removes its temporary file) before the command exits 143."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def _interrupts() -> Iterator[None]:
    """While a command runs: SIGTERM raises Terminated (unless it is ignored or handled by
    someone else), and an interrupt that a finalizer dropped is raised again."""
    previous_hook = sys.unraisablehook

    def raise_again(unraisable: sys.UnraisableHookArgs) -> None:
        # Python prints and drops an exception raised in a finalizer ("Exception ignored
        # in ..."), and the command would run on: a Ctrl-C lands in one when the WD solver's
        # objects are freed. Raised here it would be dropped again, so a one-shot profile
        # function raises it at the next call or return after this hook, in the code the
        # finalizer interrupted (Python unsets a profile function that raises).
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous_hook(unraisable)
            return
        interrupt = type(unraisable.exc_value)

        def reraise(frame: FrameType, event: str, arg: object) -> None:
            if frame.f_code is not raise_again.__code__:
                raise interrupt

        sys.setprofile(reraise)

    terminate = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    if terminate:
        signal.signal(signal.SIGTERM, _terminate)
    sys.unraisablehook = raise_again
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        if terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Past --help and --version: a command runs, and its module is needed.
    from ucudnn.faces import commands

    verbosity = args.verbose + args.verbose_after_command
    if args.quiet and verbosity:
        args.usage_error("give -q or -v, not both")
    empty = [option for dest, option in _PATH_OPTIONS.items() if getattr(args, dest, None) == ""]
    if empty:
        commands.show_error(args.command, f"{empty[0]} is empty; expected a path")
        return 2
    verbosity = messages.QUIET if args.quiet else verbosity
    with messages.shown(verbosity, args.command), _interrupts():
        try:
            status: int = args.func(args)  # set by the subcommand's parser
            return status
        except Terminated:
            return 143  # 128 + SIGTERM, quietly: whoever sent it knows why
        except KeyboardInterrupt:
            commands.show_error(args.command, "interrupted")
            return 130  # 128 + SIGINT, as shells report a process stopped by Ctrl-C
        except BrokenPipeError:
            # The reader went away (`ucudnn plan ... | head`): stop quietly, as Unix tools do,
            # and keep Python from complaining when it flushes stdout at exit.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 141  # 128 + SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
