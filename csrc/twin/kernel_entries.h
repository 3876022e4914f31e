// The kernel entries compiled into the extension (op_kernel/), as the twin launches them: every GM_ADDR a byte
// pointer, in each entry's argument order (fa_kernel_args.h), then workspace and tiling.
#pragma once
#include <cstdint>

#include "fa_kernel_args.h"

extern "C" void flash_attention_fwd(NPU_FA_FWD_INPUTS(NPU_FA_GM_PARAM) NPU_FA_FWD_OUTPUTS(NPU_FA_GM_PARAM)
                                        uint8_t* workspace,
                                    uint8_t* tiling);
extern "C" void flash_attention_block_map(NPU_FA_MAP_INPUTS(NPU_FA_GM_PARAM) NPU_FA_MAP_OUTPUTS(NPU_FA_GM_PARAM)
                                              uint8_t* workspace,
                                          uint8_t* tiling);
extern "C" void flash_attention_bwd(NPU_FA_GRAD_INPUTS(NPU_FA_GM_PARAM) NPU_FA_GRAD_OUTPUTS(NPU_FA_GM_PARAM)
                                        uint8_t* workspace,
                                    uint8_t* tiling);
extern "C" void flash_attention_infer(NPU_FA_INFER_INPUTS(NPU_FA_GM_PARAM) NPU_FA_INFER_OUTPUTS(NPU_FA_GM_PARAM)
                                          uint8_t* workspace,
                                      uint8_t* tiling);
extern "C" void flash_attention_infer_combine(NPU_FA_INFER_COMBINE_INPUTS(NPU_FA_GM_PARAM)
                                                  NPU_FA_INFER_OUTPUTS(NPU_FA_GM_PARAM) uint8_t* workspace,
                                              uint8_t* tiling);
