"""The device side of the first-use search (`ucudnn.planner.search`) for one kernel of one
problem at one micro-batch size: each family of candidates measured by its own part
(`legacy_at_size`, `engines_at_size`), what they measured coming back as the cache's
Measurements.

Everything runs where a part of this size is least aligned (`Axis.benchmark_first`).
A split of backward filter adds each later part to dW with beta = 1, so at a split size a
confirmed time is that of the call with beta 1: the time of what will run.
"""

from __future__ import annotations

from ucudnn.core.problem import ConvProblem
from ucudnn.planner.cache import Measurement
from ucudnn.planner.search import ENGINE, LEGACY, Device, Offer, SizeSearch, Trial
from ucudnn.planner.tables import Candidate
from ucudnn.runtime.engines_at_size import Built, EngineId, EnginesAtSize
from ucudnn.runtime.legacy_at_size import LegacyAtSize, LegacyId
from ucudnn.runtime.size_bench import Bench


def config_id(measurement: Measurement) -> LegacyId | EngineId:
    """What names a measurement's candidate across sizes."""
    if measurement.engine:
        return (ENGINE, measurement.engine)
    return (LEGACY, measurement.algo, measurement.math_type)


class SizeOnDevice:
    """One size of one kernel, measured for `ucudnn.planner.search.search_size`."""

    def __init__(
        self,
        bench: Bench,
        problem: ConvProblem,
        micro_batch: int,
        kernel: str,
        at: dict[str, int],
        split: bool,
        engines_on: bool,
    ) -> None:
        """`problem` is the part's own; `micro_batch` its size along the split axis."""
        self.bench = bench
        self.micro_batch = micro_batch
        self.split = split
        self.engines_on = engines_on
        self.failed: dict[object, Measurement] = {}  # by candidate: why it has no time
        self.legacy = LegacyAtSize(bench, problem, micro_batch, kernel, at, split, self.failed)
        self.engines = EnginesAtSize(bench, problem, micro_batch, kernel, at, split, self.failed)
        self._families: dict[str, LegacyAtSize | EnginesAtSize] = {
            LEGACY: self.legacy,
            ENGINE: self.engines,
        }

    def device(self) -> Device[Built]:
        return Device(
            legacy_screen=self.legacy.screen,
            build=self.engines.build,
            time_engine=self.engines.time_built,
            time_again=self.time_again,
            split_ok=self.engines.split_ok,
            wave=self.bench.wave,
        )

    def offers(self) -> list[Offer]:
        """The engine configurations to measure; none when engines are off."""
        return self.engines.offers() if self.engines_on else []

    def time_again(self, trial: Trial, warmup: int, runs: int, full: bool) -> list[float] | None:
        """A second look (the plan or call screened), or the full timing of what will run."""
        beta = 1.0 if full and self.split else 0.0
        return self._families[trial.family].time(trial, beta, warmup, runs)

    def measurements(self, size: SizeSearch) -> list[Measurement]:
        """Every candidate of the size: timed (screened or confirmed), pruned, or failed."""
        measured = [self._measurement(trial) for trial in size.trials.values()]
        self.engines.pruned(list(size.pruned))
        failed = [m for key, m in self.failed.items() if key not in size.trials]
        return measured + failed

    def _measurement(self, trial: Trial) -> Measurement:
        fields = self._families[trial.family].candidate_fields(trial)
        algo, engine, math_type, deterministic, notes = fields
        candidate = Candidate(
            micro_batch=self.micro_batch,
            algo=algo,
            time_ms=trial.time_ms,
            workspace_bytes=trial.workspace_bytes,
            math_type=math_type,
            deterministic=deterministic,
            engine=engine,
        )
        return Measurement.timed(candidate, trial.times, notes, confirmed=trial.confirmed)
