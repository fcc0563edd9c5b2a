// Integer arithmetic of templates with Python's results or an OverflowError: jinja2 computes on unbounded
// integers, so a result that does not fit in 64 bits can only be wrong, never wrapped silently.
#pragma once

#include "runtime/chat/value.hpp"

#include <cstdint>
#include <string>

namespace sluice::chat {

/// Raises the OverflowError for `a op b`.
[[noreturn]] inline void fail_overflow(std::int64_t a, const char* op, std::int64_t b) {
    fail("integer overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
             " does not fit in 64 bits (template integers are 64-bit; jinja2's are unbounded)",
         "OverflowError");
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
        fail_overflow(a, "+", b);
    return r;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_sub_overflow(a, b, &r))
        fail_overflow(a, "-", b);
    return r;
}

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
        fail_overflow(a, "*", b);
    return r;
}

/// Python's a // b (rounds toward negative infinity); b != 0. INT64_MIN // -1 overflows.
inline std::int64_t checked_floordiv(std::int64_t a, std::int64_t b) {
    if (b == -1)
        return checked_sub(0, a);
    std::int64_t q = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0)))
        --q;
    return q;
}

/// Python's a % b (the sign of b); b != 0. Never overflows: x % -1 is 0.
inline std::int64_t checked_mod(std::int64_t a, std::int64_t b) {
    if (b == -1)
        return 0;
    std::int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}

/// Python's a ** b for b >= 0, by squaring (at most 64 rounds whatever b is).
inline std::int64_t checked_pow(std::int64_t a, std::int64_t b) {
    std::int64_t result = 1;
    std::int64_t base = a;
    std::int64_t e = b;
    while (e > 0) {
        if (e & 1) {
            if (__builtin_mul_overflow(result, base, &result))
                fail_overflow(a, "**", b);
        }
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base))
            fail_overflow(a, "**", b);
    }
    return result;
}

/// A float converted to int as Python's int(x) does (toward zero), or an OverflowError / ValueError.
inline std::int64_t checked_float_to_int(double d) {
    if (d != d)
        fail("cannot convert float NaN to integer", "ValueError");
    // 2^63 is exactly representable; every double below it in magnitude truncates into range.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        fail("integer overflow: the float " + float_repr(d) + " does not fit in a 64-bit integer", "OverflowError");
    return static_cast<std::int64_t>(d);
}

} // namespace sluice::chat
