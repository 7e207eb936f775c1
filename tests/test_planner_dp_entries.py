"""The general program's entries, every one of them (time, workspace and split), must be those
of a solve from scratch after each update, ties included: the desirable sets read the batch's
entry, but every other entry is the rest of some split."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ucudnn.planner.candidate import Row
from ucudnn.planner.general_dp import GeneralDP, StepBudget
from ucudnn.planner.tables import Candidate

# Few distinct times (multiples of 1/8, summed exactly) and workspaces: ties are the rule.
TIMES = st.integers(1, 12).map(lambda eighths: eighths / 8)
WORKSPACES = st.sampled_from([0, 8, 64])


@st.composite
def update_rounds(draw: st.DrawFn) -> tuple[int, list[dict[int, Row | None]]]:
    """A batch and rounds of changes: sizes that get a (new) candidate's row, or go."""
    batch = draw(st.integers(2, 30))
    rounds = []
    for algo in range(draw(st.integers(1, 6))):
        sizes = draw(st.lists(st.integers(1, batch), min_size=1, max_size=batch, unique=True))
        changes: dict[int, Row | None] = {}
        for s in sizes:
            if draw(st.booleans()) or algo == 0:
                changes[s] = Candidate(s, algo, s * draw(TIMES), draw(WORKSPACES)).values()
            else:
                changes[s] = None
        rounds.append(changes)
    return batch, rounds


def entries(dp: GeneralDP) -> list[tuple[float, int, int]]:
    return list(zip(dp._time, dp._workspace, dp._order, strict=True))


@settings(max_examples=300, deadline=None)
@given(update_rounds())
def test_updated_entries_are_those_of_a_solve_from_scratch(
    rounds: tuple[int, list[dict[int, Row | None]]],
) -> None:
    batch, changes = rounds
    kept = GeneralDP(batch)
    looked_at: dict[int, Row] = {}
    for change in changes:
        kept.solve(change, StepBudget())
        for s, c in change.items():
            if c is None:
                looked_at.pop(s, None)
            else:
                looked_at[s] = c
        fresh = GeneralDP(batch)
        fresh.solve(dict(looked_at), StepBudget())
        assert entries(kept) == entries(fresh)
