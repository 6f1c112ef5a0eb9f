#!/usr/bin/env bash
# The test command: installs what is missing, builds (Release by default), runs every test.
#   tests/run.sh                 BUILD_DIR=build BUILD_TYPE=Release
#   BUILD_TYPE=Debug tests/run.sh
#   KANN_SANITIZE=ON BUILD_DIR=build-asan tests/run.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/setup.sh
kann_setup

build=${BUILD_DIR:-build}
# The shared real models sit beside the checkout when they are available.
if [ -z "${KANN_MODELS_DIR:-}" ] && [ -d "$root/../shared/models" ]; then
    export KANN_MODELS_DIR="$root/../shared/models"
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
      -DKANN_SANITIZE="${KANN_SANITIZE:-OFF}" -DPython3_EXECUTABLE="$KANN_PYTHON" \
      -DKANN_PYTHON="$KANN_PYTHON"
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"

# Robustness (docs/robustness.md), after a plain full run only: the unit tests under ASan+UBSan
# (build-asan) and under valgrind, and a short run of every fuzz target (build-fuzz).
# KANN_ROBUSTNESS=0 skips them.
if [ $# -eq 0 ] && [ "${KANN_ROBUSTNESS:-1}" != 0 ] && [ "${KANN_SANITIZE:-OFF}" = OFF ]; then
    cd "$root"
    scripts/sanitize.sh asan build-asan
    scripts/sanitize.sh valgrind "$build"
    scripts/sanitize.sh fuzz "${KANN_FUZZ_SECONDS:-20}" build-fuzz
fi
