#!/usr/bin/env bash
# Builds the firmware sample and runs it under qemu: makes the sample CNN (32x32 input),
# compiles it to C with kann-c --emit c, cross-compiles it with the runtime core and the
# reference kernels for a Cortex-M4 (MPS2 AN386 board) and runs it with semihosting.
#
#   samples/firmware/build.sh [OUT_DIR]        default OUT_DIR: build/firmware
#
# Environment: KANN_C (the host kann-c; default build/compiler/kann-c, built with CMake if
# missing), PYTHON (with onnx and numpy), MODEL and INPUTS (another .onnx and its .npy inputs,
# space-separated), RUN=0 to build only, QEMU_TIMEOUT (seconds, default 120), OPT (default -O2).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/firmware}
mkdir -p "$out"
out=$(cd "$out" && pwd)
py=${PYTHON:-python3}

for tool in arm-none-eabi-gcc arm-none-eabi-size; do
    command -v $tool >/dev/null || { echo "build.sh: $tool not found (scripts/setup.sh installs it)" >&2; exit 1; }
done

kann_c=${KANN_C:-$root/build/compiler/kann-c}
if [ ! -x "$kann_c" ]; then
    echo "== build the host kann-c"
    cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$root/build" --target kann-c -j2 >/dev/null
fi

if [ -z "${MODEL:-}" ]; then
    echo "== make the sample CNN, 32x32 input (samples/sample_cnn.py)"
    "$py" "$root/samples/sample_cnn.py" "$out" --size 32
    MODEL=$out/sample_cnn.onnx
    INPUTS=$out/sample_cnn.input.npy
fi

echo "== kann-c $MODEL --cores 1 --emit c --c-prefix model -o $out/model.c"
"$kann_c" "$MODEL" --cores 1 --emit c --c-prefix model -o "$out/model.c"
# shellcheck disable=SC2086
"$py" "$here/npy_to_c.py" "$out/input_data.c" $INPUTS

arch="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"
cflags="$arch ${OPT:--O2} -std=c11 -ffunction-sections -fdata-sections -Wall -Wextra"
includes="-I$root/runtime/include -I$root/kernels -I$out"

echo "== cross-compile for Cortex-M4: runtime core and reference kernels (-ffreestanding)"
rm -rf "$out/obj" && mkdir -p "$out/obj"
for src in "$root"/runtime/src/*.c "$root"/kernels/*.c "$root"/kernels/ref/*.c; do
    obj=$out/obj/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
    # -Wno-format: the core's messages pass uint32_t to %u, and uint32_t is unsigned long here.
    arm-none-eabi-gcc $cflags -ffreestanding -Wno-format $includes -c "$src" -o "$obj"
done
rm -f "$out/libkann_fw.a"
arm-none-eabi-ar rcs "$out/libkann_fw.a" "$out"/obj/*.o

echo "== cross-compile the model, the sample and the start-up code; link"
arm-none-eabi-gcc $cflags $includes -c "$out/model.c" -o "$out/model.o"
arm-none-eabi-gcc $cflags $includes -c "$out/input_data.c" -o "$out/input_data.o"
arm-none-eabi-gcc $cflags $includes -c "$here/main.c" -o "$out/main.o"
arm-none-eabi-gcc $cflags -c "$here/startup.c" -o "$out/startup.o"
arm-none-eabi-gcc $arch -nostartfiles --specs=rdimon.specs -T "$here/mps2_an386.ld" \
    -Wl,--gc-sections -Wl,-Map="$out/fw.map" \
    "$out/startup.o" "$out/main.o" "$out/model.o" "$out/input_data.o" "$out/libkann_fw.a" -lm \
    -o "$out/fw.elf"
arm-none-eabi-size "$out/fw.elf"

[ "${RUN:-1}" = 0 ] && exit 0
command -v qemu-system-arm >/dev/null || { echo "build.sh: qemu-system-arm not found" >&2; exit 1; }
echo "== run: qemu-system-arm -M mps2-an386 -cpu cortex-m4 -kernel $out/fw.elf"
timeout "${QEMU_TIMEOUT:-120}" qemu-system-arm -M mps2-an386 -cpu cortex-m4 -nographic \
    -monitor none -serial none -semihosting-config enable=on,target=native \
    -kernel "$out/fw.elf" | tee "$out/fw.log"
status=${PIPESTATUS[0]}
[ "$status" = 124 ] && echo "build.sh: qemu timed out after ${QEMU_TIMEOUT:-120} s" >&2
grep -q "^kann-fw: done" "$out/fw.log" || { echo "build.sh: the firmware did not finish" >&2; exit 1; }
exit "$status"
