// Internal helper for the GGUF layer: early return of a failed sluice::result.
#pragma once

#define SLUICE_GGUF_CONCAT_INNER(a, b) a##b
#define SLUICE_GGUF_CONCAT(a, b) SLUICE_GGUF_CONCAT_INNER(a, b)

/// `SLUICE_GGUF_TRY(auto x, f());` declares x from f()'s value or returns f()'s error.
#define SLUICE_GGUF_TRY(decl, expr) SLUICE_GGUF_TRY_IMPL(decl, expr, SLUICE_GGUF_CONCAT(try_result_, __LINE__))
#define SLUICE_GGUF_TRY_IMPL(decl, expr, tmp)                                                                          \
    auto tmp = (expr);                                                                                                 \
    if (!tmp) {                                                                                                        \
        return std::move(tmp).error();                                                                                 \
    }                                                                                                                  \
    decl = std::move(*tmp)

/// `SLUICE_GGUF_CHECK(f());` returns f()'s error when f() (a result<void>) failed.
#define SLUICE_GGUF_CHECK(expr)                                                                                        \
    do {                                                                                                               \
        if (auto try_check_ = (expr); !try_check_) {                                                                   \
            return std::move(try_check_).error();                                                                      \
        }                                                                                                              \
    } while (false)
