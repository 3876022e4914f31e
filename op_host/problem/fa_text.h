// Python's spelling of values in the problem rules' messages (the messages are the Python package's contract:
// tests match them), so a rule reads the same whichever backend refuses the call.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace npu_fa {
namespace text {

// repr(tuple(v)): "(2, 3)", "(5,)", "()".
inline std::string Tuple(const std::vector<int64_t>& v) {
    std::string r = "(";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
    return r + (v.size() == 1 ? ",)" : ")");
}

// repr(list(v)): "[2, 3]".
inline std::string List(const std::vector<int64_t>& v) {
    std::string r = "[";
    for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
    return r + "]";
}

// repr(str): 'BSH'.
inline std::string Repr(const std::string& s) { return "'" + s + "'"; }

// repr(float): the shortest round-trip digits, fixed notation for exponents in [-4, 16), else d.ddde+XX.
inline std::string Float(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    const std::string sci(buf, res.ptr);
    const size_t e = sci.find('e');
    const bool neg = sci[0] == '-';
    std::string digits;
    for (size_t i = neg ? 1 : 0; i < e; ++i) {
        if (sci[i] != '.') digits += sci[i];
    }
    const int exp = std::atoi(sci.c_str() + e + 1);
    std::string r = neg ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            r += "0." + std::string((size_t)(-exp - 1), '0') + digits;
        } else if ((size_t)exp + 1 >= digits.size()) {
            r += digits + std::string((size_t)exp + 1 - digits.size(), '0') + ".0";
        } else {
            r += digits.substr(0, (size_t)exp + 1) + "." + digits.substr((size_t)exp + 1);
        }
        return r;
    }
    r += digits.substr(0, 1);
    if (digits.size() > 1) r += "." + digits.substr(1);
    char ex[16];
    std::snprintf(ex, sizeof(ex), "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return r + ex;
}

// format(v, ".Ng") (C's %g agrees with Python's for these).
inline std::string G(double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    return buf;
}

inline std::string Uint(unsigned __int128 v) {
    if (v == 0) return "0";
    std::string r;
    while (v != 0) {
        r.insert(r.begin(), (char)('0' + (int)(v % 10)));
        v /= 10;
    }
    return r;
}

}  // namespace text
}  // namespace npu_fa
