"""The torch_npu adapter's pure-C++ parts, compiled with g++ here (the adapter itself needs torch_npu and CANN):

* csrc/npu/block_map_cache.h: hits for the same unchanged mask, misses when the version, data, geometry or problem
  changes, entries dropped when their mask's storage dies, least recently used evicted beyond the capacity;
* the adapter reads a dense mask through the problem module's view (a column-broadcast mask as rows of 128 bytes
  read with column step 0, as on the twin path; tests/test_npu_host_sources.py compares the two readings);
* the backward runs as many launches as the grad tiling returns (no launch count written in the adapter).
"""
import re
import subprocess
from pathlib import Path

import pytest
import torch

from npu_flash_attn import twin_backend

ROOT = Path(__file__).resolve().parent.parent

_CACHE_TEST = r"""
#include <cassert>
#include <cstdio>
#include <memory>
#include <string>
#include "block_map_cache.h"
using npu_fa_adapter::BlockMapKey;
struct Weak {  // stands in for c10::weak_intrusive_ptr<StorageImpl>
    std::shared_ptr<bool> dead;
    bool expired() const { return *dead; }
};
int fails = 0;
#define CHECK(c) do { if (!(c)) { std::printf("FAIL line %d: %s\n", __LINE__, #c); ++fails; } } while (0)
int main() {
    npu_fa_adapter::BlockMapCache<std::string, Weak> cache(3);
    int storage[8];
    auto key = [&](int s, int64_t version, std::vector<int64_t> f) {
        BlockMapKey k; k.storage = &storage[s]; k.data = &storage[s]; k.version = version; k.fields = f; return k;
    };
    auto alive = std::make_shared<bool>(false);
    std::string v;
    CHECK(!cache.Get(key(0, 0, {128, 128}), v));
    cache.Put(key(0, 0, {128, 128}), Weak{alive}, "map0");
    CHECK(cache.Get(key(0, 0, {128, 128}), v) && v == "map0");      // same mask, same problem: reused
    CHECK(!cache.Get(key(0, 1, {128, 128}), v));                     // in-place change (version bump)
    CHECK(!cache.Get(key(0, 0, {128, 64}), v));                      // other blocks / problem fields
    CHECK(!cache.Get(key(1, 0, {128, 128}), v));                     // another mask
    CHECK(cache.Hits() == 1 && cache.Misses() == 4);
    auto dying = std::make_shared<bool>(false);
    cache.Put(key(1, 0, {1}), Weak{dying}, "map1");
    CHECK(cache.Size() == 2);
    *dying = true;                                                   // the mask's storage is freed
    CHECK(cache.Size() == 1 && !cache.Get(key(1, 0, {1}), v));
    cache.Put(key(2, 0, {2}), Weak{alive}, "map2");
    cache.Put(key(3, 0, {3}), Weak{alive}, "map3");
    CHECK(cache.Get(key(0, 0, {128, 128}), v));                      // map0 becomes the most recent
    cache.Put(key(4, 0, {4}), Weak{alive}, "map4");                  // capacity 3: map2 (least recent) goes
    CHECK(cache.Size() == 3 && !cache.Get(key(2, 0, {2}), v) && cache.Get(key(0, 0, {128, 128}), v));
    cache.Put(key(0, 0, {128, 128}), Weak{alive}, "map0b");          // same key again: replaced, not duplicated
    CHECK(cache.Size() == 3 && cache.Get(key(0, 0, {128, 128}), v) && v == "map0b");
    std::printf("%s\n", fails ? "FAILED" : "OK");
    return fails ? 1 : 0;
}
"""

def _compile(tmp_path, name, src, extra=()):
    (tmp_path / f"{name}.cpp").write_text(src)
    exe = tmp_path / name
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", *extra,
                    str(tmp_path / f"{name}.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    return exe


def test_block_map_cache(tmp_path):
    exe = _compile(tmp_path, "cache", _CACHE_TEST, [f"-I{ROOT / 'csrc' / 'npu'}"])
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout


def test_adapter_reads_the_mask_through_the_problem_view():
    """The adapter executes the problem module's mask view (narrow, widen) and never widens to S2 columns or keeps
    a rule of its own."""
    src = (ROOT / "csrc" / "npu" / "npu_adapter.cpp").read_text()
    assert "info.mask.narrow" in src and "info.mask.widen" in src
    assert "kColumnBroadcastWidth" not in src and "s2})" not in src


def test_adapter_runs_every_launch_the_grad_tiling_returns():
    src = (ROOT / "csrc" / "npu" / "npu_adapter.cpp").read_text()
    loops = re.findall(r"for \(size_t launch = 0; launch < ([\w.()]+); \+\+launch\)", src)
    assert loops == ["t.launches.size()"], loops
    body = src[src.index("FlashAttentionGradNpu("):]
    assert not re.search(r"launch\w*\s*[<=>!]=?\s*[23]\b|\b[23]\s*launches", body), "hard-coded launch count"
    func = (ROOT / "op_host" / "cann" / "flash_attention_tiling_func.cpp").read_text()
    assert "t.launches.size()" in func  # the TilingFunc bounds the launch index by the same list


@pytest.mark.parametrize("D,deterministic,launches", [(64, False, 2), (64, True, 2), (192, False, 3), (512, True, 5)])
def test_launch_counts_vary(gen, D, deterministic, launches):
    # why the adapter must not hard-code them: the twin's grad tiling returns 2, 3 or 5 launches (dQ; dK/dV, or
    # dV and dK passes of at most 256 columns each)
    q = torch.randn(1, 40, 2, D, generator=gen).to(torch.bfloat16)
    k = torch.randn(1, 50, 1, D, generator=gen).to(torch.bfloat16)
    out, smax, ssum = torch.ops.npu.flash_attention(q, k, k, 2, "BSND", scale=D ** -0.5)
    torch.ops.npu.flash_attention_grad(q, k, k, torch.randn_like(out), 2, "BSND", softmax_max=smax,
                                       softmax_sum=ssum, attention_in=out, scale=D ** -0.5,
                                       deterministic=deterministic)
    assert twin_backend.last_launch_info()["launches"] == launches
