// The page gather of the naive decode baseline (python/npu_flash_attn/tools/baseline.py), as an eager framework
// indexes a paged cache with its block table (cache[block_table]) before the matmuls can read it contiguously:
//   dst[b, h, j * block : (j + 1) * block, :] = cache[table[b, j], h, :, :]
// for a cache (blocks, heads, block, D) and table [batch, pages]; one unit = one (b, h, j) page of one head,
// `chunk` = block * D fp16 elements (a multiple of 16: 32 B DataCopy blocks), contiguous in both tensors.
// KERNEL_TYPE_AIV_ONLY; every vector core takes a contiguous range of units; pieces of kPiece elements go GM -> UB ->
// GM through a double-buffered TQueBind (the read of the next piece overlaps the write of this one).
// p (int32 GM): batch, heads, pages, chunk, blocks (the cache's).
#include "kernel_operator.h"

using namespace AscendC;

namespace {

constexpr uint32_t kPiece = 16384;  // fp16 elements per UB piece (32 KB)

__aicore__ inline uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }

}  // namespace

extern "C" __global__ __aicore__ void gather_pages(GM_ADDR prm, GM_ADDR cache, GM_ADDR table, GM_ADDR dst) {
    GlobalTensor<int32_t> P;
    P.SetGlobalBuffer((__gm__ int32_t*)prm, 5);
    const uint64_t batch = (uint32_t)P.GetValue(0), heads = (uint32_t)P.GetValue(1), pages = (uint32_t)P.GetValue(2);
    const uint32_t chunk = (uint32_t)P.GetValue(3);
    const uint64_t blocks = (uint32_t)P.GetValue(4);
    const uint64_t units = batch * heads * pages;
    GlobalTensor<int32_t> T;
    T.SetGlobalBuffer((__gm__ int32_t*)table, batch * pages);
    GlobalTensor<half> src, out;
    src.SetGlobalBuffer((__gm__ half*)cache, blocks * heads * chunk);
    out.SetGlobalBuffer((__gm__ half*)dst, units * chunk);
    TPipe pipe;
    TQueBind<TPosition::VECIN, TPosition::VECOUT, 2> q;
    pipe.InitBuffer(q, 2, kPiece * sizeof(half));
    const uint64_t per = (units + GetBlockNum() - 1) / GetBlockNum();
    const uint64_t u0 = GetBlockIdx() * per < units ? GetBlockIdx() * per : units;
    const uint64_t u1 = u0 + per < units ? u0 + per : units;
    for (uint64_t u = u0; u < u1; ++u) {
        const uint64_t j = u % pages, h = (u / pages) % heads, b = u / (pages * heads);
        const uint64_t from = ((uint64_t)T.GetValue(b * pages + j) * heads + h) * chunk;
        for (uint32_t c0 = 0; c0 < chunk; c0 += kPiece) {
            const uint32_t n = Min(kPiece, chunk - c0);
            LocalTensor<half> x = q.AllocTensor<half>();
            DataCopy(x, src[from + c0], n);
            q.EnQue(x);
            LocalTensor<half> y = q.DeQue<half>();
            DataCopy(out[u * chunk + c0], y, n);
            q.FreeTensor(y);
        }
    }
}
