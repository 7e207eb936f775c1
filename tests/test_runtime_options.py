"""The Handle's arguments: checked and normalised on the CPU, before any device work."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ucudnn.runtime.benchmark import BenchmarkSettings
from ucudnn.runtime.engines_setting import EnginesRequest
from ucudnn.runtime.options import HandleOptions, layer_option, scalar_option

MiB = 1 << 20


def resolve(environ: dict[str, str] | None = None, **arguments) -> HandleOptions:
    return HandleOptions.resolve(environ=environ or {}, **arguments)


@pytest.mark.parametrize(
    ("arguments", "environ", "expected"),
    [
        ({}, {}, ("wr", 64 * MiB)),
        ({"workspace_limit": np.int64(5)}, {}, ("wr", 5)),
        ({"workspace_limit": np.uint32(0)}, {}, ("wr", 0)),
        ({"workspace_limit": "8MiB"}, {}, ("wr", 8 * MiB)),
        ({"total_workspace": "1.5 KiB"}, {}, ("wd", 1536)),
        ({}, {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB"}, ("wd", 1 << 30)),
        ({"workspace_limit": MiB}, {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB"}, ("wr", MiB)),
        ({"total_workspace": MiB}, {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB"}, ("wd", MiB)),
        ({"total_workspace": MiB}, {"UCUDNN_DEFAULT_WORKSPACE_LIMIT": "2MiB"}, ("wd", MiB)),
        ({}, {"UCUDNN_DEFAULT_WORKSPACE_LIMIT": "2MiB"}, ("wr", 2 * MiB)),
    ],
)
def test_limits_take_any_integer_or_a_size(arguments, environ, expected) -> None:
    """`ucudnn plan`'s rule: a total workspace selects WD, a limit WR, an argument beats the
    environment."""
    options = resolve(environ, **arguments)
    assert (options.mode, options.limit) == expected
    assert type(options.limit) is int


def test_a_limit_and_a_total_are_refused_together() -> None:
    with pytest.raises(ValueError, match=r"^give workspace_limit \(WR\) or total_workspace \(WD"):
        resolve(workspace_limit=MiB, total_workspace=MiB)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (float("nan"), TypeError, "workspace_limit=nan is not a size"),
        (float("inf"), TypeError, "workspace_limit=inf is not a size"),
        (1.5, TypeError, "workspace_limit=1.5 is not a size"),
        (True, TypeError, "workspace_limit=True is not a size"),
        (-1, ValueError, "workspace_limit=-1 is not a size"),
        (np.int8(-3), ValueError, r"workspace_limit=np.int8\(-3\) is not a size"),
        ("-1MiB", ValueError, "workspace_limit='-1MiB' is not a size"),
        (2**70, ValueError, "workspace_limit=1180591620717411303424 is larger than any memory"),
    ],
)
def test_bad_limits_name_the_argument(value, error, message) -> None:
    with pytest.raises(error, match=message):
        resolve(workspace_limit=value)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("powerOfTwo", "powerOfTwo"),
        ("UNDIVIDED", "undivided"),
        ("32, 8,1", (1, 8, 32)),
        ([32, 8, 8, 1], (1, 8, 32)),
        (np.array([4, 2]), (2, 4)),
        (range(1, 4), (1, 2, 3)),
        ([1, 4096], (1, 4096)),  # above any batch: the planner leaves it out for that batch
    ],
)
def test_policies_are_normalised(policy, expected) -> None:
    assert resolve(policy=policy).policy == expected


@pytest.mark.parametrize(
    ("policy", "error", "message"),
    [
        ([], ValueError, "policy names no micro-batch size"),
        ([4, 0], ValueError, "policy micro-batch size must be >= 1, got 0"),
        ([1.5], TypeError, "policy micro-batch size must be an integer"),
        ([True], TypeError, "policy micro-batch size must be an integer"),
        (8, TypeError, "policy must be a policy name, text such as"),
        (b"1,2", TypeError, "policy must be a policy name, text such as"),
        ("often", ValueError, "policy='often' is not a policy"),
        ("1,-2", ValueError, "policy='1,-2' is not a policy"),
    ],
)
def test_bad_policies_are_refused(policy, error, message) -> None:
    with pytest.raises(error, match=message):
        resolve(policy=policy)


def test_the_policy_comes_from_the_environment_when_not_given() -> None:
    assert resolve({"UCUDNN_BATCH_SIZE_POLICY": "all"}).policy == "all"
    assert resolve({"UCUDNN_BATCH_SIZE_POLICY": "all"}, policy=[2]).policy == (2,)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        *[(word, True) for word in ("1", "TRUE", "yes", "on", " 1 ")],
        *[(word, False) for word in ("0", "false", "no", "Off", "")],
    ],
)
def test_the_check_variable_is_a_yes_no_value(value, expected) -> None:
    assert resolve({"UCUDNN_CHECK": value}).check is expected


@pytest.mark.parametrize("value", ["maybe", "2", "enabled"])
def test_other_check_values_are_refused(value) -> None:
    with pytest.raises(ValueError, match=f"UCUDNN_CHECK={value!r} is not a yes/no value"):
        resolve({"UCUDNN_CHECK": value})


def test_the_check_argument_beats_the_variable() -> None:
    assert resolve({"UCUDNN_CHECK": "1"}, check=False).check is False
    assert resolve({"UCUDNN_CHECK": "0"}, check=True).check is True
    # A bad value is an error even then, as for every other variable.
    with pytest.raises(ValueError, match="UCUDNN_CHECK='maybe' is not a yes/no value"):
        resolve({"UCUDNN_CHECK": "maybe"}, check=True)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"stream": -1}, ValueError, "stream must be >= 0"),
        ({"stream": 2**64}, ValueError, "stream must be <= "),
        ({"stream": 1.0}, TypeError, "stream must be an integer"),
        ({"stream": True}, TypeError, "stream must be an integer"),
        ({"check": 1}, TypeError, "check must be True or False"),
        ({"deterministic": "no"}, TypeError, "deterministic must be True or False"),
        ({"use_cache": None}, TypeError, "use_cache must be True or False"),
        ({"database": 7}, TypeError, "database must be a path"),
        ({"database": ""}, ValueError, "database must be a path, got an empty one"),
        ({"benchmark": {"warmup": 1}}, TypeError, "benchmark must be a BenchmarkSettings"),
    ],
)
def test_other_bad_arguments_name_themselves(arguments, error, message) -> None:
    with pytest.raises(error, match=message):
        resolve(**arguments)


def test_stream_database_and_benchmark_settings(tmp_path: Path) -> None:
    settings = BenchmarkSettings(warmup=0)
    options = resolve(stream=np.uint64(0x7F00), database=tmp_path / "db", benchmark=settings)
    assert (options.stream, options.database, options.benchmark) == (
        0x7F00,
        tmp_path / "db",
        settings,  # as given: the Handle decides the engines on the device
    )
    assert resolve(database=str(tmp_path / "db"), use_cache=False).database is None
    default = resolve({"UCUDNN_DATABASE": str(tmp_path / "env.sqlite")})
    assert default.database == tmp_path / "env.sqlite"
    assert default.benchmark == BenchmarkSettings()


@pytest.mark.parametrize(
    ("layer", "error", "message"),
    [
        ("", ValueError, "non-empty"),
        ("conv\n1", ValueError, "control character"),
        ("conv\x001", ValueError, "control character"),
        (" conv1", ValueError, "white space"),
        (1, TypeError, "layer must be text"),
    ],
)
def test_layer_names_are_refused_when_the_planner_could_not_use_them(layer, error, message):
    with pytest.raises(error, match=message):
        layer_option(layer)


def test_good_layer_names_and_no_name() -> None:
    assert layer_option("conv1/3x3 #2") == "conv1/3x3 #2"
    assert layer_option(None) is None


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("1", TypeError, "alpha must be a real number"),
        (True, TypeError, "alpha must be a real number"),
        (1j, TypeError, "alpha must be a real number"),
        (float("nan"), ValueError, "alpha must be finite"),
        (float("-inf"), ValueError, "alpha must be finite"),
    ],
)
def test_scalars_must_be_finite_real_numbers(value, error, message) -> None:
    with pytest.raises(error, match=message):
        scalar_option(value, "alpha")


def test_scalars_take_numpy_numbers() -> None:
    assert scalar_option(np.float32(0.5), "beta") == 0.5
    assert scalar_option(np.int64(2), "beta") == 2.0
    assert type(scalar_option(np.float16(1), "beta")) is float


@pytest.mark.parametrize(
    ("arguments", "environ", "expected"),
    [
        ({"total_workspace": "64MiB"}, {}, ("wd", 64 * MiB)),
        ({"total_workspace": "64MiB", "workspace_sharing": "divided"}, {}, ("wd", 64 * MiB)),
        ({"total_workspace": "64MiB", "workspace_sharing": "shared"}, {}, ("wr", 64 * MiB)),
        ({"total_workspace": "64MiB", "workspace_sharing": " Shared "}, {}, ("wr", 64 * MiB)),
        (
            {},
            {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB", "UCUDNN_WORKSPACE_SHARING": "shared"},
            ("wr", 1 << 30),
        ),
        (
            {"workspace_sharing": "divided"},
            {"UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB", "UCUDNN_WORKSPACE_SHARING": "shared"},
            ("wd", 1 << 30),
        ),
        ({"workspace_limit": "8MiB", "workspace_sharing": "shared"}, {}, ("wr", 8 * MiB)),
        # Without a total, sharing has nothing to divide: the per-kernel default stays.
        ({}, {"UCUDNN_WORKSPACE_SHARING": "shared"}, ("wr", 64 * MiB)),
    ],
)
def test_a_shared_total_is_planned_as_wr_at_the_total(arguments, environ, expected) -> None:
    options = resolve(environ, **arguments)
    assert (options.mode, options.limit) == expected


@pytest.mark.parametrize(
    ("arguments", "environ", "message"),
    [
        ({"workspace_limit": "8MiB", "workspace_sharing": "divided"}, {}, "divides a total"),
        ({"total_workspace": 1, "workspace_sharing": "halves"}, {}, "divided, shared, got"),
        ({"total_workspace": 1, "workspace_sharing": 1}, {}, "workspace_sharing must be one of"),
        ({}, {"UCUDNN_WORKSPACE_SHARING": "some"}, "UCUDNN_WORKSPACE_SHARING must be one of"),
    ],
)
def test_bad_workspace_sharing_names_itself(arguments, environ, message) -> None:
    with pytest.raises(ValueError, match=message):
        resolve(environ, **arguments)


@pytest.mark.parametrize(
    ("engines", "settings", "environ", "expected"),
    [
        (None, None, {}, EnginesRequest(None, "default")),  # decided on the device
        (None, None, {"UCUDNN_ENGINES": ""}, EnginesRequest(None, "default")),
        (None, None, {"UCUDNN_ENGINES": "on"}, EnginesRequest(True, "environment")),
        (None, None, {"UCUDNN_ENGINES": "off"}, EnginesRequest(False, "environment")),
        (
            None,
            BenchmarkSettings(engines=False),
            {"UCUDNN_ENGINES": "on"},
            EnginesRequest(False, "argument"),
        ),
        (None, BenchmarkSettings(engines=True), {}, EnginesRequest(True, "argument")),
        (
            False,
            BenchmarkSettings(engines=True),
            {"UCUDNN_ENGINES": "on"},
            EnginesRequest(False, "argument"),
        ),
        (np.bool_(True), None, {"UCUDNN_ENGINES": "off"}, EnginesRequest(True, "argument")),
    ],
)
def test_engines_come_from_the_argument_the_settings_or_the_variable(
    engines, settings, environ, expected
) -> None:
    options = resolve(environ, engines=engines, benchmark=settings)
    assert options.engines == expected


def test_bad_engine_switches_name_themselves() -> None:
    with pytest.raises(TypeError, match="engines"):
        resolve(engines="yes please")
    with pytest.raises(ValueError, match="UCUDNN_ENGINES"):
        resolve({"UCUDNN_ENGINES": "maybe"})
