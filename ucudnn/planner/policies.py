"""Micro-batch policies: which micro-batch sizes are benchmarked, and so may make up a schedule.

- ``undivided``: {N}.
- ``powerOfTwo`` (the default): {1, 2, 4, ..., 2^floor(log2 N)} ∪ {N}.
- ``all``: {1, ..., N}.
- an explicit list of positive sizes; those above N are left out for that batch, so one list
  serves every layer of a network and a Handle's short last mini-batch.

N is always in the set, also for an explicit list that leaves it out: the undivided run stays a
candidate, so a plan is never slower than the best single algorithm that fits the same limit.
"""

from __future__ import annotations

from collections.abc import Sequence

from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.config import POLICY_NAMES

Policy = str | Sequence[int]

DEFAULT_POLICY = "powerOfTwo"
# Each size is benchmarked (or modelled) for every kernel: beyond this many it never ends.
MAX_MEASURED_SIZES = 4096


def sizes_for_policy(policy: Policy, batch: int) -> Sequence[int]:
    """The micro-batch sizes `policy` allows at mini-batch `batch`, ascending (a range for
    "all", so that a huge batch costs no memory)."""
    batch = integer(batch, "batch", minimum=1, maximum=MAX_DIM)
    if isinstance(policy, str):
        if policy == "undivided":
            return [batch]
        if policy == "powerOfTwo":
            return sorted({1 << i for i in range(batch.bit_length())} | {batch})
        if policy == "all":
            return range(1, batch + 1)
        raise ValueError(
            f"unknown micro-batch policy {policy!r}; expected one of {', '.join(POLICY_NAMES)} "
            "or a list of sizes"
        )
    sizes = {integer(s, "micro-batch size", minimum=1) for s in policy}
    return sorted({s for s in sizes if s < batch} | {batch})


def sizes_to_measure(policy: Policy, batch: int) -> list[int]:
    """The sizes to benchmark at mini-batch `batch`, ascending; refused when there are more
    than MAX_MEASURED_SIZES (policy "all" at a batch above it)."""
    sizes = sizes_for_policy(policy, batch)
    if len(sizes) > MAX_MEASURED_SIZES:
        raise ValueError(
            f"policy {policy_text(policy)!r} at batch {batch} asks for {len(sizes)} micro-batch "
            f"sizes, more than the {MAX_MEASURED_SIZES} that can be measured; use powerOfTwo "
            "or a list of sizes"
        )
    return list(sizes)


def policy_text(policy: Policy) -> str:
    """The policy as config and the command line write it: a name or "1,2,32"."""
    return policy if isinstance(policy, str) else ",".join(map(str, policy))
