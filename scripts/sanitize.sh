#!/usr/bin/env bash
# The robustness runs (docs/robustness.md), each a separate build beside the normal one:
#   scripts/sanitize.sh asan [BUILD_DIR]      unit tests (and the quick robustness e2e tests,
#                                             and kann-c --tune's) built with ASan+UBSan by
#                                             gcc, default build-asan
#   scripts/sanitize.sh valgrind [BUILD_DIR]  the unit tests of an existing normal build
#                                             (default build) under valgrind memcheck, but
#                                             those matching $KANN_VALGRIND_EXCLUDE (opencl)
#   scripts/sanitize.sh fuzz [SECONDS] [BUILD_DIR]
#                                             every fuzz target (clang + libFuzzer, default
#                                             build-fuzz) for SECONDS each (default 20) from its
#                                             seed corpus in fuzz/corpus
# Exits non-zero on the first finding. Run from anywhere; paths are relative to the checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc)
[ "$jobs" -gt 2 ] && jobs=2

run_asan() {
    local build=${1:-build-asan}
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
          -DKANN_SANITIZE=ON ${KANN_PYTHON:+-DKANN_PYTHON="$KANN_PYTHON"} >/dev/null
    cmake --build "$build" -j"$jobs"
    # Leaks are findings too; a sanitizer report aborts the test. The executor test keeps
    # OpenCL sub-devices (and so PoCL's device threads) alive until exit, by design
    # (runtime/host/opencl.c: releasing them raced PoCL's workers), and LeakSanitizer's
    # thread tracer crashes on those threads at exit: that test runs with ASan and UBSan but
    # without the leak check.
    (cd "$build" &&
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -j"$jobs" -L unit -E '^test_opencl_executor$')
    (cd "$build" &&
        ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -R '^test_opencl_executor$')
    (cd "$build" &&
        ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --output-on-failure -R 'e2e_test_(cli_errors|robustness|tune)')
}

run_valgrind() {
    local build=${1:-build}
    [ -d "$build/tests" ] || { echo "sanitize: no unit tests in $build (build it first)" >&2; exit 1; }
    local tests
    # OpenCL tests run PoCL's LLVM compiler, which takes many minutes under valgrind and is
    # not ours to make clean; the ASan run covers them.
    tests=$(cd "$build" && ctest -N -L unit -E "${KANN_VALGRIND_EXCLUDE:-opencl}" |
        sed -n 's/^ *Test *#[0-9]*: //p')
    [ -n "$tests" ] || { echo "sanitize: no unit tests found in $build" >&2; exit 1; }
    local log
    log=$(mktemp -d)
    local failed=0
    for t in $tests; do
        local exe
        exe=$(find "$(cd "$build" && pwd)/tests" -maxdepth 1 -type f -name "$t" -perm -u+x | head -1)
        [ -n "$exe" ] || { echo "sanitize: $t not built" >&2; exit 1; }
        echo "$exe"
    done | xargs -P "$jobs" -I{} sh -c \
        'cd "$(dirname {})" && KANN_SOURCE_DIR="$0" KANN_BUILD_DIR="$1" valgrind -q \
            --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
            --track-origins=no {} >"$2/$(basename {}).log" 2>&1 &&
            echo "valgrind: $(basename {}) clean" ||
            { echo "valgrind: $(basename {}) FAILED"; cat "$2/$(basename {}).log"; exit 1; }' \
        "$root" "$(cd "$build" && pwd)" "$log" || failed=1
    rm -rf "$log"
    return $failed
}

run_fuzz() {
    local seconds=${1:-20} build=${2:-build-fuzz}
    cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DKANN_FUZZ=ON -DKANN_BUILD_TESTS=OFF \
          -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
          -DKANN_FUZZ_SECONDS="$seconds" >/dev/null
    cmake --build "$build" -j"$jobs"
    # One target at a time: each uses one core for its whole run.
    (cd "$build" && TMPDIR=${TMPDIR:-/tmp} ctest --output-on-failure -L fuzz)
}

case "${1:-}" in
    asan) run_asan "${2:-}" ;;
    valgrind) run_valgrind "${2:-}" ;;
    fuzz) run_fuzz "${2:-}" "${3:-}" ;;
    *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
