"""The MODEL timing tables: the cost shapes they promise."""

from __future__ import annotations

import math

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.synthetic import model_candidates, model_table, model_tables
from ucudnn.planner.tables import MAX_TIME_MS, Candidate

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


CONV5 = ConvProblem.create(32, 48, 96, (28, 28), 5, padding=2)


def documented_time_ms(
    kernel: str, algo: int, problem: ConvProblem, b: int, workspace: int
) -> float:
    """The module docstring's time(b), written out here as it reads there (not rounded)."""
    from ucudnn.planner import synthetic

    family = next(f for a, f, _ in synthetic._ALGORITHMS[kernel] if a == algo)
    efficiency, factor = synthetic._FAMILIES[family]
    c, k = problem.in_channels // problem.groups, problem.out_channels
    outputs = math.prod(problem.output_size)
    if family in ("fft", "fft_tiling"):
        n = synthetic._spectrum(problem, None if family == "fft" else 32)
        flops = 5 * (b * c + b * k + c * k) * n * math.log2(n) + 8 * b * c * k * n
    else:
        flops = 2 * b * k * c * math.prod(problem.filter_size) * outputs
    busy = b * k * outputs
    occupancy = busy / (busy + synthetic.HALF_OCCUPANCY)
    peak = synthetic.PEAK_TFLOPS * 1e12 * efficiency * synthetic._KERNEL_EFFICIENCY[kernel]
    seconds = flops * factor / (peak * occupancy) + 2 * workspace / (synthetic.BANDWIDTH_GBS * 1e9)
    return synthetic.LAUNCH_MS + 1e3 * seconds


def test_times_are_the_documented_cost_rounded_to_nanoseconds() -> None:
    checked = 0
    for problem in (CONV3, CONV1_STRIDED, CONV5):
        for kernel in ("forward", "backward_data", "backward_filter"):
            for b in (1, 3, 17, 32):
                for c in model_candidates(problem, kernel, b):
                    expected = documented_time_ms(kernel, c.algo, problem, b, c.workspace_bytes)
                    # Half a nanosecond of rounding, and the rounding of the arithmetic.
                    assert abs(c.time_ms - expected) <= 0.5e-6 + 1e-12 * expected
                    assert c.time_ms == round(c.time_ms * 1e6) / 1e6
                    checked += 1
    assert checked > 100


def test_whole_rounds_as_round_does() -> None:
    from ucudnn.planner.synthetic import _WHOLE

    assert MAX_TIME_MS * 1e6 < 2**51  # the times it must round, in nanoseconds
    halves = (0.5, 1.5, 2.5, 1e6 + 0.5, 2.0**51 - 0.5)
    for x in (*halves, 0.0, 0.49999999999999994, 123.456, 2.0**51 - 1, 98765432.1):
        assert x + _WHOLE - _WHOLE == round(x)
