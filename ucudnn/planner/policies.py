"""Micro-batch policies: which micro-batch sizes are benchmarked, and so may make up a schedule.

- ``undivided``: {N}.
- ``powerOfTwo`` (the default): {1, 2, 4, ..., 2^floor(log2 N)} ∪ {N}.
- ``all``: {1, ..., N}.
- an explicit list of sizes, each between 1 and N.

N is always in the set, also for an explicit list that leaves it out: the undivided run stays a
candidate, so a plan is never slower than the best single algorithm that fits the same limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from ucudnn.planner.config import POLICY_NAMES

Policy = str | Sequence[int]

DEFAULT_POLICY = "powerOfTwo"


def sizes_for_policy(policy: Policy, batch: int) -> list[int]:
    """The micro-batch sizes `policy` allows at mini-batch `batch`, ascending."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
    if isinstance(policy, str):
        if policy == "undivided":
            return [batch]
        if policy == "powerOfTwo":
            return sorted({1 << i for i in range(batch.bit_length())} | {batch})
        if policy == "all":
            return list(range(1, batch + 1))
        raise ValueError(
            f"unknown micro-batch policy {policy!r}; expected one of {', '.join(POLICY_NAMES)} "
            "or a list of sizes"
        )
    sizes = list(policy)
    bad = [s for s in sizes if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= batch]
    if bad:
        raise ValueError(
            f"micro-batch sizes must be integers between 1 and the batch ({batch}), "
            f"got {', '.join(map(repr, bad))}"
        )
    return sorted({*sizes, batch})


def policy_text(policy: Policy) -> str:
    """The policy as config and the command line write it: a name or "1,2,32"."""
    return policy if isinstance(policy, str) else ",".join(map(str, policy))
