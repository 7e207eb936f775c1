"""What importing ucudnn costs, beyond numpy (printed, not a test).

Runs each statement in a fresh interpreter under `python -X importtime`, after `import numpy`,
and adds up the cumulative times of the top-level imports that follow numpy's: ucudnn's own
share, including the standard-library modules it is first to load. Median and range of
--repeat runs.

    python benchmarks/import_time.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

STATEMENTS = (
    "import ucudnn",
    "from ucudnn import conv_forward, ConvProblem",
    "import ucudnn.planner; ucudnn.planner.make_plan_wd",
)


def share_us(statement: str) -> int:
    """Microseconds of imports that `statement` adds after numpy, in one fresh process."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import numpy\n{statement}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    total, after_numpy = 0, False
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (field.strip() for field in line.split("|"))
        top_level = not line.split("|")[2].startswith("  ")  # nested imports are indented
        if after_numpy and top_level:
            total += int(cumulative)
        after_numpy = after_numpy or (top_level and name == "numpy")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print(f"{'statement':<52} {'median ms':>9}  range ms")
    for statement in STATEMENTS:
        runs = [share_us(statement) / 1000 for _ in range(args.repeat)]
        low, high = min(runs), max(runs)
        print(f"{statement:<52} {statistics.median(runs):9.1f}  {low:.1f}–{high:.1f}")


if __name__ == "__main__":
    main()
