"""Build the measured timing tables that ship with the planner, from a GPU run's results.

    python benchmarks/build_measured_tables.py ucudnn/planner/data/measured h100-2026-11-24 \\
        --source benchmarks/results/2026-11-24-h100-compare-resnet50-alexnet.json \\
                 benchmarks/results/2026-11-24-h100-compare-resnet50-alexnet-tables.zip \\
        --source benchmarks/results/2026-11-24-h100-compare-deepbench.json \\
                 benchmarks/results/2026-11-24-h100-compare-deepbench-tables.zip \\
        --table resnet50-float32-NCHW=fma --table alexnet-float32-NCHW=fma \\
        --table deepbench-float32-NCHW=fma

Each `--source` is a `gpu_compare.py` results JSON and the zip of the timing tables measured
with it (`<network>-<dtype>-<layout>.csv`). Each `--table` picks one of those tables and names
the math type its problems were measured with (gpu_compare.py's DTYPES chose it). The 2026-11-24
float16 tables are left out: gpu_compare.py measured float16 with math type `default`, and
ucudnn's float16 problems use `tensor_op`, so those tables describe other problems.

Writes NAME.json (provenance, and per table its file, math type and every layer's problem as
`ConvProblem.describe()` gives it, from the results JSON) and NAME-<table>.csv.gz, the table's
CSV byte for byte. `ucudnn.planner.measured` reads them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import zipfile
from pathlib import Path

FORMAT, VERSION = "ucudnn-measured-tables", 1


def read_results(path: Path) -> dict[str, object]:
    results: dict[str, object] = json.loads(path.read_text())
    if results.get("format") != "ucudnn-gpu-compare" or not results.get("complete"):
        raise SystemExit(f"{path}: not a complete gpu_compare.py results file")
    return results


def provenance(results: dict[str, object]) -> dict[str, str]:
    env = results["environment"]
    assert isinstance(env, dict)
    return {
        "device": env["gpu"],
        "driver": env["driver"],
        "cuda": env["cuda_runtime"],
        "cudnn": env["cudnn"],
        "commit": env["commit"],
        "date": str(results["started"])[:10],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the package's data/measured directory")
    parser.add_argument("name", help="the run's name, such as h100-2026-11-24")
    parser.add_argument("--source", nargs=2, type=Path, action="append", required=True,
                        metavar=("RESULTS_JSON", "TABLES_ZIP"))  # fmt: skip
    parser.add_argument("--table", action="append", required=True,
                        metavar="NETWORK-DTYPE-LAYOUT=MATH_TYPE")  # fmt: skip
    args = parser.parse_args()
    wanted = dict(item.split("=") for item in args.table)
    facts: dict[str, str] | None = None
    tables = []
    for results_path, zip_path in args.source:
        results = read_results(results_path)
        if facts is None:
            facts = provenance(results)
        elif provenance(results) | {"date": facts["date"]} != facts:
            raise SystemExit(f"{results_path}: measured on another machine or commit")
        layers = results["layers"]
        assert isinstance(layers, list)
        with zipfile.ZipFile(zip_path) as archive:
            for member in sorted(archive.namelist()):
                stem = Path(member).stem
                if stem not in wanted:
                    continue
                network, dtype, layout = stem.split("-")
                file = f"{args.name}-{stem}.csv.gz"
                # mtime 0: the same tables always give the same bytes.
                (args.out / file).write_bytes(gzip.compress(archive.read(member), 9, mtime=0))
                problems = {
                    item["layer"]: item["problem"]
                    for item in layers
                    if (item["network"], item["dtype"], item["layout"]) == (network, dtype, layout)
                }
                tables.append({
                    "network": network, "dtype": dtype, "layout": layout,
                    "math_type": wanted.pop(stem), "file": file, "problems": problems,
                })  # fmt: skip
    if wanted:
        raise SystemExit(f"no such table in the sources: {', '.join(wanted)}")
    assert facts is not None
    document = {"format": FORMAT, "version": VERSION, **facts, "tables": tables}
    index = args.out / f"{args.name}.json"
    index.write_text(json.dumps(document, indent=1) + "\n")
    print(f"{index}: {len(tables)} tables")


if __name__ == "__main__":
    main()
