// AscendC::printf / PRINTF (utils/debug/asc_printf.h) and the twin's print sink. The NPU prints every printf line
// with the core's "[AIV Block i/N] " prefix; the twin does the same, collecting the lines of all cores (under a lock,
// one line never split between cores) in a per-library sink that the Python launcher reads after each launch
// (twin_print_output) and echoes to sys.stdout. Only the documented conversions are accepted: %d %i %ld %li %lld
// %lli, %u %lu %llu, %x %lx %llx, %f %F, %s, %p; no flags, widths or precisions, no escape character but \n.
// A call whose output exceeds the 30 KB print limit (the NPU silently drops it) fails, as do an argument that does not
// fit its conversion and a wrong argument count. A pointer given to an integer conversion prints its address on the
// device (an on-core pointer: its byte offset in that memory), as the NPU's printf prints the address bits. (An
// unqualified printf("text") without arguments resolves to the C library's, which the twin does not capture: write
// AscendC::printf or PRINTF.)
#pragma once
#include <map>
#include <string>
#include <type_traits>

#include "twin/launch/runtime.h"

namespace twin {

constexpr size_t kPrintLimitBytes = 30 * 1024;  // simd_printf_fifo_size_per_core default

struct PrintSink {
    std::mutex mu;
    std::string text;
    // Per core: its prefix and the start of a line that its printf calls have not finished yet.
    std::map<const CoreState*, std::pair<std::string, std::string>> partial;
};
inline PrintSink& Sink() {
    static PrintSink s;
    return s;
}

// The NPU's printf prefix: AIV index over all vector cores of the launch, AIC index over the cube cores.
inline std::string PrintPrefix(const CoreState& c) {
    char buf[64];
    if (c.coreType == AscendC::AIC) {
        std::snprintf(buf, sizeof buf, "[AIC Block %lld/%lld] ", (long long)c.blockIdx, (long long)c.blockNum);
    } else {
        std::snprintf(buf, sizeof buf, "[AIV Block %lld/%lld] ", (long long)c.apiBlockIdx,
                      (long long)(c.blockNum * c.subBlockNum));
    }
    return buf;
}

// Appends text to the sink. With `prefixed`, each line gets the current core's prefix and goes in whole once its
// '\n' arrives, so lines of different cores never mix; without, the text goes in at once (whole DumpTensor lines).
inline void EmitOutput(const std::string& s, bool prefixed) {
    if (s.empty()) return;
    PrintSink& k = Sink();
    std::lock_guard<std::mutex> g(k.mu);
    if (!prefixed || tCore == nullptr) {
        k.text += s;
        return;
    }
    auto& part = k.partial[tCore];
    if (part.first.empty()) part.first = PrintPrefix(*tCore);
    for (size_t i = 0; i < s.size();) {
        size_t e = s.find('\n', i);
        e = e == std::string::npos ? s.size() : e + 1;
        part.second.append(s, i, e - i);
        if (s[e - 1] == '\n') {
            k.text += part.first + part.second;
            part.second.clear();
        }
        i = e;
    }
}

// Everything printed so far, unfinished lines last.
inline std::string PrintedText() {
    PrintSink& k = Sink();
    std::lock_guard<std::mutex> g(k.mu);
    for (auto& [core, part] : k.partial) {
        if (!part.second.empty()) k.text += part.first + part.second;
    }
    k.partial.clear();
    return k.text;
}

inline void ClearPrinted() {
    PrintSink& k = Sink();
    std::lock_guard<std::mutex> g(k.mu);
    k.text.clear();
    k.partial.clear();
}

// One printf argument, classified by its C++ type.
struct PrintArg {
    enum Kind : uint8_t { Int, UInt, Float, Str, Ptr } kind;
    uint8_t bits;  // integer width
    int64_t i;
    uint64_t u;
    double f;
    const void* p;
};

template <typename A>
inline PrintArg MakePrintArg(const A& v) {
    using T = std::decay_t<A>;
    PrintArg a{};
    if constexpr (std::is_enum_v<T>) {
        return MakePrintArg(static_cast<std::underlying_type_t<T>>(v));
    } else if constexpr (std::is_integral_v<T>) {
        a.bits = (uint8_t)(sizeof(T) * 8);
        if constexpr (std::is_signed_v<T>) {
            a.kind = PrintArg::Int;
            a.i = (int64_t)v;
            a.u = (uint64_t)a.i;
        } else {
            a.kind = PrintArg::UInt;
            a.u = (uint64_t)v;
            a.i = (int64_t)a.u;
        }
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) {
        a.kind = PrintArg::Float;
        a.f = (double)(float)v;
        if constexpr (std::is_same_v<T, double>) a.f = v;
    } else if constexpr (std::is_same_v<T, const char*> || std::is_same_v<T, char*>) {
        a.kind = PrintArg::Str;
        a.p = v;
    } else {
        static_assert(std::is_pointer_v<T>, "printf takes integers, float/half/bfloat16_t, strings and pointers");
        a.kind = PrintArg::Ptr;
        a.bits = 64;
        a.p = (const void*)v;
    }
    return a;
}

// A pointer printed through an integer conversion (%lu of GetPhyAddr()): on the NPU an on-core address is a byte
// offset in its memory (UB, L1, ...), so the twin prints that; any other address (GM) as the integer it is.
inline uint64_t DeviceAddress(const void* p) {
    const uint8_t* q = static_cast<const uint8_t*>(p);
    if (tCore != nullptr) {
        for (int m = 0; m < (int)Mem::GM; ++m) {
            const std::vector<uint8_t>& mem = tCore->mem[m];
            if (!mem.empty() && q >= mem.data() && q < mem.data() + mem.size()) return (uint64_t)(q - mem.data());
        }
    }
    return (uint64_t)(uintptr_t)p;
}

inline const char* PrintKindName(PrintArg::Kind k) {
    static const char* n[] = {"a signed integer", "an unsigned integer", "a floating-point value", "a string", "a pointer"};
    return n[k];
}

// Formats fmt with args as the dav-2201 printf does; `api` names the caller in errors.
inline std::string FormatPrint(const char* api, const char* fmt, const PrintArg* args, size_t nargs) {
    if (fmt == nullptr) Fail(api, "format string is a null pointer");
    std::string out;
    size_t next = 0;
    char buf[400];  // enough for any double in %f
    for (const char* p = fmt; *p != '\0'; ++p) {
        const unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 && ch != '\n') {
            Fail(api, "format string has the control character 0x%02x at offset %lld; printf supports no escape "
                      "character but \\n", ch, (long long)(p - fmt));
        }
        if (ch != '%') {
            out += *p;
            continue;
        }
        const char* spec = p++;
        int longs = 0;
        while (*p == 'l' && longs < 2) ++longs, ++p;
        const char conv = *p;
        const bool intConv = conv == 'd' || conv == 'i' || conv == 'u' || conv == 'x';
        if (!(intConv || (longs == 0 && (conv == 'f' || conv == 'F' || conv == 's' || conv == 'p')))) {
            const int len = conv == '\0' ? (int)(p - spec) : (int)(p - spec) + 1;
            Fail(api, "format specifier '%.*s' at offset %lld is not supported (dav-2201 printf takes %%d %%i %%u %%x "
                      "with an optional l or ll, %%f %%F %%s %%p; no flags, width or precision)",
                 len, spec, (long long)(spec - fmt));
        }
        const long long idx = (long long)next;
        if (next >= nargs) Fail(api, "format specifier %lld ('%.*s') has no argument (%zu given)", idx + 1,
                                (int)(p - spec) + 1, spec, nargs);
        const PrintArg& a = args[next++];
        auto wrong = [&](const char* want) {
            Fail(api, "argument %lld for '%.*s' is %s, expected %s", idx + 1, (int)(p - spec) + 1, spec,
                 PrintKindName(a.kind), want);
        };
        if (intConv) {
            if (a.kind != PrintArg::Int && a.kind != PrintArg::UInt && a.kind != PrintArg::Ptr) wrong("an integer");
            const uint64_t mask = a.bits >= 64 ? ~0ull : ((1ull << a.bits) - 1);
            const uint64_t raw = (a.kind == PrintArg::Ptr ? DeviceAddress(a.p) : a.u) & mask;  // the argument's bits
            if (conv == 'x') {
                std::snprintf(buf, sizeof buf, "%llx", (unsigned long long)raw);
            } else if (conv == 'u') {
                std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)raw);
            } else {
                const uint64_t sign = 1ull << (a.bits - 1);
                const int64_t s = (int64_t)((raw ^ sign) - sign);  // sign-extend from the argument's width
                std::snprintf(buf, sizeof buf, "%lld", (long long)s);
            }
            out += buf;
        } else if (conv == 'f' || conv == 'F') {
            if (a.kind != PrintArg::Float) wrong("float, half or bfloat16_t");
            std::snprintf(buf, sizeof buf, conv == 'f' ? "%f" : "%F", a.f);
            out += buf;
        } else if (conv == 's') {
            if (a.kind != PrintArg::Str) wrong("a string");
            out += a.p ? (const char*)a.p : "(null)";
        } else {
            if (a.kind != PrintArg::Ptr && a.kind != PrintArg::Str) wrong("a pointer");
            std::snprintf(buf, sizeof buf, "%p", a.p);
            out += buf;
        }
        if (out.size() > kPrintLimitBytes) break;
    }
    if (next < nargs) Fail(api, "%zu arguments given but the format string uses %zu", nargs, next);
    if (out.size() > kPrintLimitBytes) {
        Fail(api, "one call prints more than the %zu-byte print limit (the NPU would print nothing)", kPrintLimitBytes);
    }
    return out;
}

template <class... Args>
inline std::string FormatArgs(const char* api, const char* fmt, Args&&... args) {
    const PrintArg a[sizeof...(Args) + 1] = {MakePrintArg(args)..., PrintArg{}};
    return FormatPrint(api, fmt, a, sizeof...(Args));
}

// A C varargs value for the host path (half / bfloat16_t travel as double, as float does).
template <typename A>
inline auto CVararg(const A& v) {
    using T = std::decay_t<A>;
    if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) return (double)(float)v;
    else return v;
}

// On a core: the dav-2201 printf into the sink. Outside a kernel (host code that sees AscendC::printf through a
// using-directive, as in CANN's CPU mode): the C library's printf, unchanged.
template <class... Args>
inline void PrintImpl(const char* api, const char* fmt, Args&&... args) {
#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0)
    if (tCore == nullptr) {
        std::printf(fmt, CVararg(args)...);
        return;
    }
    const std::string s = FormatArgs(api, fmt, args...);
    Trace(api, PIPE_S, 0, s.size(), 1, nullptr, nullptr);
    EmitOutput(s, true);
#endif
}

}  // namespace twin

namespace AscendC {

template <class... Args>
inline void printf(__gm__ const char* fmt, Args&&... args) {
    twin::PrintImpl("printf", fmt, args...);
}

template <class... Args>
inline void PRINTF(__gm__ const char* fmt, Args&&... args) {
    twin::PrintImpl("PRINTF", fmt, args...);
}

}  // namespace AscendC

// Read by npu_flash_attn.twin after a launch (emitted even though inline, so ctypes finds them).
extern "C" __attribute__((used, visibility("default"))) inline const char* twin_print_output() {
    static thread_local std::string out;
    out = twin::PrintedText();
    return out.c_str();
}
extern "C" __attribute__((used, visibility("default"))) inline void twin_print_clear() { twin::ClearPrinted(); }
