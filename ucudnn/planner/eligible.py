"""Which of a table's candidates a schedule may use, size by size: those at the policy's sizes,
within a workspace limit, deterministic ones only when asked; and of them, the fastest at each
size, and the records (each faster than every one that needs less workspace), which are all
that the dynamic program (`ucudnn.planner.dp`) is offered."""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Iterator, Sequence

from ucudnn.planner.candidate import (
    ROW_DETERMINISTIC,
    ROW_TIME,
    ROW_WORKSPACE,
    Row,
    row_speed_key,
    row_workspace_speed_key,
)
from ucudnn.planner.config import byte_count
from ucudnn.planner.kernel_table import KernelTable
from ucudnn.planner.policies import Policy, allowed_sizes

_ROW_TIME = operator.itemgetter(ROW_TIME)
_ROW_WORKSPACE = operator.itemgetter(ROW_WORKSPACE)


def _eligible_by_size(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> Iterator[tuple[int, Sequence[Row]]]:
    """Each policy size's rows of the candidates a schedule may use: within the limit (None:
    any), deterministic when asked; sizes ascending, those with none left out."""
    limit = _limit(limit_bytes)
    for b, rows in _policy_sizes(table, policy):
        if limit_bytes is None and not deterministic_only:
            yield b, rows  # a table's sizes all have rows
        elif eligible := _eligible(rows, limit, deterministic_only):
            yield b, eligible


def _limit(limit_bytes: int | None) -> float:
    return math.inf if limit_bytes is None else byte_count(limit_bytes, "limit_bytes")


def _policy_sizes(table: KernelTable, policy: Policy) -> Iterator[tuple[int, Sequence[Row]]]:
    """The rows of each size of the policy that `table` has, sizes ascending."""
    allowed, by_size = allowed_sizes(policy, table.batch), table.rows()
    if len(allowed) < len(by_size):  # the policy's few sizes (as "undivided"'s one) are looked up
        return ((b, by_size[b]) for b in allowed if b in by_size)
    return ((b, rows) for b, rows in sorted(by_size.items()) if b in allowed)


def _eligible(rows: Sequence[Row], limit: float, deterministic_only: bool) -> list[Row]:
    return [
        r
        for r in rows
        if r[ROW_WORKSPACE] <= limit and (r[ROW_DETERMINISTIC] or not deterministic_only)
    ]


def eligible_rows(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Row]:
    """The rows of the candidates a schedule may use (see `_eligible_by_size`)."""
    by_size = _eligible_by_size(table, limit_bytes, policy, deterministic_only)
    return [r for _, rows in by_size for r in rows]


def least_workspace_by_size(
    table: KernelTable, policy: Policy, deterministic_only: bool
) -> dict[int, int]:
    """The least workspace of the eligible candidates (`eligible_rows`, with no limit) at each
    size that has one."""
    by_size = ((b, table.records(b, deterministic_only)) for b, _ in _policy_sizes(table, policy))
    return {b: records[0][ROW_WORKSPACE] for b, records in by_size if records}


def fastest_by_size(
    table: KernelTable,
    limit_bytes: int | None,
    policy: Policy,
    deterministic_only: bool,
) -> dict[int, Row]:
    """The row of the fastest of the eligible candidates (`eligible_rows`) at each size that
    has one (the least speed_key), sizes ascending: all that the fastest schedule under one
    limit can use, as it runs each part with the fastest candidate at its size.

    The fastest of all a size's rows is found first: where it is eligible, as it mostly is
    (93% of the sizes of ResNet-50's engine tables at 64 MiB), it is the fastest eligible one,
    and no row is looked at again."""
    limit = _limit(limit_bytes)
    fastest = {}
    for b, rows in _policy_sizes(table, policy):
        row = _fastest_row(rows)
        if row[ROW_WORKSPACE] > limit or not (row[ROW_DETERMINISTIC] or not deterministic_only):
            if not (eligible := _eligible(rows, limit, deterministic_only)):
                continue
            row = _fastest_row(eligible)
        fastest[b] = row
    return fastest


def _fastest_row(rows: Sequence[Row]) -> Row:
    """min(rows, key=row_speed_key), in a fraction of the time: by the times alone, in loops
    in C, but where they tie."""
    times = list(map(_ROW_TIME, rows))
    least = min(times)
    if times.count(least) == 1:
        return rows[times.index(least)]
    return min((r for r in rows if r[ROW_TIME] == least), key=row_speed_key)


def records_by_size(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> dict[int, tuple[Row, ...]]:
    """Each size's eligible rows (`eligible_rows`) that are faster than every eligible one of
    their size that needs less workspace, or as much and comes first in speed order, in
    (workspace, speed) order; sizes ascending, those with none left out. Offered in that
    order, these are the ones that become the best at their size (`SplitDP.offer`), and no
    other changes what the program finds. Tables of engines hold hundreds per size, few of
    them these. They are the table's (`KernelTable.records`), or their prefixes."""
    limit = _limit(limit_bytes)
    by_size: dict[int, tuple[Row, ...]] = {}
    for b, _ in _policy_sizes(table, policy):
        records = table.records(b, deterministic_only)
        if records and records[-1][ROW_WORKSPACE] <= limit:  # as most are: no copy
            by_size[b] = records
        elif within := bisect.bisect_right(records, limit, key=_ROW_WORKSPACE):
            by_size[b] = records[:within]
    return by_size


def size_records(
    table: KernelTable, limit_bytes: int | None, policy: Policy, deterministic_only: bool
) -> list[Row]:
    """All sizes' `records_by_size` in (workspace, speed) order, as the desirable sets offer
    them."""
    by_size = records_by_size(table, limit_bytes, policy, deterministic_only)
    records = [row for rows in by_size.values() for row in rows]
    records.sort(key=row_workspace_speed_key)  # stable: sizes ascending on a full tie
    return records
