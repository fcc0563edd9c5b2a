// The sandbox of template rendering: limits on steps, time, memory, output and depth, and the per-render
// budget that enforces them. A chat template comes from a model file and is untrusted input.
#pragma once

#include "sluice/model_options.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::chat {

struct value_dict;

/// What one render (and one parse) of a template may use (public: sluice::template_limits).
using template_limits = sluice::template_limits;

/// The resources one render has used. Constructing it makes it the current budget of the calling thread
/// (values, builtins and the evaluator charge it without being handed it); destruction restores the
/// previous one. Not thread-safe: one budget belongs to one render on one thread.
class render_budget {
public:
    explicit render_budget(const template_limits& limits);
    ~render_budget();
    render_budget(const render_budget&) = delete;
    render_budget& operator=(const render_budget&) = delete;

    /// The budget of the render running on this thread, or nullptr.
    static render_budget* current() noexcept;
    const template_limits& limits() const noexcept { return limits_; }

    /// Counts `n` evaluation steps; fails on max_steps or max_time.
    void step(std::uint64_t n = 1);
    /// Counts a new value of `bytes`; fails on max_value_bytes or max_bytes.
    void charge(std::size_t bytes);
    /// Fails when rendered text of `size` bytes exceeds max_output_bytes.
    void check_output(std::size_t size) const;
    /// Keeps a namespace alive until the render ends, then empties it: namespaces are the only mutable values,
    /// so the only way to a cycle (`set ns.x = ns`) or to an unbounded chain; emptying them all frees both
    /// without recursion.
    void keep_namespace(std::shared_ptr<value_dict> ns);

    std::uint64_t steps() const noexcept { return steps_; }
    std::uint64_t bytes() const noexcept { return bytes_; }

private:
    friend class depth_guard;
    template_limits limits_;
    std::chrono::steady_clock::time_point deadline_;
    std::uint64_t steps_ = 0;
    std::uint64_t bytes_ = 0;
    unsigned depth_ = 0;
    std::vector<std::shared_ptr<value_dict>> namespaces_;
    render_budget* previous_;
};

/// Counts one level of evaluation nesting for its lifetime; fails past max_depth. No-op without a budget.
class depth_guard {
public:
    depth_guard();
    ~depth_guard();
    depth_guard(const depth_guard&) = delete;
    depth_guard& operator=(const depth_guard&) = delete;

private:
    render_budget* budget_;
};

/// The limits in force on this thread: the current budget's, or the defaults.
const template_limits& active_limits() noexcept;
/// Steps on the current budget, if any.
void budget_step(std::uint64_t n = 1);
/// Charges a new value on the current budget, if any.
void budget_charge(std::size_t bytes);
/// Fails when a string or list being built has grown to `bytes`, past max_value_bytes (call inside loops that
/// append, before the result becomes a value).
void check_growth(std::size_t bytes);

/// Throws the TemplateLimitError for limit `name` (value `limit`), e.g. "max_steps".
[[noreturn]] void fail_limit(const std::string& name, std::uint64_t limit, const std::string& what);

/// The Python exception name of limit errors, so callers can tell them from template bugs.
inline constexpr const char* limit_error_kind = "TemplateLimitError";

} // namespace sluice::chat
