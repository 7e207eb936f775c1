from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import platformdirs
import pytest

from ucudnn.planner.config import (
    MAX_BYTES,
    Config,
    byte_count,
    database_from_env,
    default_database,
    micro_batch_policy,
    parse_policy,
    parse_size,
)

MiB = 1024**2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("67108864", 64 * MiB),
        ("0", 0),
        ("64MiB", 64 * MiB),
        ("64mib", 64 * MiB),
        ("64 MiB", 64 * MiB),
        ("  64Mi  ", 64 * MiB),
        ("8M", 8 * MiB),
        ("512 MB", 512_000_000),
        ("2kB", 2000),
        ("1K", 1024),
        ("4GiB", 4 * 1024**3),
        ("4G", 4 * 1024**3),
        ("1.5GiB", 1536 * MiB),
        (".5KiB", 512),
        ("1TiB", 1024**4),
        ("1TB", 10**12),
        ("100B", 100),
        ("1.5KiB", 1536),
        ("1.0", 1),
        ("1.50KiB", 1536),
        ("1.5MB", 1_500_000),
        ("0.000001MB", 1),
        ("2.5GB", 2_500_000_000),
        ("0.5K", 512),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text, "X") == expected


@pytest.mark.parametrize(
    ("text", "bytes_named"),
    [
        ("1.5", ""),
        ("0.5B", ""),
        (".1", ""),
        ("1.0000001KiB", ": it is 1024.0001024 bytes"),
        ("1.0001KiB", ": it is 1024.1024 bytes"),
        ("1.0000001MB", ": it is 1000000.1 bytes"),
        ("0.0000000001GB", ": it is 0.1 bytes"),
        ("1." + "0" * 60 + "1KiB", ""),  # too many digits to show
    ],
)
def test_parse_size_refuses_part_of_a_byte(text: str, bytes_named: str) -> None:
    """A size is a whole number of bytes: rounding either way would change the user's limit."""
    with pytest.raises(ValueError) as caught:
        parse_size(text, "LIMIT")
    assert str(caught.value) == f"LIMIT={text!r} is not a whole number of bytes{bytes_named}"


@pytest.mark.parametrize(
    "text",
    ["", " ", "-1", "-64MiB", "1.2.3", "64XB", "MiB", "1e9", "1e400", "nan", "inf", "abc", "6 4",
     "٣"],
)  # fmt: skip
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"LIMIT=.*is not a size; expected .*64MiB"):
        parse_size(text, "LIMIT")


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, ValueError), (np.int64(-1), ValueError), ("-1", ValueError), ("abc", ValueError),
     (float("nan"), TypeError), (1e400, TypeError), (1.5, TypeError), (None, TypeError),
     (True, TypeError), (b"64", TypeError), ([64], TypeError)],
)  # fmt: skip
def test_every_bad_size_from_python_gets_the_one_error(value: object, error: type) -> None:
    """Python values and text share parse_size's message, naming the argument and the forms."""
    expected = r"^limit=.* is not a size; expected a whole number of bytes such as"
    with pytest.raises(error, match=expected):
        byte_count(value, "limit")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("powerOfTwo", "powerOfTwo"),
        ("powerofTwo", "powerOfTwo"),  # the original README's spelling
        ("UNDIVIDED", "undivided"),
        ("all", "all"),
        ("32,1,4", (1, 4, 32)),
        ("8, 8 ,2", (2, 8)),
    ],
)
def test_parse_policy(text: str, expected: object) -> None:
    assert parse_policy(text, "P") == expected


@pytest.mark.parametrize("text", ["power", "1,,2", "0", "1,-2", "1.5", "all,2", "²"])
def test_parse_policy_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"P=.*is not a policy; expected .*powerOfTwo"):
        parse_policy(text, "P")


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platformdirs, "user_cache_path", lambda *args, **kw: Path("/cache/ucudnn"))
    config = Config.from_env({})
    assert config.batch_size_policy == "powerOfTwo"
    assert config.default_workspace_limit == 64 * MiB
    assert config.total_workspace_size is None
    assert not config.workspace_division
    assert config.database == Path("/cache/ucudnn/benchmarks.sqlite")
    assert config.check is False


def test_the_cache_lives_where_platformdirs_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The platform's convention, whatever the platform: ucudnn computes no directory itself."""
    asked = []

    def user_cache_path(*args: object, **kwargs: object) -> Path:
        asked.append((args, kwargs))
        return Path("/caches/ucudnn")

    monkeypatch.setattr(platformdirs, "user_cache_path", user_cache_path)
    assert default_database() == Path("/caches/ucudnn/benchmarks.sqlite")
    assert asked == [(("ucudnn",), {"appauthor": False})]  # no author folder on Windows


linux_only = pytest.mark.skipif(sys.platform != "linux", reason="XDG is Linux's convention")


@linux_only
@pytest.mark.parametrize(
    ("xdg", "cache"), [("/xdg", Path("/xdg")), ("rel", None), ("", None), (None, None)]
)
def test_xdg_cache_home_is_honoured_when_absolute(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, cache: Path | None
) -> None:
    """The XDG spec: a relative $XDG_CACHE_HOME is invalid and ignored, as an empty one."""
    monkeypatch.setenv("HOME", "/home/someone")
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    expected = (cache or Path("/home/someone/.cache")) / "ucudnn" / "benchmarks.sqlite"
    assert default_database() == expected
    assert database_from_env({}) == expected
    assert expected.parent == platformdirs.user_cache_path("ucudnn", appauthor=False)


@linux_only
def test_a_relative_home_never_puts_the_cache_under_the_working_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "relative/home")
    assert default_database().is_absolute()


def test_from_env_reads_every_variable(tmp_path: Path) -> None:
    config = Config.from_env(
        {
            "UCUDNN_BATCH_SIZE_POLICY": "1,2,3",
            "UCUDNN_DEFAULT_WORKSPACE_LIMIT": "8MiB",
            "UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB",
            "UCUDNN_DATABASE": str(tmp_path / "db.sqlite"),
            "UCUDNN_CHECK": "on",
        }
    )
    assert config == Config(
        batch_size_policy=(1, 2, 3),
        default_workspace_limit=8 * MiB,
        total_workspace_size=1024**3,
        database=tmp_path / "db.sqlite",
        check=True,
    )
    assert config.workspace_division


def test_empty_variables_keep_defaults() -> None:
    names = ["UCUDNN_BATCH_SIZE_POLICY", "UCUDNN_DEFAULT_WORKSPACE_LIMIT"]
    names += ["UCUDNN_TOTAL_WORKSPACE_SIZE", "UCUDNN_DATABASE", "UCUDNN_CHECK"]
    assert Config.from_env(dict.fromkeys(names, " ")) == Config.from_env({})


def test_zero_total_workspace_keeps_division_off() -> None:
    assert Config.from_env({"UCUDNN_TOTAL_WORKSPACE_SIZE": "0"}).total_workspace_size is None


def test_database_expands_user() -> None:
    config = Config.from_env({"UCUDNN_DATABASE": "~/b.sqlite"})
    assert config.database == Path.home() / "b.sqlite"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"UCUDNN_DATABASE": " /data/b.sqlite "}, Path("/data/b.sqlite")),
        ({"UCUDNN_DATABASE": "~/b.sqlite"}, Path.home() / "b.sqlite"),
        ({"UCUDNN_DATABASE": ""}, Path("/xdg/ucudnn/benchmarks.sqlite")),
        ({}, Path("/xdg/ucudnn/benchmarks.sqlite")),
    ],
)
def test_database_from_env_is_what_config_reads(monkeypatch, environ, expected) -> None:
    monkeypatch.setattr(platformdirs, "user_cache_path", lambda *args, **kw: Path("/xdg/ucudnn"))
    assert database_from_env(environ) == expected
    assert Config.from_env(environ).database == expected


def test_database_from_env_reads_only_the_cache_variables() -> None:
    environ = {
        "UCUDNN_DATABASE": "/data/b.sqlite",
        "UCUDNN_BATCH_SIZE_POLICY": "foo",
        "UCUDNN_DEFAULT_WORKSPACE_LIMIT": "lots",
        "UCUDNN_CHECK": "maybe",
    }
    assert database_from_env(environ) == Path("/data/b.sqlite")
    with pytest.raises(ValueError, match="UCUDNN_DATABASE='~no-such-user-here/b': cannot expand ~"):
        database_from_env({"UCUDNN_DATABASE": "~no-such-user-here/b"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), ("Yes", True), (" on ", True), ("0", False), ("OFF", False), (" ", False)],
)
def test_check_is_a_yes_no_variable(value: str, expected: bool) -> None:
    assert Config.from_env({"UCUDNN_CHECK": value}).check is expected


@pytest.mark.parametrize(
    ("variable", "value", "accepts"),
    [
        ("UCUDNN_BATCH_SIZE_POLICY", "fastest", "undivided, powerOfTwo, all"),
        ("UCUDNN_BATCH_SIZE_POLICY", "1,x", "comma-separated list"),
        ("UCUDNN_BATCH_SIZE_POLICY", "0,4", "positive micro-batch sizes"),
        ("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "64 apples", "64MiB"),
        ("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "-5", "whole number of bytes such as"),
        ("UCUDNN_TOTAL_WORKSPACE_SIZE", "lots", "64MiB"),
        ("UCUDNN_TOTAL_WORKSPACE_SIZE", "1e9", "whole number of bytes such as"),
        # past the bounds
        ("UCUDNN_BATCH_SIZE_POLICY", "1,4294967296", "up to 2147483647"),
        ("UCUDNN_BATCH_SIZE_POLICY", "9" * 5000, "up to 2147483647"),
        ("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "9" * 5000, "larger than any memory"),
        ("UCUDNN_TOTAL_WORKSPACE_SIZE", "9000000TiB", "larger than any memory"),
        ("UCUDNN_DATABASE", "~no-such-user-here/b.sqlite", "cannot expand ~"),
        ("UCUDNN_CHECK", "maybe", "not a yes/no value; expected one of 1, true"),
        ("UCUDNN_CHECK", "2", "not a yes/no value"),
    ],
)
def test_bad_values_name_the_variable(variable: str, value: str, accepts: str) -> None:
    with pytest.raises(ValueError) as info:
        Config.from_env({variable: value})
    assert f"{variable}={value[:60]!r}" in str(info.value)
    assert accepts in str(info.value)


@pytest.mark.parametrize(
    "text",
    ["1.99999999999999999999999999999", "1.99999999999999999999999999999KiB",
     "9223372036854775806.9"],
)  # fmt: skip
def test_parse_size_is_exact(text: str) -> None:
    # Decimal's default 28 digits would round these to a whole number of bytes.
    with pytest.raises(ValueError, match="is not a whole number of bytes"):
        parse_size(text, "X")


def test_parse_size_reads_whole_numbers_written_with_a_fraction() -> None:
    assert parse_size("1.00000000000000000000000000000", "X") == 1
    assert parse_size("9223372036854775807.000", "X") == MAX_BYTES


@pytest.mark.parametrize(
    "text", ["2147483648", "1,2147483648", "1" * 5000, "1," + "9" * 5000, "0000"]
)
def test_parse_policy_refuses_sizes_past_cudnn_bounds(text: str) -> None:
    with pytest.raises(ValueError, match=r"P=.*is not a policy; expected .*up to 2147483647"):
        parse_policy(text, "P")


def test_parse_policy_takes_the_largest_size_and_leading_zeros() -> None:
    assert parse_policy("2147483647,007", "P") == (7, 2147483647)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ALL", "all"),
        ("powerOfTwo", "powerOfTwo"),
        ("32,1", (1, 32)),
        ([32, 1, 32], (1, 32)),
        ((4,), (4,)),
        ({8, 2}, (2, 8)),
        (frozenset({3}), (3,)),
        (np.array([16, 4]), (4, 16)),
        ([np.int64(2), np.uint16(1)], (1, 2)),
        (range(1, 4), (1, 2, 3)),
    ],
)
def test_micro_batch_policy_takes_text_and_iterables(value: object, expected: object) -> None:
    policy = micro_batch_policy(value, "policy")
    assert policy == expected
    assert all(type(size) is int for size in policy if not isinstance(policy, str))
    hash(policy)  # it keys the numpy API's handle cache


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("bogus", ValueError, "policy='bogus' is not a policy"),
        ([0], ValueError, "policy micro-batch size must be >= 1, got 0"),
        ([2**31], ValueError, "policy micro-batch size must be <= 2147483647"),
        ([1.5], TypeError, "policy micro-batch size must be an integer"),
        ([True], TypeError, "policy micro-batch size must be an integer, got True"),
        ([], ValueError, "policy names no micro-batch size"),
        (4, TypeError, "policy must be a policy name, text such as '1,2,4,32' or an iterable"),
        (None, TypeError, "policy must be a policy name"),
        (b"all", TypeError, "policy must be a policy name"),
        (np.array(4), TypeError, "policy must be a policy name"),
        (np.array([[1, 2]]), TypeError, "policy micro-batch size must be an integer"),
    ],
)
def test_micro_batch_policy_names_the_argument(value: object, error: type, message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        micro_batch_policy(value, "policy")


def test_config_from_python_takes_what_the_environment_takes(tmp_path: Path) -> None:
    config = Config(
        batch_size_policy=np.array([8, 1]),
        default_workspace_limit=np.int64(5),
        total_workspace_size="1GiB",
        database=str(tmp_path / "db.sqlite"),
    )
    assert config == Config(
        batch_size_policy=(1, 8),
        default_workspace_limit=5,
        total_workspace_size=1024**3,
        database=tmp_path / "db.sqlite",
    )
    assert type(config.default_workspace_limit) is int
    assert Config(batch_size_policy="ALL").batch_size_policy == "all"
    assert Config(total_workspace_size=0).total_workspace_size is None  # as the variable


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("default_workspace_limit", -1, ValueError, "default_workspace_limit=-1 is not a size"),
        (
            "default_workspace_limit",
            float("nan"),
            TypeError,
            "default_workspace_limit=nan is not",
        ),
        ("default_workspace_limit", 1.5, TypeError, "default_workspace_limit=1.5 is not a size"),
        ("default_workspace_limit", True, TypeError, "default_workspace_limit=True is not a size"),
        ("default_workspace_limit", "lots", ValueError, "default_workspace_limit='lots'"),
        (
            "default_workspace_limit",
            2**63,
            ValueError,
            "=9223372036854775808 is larger than any",
        ),
        ("total_workspace_size", float("inf"), TypeError, "total_workspace_size=inf is not a size"),
        ("total_workspace_size", -5, ValueError, "total_workspace_size=-5 is not a size"),
        ("batch_size_policy", "fastest", ValueError, "batch_size_policy='fastest'"),
        ("batch_size_policy", [0, 4], ValueError, "batch_size_policy micro-batch size"),
        ("database", 5, TypeError, "database must be a path"),
        ("database", "a\0b", ValueError, "database must be a path"),
        ("database", "", ValueError, "database must be a path, got an empty one"),
        ("check", 1, TypeError, "check must be True or False, got 1"),
        ("check", "yes", TypeError, "check must be True or False, got 'yes'"),
        ("check", None, TypeError, "check must be True or False, got None"),
    ],
)
def test_config_from_python_names_a_bad_field(field, value, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)):
        Config(**{field: value})


def test_errors_show_a_long_value_cut_short() -> None:
    with pytest.raises(ValueError) as info:
        parse_size("9" * 100_000 + "x", "LIMIT")
    assert len(str(info.value)) < 400 and "(100001 characters)" in str(info.value)


def test_the_tf32_variable_is_read_and_checked_with_the_others() -> None:
    """Config reads UCUDNN_ALLOW_TF32 as ConvProblem does, so `ucudnn info` reports a bad one."""
    assert Config.from_env({}).allow_tf32 is False
    assert Config.from_env({"UCUDNN_ALLOW_TF32": "On"}).allow_tf32 is True
    with pytest.raises(ValueError, match="UCUDNN_ALLOW_TF32='maybe' is not a yes/no value"):
        Config.from_env({"UCUDNN_ALLOW_TF32": "maybe"})
