"""Engines on by default where they can run: the probe (cuDNN >= 9.2, heuristics that answer a
small problem), the one decision (argument, else UCUDNN_ENGINES, else the default), and the
Handle, the numpy functions and the commands following it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest

import ucudnn
from tests.conftest import gpu_available
from ucudnn.planner.config import Config, engines_from_env
from ucudnn.runtime import engine_probe, engines_setting as setting_module
from ucudnn.runtime.engine_probe import EngineAvailability, engine_availability
from ucudnn.runtime.engines_setting import EnginesRequest, EnginesSetting, engines_setting

UNAVAILABLE = EngineAvailability(False, "cuDNN 9.1.0 is older than 9.2.0")


@pytest.fixture
def fresh_probe() -> Iterator[None]:
    """The probe asks the device again, before and after the test (its answer is cached)."""
    engine_availability.cache_clear()
    setting_module._warn_unavailable.cache_clear()
    yield
    engine_availability.cache_clear()
    setting_module._warn_unavailable.cache_clear()


@pytest.fixture
def probe_answers(monkeypatch, fresh_probe):
    """Makes the probe give `answer`; counts how often the decision asked it."""
    asked: list[None] = []

    def answer_with(answer: EngineAvailability) -> list[None]:
        def probe() -> EngineAvailability:
            asked.append(None)
            return answer

        monkeypatch.setattr(setting_module, "engine_availability", probe)
        return asked

    return answer_with


# -- the decision, on the CPU ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argument", "environment", "expected"),
    [
        (None, None, EnginesRequest(None, "default")),
        (None, True, EnginesRequest(True, "environment")),
        (None, False, EnginesRequest(False, "environment")),
        (False, True, EnginesRequest(False, "argument")),
        (np.bool_(True), False, EnginesRequest(True, "argument")),
    ],
)
def test_an_argument_beats_the_environment_which_beats_the_default(
    argument, environment, expected
) -> None:
    assert EnginesRequest.of(argument, environment) == expected


def test_a_request_that_is_no_yes_or_no_names_itself() -> None:
    with pytest.raises(TypeError, match="engines must be True or False, got 'on'"):
        EnginesRequest.of("on", None)


def test_the_default_is_on_where_engines_can_run(probe_answers) -> None:
    probe_answers(EngineAvailability(True, None))
    assert engines_setting(EnginesRequest(None, "default")) == EnginesSetting(True, "default", None)


def test_the_default_is_off_with_the_reason_where_they_cannot(probe_answers, caplog) -> None:
    probe_answers(UNAVAILABLE)
    with caplog.at_level(logging.WARNING):
        setting = engines_setting(EnginesRequest(None, "default"))
    assert setting == EnginesSetting(False, "default", UNAVAILABLE.reason)
    assert caplog.records == []  # nobody asked for them: the probe's own log says why


@pytest.mark.parametrize("source", ["environment", "argument"])
def test_off_as_asked_needs_no_device(probe_answers, source) -> None:
    asked = probe_answers(EngineAvailability(True, None))
    assert engines_setting(EnginesRequest(False, source)) == EnginesSetting(False, source, None)
    assert asked == []


def test_on_where_engines_cannot_run_keeps_the_legacy_path_and_says_why_once(
    probe_answers, caplog
) -> None:
    probe_answers(UNAVAILABLE)
    with caplog.at_level(logging.WARNING, logger="ucudnn.runtime.engines_setting"):
        first = engines_setting(EnginesRequest(True, "argument"))
        again = engines_setting(EnginesRequest(True, "environment"))
    assert first == EnginesSetting(False, "argument", UNAVAILABLE.reason)
    assert again == EnginesSetting(False, "environment", UNAVAILABLE.reason)
    (record,) = caplog.records
    assert "turned on but cannot run here: cuDNN 9.1.0 is older than 9.2.0" in record.message


@pytest.mark.parametrize(
    ("setting", "text"),
    [
        (EnginesSetting(True, "default", None), "on (by default)"),
        (EnginesSetting(False, "environment", None), "off (set by UCUDNN_ENGINES)"),
        (
            EnginesSetting(False, "argument", "no usable device: x"),
            "off (set by an argument: no usable device: x)",
        ),
    ],
)
def test_a_setting_says_where_it_comes_from(setting, text) -> None:
    assert setting.describe() == text


def test_the_configuration_leaves_engines_unset_unless_the_variable_says() -> None:
    assert Config.from_env({}).engines is None
    assert Config.from_env({"UCUDNN_ENGINES": " "}).engines is None
    assert Config.from_env({"UCUDNN_ENGINES": "OFF"}).engines is False
    assert Config(engines=np.bool_(True)).engines is True
    assert engines_from_env({"UCUDNN_ENGINES": "1", "UCUDNN_CHECK": "maybe"}) is True
    with pytest.raises(ValueError, match="UCUDNN_ENGINES='sometimes' is not a yes/no value"):
        engines_from_env({"UCUDNN_ENGINES": "sometimes"})
    with pytest.raises(TypeError, match="engines must be True or False"):
        Config(engines="on")  # type: ignore[arg-type]


def test_without_a_device_the_probe_says_so(fresh_probe) -> None:
    if gpu_available()[0]:
        pytest.skip("a GPU is present")
    available, reason = engine_availability()
    assert not available and reason is not None and reason.startswith("no usable device: ")


# -- the probe and the Handle on a device ----------------------------------------------------
@pytest.mark.gpu
def test_the_probe_finds_engines_on_the_device(fresh_probe) -> None:
    """Hardware with cuDNN 9.2 or newer, and the simulated device (cuDNN 9.19)."""
    assert engine_availability() == EngineAvailability(True, None)


@pytest.mark.gpu
def test_the_probe_refuses_a_cudnn_older_than_9_2(fresh_probe, monkeypatch) -> None:
    from ucudnn._native import _cudnn

    monkeypatch.setattr(_cudnn, "version", lambda: 90103)
    assert engine_availability() == EngineAvailability(False, "cuDNN 9.1.3 is older than 9.2.0")


@pytest.mark.gpu
def test_the_probe_refuses_heuristics_that_offer_nothing(fresh_probe, monkeypatch) -> None:
    from ucudnn.runtime import graph

    monkeypatch.setattr(graph, "heuristic_choices", lambda *args: [])
    available, reason = engine_availability()
    assert not available
    assert reason == (
        "heuristics offered no configuration for the probe problem "
        f"({engine_probe.PROBE_PROBLEM.describe()}, forward)"
    )


@pytest.mark.gpu
def test_the_probe_reports_heuristics_that_fail(fresh_probe, monkeypatch) -> None:
    from ucudnn.errors import CudnnError
    from ucudnn.runtime import graph

    def refuse(*args: object) -> None:
        raise CudnnError(3000, "CUDNN_STATUS_NOT_SUPPORTED", "cudnnBackendFinalize(ENGINEHEUR)")

    monkeypatch.setattr(graph, "heuristic_choices", refuse)
    available, reason = engine_availability()
    assert not available and reason is not None
    assert reason.startswith("the heuristics failed on the probe problem: cudnnBackendFinalize")


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("argument", "environ", "expected"),
    [
        (None, "", EnginesSetting(True, "default", None)),
        (None, "off", EnginesSetting(False, "environment", None)),
        (False, "", EnginesSetting(False, "argument", None)),
        (False, "on", EnginesSetting(False, "argument", None)),
        (True, "off", EnginesSetting(True, "argument", None)),
    ],
)
def test_a_handle_measures_engines_by_default_unless_turned_off(
    tmp_path, monkeypatch, argument, environ, expected
) -> None:
    from ucudnn.runtime.handle import Handle

    monkeypatch.setenv("UCUDNN_ENGINES", environ)
    with Handle(database=tmp_path / "db.sqlite", engines=argument) as handle:
        assert handle.engines == expected
        assert handle.benchmarker.settings.engines is expected.enabled


@pytest.mark.gpu
def test_a_handle_asked_for_engines_that_cannot_run_keeps_the_legacy_path(
    tmp_path, fresh_probe, monkeypatch, caplog
) -> None:
    from ucudnn._native import _cudnn
    from ucudnn.runtime.handle import Handle

    monkeypatch.setattr(_cudnn, "version", lambda: 90100)
    with caplog.at_level(logging.WARNING), Handle(use_cache=False, engines=True) as handle:
        assert handle.engines == EnginesSetting(
            False, "argument", "cuDNN 9.1.0 is older than 9.2.0"
        )
        assert handle.benchmarker.settings.engines is False
    assert "measuring the legacy algorithms only" in caplog.text


# -- the numpy functions ---------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize(
    ("environ", "argument", "enabled"),
    [("", None, True), ("off", None, False), ("", False, False), ("off", True, True)],
)
def test_the_numpy_functions_follow_the_setting(monkeypatch, environ, argument, enabled) -> None:
    """By default their Handles measure engines, and a float16 convolution runs on one."""
    from ucudnn.faces import numpy_api

    monkeypatch.setenv("UCUDNN_ENGINES", environ)
    x = np.ones((4, 16, 8, 8), np.float16)
    w = np.ones((16, 16, 3, 3), np.float16)
    numpy_api.release_handles()
    ucudnn.conv_forward(x, w, padding=1, workspace_limit="64MiB", engines=argument)
    key = argument if argument is not None else engines_from_env()
    handle = numpy_api._default_handle(64 << 20, "powerOfTwo", "undivided", None, key)
    assert handle.engines.enabled is enabled
    assert handle.plan is not None
    ran = [part.engine for kernel in handle.plan.kernels for part in kernel.schedule.parts]
    assert all(ran) if enabled else not any(ran)
    numpy_api.release_handles()
