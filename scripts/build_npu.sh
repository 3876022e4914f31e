#!/usr/bin/env bash
# Builds the CANN custom operator package (custom_opp_<os>_<arch>.run) for Atlas A2 (ascend910b) and A3
# (ascend910_93) from op_host/ and op_kernel/, with CMakePresets.json's settings, and optionally installs it.
# Needs the CANN toolkit's environment (source <cann>/set_env.sh, which sets ASCEND_HOME_PATH). Not yet run on
# hardware; see docs/npu.md.
#   scripts/build_npu.sh [--build-dir DIR] [--adapter] [--install [PATH]]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$ROOT/build/npu"  # under build/ (git-ignored)
ADAPTER=OFF
INSTALL=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD=$(realpath -m "$2"); shift 2 ;;
    --adapter) ADAPTER=ON; shift ;;
    --install) INSTALL=default; if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then INSTALL=$2; shift; fi; shift ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "build_npu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "${ASCEND_HOME_PATH:-}" ]; then
  echo "build_npu.sh: ASCEND_HOME_PATH is not set; source the CANN toolkit's set_env.sh first" \
       "(e.g. /usr/local/Ascend/cann/set_env.sh)" >&2
  exit 1
fi
cd "$ROOT"
cmake --preset=default -B "$BUILD" -DNPU_FA_BUILD_ADAPTER="$ADAPTER"
cmake --build "$BUILD" --target binary package -j "$(nproc)"
[ "$ADAPTER" = ON ] && cmake --build "$BUILD" --target npu_flash_attn_npu -j "$(nproc)"
RUN=$(ls "$BUILD"/custom_opp_*.run 2>/dev/null | head -1 || true)
[ -n "$RUN" ] || { echo "build_npu.sh: no custom_opp_*.run in $BUILD" >&2; exit 1; }
echo "package: $RUN"
if [ -n "$INSTALL" ]; then
  if [ "$INSTALL" = default ]; then "$RUN"; else "$RUN" --install-path="$INSTALL"; fi
  echo "installed; source <install path>/vendors/npu_flash_attn/bin/set_env.bash before running"
fi
