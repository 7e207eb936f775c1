from __future__ import annotations

from pathlib import Path

import pytest

from ucudnn.planner.config import Config, default_database, parse_policy, parse_size

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
        ("1.0001KiB", 1024),  # rounded down: a limit is never exceeded
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text, "X") == expected


@pytest.mark.parametrize(
    "text", ["", " ", "-1", "-64MiB", "1.2.3", "64XB", "MiB", "1e9", "nan", "inf", "6 4", "٣"]
)
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=r"LIMIT=.*is not a size; expected .*64MiB"):
        parse_size(text, "LIMIT")


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


def test_defaults() -> None:
    config = Config.from_env({"HOME": "/nonexistent", "XDG_CACHE_HOME": "/cache"})
    assert config.batch_size_policy == "powerOfTwo"
    assert config.default_workspace_limit == 64 * MiB
    assert config.total_workspace_size is None
    assert not config.workspace_division
    assert config.database == Path("/cache/ucudnn/benchmarks.sqlite")


def test_default_database_ignores_relative_xdg() -> None:
    assert default_database({"XDG_CACHE_HOME": "rel"}) == (
        Path.home() / ".cache" / "ucudnn" / "benchmarks.sqlite"
    )
    assert default_database({}) == default_database({"XDG_CACHE_HOME": ""})


def test_from_env_reads_every_variable(tmp_path: Path) -> None:
    config = Config.from_env(
        {
            "UCUDNN_BATCH_SIZE_POLICY": "1,2,3",
            "UCUDNN_DEFAULT_WORKSPACE_LIMIT": "8MiB",
            "UCUDNN_TOTAL_WORKSPACE_SIZE": "1GiB",
            "UCUDNN_DATABASE": str(tmp_path / "db.sqlite"),
        }
    )
    assert config == Config(
        batch_size_policy=(1, 2, 3),
        default_workspace_limit=8 * MiB,
        total_workspace_size=1024**3,
        database=tmp_path / "db.sqlite",
    )
    assert config.workspace_division


def test_empty_variables_keep_defaults() -> None:
    names = ["UCUDNN_BATCH_SIZE_POLICY", "UCUDNN_DEFAULT_WORKSPACE_LIMIT"]
    names += ["UCUDNN_TOTAL_WORKSPACE_SIZE", "UCUDNN_DATABASE"]
    assert Config.from_env(dict.fromkeys(names, " ")) == Config.from_env({})


def test_zero_total_workspace_keeps_division_off() -> None:
    assert Config.from_env({"UCUDNN_TOTAL_WORKSPACE_SIZE": "0"}).total_workspace_size is None


def test_database_expands_user() -> None:
    config = Config.from_env({"UCUDNN_DATABASE": "~/b.sqlite"})
    assert config.database == Path.home() / "b.sqlite"


@pytest.mark.parametrize(
    ("variable", "value", "accepts"),
    [
        ("UCUDNN_BATCH_SIZE_POLICY", "fastest", "undivided, powerOfTwo, all"),
        ("UCUDNN_BATCH_SIZE_POLICY", "1,x", "comma-separated list"),
        ("UCUDNN_BATCH_SIZE_POLICY", "0,4", "positive micro-batch sizes"),
        ("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "64 apples", "64MiB"),
        ("UCUDNN_DEFAULT_WORKSPACE_LIMIT", "-5", "byte count"),
        ("UCUDNN_TOTAL_WORKSPACE_SIZE", "lots", "64MiB"),
        ("UCUDNN_TOTAL_WORKSPACE_SIZE", "1e9", "byte count"),
    ],
)
def test_bad_values_name_the_variable(variable: str, value: str, accepts: str) -> None:
    with pytest.raises(ValueError) as info:
        Config.from_env({variable: value})
    assert f"{variable}={value!r}" in str(info.value)
    assert accepts in str(info.value)
