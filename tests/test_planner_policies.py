"""Micro-batch policies."""

from __future__ import annotations

import numpy as np
import pytest

from ucudnn.planner.policies import policy_text, sizes_for_policy


def test_named_policies() -> None:
    assert sizes_for_policy("undivided", 256) == [256]
    assert sizes_for_policy("powerOfTwo", 256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert sizes_for_policy("powerOfTwo", 100) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert sizes_for_policy("powerOfTwo", 1) == [1]
    assert list(sizes_for_policy("all", 5)) == [1, 2, 3, 4, 5]
    assert 2**31 - 2 in sizes_for_policy("all", 2**31 - 1)  # a range: no list of 2**31 sizes


def test_explicit_sizes_always_include_the_batch() -> None:
    assert sizes_for_policy([32, 8, 8], 100) == [8, 32, 100]
    assert sizes_for_policy((100,), 100) == [100]
    assert sizes_for_policy(np.array([2, 4]), 8) == [2, 4, 8]


def test_policies_are_taken_in_every_form_config_takes() -> None:
    assert sizes_for_policy("POWEROFTWO", 8) == [1, 2, 4, 8]
    assert list(sizes_for_policy("All", 3)) == [1, 2, 3]
    assert sizes_for_policy("32, 8", 100) == [8, 32, 100]


def test_sizes_below_a_65536th_of_the_batch_are_left_out() -> None:
    # One cuDNN call per part: no schedule may need more than 65536 of them.
    assert sizes_for_policy("powerOfTwo", 2**20)[:2] == [16, 32]
    assert sizes_for_policy([1, 15, 16, 17], 2**20) == [16, 17, 2**20]
    assert sizes_for_policy("all", 2**20)[0] == 16
    assert sizes_for_policy("powerOfTwo", 65536)[0] == 1


def test_sizes_above_the_batch_are_left_out_for_that_batch() -> None:
    # One list serves every layer (DeepBench mixes N=4 and N=64) and a short last mini-batch.
    assert sizes_for_policy([1, 2, 4, 8, 16], 4) == [1, 2, 4]
    assert sizes_for_policy([16, 32], 8) == [8]


@pytest.mark.parametrize(
    ("policy", "batch", "message"),
    [
        ("sometimes", 8, "policy='sometimes' is not a policy; expected one of undivided"),
        ([], 8, "policy names no micro-batch size"),
        ([0, 4], 8, "policy micro-batch size must be >= 1, got 0"),
        ([2.0], 8, "policy micro-batch size must be an integer, got 2.0"),
        ([True], 8, "policy micro-batch size must be an integer, got True"),
        ("all", 0, "batch must be >= 1, got 0"),
        ("all", 2**31, "batch must be <= 2147483647"),
        ("all", 8.0, "batch must be an integer"),
    ],
)
def test_bad_policies(policy, batch: int, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        sizes_for_policy(policy, batch)


def test_policy_text() -> None:
    assert policy_text("powerOfTwo") == "powerOfTwo"
    assert policy_text((1, 2, 32)) == "1,2,32"
