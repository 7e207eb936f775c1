"""Replay the first-use search over recorded timing tables: is the fast search as good as the
exhaustive one, and how much cheaper? No GPU needed.

    python benchmarks/first_use_replay.py TABLES [--limits 8MiB,64MiB] [--seeds 5]
        [--member NAME.csv] [--warmup 3] [--repeats 10] [--build-threads 8]

TABLES is a gpu_compare `-tables.zip` (one CSV in it, or the one --member names) or a timings
CSV, `.csv` or `.csv.gz`. Both searches (`ucudnn.planner.search`, the code the benchmark runs
on the device) walk every distinct kernel of the tables, sizes largest first:

- a recorded time stands for a confirmed one (a full timing);
- a screen's time (cuDNN Find's trial of a legacy algorithm, an engine's brief run) is the
  recorded time times a seeded log-normal noise whose 95th percentile is 1.25x, the noise
  recorded between two brief timings (shared/reference/first-use.md);
- a kernel whose rows repeat an earlier kernel's exactly (the cache would serve it) is measured
  once; a recorded backward-filter row at a split size stands for a configuration whose beta-1
  plan builds (the tables keep no other).

It counts builds (engine plan finalizations, beta-1 plans included), launches (every timed or
warm-up launch; a Find trial is one launch per algorithm) and modelled seconds (the brief's
cost model: GPU time + 2.2 ms per build + 10 ms per problem-size), and plans both searches'
tables: WR, WD with total = limit x kernels and WD with total = limit at each limit, and the
ceiling (the fastest single candidate with no limit). `*_ms` is the predicted total of each
search's optimal plan over its own measurements; `gap` is fast / exhaustive - 1. Only
confirmed times can be a plan's choice, so a fast plan's prediction is the recorded time of
what it chose. With several seeds, each figure is the worst seed's.

`confirmations_floor` is what the fast search's confirmations alone cost when every time is
known in advance (no noise, nothing screened or built but what is confirmed, and its beta-1
plan at a split of backward filter), with 10 ms per problem-size: no search that confirms the
front and its near ties, as this one must, can cost less.

It prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import random
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

from ucudnn.planner.config import parse_size
from ucudnn.planner.plan import Plan, make_plan_wd, make_plan_wr
from ucudnn.planner.search import (
    ENGINE,
    EXHAUSTIVE,
    FAST,
    LEGACY,
    Device,
    KernelSearch,
    Offer,
    Rules,
    SizeSearch,
    Timing,
    Trial,
    search_size,
    size_order,
)
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

# The brief's cost model (shared/reference/first-use.md, §3); it reproduces the recorded
# 180 s first use of ResNet-50 on the H200.
BUILD_S = 2.2e-3
PROBLEM_SIZE_S = 10e-3
# Brief timings vary by a log-normal factor whose 95th percentile is 1.25.
SCREEN_SIGMA = math.log(1.25) / 1.6448536269514722
DEFAULT_LIMITS = "8MiB,64MiB"
DEFAULT_BUILD_THREADS = 8  # as the benchmark's default (ucudnn.runtime.benchmark)

Config = tuple[str, int, str]  # (engine tag or "", algo, math type)


def _config(candidate: Candidate) -> Config:
    return (candidate.engine, candidate.algo, candidate.math_type)


@dataclasses.dataclass
class Cost:
    builds: int = 0
    launches: int = 0
    gpu_ms: float = 0.0
    problem_sizes: int = 0

    @property
    def modelled_seconds(self) -> float:
        return self.gpu_ms / 1000 + BUILD_S * self.builds + PROBLEM_SIZE_S * self.problem_sizes

    def launch(self, count: int, time_ms: float) -> None:
        self.launches += count
        self.gpu_ms += count * time_ms


class ReplayDevice:
    """`ucudnn.planner.search`'s device over one size of a recorded table. With
    `confirmations_only`, only full timings cost anything, and the builds of what they time."""

    def __init__(
        self,
        rows: Sequence[Candidate],
        cost: Cost,
        noise: Callable[[], float],
        wave: int,
        confirmations_only: bool = False,
        split: bool = False,  # a split of backward filter: confirmed engines need beta-1 plans
    ) -> None:
        self.recorded = {_config(c): c for c in rows}
        # With confirmations_only, what screens and builds spend is counted nowhere.
        self.cost = Cost() if confirmations_only else cost
        self.floor = cost if confirmations_only else None
        self.split = split
        self.noise = noise
        self.wave = wave

    def device(self) -> Device[None]:
        return Device(
            legacy_screen=self.legacy_screen,
            build=self.build,
            time_engine=self.time_engine,
            time_again=self.time_again,
            split_ok=self.split_ok,
            wave=self.wave,
        )

    def offers(self) -> list[Offer]:
        return [
            Offer(k, c.workspace_bytes, c.deterministic)
            for k, c in self.recorded.items()
            if c.engine
        ]

    def legacy_screen(self) -> list[Trial]:
        trials = []
        for config, row in self.recorded.items():
            if not row.engine:
                self.cost.launch(1, row.time_ms)  # Find's one trial
                times = [self._brief(row)]
                trials.append(Trial(config, LEGACY, row.workspace_bytes, times, row.deterministic))
        return trials

    def build(self, offers: list[Offer]) -> list[None]:
        self.cost.builds += len(offers)
        return [None] * len(offers)

    def time_engine(self, offer: Offer, build: None, warmup: int, runs: int) -> Trial:
        row = self.recorded[offer.config]
        times = self._times(row, warmup, runs)
        return Trial(offer.config, ENGINE, row.workspace_bytes, times, row.deterministic)

    def time_again(self, trial: Trial, warmup: int, runs: int, full: bool) -> list[float]:
        row = self.recorded[trial.config]
        times = self._times(row, warmup, runs)
        if full and self.floor is not None:
            self.floor.launch(warmup + runs, row.time_ms)
            if row.engine:
                self.floor.builds += 1 + self.split  # its plan, and its beta-1 plan at a split
        return [row.time_ms] if full else times

    def split_ok(self, trial: Trial) -> bool:
        self.cost.builds += 1  # the beta-1 plan
        return True

    def _times(self, row: Candidate, warmup: int, runs: int) -> list[float]:
        self.cost.launch(warmup + runs, row.time_ms)
        return [self._brief(row) for _ in range(runs)]

    def _brief(self, row: Candidate) -> float:
        return row.time_ms * self.noise()


def replay(
    tables: TimingTables,
    search: str,
    timing: Timing,
    wave: int,
    seed: int | None,
    confirmations_only: bool = False,
) -> tuple[TimingTables, Cost]:
    """What `search` measures of `tables`, as tables of its own times, and what it cost;
    with `seed` None, brief timings have no noise."""
    rules = Rules.named(search)
    rng = random.Random(seed)
    noise: Callable[[], float] = (
        (lambda: math.exp(rng.gauss(0.0, SCREEN_SIGMA)))
        if rules.screen and seed is not None
        else (lambda: 1.0)
    )
    cost = Cost()
    measured: dict[object, list[Candidate]] = {}  # by table content: the cache serves repeats
    result = TimingTables()
    for (layer, kernel), table in tables.items():
        key = table.content_key()
        if key not in measured:
            measured[key] = _search_table(
                table, rules, timing, wave, noise, cost, confirmations_only
            )
        out = KernelTable(layer=layer, kernel=kernel, batch=table.batch)
        for candidate in measured[key]:
            out.add(candidate)
        result.add(out)
    return result, cost


def _search_table(
    table: KernelTable,
    rules: Rules,
    timing: Timing,
    wave: int,
    noise: Callable[[], float],
    cost: Cost,
    confirmations_only: bool,
) -> list[Candidate]:
    kernel_search = KernelSearch(rules, table.kernel, table.batch)
    found = []
    for micro_batch in size_order(table.micro_batches()):
        rows = [c for c in table if c.micro_batch == micro_batch]
        size = kernel_search.at_size(micro_batch)
        device = ReplayDevice(rows, cost, noise, wave, confirmations_only, size.split)
        search_size(size, device.offers(), device.device(), timing)
        cost.problem_sizes += 1
        found += _candidates(size, device.recorded)
    return found


def _candidates(size: SizeSearch, recorded: dict[Config, Candidate]) -> list[Candidate]:
    """The plannable candidates of a size: the confirmed ones (every beta-1 plan builds here)."""
    return [
        dataclasses.replace(recorded[trial.config], time_ms=trial.time_ms)  # type: ignore[index]
        for trial in size.trials.values()
        if trial.confirmed
    ]


def _plans(
    tables: TimingTables, limits: Sequence[int], ceiling_bytes: int
) -> list[tuple[str, int | None, float]]:
    def wd(budget: int) -> Plan:
        return make_plan_wd(tables, budget)

    plans: list[tuple[str, int | None, float]] = []
    for limit in limits:
        plans.append(("wr", limit, make_plan_wr(tables, limit).time_ms))
        plans.append(("wd_kernels", limit, wd(limit * len(tables)).time_ms))
        plans.append(("wd_limit", limit, wd(limit).time_ms))
    ceiling = make_plan_wr(tables, ceiling_bytes, policy="undivided")
    plans.append(("ceiling", None, ceiling.time_ms))
    return plans


def read_tables(path: Path, member: str | None) -> TimingTables:
    """The tables of a timings CSV (.csv or .csv.gz) or of one CSV in a gpu_compare zip."""
    if path.suffix != ".zip":
        return TimingTables.read_csv(path)
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.endswith(".csv")]
        if member is not None:
            if member not in names:
                raise SystemExit(f"first_use_replay: error: {path} holds no {member}")
            names = [member]
        if len(names) != 1:
            listed = ", ".join(names) or "none"
            raise SystemExit(
                f"first_use_replay: error: {path} holds {len(names)} CSV files ({listed}); "
                "name one with --member"
            )
        # The member as it is stored: the one reader of timings decodes and bounds it.
        with archive.open(names[0]) as csv:
            return TimingTables.read_csv(csv)


def run(
    tables: TimingTables,
    limits: Sequence[int],
    seeds: int,
    timing: Timing,
    wave: int,
) -> dict[str, object]:
    ceiling_bytes = max(c.workspace_bytes for _, t in tables.items() for c in t)
    exhaustive_tables, exhaustive = replay(tables, EXHAUSTIVE, timing, wave, 0)
    reference = _plans(exhaustive_tables, limits, ceiling_bytes)
    worst_cost: Cost | None = None
    worst_ms = [-math.inf] * len(reference)
    for seed in range(seeds):
        fast_tables, cost = replay(tables, FAST, timing, wave, seed)
        if worst_cost is None or cost.modelled_seconds > worst_cost.modelled_seconds:
            worst_cost = cost
        for n, (_, _, ms) in enumerate(_plans(fast_tables, limits, ceiling_bytes)):
            worst_ms[n] = max(worst_ms[n], ms)
    assert worst_cost is not None
    _, floor = replay(tables, FAST, timing, wave, None, confirmations_only=True)
    return {
        "builds": {"exhaustive": exhaustive.builds, "fast": worst_cost.builds},
        "launches": {"exhaustive": exhaustive.launches, "fast": worst_cost.launches},
        "modelled_seconds": {
            "exhaustive": round(exhaustive.modelled_seconds, 2),
            "fast": round(worst_cost.modelled_seconds, 2),
        },
        "confirmations_floor": {
            "builds": floor.builds,
            "launches": floor.launches,
            "modelled_seconds": round(floor.modelled_seconds, 2),
        },
        "plans": [
            {
                "plan": plan,
                "limit_bytes": limit,
                "exhaustive_ms": round(exhaustive_ms, 4),
                "fast_ms": round(fast_ms, 4),
                "gap": round(fast_ms / exhaustive_ms - 1, 6),
            }
            for (plan, limit, exhaustive_ms), fast_ms in zip(reference, worst_ms, strict=True)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", type=Path, help="a gpu_compare -tables.zip, or a .csv/.csv.gz")
    parser.add_argument("--member", help="the CSV in the zip to replay, if it holds several")
    parser.add_argument("--limits", default=DEFAULT_LIMITS, help="per-kernel limits (%(default)s)")
    parser.add_argument("--seeds", type=int, default=5, help="noise seeds; the worst is kept")
    parser.add_argument("--warmup", type=int, default=3, help="as gpu_compare (%(default)s)")
    parser.add_argument("--repeats", type=int, default=10, help="as gpu_compare (%(default)s)")
    parser.add_argument(
        "--build-threads", type=int, default=DEFAULT_BUILD_THREADS,
        help="configurations built together, one per thread, before they are timed "
        "(%(default)s)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.warmup < 0 or args.repeats < 1 or args.build_threads < 1:
        parser.error("need --seeds >= 1, --warmup >= 0, --repeats >= 1, --build-threads >= 1")
    limits = [parse_size(text.strip(), "--limits") for text in args.limits.split(",")]
    tables = read_tables(args.tables, args.member)
    result = run(tables, limits, args.seeds, Timing(args.warmup, args.repeats), args.build_threads)
    print(json.dumps({"tables": args.tables.name, "seeds": args.seeds, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
