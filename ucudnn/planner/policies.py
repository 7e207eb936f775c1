"""Micro-batch policies: which micro-batch sizes are benchmarked, and so may make up a schedule.

- ``undivided``: {N}.
- ``powerOfTwo`` (the default): {1, 2, 4, ..., 2^floor(log2 N)} ∪ {N}.
- ``all``: {1, ..., N}.
- an explicit list of positive sizes; those above N are left out for that batch, so one list
  serves every layer of a network and a Handle's short last mini-batch.

N is always in the set, also for an explicit list that leaves it out: the undivided run stays a
candidate, so a plan is never slower than the best single algorithm that fits the same limit.
Sizes below N / MAX_PARTS are left out, so that no schedule makes more than MAX_PARTS cuDNN
calls (this matters only above 65,536 samples). A policy is taken in any form that
`config.micro_batch_policy` takes ("ALL", "1,8,32", a list of numpy integers).

Slab policies: which slab extents (planes per slab of the tensor a kernel's slabs cut,
`ucudnn.core.slabs`) are benchmarked, or modelled, at every micro-batch size of the policy
above (`slab_extents`):

- ``undivided`` (the default): none; every candidate runs the whole volume.
- ``powerOfTwo``: {1, 2, 4, ...} below the kernel's planes.
- an explicit list of positive extents; those not below the planes are left out, as the sizes
  above N are.

The whole volume (slab 0) is always a candidate, as N is above. A slab policy is taken in any
form that `config.slab_policy` takes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ucudnn.core.checks import integer
from ucudnn.core.problem import MAX_DIM
from ucudnn.planner.config import micro_batch_policy, slab_policy

Policy = str | Sequence[int]

UNDIVIDED = "undivided"
DEFAULT_POLICY = "powerOfTwo"
DEFAULT_SLAB_POLICY = UNDIVIDED
# Each size is benchmarked (or modelled) for every kernel: beyond this many it never ends.
MAX_MEASURED_SIZES = 4096
# A schedule is one cuDNN call per part, so micro-batches are at least batch / MAX_PARTS.
MAX_PARTS = 1 << 16


def sizes_for_policy(policy: Policy, batch: int) -> Sequence[int]:
    """The micro-batch sizes `policy` allows at mini-batch `batch`, ascending (a range for
    "all", so that a huge batch costs no memory)."""
    sizes = allowed_sizes(policy, batch)
    return sizes if isinstance(sizes, range) else list(sizes)


def allowed_sizes(policy: Policy, batch: int) -> tuple[int, ...] | range:
    """`sizes_for_policy`, as a sequence that cannot change: kept for the policies and batches
    the planner passes on (names, tuples of ints; it asks thousands of times per plan)."""
    if type(batch) is int and (
        type(policy) is str or (type(policy) is tuple and all(type(s) is int for s in policy))
    ):
        # Only exact types: a value merely equal to a valid one (8.0 for 8) is still refused.
        return _kept_sizes(policy, batch)
    return _sizes(policy, batch)


def _sizes(policy: Policy, batch: int) -> tuple[int, ...] | range:
    batch = integer(batch, "batch", minimum=1, maximum=MAX_DIM)
    policy = micro_batch_policy(policy, "policy")
    smallest = -(-batch // MAX_PARTS)
    if policy == UNDIVIDED:
        return (batch,)
    if policy == "all":
        return range(smallest, batch + 1)
    # Of the names, only "powerOfTwo" is left.
    sizes = {1 << i for i in range(batch.bit_length())} if isinstance(policy, str) else set(policy)
    return tuple(sorted({s for s in sizes if smallest <= s < batch} | {batch}))


_kept_sizes = functools.lru_cache(maxsize=1024)(_sizes)


def slab_extents(policy: Policy, planes: int) -> list[int]:
    """The slab extents `policy` (a slab policy) tries on a kernel whose slabs cut `planes`
    planes, ascending: all below `planes` (one slab of them all is the whole volume, which
    is always a candidate); refused when there are more than MAX_MEASURED_SIZES."""
    planes = integer(planes, "planes", minimum=1, maximum=MAX_DIM)
    policy = slab_policy(policy, "slab policy")
    if policy == UNDIVIDED:
        return []
    # Of the names, only "powerOfTwo" is left.
    extents = [1 << i for i in range(planes.bit_length())] if isinstance(policy, str) else policy
    kept = [e for e in extents if e < planes]
    if len(kept) > MAX_MEASURED_SIZES:
        raise ValueError(
            f"slab policy {policy_text(policy)!r} at {planes} planes asks for {len(kept)} slab "
            f"extents, more than the {MAX_MEASURED_SIZES} that can be measured; use powerOfTwo "
            "or fewer extents"
        )
    return kept


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


# A list of sizes is written whole up to this many characters, so that a pasted list of
# thousands makes no wall of text in reports and errors.
_POLICY_TEXT = 60


def policy_text(policy: Policy) -> str:
    """The policy as config and the command line write it: a name or "1,2,32"; a longer list
    cut short, its last size and count said: "1,2,3,...,4999 (4999 sizes)"."""
    if isinstance(policy, str):
        return policy
    text = ",".join(map(str, policy))
    if len(text) <= _POLICY_TEXT:
        return text
    start = text[: _POLICY_TEXT - 20].rpartition(",")[0]  # whole sizes only
    return f"{start},...,{policy[-1]} ({len(policy)} sizes)"
