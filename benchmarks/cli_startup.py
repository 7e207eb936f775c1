"""What a `ucudnn` command costs before it does anything (printed, not a test).

Times whole processes: a bare interpreter (`python -c pass`), then `python -m ucudnn --help`,
`--version` and `plan --help`, each the median of --repeat runs, and prints each one's cost
above the bare interpreter against the goal of 0.1 s (issue 37): `--help` and `--version`
load the parser alone, not numpy or the planner.

    python benchmarks/cli_startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

GOAL_S = 0.1
COMMANDS = (["--help"], ["--version"], ["plan", "--help"])


def median_s(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, *argv], capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    bare = median_s(["-c", "pass"], args.repeat)
    print(f"bare interpreter: {bare * 1e3:.0f} ms (median of {args.repeat})")
    print(f"{'command':<28} {'median ms':>9} {'above bare':>10}  goal <= {GOAL_S * 1e3:.0f} ms")
    for command in COMMANDS:
        wall = median_s(["-m", "ucudnn", *command], args.repeat)
        above = wall - bare
        verdict = "met" if above <= GOAL_S else "MISSED"
        name = "ucudnn " + " ".join(command)
        print(f"{name:<28} {wall * 1e3:9.0f} {above * 1e3:10.0f}  {verdict}")


if __name__ == "__main__":
    main()
