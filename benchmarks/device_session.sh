#!/usr/bin/env bash
# One command for a GPU machine: build ucudnn, run the gpu-marked tests, then the comparison
# benchmark (benchmarks/gpu_compare.py), all within SESSION_SECONDS.
#
# A GPU machine without a package index gets the wheels it lacks in .whl/, made on a machine
# that has one, from the repository root:
#   python3 -m pip list --format=freeze >gpu-machine.txt   # there, once: what it has
#   python3 benchmarks/fetch_wheels.py --have gpu-machine.txt
# (with pip 23.3 or newer; benchmarks/fetch_wheels.py --help: another folder, Python or
# platform; without --have it fetches everything, about 1 GiB). Copy the repository with .whl/
# to the GPU machine and run, from the repository root there:
#   UCUDNN_COMMIT=<git rev-parse HEAD> OUT=<results folder> bash benchmarks/device_session.sh
# (UCUDNN_COMMIT records the commit, which a copy that is no git checkout cannot tell). Without
# .whl/ the session installs from the package index; it stops, naming them, when something it
# needs is still missing. Arguments after the script replace the benchmark's defaults, for
# example
#   bash benchmarks/device_session.sh --networks deepbench --limits 8MiB --dtypes float32
# or, with cuDNN's graph-API engine configurations measured beside the legacy algorithms,
#   bash benchmarks/device_session.sh --engines on --networks resnet50 --dtypes float16
# or, for spatial micro-batches (kernels cut into slabs, docs/spatial.md) on large volumes,
#   bash benchmarks/device_session.sh --networks cnn3d-large --layouts NCDHW \
#     --dtypes float16,float32 --limits 8MiB,64MiB --slab-policy powerOfTwo
# (gpu_compare.py --help lists them all). SKIP_TESTS=1 skips the test suite (a second run
# on the same machine); SESSION_SECONDS (570) is the time the whole script may take,
# TEST_SECONDS (240) the tests' share, TEST_TIMEOUT (120) the seconds one test may take,
# PROBE_SECONDS (75) the capability probe's. Results go to $OUT (default
# benchmarks/results/session): session.log (with the Handle's per-call host time),
# gpu-tests.log (pytest's whole report: each failure and error in full, then the counts),
# gpu-suite-<date>.json (the counts, versions and every skip's reason, for
# benchmarks/results/), capabilities-probe.json and results/<run-id>.{json,md}, -tables.zip
# and -plots.zip (8 files).
#
# TORCH_STEP=1 runs, in the comparison benchmark's place, real training steps of ResNet-50 in
# PyTorch against the same model converted with ucudnn.torch (benchmarks/torch_step.py; needs
# torch with CUDA and torchvision on the machine, else it says so): batch 256, AMP float16,
# channels_last and contiguous, limits 8MiB,64MiB,1GiB, then the largest batch that trains
# within TORCH_STEP_MEMORY (20GiB), in the time left (three fifths of it for the steps). Its
# tables go to session.log and its JSON documents to torch-step.zip (5 files in all). Each new
# batch and layout costs ucudnn a first-use benchmark, so the more time the tests leave, the
# more it measures: SKIP_TESTS=1 on a second call, say.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/benchmarks/results/session}
mkdir -p "$OUT/results"
log="$OUT/session.log"
budget=${SESSION_SECONDS:-570}
say() { echo "[device_session ${SECONDS}s] $*" | tee -a "$log"; }

requirements=$(mktemp)
trap 'rm -f "$requirements"' EXIT
# What the session needs (fetch_wheels.py --print) and this interpreter lacks. From .whl/
# without resolving dependencies: the carried wheels are the dependencies, less those the
# session does without (fetch_wheels.py names them).
install_requirements() {
  python3 benchmarks/fetch_wheels.py --missing >"$requirements" || return
  local wanted=() source=() wheel item status=0
  mapfile -t wanted <"$requirements"
  [ "${#wanted[@]}" -gt 0 ] || return 0
  if [ -d .whl ]; then
    source=(--no-index --find-links .whl --no-deps)
    for wheel in .whl/*.whl; do
      [ -f "$wheel" ] || continue
      wheel=${wheel##*/}
      wanted+=("${wheel%%-*}")  # a wheel's file name starts with its distribution's name
    done
  fi
  # One pip command; when it fails, one for each, so that a distribution that cannot be
  # installed keeps out none of the others.
  python3 -m pip install -q "${source[@]}" "${wanted[@]}" && return
  for item in "${wanted[@]}"; do
    python3 -m pip install -q "${source[@]}" "$item" || status=1
  done
  return "$status"
}
# pip installs into a distribution's own Python ("externally managed") only when told to.
export PIP_BREAK_SYSTEM_PACKAGES=1
say "installing what the session lacks from $([ -d .whl ] && echo .whl/ || echo the index)"
install_requirements >>"$log" 2>&1 || say "some distributions did not install (see session.log)"
# A run without one of them would test or compare less than it says: stop instead.
if ! missing=$(python3 benchmarks/fetch_wheels.py --missing 2>>"$log"); then
  say "SET-UP BROKEN: fetch_wheels.py --missing failed; last lines:"
  tail -n 5 "$log"
  exit 2
elif [ -n "$missing" ]; then
  say "SET-UP BROKEN: not installed: ${missing//$'\n'/, } (pip's reasons are in session.log)"
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$log"

# Editable, into the interpreter's own site-packages: ucudnn._native loads cuDNN and the CUDA
# runtime from the nvidia/ pip packages found through the import system (`ucudnn info` prints
# which files). No isolation: the build requirements are installed above.
say "building ucudnn"
if ! python3 -m pip install --no-build-isolation --no-deps -e . >>"$log" 2>&1; then
  say "BUILD FAILED; last lines:"
  tail -n 30 "$log"
  exit 1
fi
# Without these every gpu test would be skipped (or WD could not be solved: .whl/ leaves CBC
# out): stop here instead of reporting a run that tested nothing.
if ! python3 -c "import ucudnn, mip; import ucudnn._native._cudnn; mip.Model(solver_name=mip.HIGHS)" \
  >>"$log" 2>&1; then
  say "SET-UP BROKEN: ucudnn, its native module, mip or its HiGHS does not load; last lines:"
  tail -n 15 "$log"
  exit 2
fi
python3 -m ucudnn.faces.cli info 2>&1 | tee -a "$log"

# What the simulated device should know: which algorithms run for each layout, type and
# geometry, and cuDNN's statuses for broken contracts. Commit its output as
# ucudnn/testing/simulator/data/probe-<gpu>-<cudnn>.json (benchmarks/capability_probe.py).
say "capability probe"
timeout -s INT 100 python3 benchmarks/capability_probe.py --out "$OUT/capabilities-probe.json" \
  --seconds "${PROBE_SECONDS:-75}" 2>&1 | tail -n 3 | tee -a "$log"
say "capability probe exit status ${PIPESTATUS[0]}"

if [ "${SKIP_TESTS:-0}" != 1 ]; then
  say "running the gpu-marked tests"
  # UCUDNN_REQUIRE_GPU turns "no usable GPU" skips into failures. Each test has its own
  # timeout (pytest-timeout), so one hang costs one test; SIGINT at the tests' share of the
  # budget still lets pytest print its report and counts. A module that fails to import must
  # not stop the others from running.
  UCUDNN_REQUIRE_GPU=1 timeout -s INT -k 30 "${TEST_SECONDS:-240}" \
    python3 -m pytest -m gpu -q -p no:cacheprovider --continue-on-collection-errors \
    --timeout "${TEST_TIMEOUT:-120}" -rfE --junitxml "$OUT/junit.xml" >"$OUT/gpu-tests.log" 2>&1
  status=$?
  say "pytest exit status $status$([ "$status" = 137 ] && echo ' (killed: no counts)')"
  tail -n 1 "$OUT/gpu-tests.log" | tee -a "$log"
  python3 benchmarks/gpu_suite_report.py "$OUT/junit.xml" --out "$OUT" 2>&1 | tee -a "$log"
  rm -f "$OUT/junit.xml"
fi

say "the Handle's host time per call"
UCUDNN_DEVICE=gpu timeout -s INT 60 python3 benchmarks/handle_overhead.py --calls 2000 \
  --rounds 5 2>&1 | tee -a "$log"

# Seconds as fractional minutes for --max-minutes, keeping $2 seconds for the last
# configuration or trial batch (at least half a minute).
minutes_within() {
  awk -v seconds="$(($1 - $2))" 'BEGIN { printf "%.2f", (seconds < 30 ? 30 : seconds) / 60 }'
}
torch_step() {
  local share=$((budget - SECONDS - 20)) seconds folder="$OUT/torch-step" status
  if [ "$share" -lt 120 ]; then
    say "no time left for torch_step.py ($share s)"
    return
  fi
  if ! python3 -c "import torch, torchvision; assert torch.cuda.is_available(), 'no CUDA'" \
    >>"$log" 2>&1; then
    say "torch_step.py skipped: torch with CUDA and torchvision do not load (see session.log)"
    return
  fi
  mkdir -p "$folder"
  seconds=$((share * 3 / 5))
  say "torch_step.py: ResNet-50 steps, $seconds s of $share"
  # SIGINT at the share: the script reports what it measured and exits.
  timeout -s INT -k 30 "$seconds" python3 benchmarks/torch_step.py --model resnet50 --batch 256 \
    --dtypes float16 --formats channels_last,contiguous --limits 8MiB,64MiB,1GiB --pytorch-twice \
    --max-minutes "$(minutes_within "$seconds" 150)" --json "$folder/steps.json" \
    2>>"$log" | tee -a "$log"
  status=${PIPESTATUS[0]}
  say "torch_step.py steps exit status $status"
  seconds=$((share - seconds))
  say "torch_step.py: ResNet-50 largest batch in ${TORCH_STEP_MEMORY:-20GiB}, $seconds s"
  timeout -s INT -k 30 "$seconds" python3 benchmarks/torch_step.py --model resnet50 \
    --largest-batch --memory "${TORCH_STEP_MEMORY:-20GiB}" \
    --max-minutes "$(minutes_within "$seconds" 150)" --json "$folder/largest.json" \
    2>>"$log" | tee -a "$log"
  status=${PIPESTATUS[0]}
  say "torch_step.py largest batch exit status $status"
  # One archive, so that the session's files stay few.
  python3 -c 'import pathlib, sys, zipfile
folder = pathlib.Path(sys.argv[1])
with zipfile.ZipFile(folder.with_suffix(".zip"), "w") as archive:
    for path in sorted(folder.glob("*.json")):
        archive.write(path, path.name)' "$folder" 2>&1 | tee -a "$log" && rm -rf "$folder"
}
if [ "${TORCH_STEP:-0}" = 1 ]; then
  torch_step
  exit 0
fi

left=$((budget - SECONDS - 20))
if [ "$left" -lt 60 ]; then
  say "no time left for the benchmark"
  exit 0
fi
# Fractional minutes: whole ones would round 60..89 seconds down to 0.
minutes=$(awk -v seconds="$((left - 30))" 'BEGIN { printf "%.2f", seconds / 60 }')
say "benchmark with $left s left (--max-minutes $minutes)"
# SIGINT after the budget: the script writes what it has and exits cleanly.
timeout -s INT "$left" python3 benchmarks/gpu_compare.py --out "$OUT/results" \
  --max-minutes "$minutes" "$@" 2>>"$log" | tail -n 60
say "gpu_compare exit status ${PIPESTATUS[0]}"
# The plots travel as one archive, so that everything comes back within 8 files.
python3 -c 'import pathlib, sys, zipfile
for run in pathlib.Path(sys.argv[1]).glob("*.json"):
    plots = sorted(run.parent.glob(run.stem + "-*.png"))
    if plots:
      with zipfile.ZipFile(run.with_name(run.stem + "-plots.zip"), "w") as archive:
        for plot in plots:
          archive.write(plot, plot.name)
          plot.unlink()' "$OUT/results" 2>&1 | tee -a "$log"
ls -la "$OUT" "$OUT/results" | tee -a "$log"
