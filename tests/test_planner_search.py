"""The first-use search's decisions (ucudnn.planner.search) on small hand-made kernels: what is
screened out, pruned, looked at again and confirmed, and what beta-1 plans are asked for."""

from __future__ import annotations

import dataclasses

import pytest

from ucudnn.planner import search
from ucudnn.planner.search import ENGINE, LEGACY, Offer, Timing, Trial

TIMING = Timing(warmup=3, repeats=10)


@dataclasses.dataclass
class Row:
    workspace: int
    screen: float  # what a brief run measures
    full: float  # what a full timing measures
    beta1: bool = True  # whether its beta-1 plan builds
    deterministic: bool = True


class ScriptedDevice:
    """One size of a kernel whose every timing is known in advance; records what it was asked."""

    def __init__(self, legacy: dict[str, Row], engines: dict[str, Row], wave: int = 1) -> None:
        self.legacy, self.engines, self.wave = legacy, engines, wave
        self.built: list[str] = []
        self.timed: list[tuple[str, bool]] = []  # (candidate, full)
        self.beta1_asked: list[str] = []
        self.looked_again: list[str] = []  # second looks
        self.again_warmups: list[int] = []  # their warm-ups

    def device(self) -> search.Device[None]:
        return search.Device(
            self.legacy_screen, self.build, self.time_engine, self.time_again, self.split_ok,
            self.wave,
        )  # fmt: skip

    def offers(self) -> list[Offer]:
        return [Offer(name, row.workspace, row.deterministic) for name, row in self.engines.items()]

    def legacy_screen(self) -> list[Trial]:
        return [
            Trial(n, LEGACY, r.workspace, [r.screen], r.deterministic)
            for n, r in self.legacy.items()
        ]

    def build(self, offers: list[Offer]) -> list[None]:
        self.built += [str(o.config) for o in offers]
        return [None] * len(offers)

    def time_engine(self, offer: Offer, build: None, warmup: int, runs: int) -> Trial:
        row = self.engines[str(offer.config)]
        full = runs == TIMING.repeats
        self.timed.append((str(offer.config), full))
        times = [row.full if full else row.screen]
        return Trial(offer.config, ENGINE, row.workspace, times, row.deterministic)

    def time_again(self, trial: Trial, warmup: int, runs: int, full: bool) -> list[float]:
        row = {**self.legacy, **self.engines}[str(trial.config)]
        self.timed.append((str(trial.config), full))
        if not full:
            self.looked_again.append(str(trial.config))
            self.again_warmups.append(warmup)
        return [row.full if full else row.screen]

    def split_ok(self, trial: Trial) -> bool:
        self.beta1_asked.append(str(trial.config))
        return self.engines[str(trial.config)].beta1


def run_size(
    kernel_search: search.KernelSearch, micro_batch: int, device: ScriptedDevice
) -> search.SizeSearch:
    size = kernel_search.at_size(micro_batch)
    search.search_size(size, device.offers(), device.device(), TIMING)
    return size


def fast(kernel: str = "forward", batch: int = 4) -> search.KernelSearch:
    return search.KernelSearch(search.Rules.named("fast"), kernel, batch)


def test_a_configuration_that_cannot_win_per_sample_is_neither_built_nor_timed() -> None:
    kernel = fast()
    run_size(kernel, 4, ScriptedDevice({}, {"a": Row(0, 4.0, 4.0), "b": Row(0, 8.0, 8.0)}))
    # At 2: a (known fastest) goes first and takes 2.0; b cannot beat it per sample: 0.9 x 8.0
    # x 2/4 = 3.6 >= 2.0. c is new: always screened.
    device = ScriptedDevice(
        {}, {"b": Row(0, 5.0, 5.0), "a": Row(0, 2.0, 2.0), "c": Row(0, 9.0, 9.0)}
    )
    size = run_size(kernel, 2, device)
    assert device.built == ["a", "c"]
    assert size.pruned == ["b"] and size.counts.pruned == 1
    assert set(size.trials) == {"a", "c"}


def test_pruning_compares_only_with_candidates_within_its_workspace() -> None:
    kernel = fast()
    run_size(kernel, 4, ScriptedDevice({}, {"big": Row(1 << 20, 2.0, 2.0), "b": Row(0, 8.0, 8.0)}))
    device = ScriptedDevice({}, {"big": Row(1 << 20, 1.0, 1.0), "b": Row(0, 5.0, 5.0)})
    size = run_size(kernel, 2, device)
    # b's bound (3.6) loses to big's 1.0, but big needs more workspace than b: b is kept.
    assert size.pruned == [] and device.built == ["big", "b"]


def test_pruning_may_compare_with_a_legacy_algorithm() -> None:
    kernel = fast()
    run_size(kernel, 4, ScriptedDevice({"L": Row(0, 4.0, 4.0)}, {"e": Row(0, 8.0, 8.0)}))
    device = ScriptedDevice({"L": Row(0, 2.0, 2.0)}, {"e": Row(0, 5.0, 5.0)})
    size = run_size(kernel, 2, device)
    assert size.pruned == ["e"] and device.built == []


def test_the_front_and_its_near_ties_are_confirmed_and_the_rest_keeps_its_screen() -> None:
    device = ScriptedDevice(
        {"slow_legacy": Row(0, 10.0, 10.0), "free": Row(0, 4.0, 4.0)},
        {
            "fast": Row(1024, 1.0, 1.0),
            "tie": Row(2048, 1.04, 1.04),  # within 5 % of fast, with more workspace
            "off": Row(2048, 1.3, 1.3),  # beaten by 30 %: a second look, no more
            "far": Row(4096, 3.0, 3.0),  # beaten by 3x: screened out
        },
    )
    size = run_size(fast(), 4, device)
    confirmed = {name for name, t in size.trials.items() if t.confirmed}
    assert confirmed == {"free", "fast", "tie"}
    assert "off" in device.looked_again and "far" not in device.looked_again
    assert size.counts.screened_out == 3  # slow_legacy, off and far keep their screens
    assert size.counts.confirmed == 3


def test_a_second_look_needs_no_warm_up() -> None:
    device = ScriptedDevice({}, {"fast": Row(0, 1.0, 1.0), "close": Row(0, 1.3, 1.3)})
    run_size(fast(), 4, device)
    assert device.looked_again == ["fast", "close"] and device.again_warmups == [0, 0]


def test_a_larger_size_that_does_the_samples_faster_is_a_rival_across_sizes() -> None:
    kernel = fast(batch=8)
    # At 8 both are confirmed: "lean" does a sample in 0.5 without workspace, "greedy" in
    # 0.375 with 1 KiB.
    run_size(
        kernel, 8, ScriptedDevice({}, {"lean": Row(0, 4.0, 4.0), "greedy": Row(1024, 3.0, 3.0)})
    )
    # At 2, the rival of a part without workspace is lean's part of 8: 2 samples in 1.0.
    device = ScriptedDevice(
        {},
        {
            "lean": Row(0, 1.5, 1.5),  # slower than its rival (1.0): screened, not confirmed
            "greedy": Row(1024, 0.7, 0.7),  # faster than its rival (0.75): the front
            "heavy": Row(4096, 0.71, 0.71),  # within 5 % of greedy: a near tie
        },
    )
    size = run_size(kernel, 2, device)
    assert {name for name, t in size.trials.items() if t.confirmed} == {"greedy", "heavy"}
    assert device.built == ["greedy", "lean", "heavy"]  # the known ones, best bound first
    assert kernel.above_sizes(2) == [8]
    # At 1, lean's rival is still its part of 8 (0.5 a sample): greedy's parts of 2 need more
    # workspace than lean. Lean's bound, 0.9 x 4.0 / 8 = 0.45, could beat it: built.
    device = ScriptedDevice({}, {"lean": Row(0, 1.2, 1.2), "greedy": Row(1024, 0.6, 0.6)})
    run_size(kernel, 1, device)
    assert device.built == ["greedy", "lean"]


@pytest.mark.parametrize("deterministic_only", [False, True])
def test_plans_of_deterministic_candidates_only_have_their_own_rivals(deterministic_only) -> None:
    """A deterministic Handle plans with deterministic candidates only: what is faster but not
    deterministic does not rule them out, at their size or across sizes, and is not built."""
    kernel = search.KernelSearch(search.Rules.named("fast"), "forward", 4, deterministic_only)
    racy = Row(0, 1.0, 1.0, deterministic=False)
    size = run_size(kernel, 4, ScriptedDevice({"det": Row(0, 1.5, 1.5)}, {"racy": racy}))
    assert size.trials["det"].confirmed is deterministic_only  # else racy beats it by 1.5x
    assert ("racy" in size.trials) is not deterministic_only  # new: built unless useless
    device = ScriptedDevice(
        {"det": Row(0, 0.7, 0.7)},  # slower than racy's part of 4 (0.5), not than det's (0.75)
        {"racy": Row(0, 1.0, 1.0, deterministic=False)},
    )
    size = run_size(kernel, 2, device)
    assert size.trials["det"].confirmed is deterministic_only
    assert device.built == ([] if deterministic_only else ["racy"])


def test_a_configuration_beaten_across_sizes_is_pruned_before_anything_runs_here() -> None:
    kernel = fast(batch=8)
    run_size(kernel, 8, ScriptedDevice({}, {"a": Row(0, 4.0, 4.0), "b": Row(0, 16.0, 16.0)}))
    # At 4 nothing has run, but a's part of 8 does 4 samples in 2.0: b (bound 0.9 x 16 x 4/8
    # = 7.2) cannot win; a itself (bound 1.8) could.
    device = ScriptedDevice({}, {"a": Row(0, 2.5, 2.5), "b": Row(0, 7.0, 7.0)})
    size = run_size(kernel, 4, device)
    assert device.built == ["a"] and size.pruned == ["b"]


def test_the_exhaustive_search_has_no_rivals_across_sizes() -> None:
    kernel = search.KernelSearch(search.Rules.named("exhaustive"), "forward", 8)
    run_size(kernel, 8, ScriptedDevice({}, {"a": Row(0, 4.0, 4.0)}))
    assert kernel.above_sizes(4) == []
    assert kernel.rival_across_sizes(0, 4) == float("inf")


def test_a_confirmed_time_that_moves_the_front_confirms_the_new_front() -> None:
    """b looked fastest in its screen, but its full timing is slower than a's screen: a joins
    the front and is confirmed too."""
    device = ScriptedDevice({}, {"b": Row(0, 1.0, 2.0), "a": Row(0, 1.5, 1.5)})
    size = run_size(fast(), 4, device)
    assert size.trials["a"].confirmed and size.trials["b"].confirmed
    assert size.trials["a"].time_ms == 1.5 and size.trials["b"].time_ms == 2.0


def test_a_split_of_backward_filter_asks_for_beta_1_plans_only_where_it_must() -> None:
    kernel = fast("backward_filter", batch=4)
    device = ScriptedDevice(
        {},
        {
            "no_beta1": Row(0, 1.0, 1.0, beta1=False),
            "good": Row(0, 1.2, 1.2),
            "slow": Row(0, 5.0, 5.0),
        },
    )
    size = run_size(kernel, 2, device)
    # no_beta1 is fastest but cannot add to dW: good becomes the front; slow is never asked.
    assert "slow" not in device.beta1_asked
    assert size.trials["good"].confirmed and not size.trials["no_beta1"].confirmed
    assert size.trials["no_beta1"].split_ok is False


def test_the_undivided_size_of_backward_filter_needs_no_beta_1_plan() -> None:
    device = ScriptedDevice({}, {"no_beta1": Row(0, 1.0, 1.0, beta1=False)})
    size = run_size(fast("backward_filter", batch=4), 4, device)
    assert device.beta1_asked == [] and size.trials["no_beta1"].confirmed


def test_the_exhaustive_search_times_everything_in_full_and_asks_every_beta_1_plan() -> None:
    kernel = search.KernelSearch(search.Rules.named("exhaustive"), "backward_filter", 4)
    engines = {"a": Row(0, 1.0, 1.0), "b": Row(0, 9.0, 9.0, beta1=False)}
    device = ScriptedDevice({"L": Row(0, 20.0, 20.0)}, engines)
    size = run_size(kernel, 4, device)
    assert all(t.confirmed for t in size.trials.values())
    assert sorted(device.beta1_asked) == ["a", "b"]
    assert all(full for _, full in device.timed)
    run_size(kernel, 2, device2 := ScriptedDevice({}, {"b": Row(0, 50.0, 50.0)}))
    assert device2.built == ["b"]  # nothing is pruned


def test_a_wave_is_chosen_before_it_is_timed_and_pruned_again_before_timing() -> None:
    kernel = fast()
    run_size(kernel, 4, ScriptedDevice({}, {"a": Row(0, 4.0, 4.0), "b": Row(0, 4.2, 4.2)}))
    device = ScriptedDevice({}, {"a": Row(0, 1.5, 1.5), "b": Row(0, 5.0, 5.0)}, wave=2)
    size = run_size(kernel, 2, device)
    # Both could beat a's part of 4 (2.0 for 2 samples): built in one wave. b (bound 0.9 x 4.2
    # x 2/4 = 1.89) was not timed once a ran in 1.5.
    assert device.built == ["a", "b"] and size.pruned == ["b"]
    assert [name for name, _ in device.timed if name == "b"] == []


def test_unknown_searches_are_refused() -> None:
    with pytest.raises(ValueError, match="search must be one of fast, exhaustive"):
        search.Rules.named("quick")
