// Host functions of the FlashAttention operators (flash_attention_def.cpp and flash_attention_infer_def.cpp bind them
// to the OpDefs): TilingFuncs in flash_attention[_infer]_tiling_func.cpp, InferShape/InferDataType in
// flash_attention[_infer]_infershape.cpp.
#pragma once
#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/ge_error_codes.h"

namespace optiling {
ge::graphStatus TilingFlashAttentionNpuFa(gert::TilingContext* context);
ge::graphStatus TilingFlashAttentionNpuFaBlockMap(gert::TilingContext* context);
ge::graphStatus TilingFlashAttentionNpuFaGrad(gert::TilingContext* context);
ge::graphStatus TilingFlashAttentionNpuFaInfer(gert::TilingContext* context);
ge::graphStatus TilingFlashAttentionNpuFaInferCombine(gert::TilingContext* context);
}  // namespace optiling

namespace ops {
ge::graphStatus InferShapeFlashAttentionNpuFa(gert::InferShapeContext* context);
ge::graphStatus InferShapeFlashAttentionNpuFaBlockMap(gert::InferShapeContext* context);
ge::graphStatus InferShapeFlashAttentionNpuFaGrad(gert::InferShapeContext* context);
ge::graphStatus InferDataTypeFlashAttentionNpuFa(gert::InferDataTypeContext* context);
ge::graphStatus InferDataTypeFlashAttentionNpuFaBlockMap(gert::InferDataTypeContext* context);
ge::graphStatus InferDataTypeFlashAttentionNpuFaGrad(gert::InferDataTypeContext* context);
ge::graphStatus InferShapeFlashAttentionNpuFaInfer(gert::InferShapeContext* context);
ge::graphStatus InferShapeFlashAttentionNpuFaInferCombine(gert::InferShapeContext* context);
ge::graphStatus InferDataTypeFlashAttentionNpuFaInfer(gert::InferDataTypeContext* context);
ge::graphStatus InferDataTypeFlashAttentionNpuFaInferCombine(gert::InferDataTypeContext* context);
}  // namespace ops
