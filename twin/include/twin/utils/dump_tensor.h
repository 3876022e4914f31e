// DumpTensor (basic_api/kernel_operator_dump_tensor_intf.h), the forms without ShapeInfo: prints dumpSize elements of
// a UB / L1 / L0C LocalTensor or of a GlobalTensor through the print sink, in the documented layout
//   DumpTensor: desc=5, addr=0x0, data_type=float16, position=UB, dump_size=32
//   [19.000000, 4.000000, ...]
// addr is the byte address in the tensor's buffer (GM: the pointer). On dav-2201 the dump runs between two PIPE_ALL
// barriers, so it is traced as barrier, dump, barrier. A dump larger than the 30 KB print limit fails (the NPU would
// print nothing), as do a dump past the tensor and a tensor in L0A/L0B/BT/FB, which dav-2201 cannot dump.
#pragma once
#include "twin/memory/tensor.h"
#include "twin/utils/print.h"

namespace twin {

template <typename T>
constexpr const char* DumpTypeName() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8";
    else if constexpr (std::is_same_v<T, uint8_t>) return "uint8";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16";
    else if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
    else if constexpr (std::is_same_v<T, int32_t>) return "int32";
    else if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, int64_t>) return "int64";
    else if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
    else if constexpr (std::is_same_v<T, half>) return "float16";
    else if constexpr (std::is_same_v<T, bfloat16_t>) return "bfloat16";
    else if constexpr (std::is_same_v<T, float>) return "float32";
    else return nullptr;
}

template <typename T>
inline void DumpValues(const char* api, const char* position, uint64_t addr, const uint8_t* data, uint32_t desc,
                       uint32_t dumpSize) {
    constexpr const char* type = DumpTypeName<T>();
    static_assert(type != nullptr, "DumpTensor on dav-2201 takes bool, (u)int8/16/32/64, half, bfloat16_t or float");
    const uint64_t bytes = ((uint64_t)dumpSize * sizeof(T) + 31) / 32 * 32;
    if (bytes > kPrintLimitBytes) {
        Fail(api, "dump of %u elements (%llu bytes) exceeds the %zu-byte print limit (the NPU would print nothing)",
             dumpSize, (unsigned long long)bytes, kPrintLimitBytes);
    }
    char buf[400];
    std::snprintf(buf, sizeof buf, "DumpTensor: desc=%u, addr=0x%llx, data_type=%s, position=%s, dump_size=%u\n[", desc,
                  (unsigned long long)addr, type, position, dumpSize);
    std::string s = buf;
    for (uint32_t i = 0; i < dumpSize; ++i) {
        T v;
        std::memcpy(&v, data + (uint64_t)i * sizeof(T), sizeof(T));
        if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) std::snprintf(buf, sizeof buf, "%lld", (long long)v);
        else if constexpr (std::is_integral_v<T>) std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
        else std::snprintf(buf, sizeof buf, "%f", (double)(float)v);
        s += i ? ", " : "";
        s += buf;
    }
    s += "]\n";
    Trace("PipeBarrier", PIPE_ALL, 0, 0, 0, nullptr, nullptr, TraceKind::Barrier);
    Trace(api, PIPE_S, dumpSize, dumpSize * sizeof(T), 1, nullptr, data);
    Trace("PipeBarrier", PIPE_ALL, 0, 0, 0, nullptr, nullptr, TraceKind::Barrier);
    EmitOutput(s, false);
}

}  // namespace twin

namespace AscendC {

template <typename T>
__aicore__ inline void DumpTensor(const LocalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize) {
#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0)
    const char* api = "DumpTensor";
    if (!tensor.Valid()) twin::Fail(api, "tensor is not allocated");
    const twin::Mem m = tensor.Phys();
    if (m != twin::Mem::UB && m != twin::Mem::L1 && m != twin::Mem::L0C) {
        twin::Fail(api, "a tensor at position %s (%s) cannot be dumped on dav-2201 (UB, L1, L0C or GM only)",
                   twin::PositionName(tensor.Pos()), twin::MemName(m));
    }
    twin::CheckAlign(api, "tensor", tensor, 32);
    if ((uint64_t)dumpSize * sizeof(T) > tensor.GetLength()) {
        twin::Fail(api, "dumpSize %u elements is past the tensor's %u elements", dumpSize, tensor.GetLength() / (uint32_t)sizeof(T));
    }
    twin::DumpValues<T>(api, twin::MemName(m), tensor.Addr(api), tensor.Ptr(), desc, dumpSize);
#endif
}

template <typename T>
__aicore__ inline void DumpTensor(const GlobalTensor<T>& tensor, uint32_t desc, uint32_t dumpSize) {
#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0)
    const char* api = "DumpTensor";
    tensor.CheckElems(api, 0, dumpSize);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(tensor.GetPhyAddr());
    twin::DumpValues<T>(api, "GM", (uint64_t)(uintptr_t)p, p, desc, dumpSize);
#endif
}

}  // namespace AscendC
