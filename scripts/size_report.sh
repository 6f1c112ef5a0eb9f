#!/usr/bin/env bash
# Code size of the runtime core and the kernels on a Cortex-M4 (arm-none-eabi-gcc -Os
# -ffreestanding, one section per function): .text / .rodata / .data / .bss per file and per
# part, as a Markdown table for the README.
#
#   scripts/size_report.sh            the table
#   scripts/size_report.sh --files    and every file's line
#   scripts/size_report.sh --check    also fail if the core's .text is over 8 KiB or the core
#                                     and kernels need anything beyond mem*, libgcc and libm
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
check=0 files=0
for a in "$@"; do
    case $a in
    --check) check=1 ;;
    --files) files=1 ;;
    *) echo "usage: scripts/size_report.sh [--files] [--check]" >&2; exit 2 ;;
    esac
done
command -v arm-none-eabi-gcc >/dev/null || { echo "size_report: arm-none-eabi-gcc not found (scripts/setup.sh installs it)" >&2; exit 77; }

cc="arm-none-eabi-gcc -mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 -Os -std=c11
    -ffreestanding -ffunction-sections -fdata-sections -Wall -Wextra -Wno-format"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# part name | sources
parts=("runtime core (runtime/src/*.c)|$root/runtime/src/*.c"
       "kernel registry + validators (kernels/*.c)|$root/kernels/*.c"
       "reference kernels (kernels/ref/*.c)|$root/kernels/ref/*.c")

# Bytes per section kind of one object: "text rodata data bss".
sizes() {
    arm-none-eabi-size -A "$1" | awk '
        $1 ~ /^\.text/ {t += $2} $1 ~ /^\.rodata/ {r += $2}
        $1 ~ /^\.data/ {d += $2} $1 ~ /^\.bss/ {b += $2}
        END {printf "%d %d %d %d\n", t, r, d, b}'
}

echo "Cortex-M4 (-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard), $(arm-none-eabi-gcc -dumpversion), -Os -ffreestanding"
echo
echo "| part | .text | .rodata | .data | .bss |"
echo "|---|---:|---:|---:|---:|"
core_text=0
for part in "${parts[@]}"; do
    name=${part%%|*}
    tt=0 tr=0 td=0 tb=0
    lines=()
    for src in ${part#*|}; do
        [ -f "$src" ] || continue
        obj=$work/$(basename "$(dirname "$src")")_$(basename "$src" .c).o
        $cc -I"$root/runtime/include" -I"$root/kernels" -c "$src" -o "$obj"
        read -r t r d b < <(sizes "$obj")
        tt=$((tt + t)) tr=$((tr + r)) td=$((td + d)) tb=$((tb + b))
        lines+=("| &nbsp;&nbsp;${src#"$root"/} | $t | $r | $d | $b |")
    done
    echo "| $name | $tt | $tr | $td | $tb |"
    [ $files = 1 ] && printf '%s\n' "${lines[@]}"
    case $name in runtime*) core_text=$tt ;; esac
done

# What a firmware built from kann-c --emit c links from the core: the static walker and the
# status names (the loader, CRC and messages are for model.bin only).
read -r t r d b < <(cat "$work"/src_static_run.o "$work"/src_status.o >/dev/null &&
    { sizes "$work/src_static_run.o"; sizes "$work/src_status.o"; } |
    awk '{t += $1; r += $2; d += $3; b += $4} END {print t, r, d, b}')
echo "| of the core, what --emit c firmware links (static_run.c, status.c) | $t | $r | $d | $b |"

[ $check = 1 ] || exit 0
status=0
if [ "$core_text" -gt 8192 ]; then
    echo "size_report: the runtime core's .text is $core_text bytes, over 8 KiB" >&2
    status=1
fi
# Nothing but memory functions, libgcc helpers and libm may be left undefined: no malloc, no
# stdio, no threads.
arm-none-eabi-nm --defined-only -g "$work"/*.o | awk 'NF == 3 {print $3}' | sort -u >"$work/defined"
libm='^(a?(sin|cos|tan)h?|atan2|exp|exp2|expm1|log|log2|log10|log1p|pow|sqrt|cbrt|fabs|floor|ceil|round|lround|trunc|fmod|remainder|fmax|fmin|fma|erf|erfc|hypot|nearbyint|rint|lrint|copysign|ldexp|frexp|modf)f?$'
extra=$(arm-none-eabi-nm -u "$work"/*.o | awk 'NF == 2 {print $2}' | sort -u |
    comm -23 - "$work/defined" | grep -Ev '^(memcpy|memset|memmove|memcmp|__aeabi_.*)$' |
    grep -Ev "$libm" || true)
if [ -n "$extra" ]; then
    echo "size_report: the core and kernels need symbols a freestanding build lacks:" $extra >&2
    status=1
fi
[ $status = 0 ] && echo && echo "check: core .text $core_text <= 8192 bytes; only mem*, libgcc and libm needed"
exit $status
