"""Turn graph-API engine probe records into timings CSVs with the engine column.

    python benchmarks/build_engine_tables.py OUT_DIR PREFIX PROBE.json.gz [PROBE.json.gz ...] \\
        [--table NETWORK-DTYPE-LAYOUT ...]

A probe file (the 2026-11-24 H100 run's `engine_probe.py`) holds one record per unique
convolution, kernel and micro-batch: `{net, layer, problem, kernel, batch, plans: [{name,
workspace, ms} or {error}]}`, where `batch` is the micro-batch and `layer` the first layer of
`net` with that problem at its full batch (a later layer, or a later network of the same run,
with the same problem was not measured again). This script gives every layer of each network
(`ucudnn.planner.networks.builtin_network`) the records of its problem, so that a plan over
the CSV sums over all the network's layers, not over its unique problems.

Rows are the plans that built and ran (a name and a time); plans that failed are left out. A
row's `algo` is the engine's index, `engine` the plan's name (its tag), `math_type` the one
ucudnn gives problems of that data type when TF32 is off (the probe measured float32 without
TF32; it did not record numerical notes), `deterministic` false (not recorded either). A kernel
whose undivided run has no plan (the probe stopped first, or every plan failed) is left out and
counted. Each table goes to OUT_DIR/PREFIX-<network>-<dtype>-<layout>.csv.gz, gzipped with no
timestamp so that the same records always give the same bytes; `--table` picks tables (by
default, every one the records cover).
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
from collections.abc import Iterable
from pathlib import Path

from ucudnn.core.engines import parse_tag
from ucudnn.core.problem import ConvProblem, default_math_type
from ucudnn.planner.graph import LayerGraph
from ucudnn.planner.networks import builtin_network
from ucudnn.planner.tables import Candidate, KernelTable, TimingTables

# (describe() of the problem at its full batch, kernel) -> micro-batch -> plans
Records = dict[tuple[str, str], dict[int, list[dict[str, object]]]]


def table_name(net: str, record: dict[str, object]) -> str:
    layout, dtype = str(record["problem"]).split()[-2:]
    return f"{net}-{dtype}-{layout}"


def network(name: str) -> LayerGraph:
    """The network a table name such as resnet50-float16-NCHW names, as the probe built it."""
    net, dtype, layout = name.split("-")
    return builtin_network(net, dtype=dtype, layout=layout)


def read_probes(paths: Iterable[Path]) -> tuple[Records, dict[str, str]]:
    """Every record by problem and kernel, and the tables the records' networks make, in the
    order first seen, with the device and cuDNN that measured them."""
    records: Records = collections.defaultdict(dict)
    machines: dict[str, str] = {}
    for path in paths:
        with gzip.open(path, "rt") as f:
            document = json.load(f)
        machine = f"{document['device']}, cuDNN {document['cudnn']}"
        for record in document["records"]:
            name = table_name(record["net"], record)
            if machines.setdefault(name, machine) != machine:
                raise SystemExit(f"{path}: {name} was also measured on {machines[name]}")
            problem = network(name).problem(record["layer"])
            if problem.with_batch(record["batch"]).describe() != record["problem"]:
                raise SystemExit(f"{path}: {record['net']}/{record['layer']} is not the problem "
                                 f"{record['problem']}")  # fmt: skip
            at = records[problem.describe(), record["kernel"]]
            if record["batch"] in at:
                raise SystemExit(f"{path}: {record['problem']} {record['kernel']} twice")
            at[record["batch"]] = record["plans"]
    return records, machines


def kernel_table(
    layer: str, kernel: str, problem: ConvProblem, plans_by_size: dict[int, list[dict[str, object]]]
) -> KernelTable:
    math_type = default_math_type(problem.dtype, allow_tf32=False)
    table = KernelTable(layer, kernel, problem.batch)
    for micro_batch, plans in sorted(plans_by_size.items(), reverse=True):
        for plan in plans:
            if "name" not in plan or "ms" not in plan:
                continue  # it failed to build or to run
            tag = str(plan["name"])
            table.add(
                Candidate(
                    micro_batch, parse_tag(tag).index, plan["ms"], plan["workspace"],  # type: ignore[arg-type]
                    math_type, False, tag,
                )
            )  # fmt: skip
    return table


def build(name: str, records: Records) -> tuple[TimingTables, list[str]]:
    """The tables of every layer of network `name`, and the kernels left out (no undivided
    run measured)."""
    graph = network(name)
    tables, missing = TimingTables(), []
    for layer in graph.layers():
        problem = graph.problem(layer)
        for kernel in graph.kernels(layer):
            plans = records.get((problem.describe(), kernel))
            table = kernel_table(layer, kernel, problem, plans or {})
            if table.candidates.get(problem.batch):
                tables.add(table)
            elif plans is not None or kernel != "backward_data" or problem.in_channels != 3:
                missing.append(f"{layer}/{kernel}")  # the probe skips dgrad of image inputs
    return tables, missing


def csv_text(tables: TimingTables, graph: LayerGraph) -> str:
    """The tables' CSV with the equal rows of layers that share a problem next to each other:
    gzip then finds the repeats, which makes the file several times smaller. Rows may come in
    any order (see ucudnn.planner.tables)."""
    first: dict[str, int] = {}  # problem -> the index of its first layer
    group, place = {}, {}
    for index, layer in enumerate(graph.layers()):
        group[layer] = first.setdefault(graph.problem(layer).describe(), index)
        place[layer] = index
    header, *lines = tables.to_csv().splitlines(keepends=True)
    order = []
    for position, row in enumerate(tables.to_rows()):
        layer = str(row["layer"])
        same_row = (row["kernel"], -int(row["micro_batch"]), row["algo"], row["engine"])  # type: ignore[call-overload]
        order.append((group[layer], same_row, place[layer], position))
    return header + "".join(lines[key[-1]] for key in sorted(order))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the directory to write the tables to")
    parser.add_argument("prefix", help="the start of each file's name")
    parser.add_argument("probes", type=Path, nargs="+", help="engine probe files (.json.gz)")
    parser.add_argument("--table", action="append", metavar="NETWORK-DTYPE-LAYOUT")
    args = parser.parse_args()
    records, machines = read_probes(args.probes)
    for name in args.table or list(machines):
        if name not in machines:
            raise SystemExit(f"no records of {name}; the probes have {', '.join(machines)}")
        tables, missing = build(name, records)
        path = args.out / f"{args.prefix}-{name}.csv.gz"
        text = csv_text(tables, network(name))
        path.write_bytes(gzip.compress(text.encode(), mtime=0))
        rows = sum(len(list(table)) for _, table in tables.items())
        print(f"{path.name}: {len(tables)} kernels, {rows} rows ({machines[name]})"
              + (f"; left out {len(missing)}: {' '.join(missing)}" if missing else ""))  # fmt: skip


if __name__ == "__main__":
    main()
