"""Timing tables measured on a GPU that ship with ucudnn, for planning a built-in network
without one.

`data/measured/` holds, per GPU run, NAME.json (the device, driver, CUDA and cuDNN versions,
the date and commit, and per table its network, dtype, layout, the math type its problems were
measured with and every layer's problem) and one gzipped timings CSV per table, as
`benchmarks/build_measured_tables.py` writes them from a run's results. A table is used only
for the network it was measured for and only where it covers it exactly: the same layers with
the same problems and math type, and timings for every kernel at the layer's batch. Anything
else gets None, and a log record says why.
"""

from __future__ import annotations

import dataclasses
import logging
from importlib import resources
from importlib.resources.abc import Traversable

from ucudnn.planner.documents import read_document
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.tables import TimingTables

logger = logging.getLogger(__name__)

FORMAT, VERSION = "ucudnn-measured-tables", 1


@dataclasses.dataclass(frozen=True)
class MeasuredTable:
    """One shipped table: what it measured, where, and its file."""

    network: str
    dtype: str
    layout: str
    math_type: str
    problems: dict[str, str]  # layer -> ConvProblem.describe() of the measured problem
    label: str  # where the timings come from, in words, as plans name it
    file: Traversable

    def mismatch(self, graph: LayerGraph) -> str | None:
        """Why the table's problems are not `graph`'s, or None when they are."""
        if graph.layers() != list(self.problems):
            return f"its layers are {_few(self.problems)}, the network's {_few(graph.layers())}"
        for layer, measured in self.problems.items():
            problem = graph.problem(layer)
            if problem.describe() != measured:
                return f"{layer}: {_difference(problem.describe(), measured)}"
            if problem.math_type != self.math_type:
                return f"{layer} has math type {problem.math_type}, measured {self.math_type}"
        return None

    def read(self) -> TimingTables:
        # The one reader of timings: it decompresses within its bound, and errors name the file.
        with self.file.open("rb") as csv:
            return TimingTables.read_csv(csv)


@dataclasses.dataclass(frozen=True)
class ShippedTables:
    """Timings of a whole network from a shipped table, and their label."""

    tables: TimingTables
    label: str


def shipped_tables(network: str, graph: LayerGraph) -> ShippedTables | None:
    """The shipped timings of the built-in network `network` (as `graph`, its layers at the
    dtype, layout and batch asked for) when a table covers it exactly; else None, with why
    logged at INFO."""
    candidates = [table for table in measured_tables() if table.network == network]
    if not candidates:
        logger.info("ucudnn ships no measured timings of %s", network)
        return None
    reasons = []
    for table in candidates:
        reason = table.mismatch(graph)
        if reason is None:
            timings = table.read()
            reason = _uncovered(timings, graph)
            if reason is None:
                return ShippedTables(timings, table.label)
        reasons.append(f"the {table.dtype} {table.layout} table: {reason}")
    logger.info(
        "the measured timings shipped for %s do not cover it: %s", network, "; ".join(reasons)
    )
    return None


def measured_tables() -> list[MeasuredTable]:
    """Every shipped table, run by run in name order."""
    folder = resources.files(__package__) / "data" / "measured"
    found = []
    for index in sorted(folder.iterdir(), key=lambda item: item.name):
        if index.name.endswith(".json"):
            run = read_document(index.read_bytes(), FORMAT, VERSION, index.name)
            entries = run["tables"]
            assert isinstance(entries, list)  # package data, checked by its tests
            found += [_table(run, entry, folder) for entry in entries]
    return found


def _table(run: dict[str, object], entry: dict[str, object], folder: Traversable) -> MeasuredTable:
    label = (
        f"measurements on {run['device']}, cuDNN {run['cudnn']}, CUDA {run['cuda']}, "
        f"driver {run['driver']} ({run['date']}), shipped with ucudnn"
    )
    fields = {name: entry[name] for name in ("network", "dtype", "layout", "math_type", "problems")}
    return MeasuredTable(**fields, label=label, file=folder / str(entry["file"]))  # type: ignore[arg-type]


def _uncovered(timings: TimingTables, graph: LayerGraph) -> str | None:
    """Which kernel of `graph` the timings lack or have at another batch, or which kernel
    they hold that `graph` lacks; None when they cover it exactly."""
    wanted = graph.kernel_ids()
    for layer, kernel in wanted:
        if (layer, kernel) not in timings:
            return f"no timings for {layer}/{kernel}"
        table = timings[layer, kernel]
        if table.batch != table.axis.extent(graph.problem(layer)):
            return f"{layer}/{kernel} was measured at batch {table.batch}"
    extra = set(timings) - set(wanted)
    if extra:
        return f"timings for kernels the network lacks, such as {'/'.join(min(extra))}"
    return None


def _difference(ours: str, measured: str) -> str:
    """What differs between two problem descriptions: "N=128, measured N=256"."""
    here, there = ours.split(), measured.split()
    if len(here) != len(there):
        return f"{ours}, measured {measured}"
    pairs = [(a, b) for a, b in zip(here, there, strict=True) if a != b]
    return f"{' '.join(a for a, _ in pairs)}, measured {' '.join(b for _, b in pairs)}"


def _few(names: list[str] | dict[str, str]) -> str:
    names = list(names)
    return ", ".join(names[:3]) + (f", … ({len(names)})" if len(names) > 3 else "")
