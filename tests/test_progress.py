"""Progress bars: shown to a person at a terminal, never into a pipe or a file, never with -q.
Terminals here are real pseudo-terminals, pipes real pipes."""

from __future__ import annotations

import io
import os
import pty
import sys
from collections.abc import Iterator
from typing import TextIO

import pytest

from ucudnn.faces import commands
from ucudnn.faces.parser import build_parser
from ucudnn.runtime.progress import progress_bar


@pytest.fixture
def terminal() -> Iterator[TextIO]:
    leader, follower = pty.openpty()
    with os.fdopen(follower, "w") as tty:
        yield tty
    os.close(leader)


@pytest.fixture
def pipe() -> Iterator[TextIO]:
    reader, writer = os.pipe()
    with os.fdopen(writer, "w") as end:
        yield end
    os.close(reader)


def decision(argv: list[str], stdout: TextIO, stderr: TextIO, monkeypatch) -> bool:
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", stderr)
    args = build_parser().parse_args(argv)
    return commands._progress(args)


BENCH = ["bench", "alexnet"]


def test_a_bar_for_a_person_at_a_terminal(terminal, monkeypatch) -> None:
    assert decision(BENCH, terminal, terminal, monkeypatch) is True
    assert decision(["plan", "alexnet", "--json"], terminal, terminal, monkeypatch) is True


@pytest.mark.parametrize("quiet", [["-q", *BENCH], [*BENCH, "-q"], [*BENCH, "--quiet"]])
def test_none_when_quiet(terminal, monkeypatch, quiet: list[str]) -> None:
    assert decision(quiet, terminal, terminal, monkeypatch) is False


def test_none_when_stdout_is_piped_or_redirected(terminal, pipe, tmp_path, monkeypatch) -> None:
    """`ucudnn bench alexnet | tee log`, `ucudnn run alexnet --json > run.json`."""
    assert decision(BENCH, pipe, terminal, monkeypatch) is False
    with open(tmp_path / "run.json", "w") as file:
        assert decision(["run", "alexnet", "--json"], file, terminal, monkeypatch) is False


def test_none_when_stderr_is_no_terminal(terminal, pipe, monkeypatch) -> None:
    """`ucudnn bench alexnet 2> log`: a bar would fill the log with carriage returns."""
    assert decision(BENCH, terminal, pipe, monkeypatch) is False


def test_every_command_decides_the_same_way(terminal, pipe, monkeypatch) -> None:
    for argv in (["info"], BENCH, ["plan"], ["run", "alexnet"], ["plot", "--timings", "t.csv"]):
        assert decision([*argv, "-q"], terminal, terminal, monkeypatch) is False
        assert decision(argv, terminal, terminal, monkeypatch) is True
        assert decision(argv, pipe, terminal, monkeypatch) is False


def test_demo_hands_its_choice_to_the_run_it_makes(terminal, monkeypatch) -> None:
    """The demo runs the network with arguments of its own: -q must reach them."""
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setattr(sys, "stderr", terminal)
    for argv, shown in ((["demo"], True), (["demo", "-q"], False), (["-q", "demo"], False)):
        run_args = commands._demo_run_arguments(build_parser().parse_args(argv))
        assert commands._progress(run_args) is shown
    run_args = commands._demo_run_arguments(build_parser().parse_args(["demo", "--json"]))
    assert run_args.json and run_args.check


def test_a_bar_shown_draws_on_stderr(monkeypatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    with progress_bar(3, True, "ucudnn timing", "kernel") as bar:
        bar.update(3)
    drawn = stderr.getvalue()
    assert "ucudnn timing:   0%" in drawn and "0/3" in drawn and "kernel/s" in drawn
    assert drawn.endswith("\r")  # and cleared when done: the report follows on a clean line


def test_a_bar_not_shown_draws_nothing(monkeypatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    for show in (False, None):  # None: stderr is no terminal here
        with progress_bar(3, show, "ucudnn timing", "kernel") as bar:
            bar.update(3)
    assert stderr.getvalue() == ""


def test_by_default_a_bar_shows_on_a_terminal_only(terminal, pipe, monkeypatch) -> None:
    """None, the library's default (a Handle's BenchmarkSettings), looks at stderr."""
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar(1, None, "ucudnn benchmark", "size") as bar:
        assert not bar.disable
    monkeypatch.setattr(sys, "stderr", pipe)
    with progress_bar(1, None, "ucudnn benchmark", "size") as bar:
        assert bar.disable
