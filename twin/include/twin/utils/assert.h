// assert / ascendc_assert (utils/debug/asc_assert.h): assert(expr) or assert(expr, fmt, args...). A failed assertion
// prints "[ASSERT] file:line: Assertion `expr' <message>" through the print sink, as the NPU does, and then fails
// the launch with a TwinError naming the core, the expression and the message, instead of aborting the process.
// As in the real header, these macros replace <cassert>'s assert for the code that follows, and are empty with
// NDEBUG or ASCENDC_DUMP=0. (A later #include <cassert> restores the standard macro, as it does with CANN.)
#pragma once
#include <cassert>

#include "twin/utils/print.h"

namespace twin {

[[noreturn]] inline void AssertFailedMsg(const char* expr, const char* file, unsigned line, const std::string& msg) {
    std::string text = std::string("[ASSERT] ") + file + ":" + std::to_string(line) + ": Assertion `" + expr + "' " + msg;
    if (text.back() != '\n') text += '\n';
    EmitOutput(text, false);  // unprefixed, as the documented output shows
    std::string m = msg;
    while (!m.empty() && m.back() == '\n') m.pop_back();
    Fail("assert", "Assertion `%s' failed at %s:%u%s%s", expr, file, line, m.empty() ? "" : ": ", m.c_str());
}

[[noreturn]] inline void AssertFailed(const char* expr, const char* file, unsigned line, const char* /*func*/) {
    AssertFailedMsg(expr, file, line, "");
}

template <class... Args>
[[noreturn]] inline void AssertFailed(const char* expr, const char* file, unsigned line, const char* /*func*/,
                                      const char* fmt, Args&&... args) {
    AssertFailedMsg(expr, file, line, FormatArgs("assert", fmt, args...));
}

}  // namespace twin

#undef assert
#undef ascendc_assert
#if !(defined(ASCENDC_DUMP) && ASCENDC_DUMP == 0) && !defined(NDEBUG)
#define TWIN_ASSERT_IMPL(expr, ...) \
    (static_cast<bool>(expr) ? void(0) : ::twin::AssertFailed(#expr, __FILE__, __LINE__, __PRETTY_FUNCTION__, ##__VA_ARGS__))
#define assert(...) TWIN_ASSERT_IMPL(__VA_ARGS__)
#define ascendc_assert(...) TWIN_ASSERT_IMPL(__VA_ARGS__)
#else
#define assert(...)
#define ascendc_assert(...)
#endif
