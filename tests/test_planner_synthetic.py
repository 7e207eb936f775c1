"""The MODEL timing tables: the cost shapes they promise."""

from __future__ import annotations

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.synthetic import model_candidates, model_table, model_tables
from ucudnn.planner.tables import Candidate

CONV3 = ConvProblem.create(256, 64, 64, (56, 56), 3, padding=1)
CONV1_STRIDED = ConvProblem.create(256, 256, 512, (56, 56), 1, stride=2)


def by_algo(problem: ConvProblem, kernel: str, b: int) -> dict:
    return {c.algo: c for c in model_candidates(problem, kernel, b)}


def test_families_apply_where_cudnn_offers_them() -> None:
    assert set(by_algo(CONV3, "forward", 8)) == {0, 1, 2, 4, 5, 6, 7}
    assert set(by_algo(CONV1_STRIDED, "forward", 8)) == {0, 1, 2}  # no FFT/Winograd
    assert set(by_algo(CONV3, "backward_filter", 8)) == {0, 1, 2, 3, 5, 6}
    filt = by_algo(CONV3, "backward_filter", 8)
    assert not filt[0].deterministic and not filt[3].deterministic and filt[1].deterministic


def test_workspace_and_time_shapes() -> None:
    small, big = by_algo(CONV3, "forward", 16), by_algo(CONV3, "forward", 256)
    assert small[0].workspace_bytes == big[0].workspace_bytes == 0
    assert small[1].workspace_bytes == big[1].workspace_bytes > 0  # precomputed indices
    assert big[2].workspace_bytes == 16 * small[2].workspace_bytes  # im2col grows with b
    assert big[2].workspace_bytes == 256 * 64 * 9 * 56 * 56 * 4
    for algo in small:  # small micro-batches pay for idle hardware: per-sample time is higher
        assert small[algo].time_ms / 16 > big[algo].time_ms / 256
    assert big[6].time_ms < big[0].time_ms  # Winograd wins on 3x3


def test_tables_cover_the_policy_and_the_full_batch() -> None:
    table = model_table("conv", "backward_data", CONV3, "powerOfTwo")
    assert table.micro_batches() == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    table.check_complete()
    tables = model_tables(
        [("a", CONV3, ("forward",)), ("b", CONV1_STRIDED, ("forward", "backward_filter"))]
    )
    assert list(tables) == [("a", "forward"), ("b", "forward"), ("b", "backward_filter")]


def test_layers_sharing_a_problem_share_its_candidates_made_once(monkeypatch) -> None:
    """A layer list may repeat one row 40,000 times: the model is asked once per problem and
    kernel, and every layer still gets its own table, equal to one made for it alone."""
    from ucudnn.planner import synthetic

    asked = []
    monkeypatch.setattr(
        synthetic, "model_table", lambda *args: asked.append(args) or model_table(*args)
    )
    other = ConvProblem.create(8, 16, 16, (7, 7), 1)
    layers = [
        (f"l{i}", CONV1_STRIDED if i % 3 else other, ["forward", "backward_data"]) for i in range(9)
    ]
    tables = model_tables(layers, "all")
    assert len(asked) == 4  # two problems, two kernels
    assert len(tables) == 18
    for name, problem, kernels in layers:
        for kernel in kernels:
            assert tables[name, kernel] == model_table(name, kernel, problem, "all")


def test_model_candidates_are_those_the_checked_constructor_makes() -> None:
    for kernel in ("forward", "backward_data", "backward_filter"):
        for c in model_candidates(CONV3, kernel, 24):
            fields = {f: getattr(c, f) for f in ("micro_batch", "algo", "time_ms")}
            checked = Candidate(
                **fields,
                workspace_bytes=c.workspace_bytes,
                deterministic=c.deterministic,
            )
            assert c == checked and c.values() == checked.values() and hash(c) == hash(checked)


def test_a_renamed_table_equals_one_made_for_its_layer() -> None:
    table = model_table("a", "forward", CONV3, "all")
    key = table.content_key()
    renamed = table.renamed("b")
    assert renamed == model_table("b", "forward", CONV3, "all")
    assert renamed.content_key() is key  # worked out once
    renamed.add(Candidate(3, 99, 1.0, 0))  # its rows are its own
    assert 99 not in {c.algo for c in table.candidates[3]}
