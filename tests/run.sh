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
