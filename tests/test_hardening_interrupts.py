"""Ctrl-C and SIGTERM end a command with 130 and 143, whatever it is doing, and leave no
temporary file behind (issue 27, items 3 and 6)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_cli import hard_wd_timings

STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143}
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["int", "term"])

# The command line, with a hook that says on stdout when the part under test has begun and
# then waits there to be stopped.
SCRIPT = """
import sys, time
from ucudnn.faces.cli import main

def wait_here(*args, **kwargs):
    print("begun", flush=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # busy, as Python code is: no sleep to break
        pass

{hook}
sys.exit(main(sys.argv[1:]))
"""

# savefig writes half a PNG into atomic_write's temporary file, then waits.
SLOW_PLOT = """
from matplotlib.figure import Figure
def savefig(self, f, **kwargs):
    f.write(b"half a png")
    f.flush()
    wait_here()
Figure.savefig = savefig
"""

# An object freed as planning starts, whose finalizer waits: an interrupt raised there is
# dropped by Python ("Exception ignored in ..."), as it is where the WD solver's are freed.
SLOW_FINALIZER = """
from ucudnn.faces import commands
class Freed:
    def __del__(self):
        wait_here()
plan_tables = commands.plan_tables
def planning(*args, **kwargs):
    Freed()
    return plan_tables(*args, **kwargs)
commands.plan_tables = planning
"""


def _default_sigint() -> None:
    # A child inherits an ignored SIGINT (pytest started by `cmd &` or nohup), and Python
    # installs its KeyboardInterrupt handler only where SIGINT is not ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stop(hook: str, argv: list[str], signum: int) -> tuple[int, str, str]:
    """Run the command with `hook`, send `signum` once the hooked part has begun: its exit
    status, stdout after the mark and stderr."""
    script = SCRIPT.format(hook=hook)
    process = subprocess.Popen(
        [sys.executable, "-c", script, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "begun\n", process.communicate()
    process.send_signal(signum)
    out, err = process.communicate(timeout=20)
    return process.returncode, out, err


@SIGNALS
def test_a_stopped_plot_leaves_no_temporary_file(tmp_path: Path, signum: int) -> None:
    pytest.importorskip("matplotlib")
    argv = ["tune", "alexnet", "--model", "--memory", "4GiB", "-q", "--plot"]
    status, out, err = _stop(SLOW_PLOT, [*argv, str(tmp_path / "t.png")], signum)
    assert status == STATUS[signum] and out == ""
    assert err == ("ucudnn tune: error: interrupted\n" if signum == signal.SIGINT else "")
    assert os.listdir(tmp_path) == []


@SIGNALS
def test_an_interrupt_in_a_finalizer_still_stops_the_command(signum: int) -> None:
    status, out, err = _stop(SLOW_FINALIZER, ["plan", "alexnet", "--model"], signum)
    assert status == STATUS[signum] and out == ""  # no plan
    assert err.splitlines()[1:] == (
        ["ucudnn plan: error: interrupted"] if signum == signal.SIGINT else []
    )


@pytest.mark.parametrize(
    ("sent_signal", "status", "last_line"),
    [(signal.SIGINT, 130, "ucudnn plan: error: interrupted"), (signal.SIGTERM, 143, None)],
)
def test_a_signal_during_the_solver_ends_the_command_at_once(
    tmp_path: Path, sent_signal: signal.Signals, status: int, last_line: str | None
) -> None:
    """Ctrl-C says so in one line (status 130); SIGTERM ends it silently (143)."""
    budget = hard_wd_timings(tmp_path / "hard.csv")
    # The exact search settles these timings in a moment: without it, HiGHS takes them.
    ilp_only = (
        "import sys, ucudnn.planner.wd.search as search; search.DP_WORK_LIMIT = 0; "
        "from ucudnn.faces.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    argv = [sys.executable, "-c", ilp_only, "plan", "-q"]
    argv += ["--mode", "wd", "--total-workspace", str(budget)]
    argv += ["--timings", str(tmp_path / "hard.csv")]
    process = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint
    )
    time.sleep(3)  # imports, reading and the bounds take about a second; then HiGHS runs
    assert process.poll() is None, process.communicate()
    sent = time.monotonic()
    process.send_signal(sent_signal)
    out, err = process.communicate(timeout=30)
    assert time.monotonic() - sent < 1.5
    assert (process.returncode, out) == (status, "") and "Traceback" not in err
    assert err.splitlines()[-1:] == ([last_line] if last_line else [])
