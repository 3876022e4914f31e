#!/usr/bin/env bash
# Type-checks every op_kernel/ source (*.cpp, *.h, in every folder) against the official Ascend C headers
# (asc-devkit) with ../shared/tools/ascendc_conformance/check_api.py: g++ -fsyntax-only as __NPU_ARCH__ 2201 with
# generated stubs for the hardware intrinsics, so every API call must match an official declaration. Nothing is
# built or run.
#
# LOCAL ONLY: it needs an asc-devkit checkout (include/ and impl/) and the shared conformance tool, which CI does
# not have. CI relies on the CPU twin tests and scripts/check_kernel_rules.py instead.
#
#   scripts/check_conformance.sh [extra files...]
#   ASCDK=/path/to/asc-devkit            default /work/ascdk
#   CONFORMANCE_TOOL=/path/to/check_api.py   default <repo>/../shared/tools/ascendc_conformance/check_api.py
#
# scripts/conformance_prelude.h is force-included first: it stands in for what CANN's operator build generates
# (the GET_TILING_DATA family). The .cpp files (op_kernel/ and scripts/conformance/*.cpp samples) first teach the
# tool (--learn) the intrinsic stubs our kernels reach, then every file is checked.
# Exit status: 0 all pass, 1 a file fails, 2 setup missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ASCDK=${ASCDK:-/work/ascdk}
TOOL=${CONFORMANCE_TOOL:-$ROOT/../shared/tools/ascendc_conformance/check_api.py}
PYTHON=${PYTHON:-python3}

if [[ ! -d "$ASCDK/include" || ! -d "$ASCDK/impl" ]]; then
    echo "check_conformance: no asc-devkit at ASCDK=$ASCDK (needs include/ and impl/); set ASCDK" >&2
    exit 2
fi
if [[ ! -f "$TOOL" ]]; then
    echo "check_conformance: conformance tool not found at $TOOL; set CONFORMANCE_TOOL" >&2
    exit 2
fi

shopt -s nullglob globstar
files=("$ROOT"/op_kernel/**/*.cpp "$ROOT"/op_kernel/**/*.h "$ROOT"/scripts/conformance/*.cpp "$@")
if [[ ${#files[@]} -eq 0 ]]; then
    echo "check_conformance: no files to check in $ROOT/op_kernel"
    exit 0
fi

# Pass 1 (--learn): the tool learns stubs only from its own compile, which has neither our -I folders nor the
# prelude, so it would stop at GET_TILING_DATA and never instantiate the kernels' templates. Learn from wrappers that
# include the prelude and each .cpp by absolute path (their own quoted includes resolve next to them).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
learn=()
for f in "${files[@]}"; do
    if [[ "$f" == *.cpp ]]; then
        w="$tmp/learn_${#learn[@]}_$(basename "$f")"
        printf '#include "%s"\n#include "%s"\n' "$ROOT/scripts/conformance_prelude.h" "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" > "$w"
        learn+=("$w")
    fi
done
if [[ ${#learn[@]} -gt 0 ]]; then
    "$PYTHON" "$TOOL" --ascdk "$ASCDK" --learn "${learn[@]}" 2>&1 | grep '^learned:' || true
fi

# Pass 2: the check proper, with the learned stubs.
exec "$PYTHON" "$TOOL" --ascdk "$ASCDK" \
    -I "$ROOT/op_kernel" -I "$ROOT/op_host" \
    --include "$ROOT/scripts/conformance_prelude.h" \
    "${files[@]}"
