"""The first-use search: which candidates of one kernel to build, time briefly, time in full
or leave out, size by size (issue 36; the brief is shared/reference/first-use.md).

Pure Python: `ucudnn.runtime.benchmark` drives it on the device, and
benchmarks/first_use_replay.py over recorded tables, through the same `search_size`.

Sizes go from the largest down. At each size:

1. **Screen.** Legacy algorithms take cuDNN Find's own trial (one launch each). An engine
   configuration is built and timed once after one warm-up. A configuration screened at a
   larger size is *pruned* (neither built nor timed) unless its best per-sample time so far,
   times PRUNE_FACTOR, beats its *rival*: the least time of a part of this size in at most its
   workspace (read before building), by a candidate measured here or by larger sizes'
   confirmed parts, per sample. Per-sample time rarely improves as a micro-batch shrinks
   (t(2b) <= 2 t(b) for 98 % of the recorded pairs), so such a configuration cannot win here;
   and where a larger size's part does the same samples faster in no more workspace, a plan
   takes that part instead. Configurations known from larger sizes go first, most
   promising first, so that the strongest comparisons exist early.
2. **Second look.** A screen is one noisy run. Candidates that their rival does not beat by
   more than their family's margin (LEGACY_SCREEN_MARGIN for Find's trial,
   ENGINE_SCREEN_MARGIN for an engine's run) get one more brief run, so that a fast candidate
   whose single run was unlucky still reaches the frontier. It needs no warm-up: the screen
   already paid the plan's first launch. The others are *screened out*: their brief time
   stands.
3. **Confirm the frontier.** Every candidate within NEAR_FRONTIER of its rival (the size's
   (workspace, time) Pareto points are their own rivals) is timed in full. Confirmed times
   replace screens, which can move the frontier, so this repeats until every candidate on or
   near it is confirmed. Only confirmed times are *plannable* (`SizeSearch.plannable`), so a
   prediction is never a screen's.

Because a size's rivals include the sizes above it, what the fast search keeps of a split
size depends on which sizes were done above it (`KernelSearch.above_sizes`): the cache keeps
such sets apart.

Backward filter adds each part of a split into dW with beta = 1, which needs a plan of its
own (`split_ok`, resolved lazily, only for candidates the search compares with or confirms);
the beta-1 plan is what a split runs, so it is what confirmation times. At the undivided size
no beta-1 plan is needed.

The exhaustive search is the same walk with nothing pruned or screened: every candidate is
timed in full, and for backward filter every beta-1 plan is built at every size.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Generic, TypeVar

from ucudnn.planner.choices import EXHAUSTIVE, FAST, SEARCHES

# Between two brief timings of one candidate the recorded noise has a median of 1.02 and a
# 95th percentile of 1.25 (shared/reference/first-use.md): a legacy algorithm beaten by more
# than that by something needing at most its workspace cannot be the best. An engine's screen
# is a single run after a warm-up; the issue leaves it at 2x.
LEGACY_SCREEN_MARGIN = 1.25
ENGINE_SCREEN_MARGIN = 2.0
PRUNE_FACTOR = 0.9
NEAR_FRONTIER = 1.05

LEGACY, ENGINE = "legacy", "engine"

ConfigId = Hashable  # whatever names one candidate across sizes (algorithm or configuration)
B = TypeVar("B")  # what a build hands to the timing (a plan or why not; nothing in a replay)


@dataclasses.dataclass(frozen=True)
class Offer:
    """An engine configuration offered at a size, before it is built."""

    config: ConfigId
    workspace_bytes: int | None  # known before building (cuDNN >= 9.2), else None
    deterministic: bool  # known before building (the heuristics' notes)


@dataclasses.dataclass
class Trial:
    """One candidate at one size as the search knows it: its time is the median of `times`,
    the brief runs, or, once confirmed, the full ones (set them with `timed`)."""

    config: ConfigId
    family: str  # LEGACY or ENGINE
    workspace_bytes: int
    times: list[float]
    deterministic: bool
    confirmed: bool = False
    split_ok: bool | None = None  # backward filter: can it add to dW (beta 1)? None: unasked
    time_ms: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.timed(self.times)

    def timed(self, times: Sequence[float]) -> None:
        # The median is read far more often than the runs change: it is kept, not recomputed.
        self.times = list(times)
        self.time_ms = statistics.median(self.times)


@dataclasses.dataclass
class Counts:
    """What the search did, for logs and the replay."""

    screened: int = 0  # candidates timed briefly
    pruned: int = 0  # configurations neither built nor timed
    screened_out: int = 0  # not confirmed: only their brief time is known; no plan takes them
    confirmed: int = 0  # timed in full

    def add(self, other: Counts) -> None:
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


@dataclasses.dataclass(frozen=True)
class Rules:
    """How a search decides: the fast one screens, prunes and confirms; the exhaustive one
    times everything in full."""

    name: str
    prune: bool
    screen: bool  # False: every candidate is timed in full at once

    @classmethod
    def named(cls, name: str) -> Rules:
        if name == FAST:
            return cls(FAST, prune=True, screen=True)
        if name == EXHAUSTIVE:
            return cls(EXHAUSTIVE, prune=False, screen=False)
        raise ValueError(f"search must be one of {', '.join(SEARCHES)}, got {name!r}")


class KernelSearch:
    """One kernel's search across its sizes, largest first: what each configuration's best
    per-sample time has been so far, and the plannable parts of the sizes done.

    `deterministic_only`: the plans it serves take deterministic candidates only (a
    deterministic Handle's), so nothing else is a rival, confirmed or, in the fast search,
    built. `accumulates`: its runs add into their output even undivided, as the slabs of a
    backward filter add into dW (`ucudnn.core.slabs`), so every size is timed as a split's."""

    def __init__(
        self,
        rules: Rules,
        kernel: str,
        batch: int,
        deterministic_only: bool = False,
        *,
        accumulates: bool = False,
    ) -> None:
        self.rules = rules
        self.kernel = kernel
        self.batch = batch
        self.deterministic_only = deterministic_only
        self.accumulates = accumulates
        self.measured: dict[ConfigId, dict[int, float]] = {}  # time by size, per configuration
        # (workspace, per-sample time) of the plannable parts, by size done (fast search)
        self.plannable_parts: dict[int, list[tuple[int, float]]] = {}
        self.counts = Counts()

    def lower_bound(self, config: ConfigId, micro_batch: int) -> float | None:
        """The least time `config` can be expected to take at `micro_batch`, from its times at
        the sizes measured already; None for a configuration not measured yet."""
        times = self.measured.get(config)
        if not times:
            return None
        # Per-sample time rarely improves as the micro-batch shrinks: the best per-sample time
        # at the larger sizes, less a margin.
        return min(
            (
                PRUNE_FACTOR * time_ms * micro_batch / size
                for size, time_ms in times.items()
                if size > micro_batch
            ),
            default=None,
        )

    def eligible(self, deterministic: bool) -> bool:
        """Whether a plan it serves may take a candidate that is `deterministic` or not."""
        return deterministic or not self.deterministic_only

    def above_sizes(self, micro_batch: int) -> list[int]:
        """The sizes done above `micro_batch` that the fast search's choices there depend on
        (none in the exhaustive search)."""
        if not self.rules.prune:
            return []
        return sorted((size for size in self.plannable_parts if size > micro_batch), reverse=True)

    def rival_across_sizes(self, workspace_bytes: int, micro_batch: int) -> float:
        """The least time in which the larger sizes done, with a plannable part needing at
        most `workspace_bytes`, do `micro_batch` samples; inf if none."""
        per_sample = min(
            (
                t
                for size, parts in self.plannable_parts.items()
                if size > micro_batch
                for w, t in parts
                if w <= workspace_bytes
            ),
            default=math.inf,
        )
        return per_sample * micro_batch

    def at_size(self, micro_batch: int) -> SizeSearch:
        return SizeSearch(self, micro_batch)

    def splits(self, micro_batch: int) -> bool:
        """Whether a run of `micro_batch` is a part of a split: one of several that add into
        a backward filter's dW."""
        return micro_batch < self.batch or self.accumulates

    def remember(self, micro_batch: int, done: Iterable[Remembered]) -> None:
        """A size's candidates, measured now or served by the cache, for the sizes below."""
        done = list(done)
        for item in done:
            self.measured.setdefault(item.config, {})[micro_batch] = item.time_ms
        if self.rules.prune:
            self.plannable_parts[micro_batch] = [
                (item.workspace_bytes, item.time_ms / micro_batch)
                for item in done
                if item.plannable
            ]


@dataclasses.dataclass(frozen=True)
class Remembered:
    """What the sizes below need to know of one candidate of a size done."""

    config: ConfigId
    time_ms: float
    workspace_bytes: int
    plannable: bool  # a plan may choose it (`SizeSearch.plannable`)


class SizeSearch:
    """The candidates of one kernel at one micro-batch size."""

    def __init__(self, kernel_search: KernelSearch, micro_batch: int) -> None:
        self.kernel_search = kernel_search
        self.rules = kernel_search.rules
        self.micro_batch = micro_batch
        # A part of a split backward filter adds to dW: it runs the beta-1 plan. The exhaustive
        # search checks it at every size, so that its measurements serve any mini-batch.
        backward_filter = kernel_search.kernel == "backward_filter"
        self.split = backward_filter and kernel_search.splits(micro_batch)
        self.check_split_everywhere = backward_filter and not self.rules.screen
        self.trials: dict[ConfigId, Trial] = {}
        self.pruned: list[ConfigId] = []
        self.counts = Counts()

    # -- screening --------------------------------------------------------------------------
    def add(self, trial: Trial) -> None:
        self.trials[trial.config] = trial
        if trial.confirmed:
            self.counts.confirmed += 1
        else:
            self.counts.screened += 1

    def engine_order(self, offers: Iterable[Offer]) -> list[Offer]:
        """Configurations known from larger sizes first, the least expected time first, then
        the new ones in the heuristics' order."""
        offers = list(offers)
        bounds = {o: self.kernel_search.lower_bound(o.config, self.micro_batch) for o in offers}
        known = {o: bound for o, bound in bounds.items() if bound is not None}
        return sorted(known, key=known.__getitem__) + [o for o in offers if o not in known]

    def worth_screening(self, offer: Offer, usable: Callable[[Trial], bool]) -> bool:
        """Whether `offer` could beat its rival (see the module's notes); new configurations
        always are."""
        if not self.rules.prune:
            return True
        if not self.kernel_search.eligible(offer.deterministic):
            return False
        if offer.workspace_bytes is None:
            return True
        bound = self.kernel_search.lower_bound(offer.config, self.micro_batch)
        return bound is None or bound < self.rival_time(offer.workspace_bytes, usable)

    def prune(self, offer: Offer) -> None:
        self.pruned.append(offer.config)
        self.counts.pruned += 1

    def rival_time(self, workspace_bytes: int, usable: Callable[[Trial], bool]) -> float:
        """The least time of a part of this size in at most `workspace_bytes`: by an eligible,
        usable candidate measured here, or by the larger sizes' plannable parts; inf if none."""
        across = self.kernel_search.rival_across_sizes(workspace_bytes, self.micro_batch)
        eligible = self.kernel_search.eligible
        for trial in sorted(self.trials.values(), key=lambda t: t.time_ms):
            if trial.time_ms >= across:
                break  # whether the slower ones can split does not matter: not asked
            if (
                trial.workspace_bytes <= workspace_bytes
                and eligible(trial.deterministic)
                and usable(trial)
            ):
                return trial.time_ms
        return across

    # -- confirming -------------------------------------------------------------------------
    def usable(self, trial: Trial, split_ok: Callable[[Trial], bool]) -> bool:
        """Whether `trial` can run every part of this size: at a split of backward filter,
        only if its beta-1 plan builds (asked once, when first needed)."""
        if trial.family == LEGACY or not (self.split or self.check_split_everywhere):
            return True  # a legacy call takes beta when it runs
        if trial.split_ok is None:
            trial.split_ok = split_ok(trial)
        return trial.split_ok or not self.split

    def second_look(self, usable: Callable[[Trial], bool]) -> list[Trial]:
        """Briefly timed candidates that their rival does not beat by more than their margin,
        with a single run so far."""
        # A second look costs two launches, less than building a beta-1 plan to know first
        # whether a split could use it.
        return [
            t
            for t in self.trials.values()
            if not t.confirmed
            and len(t.times) == 1
            and self.kernel_search.eligible(t.deterministic)
            and not self._beaten(t, usable)
        ]

    def _beaten(self, trial: Trial, usable: Callable[[Trial], bool]) -> bool:
        margin = LEGACY_SCREEN_MARGIN if trial.family == LEGACY else ENGINE_SCREEN_MARGIN
        return self.rival_time(trial.workspace_bytes, usable) * margin < trial.time_ms

    def to_confirm(self, usable: Callable[[Trial], bool]) -> list[Trial]:
        """Eligible, usable candidates within NEAR_FRONTIER of their rival (the front's
        points are their own rivals) that are not confirmed yet; every candidate, in the
        exhaustive search."""
        unconfirmed = [t for t in self.trials.values() if not t.confirmed]
        if not self.rules.screen:
            return [t for t in unconfirmed if usable(t)]
        unconfirmed = [t for t in unconfirmed if self.kernel_search.eligible(t.deterministic)]
        return [  # usable() last: it may build a beta-1 plan
            t
            for t in unconfirmed
            if t.time_ms <= NEAR_FRONTIER * self.rival_time(t.workspace_bytes, usable) and usable(t)
        ]

    def plannable(self, trial: Trial, usable: Callable[[Trial], bool]) -> bool:
        """Whether a plan may choose `trial`: its time is confirmed, it is eligible, and it
        can run every part of this size. A screen's time never reaches a plan."""
        eligible = self.kernel_search.eligible(trial.deterministic)
        return trial.confirmed and eligible and usable(trial)

    def confirm(self, trial: Trial, times: Sequence[float]) -> None:
        trial.timed(times)
        trial.confirmed = True
        self.counts.confirmed += 1

    def finish(self, usable: Callable[[Trial], bool]) -> None:
        """Close the size: count who was screened out, and remember each candidate for the
        sizes below. The exhaustive search knows of every candidate whether its beta-1 plan
        builds."""
        if self.check_split_everywhere:
            for trial in self.trials.values():
                usable(trial)
        self.counts.screened_out = sum(not t.confirmed for t in self.trials.values())
        done = [
            Remembered(t.config, t.time_ms, t.workspace_bytes, self.plannable(t, usable))
            for t in self.trials.values()
        ]
        self.kernel_search.remember(self.micro_batch, done)
        self.kernel_search.counts.add(self.counts)


@dataclasses.dataclass(frozen=True)
class Device(Generic[B]):
    """What `search_size` asks of whoever measures: the device, or a replay of a table.

    A callback that times returns None when the candidate failed (the caller records why);
    `warmup` and `runs` say how many launches to make."""

    legacy_screen: Callable[[], list[Trial]]  # Find's trial of every legacy algorithm
    # Builds a wave of configurations (on threads where it may), in order; each item is what
    # the timing needs, or the reason the build failed.
    build: Callable[[list[Offer]], list[B]]
    # (offer, its build, warmup, runs) -> the trial, with the workspace its plan needs
    time_engine: Callable[[Offer, B, int, int], Trial | None]
    # (trial, warmup, runs, full): a second look, or the full timing of what will run
    time_again: Callable[[Trial, int, int, bool], list[float] | None]
    split_ok: Callable[[Trial], bool]  # builds the beta-1 plan of a backward-filter candidate
    wave: int = 1  # configurations built together before any of them is timed


@dataclasses.dataclass(frozen=True)
class Timing:
    """Launches per timing: a full one, and a brief one (a screen or a second look)."""

    warmup: int
    repeats: int
    screen_warmup: int = 1
    screen_runs: int = 1


def search_size(
    size: SizeSearch, offers: Sequence[Offer], device: Device[B], timing: Timing
) -> None:
    """Measure one size of one kernel: screen, look again, confirm (see the module's notes)."""

    def usable(trial: Trial) -> bool:
        return size.usable(trial, device.split_ok)

    for trial in device.legacy_screen():
        size.add(trial)
    _screen_engines(size, offers, device, timing, usable)
    if size.rules.screen:
        for trial in size.second_look(usable):
            times = device.time_again(trial, 0, timing.screen_runs, False)
            if times:
                trial.timed(trial.times + times)
    while todo := size.to_confirm(usable):
        for trial in todo:
            times = device.time_again(trial, timing.warmup, timing.repeats, True)
            if times:
                size.confirm(trial, times)
            else:  # it failed when timed again: it leaves the size
                del size.trials[trial.config]
    size.finish(usable)


def _screen_engines(
    size: SizeSearch,
    offers: Sequence[Offer],
    device: Device[B],
    timing: Timing,
    usable: Callable[[Trial], bool],
) -> None:
    """Build and time the offered configurations worth it, in waves of `device.wave`: each
    wave is chosen with what the waves before it measured, built together, then timed one by
    one (builds and launches never overlap). The exhaustive search times each in full."""
    full = not size.rules.screen
    warmup, runs = (
        (timing.warmup, timing.repeats) if full else (timing.screen_warmup, timing.screen_runs)
    )
    order = iter(size.engine_order(offers))
    while True:
        wave: list[Offer] = []
        for offer in order:
            if size.worth_screening(offer, usable):
                wave.append(offer)
                if len(wave) == device.wave:
                    break
            else:
                size.prune(offer)
        if not wave:
            return
        for offer, build in zip(wave, device.build(wave), strict=True):
            if not size.worth_screening(offer, usable):  # what ran meanwhile settles it
                size.prune(offer)
                continue
            trial = device.time_engine(offer, build, warmup, runs)
            if trial is not None:
                trial.confirmed = full
                size.add(trial)


def size_order(sizes: Iterable[int]) -> list[int]:
    """The order sizes are measured in: largest first, so that pruning knows the sizes above."""
    return sorted(sizes, reverse=True)
