#!/usr/bin/env bash
# Installs what building and testing kann-c needs, only what is missing: Debian packages
# through apt-get, and the Python modules (onnx, numpy, onnxruntime) the tests and benchmarks
# use to make models and reference outputs. Sourced by tests/run.sh and samples/demo.sh.
set -euo pipefail

KANN_DEB_PACKAGES=(cmake make gcc pkg-config libprotobuf-c-dev protobuf-c-compiler
                   libcmocka-dev ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd
                   python3 python3-pip python3-numpy libonnx-testdata
                   gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm # firmware sample
                   clang libclang-rt-14-dev # libFuzzer (fuzz/)
                   valgrind) # scripts/sanitize.sh

kann_missing_debs() {
    local missing=()
    for p in "${KANN_DEB_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    echo "${missing[@]:-}"
}

kann_install_debs() {
    local missing
    missing=$(kann_missing_debs)
    [ -z "$missing" ] && return 0
    echo "setup: installing Debian packages: $missing"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
}

# The Python that has (or gets) onnx, numpy and onnxruntime; exported as KANN_PYTHON.
kann_setup_python() {
    local py
    py=$(command -v python3)
    if ! "$py" -c 'import onnx, numpy, onnxruntime' 2>/dev/null; then
        echo "setup: installing Python modules onnx, numpy, onnxruntime"
        "$py" -m pip install --quiet onnx numpy onnxruntime 2>/dev/null ||
            "$py" -m pip install --quiet --break-system-packages onnx numpy onnxruntime
    fi
    "$py" -c 'import onnx, numpy, onnxruntime' || {
        echo "setup: error: cannot import onnx, numpy and onnxruntime with $py" >&2
        return 1
    }
    export KANN_PYTHON="$py"
}

kann_setup() {
    kann_install_debs
    kann_setup_python
}
