"""Micro-batch policies."""

from __future__ import annotations

import pytest

from ucudnn.planner.policies import policy_text, sizes_for_policy


def test_named_policies() -> None:
    assert sizes_for_policy("undivided", 256) == [256]
    assert sizes_for_policy("powerOfTwo", 256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert sizes_for_policy("powerOfTwo", 100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert sizes_for_policy("powerOfTwo", 1) == [1]
    assert sizes_for_policy("all", 5) == [1, 2, 3, 4, 5]


def test_explicit_sizes_always_include_the_batch() -> None:
    assert sizes_for_policy([32, 8, 8], 100) == [8, 32, 100]
    assert sizes_for_policy((100,), 100) == [100]
    assert sizes_for_policy([], 7) == [7]


@pytest.mark.parametrize(
    ("policy", "batch", "message"),
    [
        ("poweroftwo", 8, "unknown micro-batch policy 'poweroftwo'; expected one of undivided"),
        ([0, 4], 8, r"between 1 and the batch \(8\), got 0"),
        ([16], 8, "got 16"),
        ([2.0], 8, "got 2.0"),
        ([True], 8, "got True"),
        ("all", 0, "batch must be an integer >= 1"),
    ],
)
def test_bad_policies(policy, batch: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sizes_for_policy(policy, batch)


def test_policy_text() -> None:
    assert policy_text("powerOfTwo") == "powerOfTwo"
    assert policy_text((1, 2, 32)) == "1,2,32"
