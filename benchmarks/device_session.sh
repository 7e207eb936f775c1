#!/usr/bin/env bash
# One command for the GPU machine: build ucudnn, run the gpu-marked tests, then the comparison
# benchmark (benchmarks/gpu_compare.py) within what is left of a 10-minute command.
#
# Once, on the machine without a GPU, from the repository root (downloads into .whl/):
#   bash ../shared/device/fetch-wheels.sh tqdm hypothesis attrs sortedcontainers matplotlib \
#     contourpy cycler fonttools kiwisolver pillow pyparsing python-dateutil six packaging
# (the machine lacks mip/highspy/cffi/frontend, and also tqdm, which ucudnn imports, hypothesis,
# which the test modules import, and matplotlib for the plots). Then, through the device tool:
#   run(command="UCUDNN_COMMIT=<git rev-parse HEAD> bash benchmarks/device_session.sh",
#       carry=[".whl"], timeout_s=600)
# Arguments after the script replace the benchmark's defaults, for example
#   ... bash benchmarks/device_session.sh --networks deepbench --limits 8MiB --dtypes float32
# SKIP_TESTS=1 skips the test suite (a second call on a warm machine); SESSION_SECONDS (570)
# is the time the whole script may take. Results come back from $OUT: session.log,
# gpu-tests.txt and results/<run-id>.{json,md}, -tables.zip and two PNGs (7 files).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/benchmarks/results/session}
mkdir -p "$OUT/results"
log="$OUT/session.log"
budget=${SESSION_SECONDS:-570}
say() { echo "[device_session ${SECONDS}s] $*" | tee -a "$log"; }

say "installing carried wheels into .site"
python3 -m pip install -q --no-index --no-deps --target .site .whl/*.whl >>"$log" 2>&1 \
  || say "WARNING: some carried wheels did not install (see session.log)"
export PYTHONPATH=$PWD/.site${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log"

# Editable, into the interpreter's own site-packages: the extensions' RPATH finds cuDNN and the
# CUDA runtime in the nvidia/ pip packages next to them. No isolation: no package index here.
say "building ucudnn"
if ! PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-build-isolation --no-deps -e . \
  >>"$log" 2>&1; then
  say "BUILD FAILED; last lines:"
  tail -n 30 "$log"
  exit 1
fi
python3 -m ucudnn.faces.cli info 2>&1 | tee -a "$log"

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  say "running the gpu-marked tests"
  # A module that fails to import must not stop the others from running.
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --continue-on-collection-errors \
    >"$OUT/gpu-tests.log" 2>&1
  say "pytest exit status $?"
  tail -n 1 "$OUT/gpu-tests.log" | tee "$OUT/gpu-tests.txt"
  # Failures and errors, with pytest's short summary, stay in the log; only its tail is kept.
  tail -n 200 "$OUT/gpu-tests.log" >>"$log"
  rm -f "$OUT/gpu-tests.log"
fi

left=$((budget - SECONDS - 20))
if [ "$left" -lt 60 ]; then
  say "no time left for the benchmark"
  exit 0
fi
say "benchmark with $left s left"
# SIGINT after the budget: the script writes what it has and exits cleanly.
timeout -s INT "$left" python3 benchmarks/gpu_compare.py --out "$OUT/results" \
  --max-minutes "$(((left - 30) / 60))" "$@" 2>>"$log" | tail -n 60
say "gpu_compare exit status ${PIPESTATUS[0]}"
ls -la "$OUT" "$OUT/results" | tee -a "$log"
