#!/usr/bin/env bash
# Type-checks the CANN host sources (OpDefs, InferShape, TilingFuncs) and the torch_npu adapter against public
# CANN / torch_npu headers (no CANN install needed; nothing is linked or run).
# LOCAL ONLY: the checker, cann_host_check, is not part of this repository: it is the project's shared tool, expected
# at ../shared/tools/cann_host_check next to the checkout (or CANN_HOST_CHECK); a fresh clone alone lacks it.
# The header trees are pinned to the CANN 9.1.0 branch heads of the mirrors (the CANN torch_npu 2.14.0 targets).
# The adapter is checked with op_host/cann/aclnn_standin.h, a STAND-IN for the aclnn headers CANN generates.
#   CANN_MIRROR_ROOT=<dir with <owner>+<name>/repo mirrors> TORCH_NPU_WHEEL=<torch_npu-2.14.0 wheel> \
#       scripts/check_host.sh [--no-adapter]
# Optional: CANN_HOST_CHECK (tool dir), CANN_HC_FETCH_ROOT (cache, default ~/.cache/cann_hc), PYTHON (with torch).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=${CANN_HOST_CHECK:-$ROOT/../shared/tools/cann_host_check}
FETCH=${CANN_HC_FETCH_ROOT:-$HOME/.cache/cann_hc}
PY=${PYTHON:-python3}
ADAPTER=1
[ "${1:-}" = "--no-adapter" ] && ADAPTER=0
if [ ! -f "$TOOL/check_host.py" ]; then
  echo "check_host.sh: the header checker cann_host_check is missing: no $TOOL/check_host.py. It is not part of" \
       "this repository; it comes with the project's shared tools (../shared/tools/cann_host_check next to the" \
       "checkout). Set CANN_HOST_CHECK to its directory." >&2
  exit 2
fi
if [ -z "${CANN_MIRROR_ROOT:-}" ]; then
  echo "check_host.sh: set CANN_MIRROR_ROOT to a directory of bare git mirrors <owner>+<name>/repo of the CANN" \
       "header repositories (listed in cann_host_check/README.md)" >&2
  exit 2
fi
REVS=(--rev metadef=01966fe61d57fa7ae85b1c9e3350cecfe3a125a6    # hicann/metadef 9.1.0
      --rev ge=7cfe4716a925544c34b9d89a06d6e4beaefff625         # hicann/ge 9.1.0
      --rev opbase=0e247b8c759c48ae42fda6c6f2bd5daab323be0f     # hicann/opbase 9.1.0
      --rev runtime=a4b99bce41a395947a78afb88ded0afd0ce1475f    # hicann/runtime 9.1.0
      --rev asc-devkit=e5451c7feba11f9e259f4fbc19c4bf82f8c0496c # mirror-cann/asc-devkit 9.1.0
      --rev securec=43f394077b34f894aa1e650467426c34378fb460)   # openeuler-mirror/libboundscheck master
CHECK=("$PY" "$TOOL/check_host.py" --fetch-root "$FETCH" --mirror-root "$CANN_MIRROR_ROOT" "${REVS[@]}"
       -I "$ROOT/chip" -I "$ROOT/op_host" -I "$ROOT/op_kernel")
cd "$ROOT"
"${CHECK[@]}" --mode cann op_host/cann/flash_attention_def.cpp op_host/cann/flash_attention_infershape.cpp \
    op_host/cann/flash_attention_tiling_func.cpp op_host/cann/flash_attention_infer_def.cpp \
    op_host/cann/flash_attention_infer_infershape.cpp op_host/cann/flash_attention_infer_tiling_func.cpp
rc=$?
if [ "$ADAPTER" = 1 ]; then
  if [ -z "${TORCH_NPU_WHEEL:-}" ]; then
    echo "check_host.sh: set TORCH_NPU_WHEEL (pip download --no-deps torch-npu==2.14.0) or pass --no-adapter" >&2
    exit 2
  fi
  "${CHECK[@]}" --mode torch --torch-npu-wheel "$TORCH_NPU_WHEEL" --python "$PY" \
      --prelude op_host/cann/aclnn_standin.h csrc/npu/npu_adapter.cpp csrc/npu/npu_infer_adapter.cpp || rc=1
fi
exit $rc
