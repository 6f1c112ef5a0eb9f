#!/usr/bin/env bash
# A short libFuzzer run (20 s, KANN_TEXT_FUZZ_SECONDS) of the text parser target
# fuzz/fuzz_text_parser.c from its seed corpus. It needs clang with libFuzzer: it configures a
# separate clang build (KANN_FUZZ=ON) under the build directory and builds only that target.
# Skipped (77) without clang or libFuzzer. Longer runs: docs/text-syntax.md.
set -euo pipefail
command -v clang >/dev/null || { echo "clang is not installed"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "${TMPDIR:-/tmp}/lf$$.c"
if ! clang -fsanitize=fuzzer "${TMPDIR:-/tmp}/lf$$.c" -o "${TMPDIR:-/tmp}/lf$$" 2>/dev/null; then
    rm -f "${TMPDIR:-/tmp}/lf$$.c"
    echo "clang has no libFuzzer (Debian: libclang-rt-14-dev)"; exit 77
fi
rm -f "${TMPDIR:-/tmp}/lf$$.c" "${TMPDIR:-/tmp}/lf$$"
build="$KANN_BUILD_DIR/fuzz-text"
CC=clang cmake -S "$KANN_SOURCE_DIR" -B "$build" -DKANN_FUZZ=ON -DKANN_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target fuzz_text_parser -j"$(nproc)" >/dev/null
mkdir -p "$build/text-corpus" "$build/text-artifacts"
"$build/fuzz/fuzz_text_parser" -max_total_time="${KANN_TEXT_FUZZ_SECONDS:-20}" -timeout=25 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/text-artifacts/" \
    "$build/text-corpus" "$KANN_SOURCE_DIR/fuzz/corpus/text"
