"""The torch_npu adapter's pure-C++ parts, compiled with g++ here (the adapter itself needs torch_npu and CANN):

* csrc/block_map_cache.h: hits for the same unchanged mask, misses when the version, data, geometry or problem
  changes, entries dropped when their mask's storage dies, least recently used evicted beyond the capacity;
* a column-broadcast mask ([..., S1, 1]) travels as rows of 128 bytes read with column step 0, as on the twin path:
  op_host/cann/fa_op_args.h gives the same mask fields as python/npu_flash_attn/masks.py's mask_view;
* the backward runs as many launches as the grad tiling returns (no launch count written in the adapter).
"""
import re
import subprocess
from pathlib import Path

import pytest
import torch

from npu_flash_attn import problem, twin_backend

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

_MASK_FIELDS = r"""
#include <cstdio>
#include <iostream>
#include "cann/fa_op_args.h"
using namespace npu_fa;
std::vector<int64_t> List() { size_t n; std::cin >> n; std::vector<int64_t> v(n); for (auto& x : v) std::cin >> x; return v; }
int main() {
    std::string tag;
    while (std::cin >> tag) {
        op::FaOpShapes s; op::FaOpAttrs a;
        s.query = List(); s.key = List(); s.value = List(); s.mask = List();
        s.hasMask = true;
        std::cin >> a.headNum >> a.sparseMode;
        a.inputLayout = "BSND";
        FaProblem p;
        const std::string err = op::BuildFaProblem(s, a, p);
        if (!err.empty()) { std::printf("%s ERROR %s\n", tag.c_str(), err.c_str()); continue; }
        std::printf("%s %d %d %llu %llu %llu %u\n", tag.c_str(), (int)p.maskPerBatch, (int)p.maskPerHead,
                    (unsigned long long)p.maskStrideB, (unsigned long long)p.maskStrideN,
                    (unsigned long long)p.maskStrideS, p.maskColStep);
    }
}
"""


def _compile(tmp_path, name, src, extra=()):
    (tmp_path / f"{name}.cpp").write_text(src)
    exe = tmp_path / name
    subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pthread", *extra,
                    str(tmp_path / f"{name}.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    return exe


def test_block_map_cache(tmp_path):
    exe = _compile(tmp_path, "cache", _CACHE_TEST, [f"-I{ROOT / 'csrc'}"])
    r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stdout


def _ints(v):
    return [str(len(v))] + [str(int(x)) for x in v]


def test_column_broadcast_mask_matches_the_twin_rule(tmp_path, gen):
    """The op's mask input is the twin's kernel view (mask_view's tensor): same strides, same column step."""
    exe = _compile(tmp_path, "maskf", _MASK_FIELDS, [f"-I{ROOT / 'op_host'}", f"-I{ROOT / 'op_kernel'}"])
    B, N1, N2, D = 2, 4, 2, 64
    cases = {}
    for S1, S2, shape in ((33, 300, (B, 1, 33, 1)), (50, 40, (1, 1, 50, 1)), (20, 128, (B, N1, 20, 1)),
                          (33, 300, (B, 1, 1, 300)), (33, 300, (B, 1, 33, 300))):
        q = torch.zeros(B, S1, N1, D, dtype=torch.float16)
        k = v = torch.zeros(B, S2, N2, D, dtype=torch.float16)
        m = torch.rand(*shape, generator=gen) > 0.5
        p = problem.validate_flash_attention(q, k, v, N1, "BSND", atten_mask=m, sparse_mode=1)
        view = twin_backend.mask_view(m, "BSND", p.S2)
        f = view.problem_fields()
        want = [int(f[x]) for x in ("mask_per_batch", "mask_per_head", "mask_stride_b", "mask_stride_n",
                                    "mask_stride_s", "mask_col_step")]
        tag = f"s{S1}x{S2}_" + "x".join(map(str, shape))
        cases[tag] = (" ".join([tag] + _ints(q.shape) + _ints(k.shape) + _ints(v.shape) +
                               _ints(view.tensor.shape) + [str(N1), "1"]), want, S2)
    r = subprocess.run([str(exe)], input="\n".join(c for c, _, _ in cases.values()) + "\n", capture_output=True,
                       text=True, check=True, timeout=60)
    got = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines()}
    for tag, (_, want, S2) in cases.items():
        have = [int(x) for x in got[tag]]
        assert have[:5] == want[:5], (tag, have, want)
        # S2 = 128: the op reads the 128-byte rows with column step 1 (it cannot tell them from a full mask); the
        # same bytes either way
        assert have[5] == (1 if S2 == twin_backend.COLUMN_BROADCAST_WIDTH else want[5]), (tag, have, want)
        if tag.endswith("x1"):  # column-broadcast: 128-byte rows read with column step 0, never S2 columns
            assert want[4] == twin_backend.COLUMN_BROADCAST_WIDTH and (S2 == 128 or have[5] == 0), (tag, have)


def test_column_broadcast_width_is_the_twin_width():
    hdr = (ROOT / "op_host" / "cann" / "fa_op_args.h").read_text()
    assert re.search(r"constexpr int64_t kColumnBroadcastWidth = (\d+);", hdr).group(1) == \
        str(twin_backend.COLUMN_BROADCAST_WIDTH)
    src = (ROOT / "csrc" / "npu_adapter.cpp").read_text()
    assert "fa::kColumnBroadcastWidth" in src and "s2})" not in src  # never widened to S2 columns


def test_adapter_runs_every_launch_the_grad_tiling_returns():
    src = (ROOT / "csrc" / "npu_adapter.cpp").read_text()
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
