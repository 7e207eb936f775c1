"""WR (workspace reuse): the fastest schedule of one kernel under a per-kernel workspace limit."""

from __future__ import annotations

from collections.abc import Callable

from ucudnn.core.argtypes import PolicyArgument, Size
from ucudnn.planner.candidate import ROW_SLAB, Candidate, Row
from ucudnn.planner.config import byte_count, micro_batch_policy
from ucudnn.planner.dp import SplitDP
from ucudnn.planner.eligible import fastest_by_size
from ucudnn.planner.errors import InfeasibleError
from ucudnn.planner.kernel_table import KernelTable
from ucudnn.planner.pareto import smallest_workspace
from ucudnn.planner.policies import DEFAULT_POLICY, Policy, policy_text
from ucudnn.planner.schedule import Schedule
from ucudnn.planner.units import bytes_text


def plan_wr(
    table: KernelTable,
    limit_bytes: Size,
    policy: PolicyArgument = DEFAULT_POLICY,
    deterministic_only: bool = False,
) -> Schedule:
    """The fastest schedule whose workspace is at most `limit_bytes` (bytes, or text such as
    "64MiB").

    Unlike µ-cuDNN, nothing needs to fit at the full batch: smaller micro-batches alone will do.

    Raises:
        TypeError: a size neither an integer nor text, or a micro-batch size that is not an
            integer.
        ValueError: text that is no size, a negative size or one larger than any memory, or
            an unknown or empty policy.
        InfeasibleError: nothing fits; `required_bytes` is the smallest limit that would work,
            if any would.
    """
    limit_bytes = byte_count(limit_bytes, "limit_bytes")
    policy = micro_batch_policy(policy, "policy")
    schedule, _ = fastest_and_undivided(table, limit_bytes, policy, deterministic_only)
    if schedule is None:
        raise kernel_infeasible(table, limit_bytes, policy, deterministic_only)
    return schedule


def fastest_and_undivided(
    table: KernelTable,
    limit_bytes: int,
    policy: Policy,
    deterministic_only: bool,
    candidate: Callable[[Row], Candidate] = Candidate.of_row,
) -> tuple[Schedule | None, Candidate | None]:
    """`plan_wr`'s schedule of checked arguments (None where it has none), and the fastest
    whole run (no slabs) at the whole batch within the limit (None where none is): every
    policy has the batch among its sizes, so the one look at the rows finds both, unless the
    fastest there is cut into slabs. `candidate` makes a row's Candidate
    (`DesirableSets.candidate` makes each once for many plans)."""
    fastest = fastest_by_size(table, limit_bytes, policy, deterministic_only)
    undivided = fastest.get(table.batch)
    if undivided is not None and undivided[ROW_SLAB]:
        whole = fastest_by_size(table.whole_volume(), limit_bytes, "undivided", deterministic_only)
        undivided = whole.get(table.batch)
    dp = SplitDP(table.batch, candidate=candidate)
    dp.offer_fastest(fastest)
    return dp.solve(), None if undivided is None else candidate(undivided)


def kernel_infeasible(
    table: KernelTable, limit_bytes: int, policy: Policy, deterministic_only: bool
) -> InfeasibleError:
    """The error for a kernel with no schedule within `limit_bytes`."""
    what = f"{table.layer}/{table.kernel} (batch {table.batch}, policy {policy_text(policy)}" + (
        ", deterministic algorithms only)" if deterministic_only else ")"
    )
    needed = smallest_workspace(table, policy, deterministic_only)
    if needed is None:
        return InfeasibleError(
            f"{what} has no schedule at any workspace size: no candidates can make up the "
            "batch from the policy's micro-batch sizes",
            kernel=table.kernel_id,
        )
    return InfeasibleError(
        f"{what} has no schedule within {bytes_text(limit_bytes)}; "
        f"the smallest workspace that works is {bytes_text(needed)}",
        kernel=table.kernel_id,
        required_bytes=needed,
    )
