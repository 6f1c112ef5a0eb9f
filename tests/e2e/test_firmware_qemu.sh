#!/usr/bin/env bash
# The firmware sample (samples/firmware): the sample CNN compiled to C, cross-compiled with the
# runtime core and the reference kernels for a Cortex-M4 and run under qemu (MPS2 AN386 board,
# semihosting); its printed outputs match the host's kann-run within 1e-4 (another compiler
# and libm). Also: the firmware links no loader, and scripts/size_report.sh --check holds
# (core .text <= 8 KiB, nothing needed beyond mem*, libgcc and libm). Skipped (77) without
# arm-none-eabi-gcc or qemu-system-arm (scripts/setup.sh installs both).
set -euo pipefail
src=${KANN_SOURCE_DIR:?}
build=${KANN_BUILD_DIR:?}
kann_c=${KANN_C:-$build/compiler/kann-c}
kann_run=${KANN_RUN:-$build/runtime/kann-run}
py=${PYTHON:-python3}
for tool in arm-none-eabi-gcc qemu-system-arm; do
    command -v $tool >/dev/null || { echo "$tool not found: skipped"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$src/scripts/size_report.sh" --check

fw=$work/fw
KANN_C=$kann_c PYTHON=$py QEMU_TIMEOUT=${QEMU_TIMEOUT:-180} "$src/samples/firmware/build.sh" "$fw"

if arm-none-eabi-nm "$fw/fw.elf" | grep -qw kann_model_open; then
    echo "FAIL: the firmware links the model.bin loader, the generated C needs none" >&2
    exit 1
fi

"$kann_c" -q "$fw/sample_cnn.onnx" --cores 1 -o "$work/sample_cnn.bin"
mkdir -p "$work/host"
KANN_ISA=generic "$kann_run" "$work/sample_cnn.bin" -i "$fw/sample_cnn.input.npy" --threads 1 \
    --output-dir "$work/host" >/dev/null

"$py" - "$fw/fw.log" "$work/host" <<'EOF'
import glob, os, re, sys
import numpy as np
log, host_dir = sys.argv[1:]
values, names = {}, {}
for line in open(log):
    m = re.match(r"kann-fw: output (\d+) '([^']*)'", line)
    if m:
        names[int(m.group(1))] = m.group(2)
        continue
    m = re.match(r"kann-fw: (\d+) (\d+) (\S+)$", line.strip())
    if m:
        values.setdefault(int(m.group(1)), {})[int(m.group(2))] = float(m.group(3))
if not names:
    sys.exit("FAIL: the firmware printed no outputs")
bad = 0
for i, name in sorted(names.items()):
    ref = np.load(os.path.join(host_dir, name + ".npy")).astype(np.float64).ravel()
    got = values.get(i, {})
    if sorted(got) != list(range(ref.size)):
        print(f"FAIL: output {i} '{name}': {len(got)} values printed, {ref.size} expected")
        bad += 1
        continue
    out = np.array([got[k] for k in range(ref.size)])
    err = np.max(np.abs(out - ref)) / max(1.0, float(np.max(np.abs(ref))))
    print(f"output {i} '{name}': {ref.size} values, max error {err:.2e} against the host")
    if not err <= 1e-4:
        print(f"FAIL: output {i} '{name}' differs from the host's by {err:.2e} > 1e-4")
        bad += 1
sys.exit(1 if bad else 0)
EOF
