// The kernel entries compiled into the extension (op_kernel/), as the twin launches them: every GM_ADDR a byte
// pointer, in each entry's argument order.
#pragma once
#include <cstdint>

extern "C" void flash_attention_fwd(uint8_t* query, uint8_t* key, uint8_t* value, uint8_t* attenMask,
                                    uint8_t* blockMap, uint8_t* seqInfo, uint8_t* sink, uint8_t* alibiSlopes,
                                    uint8_t* pse, uint8_t* dropoutMask, uint8_t* attentionOut,
                                    uint8_t* softmaxMax, uint8_t* softmaxSum, uint8_t* workspace, uint8_t* tiling);
extern "C" void flash_attention_block_map(uint8_t* attenMask, uint8_t* seqInfo, uint8_t* blockMap, uint8_t* workspace,
                                          uint8_t* tiling);
extern "C" void flash_attention_bwd(uint8_t* query, uint8_t* key, uint8_t* value, uint8_t* dy, uint8_t* attentionIn,
                                    uint8_t* softmaxMax, uint8_t* softmaxSum, uint8_t* attenMask, uint8_t* blockMap,
                                    uint8_t* seqInfo, uint8_t* sink, uint8_t* alibiSlopes, uint8_t* pse, uint8_t* dropoutMask, uint8_t* dq,
                                    uint8_t* dk, uint8_t* dv,
                                    uint8_t* dsinkRows, uint8_t* dpseRows, uint8_t* workspace, uint8_t* tiling);
