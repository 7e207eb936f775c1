"""--engines and --search on every command that benchmarks: parsed with their defaults, and
handed to what measures (a Benchmarker's or a Handle's BenchmarkSettings, the numpy check of
`demo`), checked on the CPU by stopping where the device work would begin."""

from __future__ import annotations

import json
import re

import pytest

import ucudnn
from ucudnn.faces import commands
from ucudnn.faces.cli import main
from ucudnn.faces.parser import build_parser
from ucudnn.runtime import handle, session
from ucudnn.runtime.benchmark import BenchmarkSettings

BENCHMARKING = {
    "bench": ["bench", "alexnet"],
    "plan": ["plan", "alexnet"],
    "tune": ["tune", "alexnet", "--memory", "8GiB"],
    "run": ["run", "alexnet"],
    "demo": ["demo"],
}


class _Reached(Exception):
    """Raised where the device work would begin."""


@pytest.mark.parametrize("argv", BENCHMARKING.values(), ids=BENCHMARKING.keys())
def test_every_command_that_benchmarks_takes_engines_and_search(argv) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    assert (args.engines, args.search) == (None, "fast")
    args = parser.parse_args([*argv, "--engines", "off", "--search", "exhaustive"])
    assert (args.engines, args.search) == ("off", "exhaustive")


@pytest.mark.parametrize("command", BENCHMARKING)
def test_the_help_states_each_default(capsys, command) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--search {fast,exhaustive}" in text and "(default: fast)" in text
    assert "(default: UCUDNN_ENGINES, else on where they can run: cuDNN >= 9.2" in text


def test_a_search_not_known_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bench", "alexnet", "--search", "quick"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and re.search(r"--search: invalid choice: '?quick'?", err)


@pytest.fixture
def device_work(monkeypatch) -> list[BenchmarkSettings]:
    """A usable device as the commands see it, and the settings each measurement was given."""
    given: list[BenchmarkSettings] = []

    def open_benchmarker(database: object, settings: BenchmarkSettings) -> None:
        given.append(settings)
        raise _Reached

    def make_handle(**arguments: object) -> None:
        assert arguments.get("engines") is None  # the settings carry it
        given.append(arguments["benchmark"])  # type: ignore[arg-type]
        raise _Reached

    monkeypatch.setattr(commands, "unusable_reason", lambda: None)
    monkeypatch.setattr(session, "open_benchmarker", open_benchmarker)
    monkeypatch.setattr(handle, "Handle", make_handle)
    return given


@pytest.mark.parametrize("command", ["bench", "plan", "tune", "run"])
@pytest.mark.parametrize(
    ("options", "engines", "search"),
    [
        ([], None, "fast"),
        (["--engines", "off", "--search", "exhaustive"], False, "exhaustive"),
        (["--engines", "on"], True, "fast"),
    ],
)
def test_the_options_reach_the_benchmark_settings(
    device_work, command, options, engines, search
) -> None:
    with pytest.raises(_Reached):
        main([*BENCHMARKING[command], *options, "-q"])
    (settings,) = device_work
    assert (settings.engines, settings.search, settings.progress) == (engines, search, False)


def test_demo_hands_both_to_its_numpy_check_and_to_its_run(device_work, monkeypatch) -> None:
    checked: list[object] = []

    def conv_forward(*arrays: object, engines: object, **options: object) -> object:
        checked.append(engines)
        return real_conv_forward(*arrays, engines=engines, **options)

    def no_device(*key: object) -> None:
        raise _Reached

    real_conv_forward = ucudnn.conv_forward
    monkeypatch.setattr(ucudnn, "conv_forward", conv_forward)
    monkeypatch.setattr("ucudnn.faces.numpy_api._default_handle", no_device)
    with pytest.raises(_Reached):
        main(["demo", "--engines", "off", "--search", "exhaustive", "-q"])
    assert checked == [False]
    run = commands._demo_run_arguments(
        build_parser().parse_args(["demo", "--engines", "on", "--search", "exhaustive"])
    )
    with pytest.raises(_Reached):
        commands._run_network(run)
    (settings,) = device_work
    assert (settings.engines, settings.search) == (True, "exhaustive")


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], {"enabled": True, "source": "default", "reason": None}),
        (["--engines", "off"], {"enabled": False, "source": "argument", "reason": None}),
    ],
)
def test_demo_shows_the_setting_it_runs_with(capsys, monkeypatch, options, expected) -> None:
    monkeypatch.delenv("UCUDNN_ENGINES", raising=False)
    assert main(["demo", "--batch", "2", "--json", "-q", *options]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["info"]["engines"] == expected
