// The per-render budget: steps, time, bytes, output and depth, charged through a thread-local pointer.
#include "runtime/chat/limits.hpp"

#include "runtime/chat/value.hpp"

namespace sluice::chat {
namespace {

thread_local render_budget* current_budget = nullptr;

// The clock is read once per this many steps.
constexpr std::uint64_t clock_period = 4096;

} // namespace

void fail_limit(const std::string& name, std::uint64_t limit, const std::string& what) {
    fail("the template exceeded " + name + " = " + std::to_string(limit) + " (" + what + ")", limit_error_kind);
}

render_budget::render_budget(const template_limits& limits)
    : limits_(limits), deadline_(std::chrono::steady_clock::now() + limits.max_time), previous_(current_budget) {
    current_budget = this;
}

render_budget::~render_budget() {
    // Empty every namespace first: a cycle or chain through them then falls apart one level at a time.
    for (auto& ns : namespaces_) {
        auto items = std::move(ns->items);
        ns->items.clear();
    }
    namespaces_.clear();
    current_budget = previous_;
}

render_budget* render_budget::current() noexcept {
    return current_budget;
}

void render_budget::step(std::uint64_t n) {
    std::uint64_t before = steps_;
    steps_ += n;
    if (steps_ > limits_.max_steps)
        fail_limit("max_steps", limits_.max_steps, "evaluation steps");
    if (before / clock_period != steps_ / clock_period && std::chrono::steady_clock::now() > deadline_)
        fail_limit("max_time", static_cast<std::uint64_t>(limits_.max_time.count()), "milliseconds of rendering");
}

void render_budget::charge(std::size_t bytes) {
    if (bytes > limits_.max_value_bytes)
        fail_limit("max_value_bytes", limits_.max_value_bytes, "bytes in one string or list");
    bytes_ += bytes;
    if (bytes_ > limits_.max_bytes)
        fail_limit("max_bytes", limits_.max_bytes, "bytes of values created");
    // Creating a value costs time in proportion to its size: one step per 256 bytes.
    step(1 + bytes / 256);
}

void render_budget::check_output(std::size_t size) const {
    if (size > limits_.max_output_bytes)
        fail_limit("max_output_bytes", limits_.max_output_bytes, "bytes of rendered text");
}

void render_budget::keep_namespace(std::shared_ptr<value_dict> ns) {
    namespaces_.push_back(std::move(ns));
}

depth_guard::depth_guard() : budget_(current_budget) {
    if (!budget_)
        return;
    if (++budget_->depth_ > budget_->limits_.max_depth) {
        --budget_->depth_;
        fail_limit("max_depth", budget_->limits_.max_depth, "nested statements, expressions and calls");
    }
}

depth_guard::~depth_guard() {
    if (budget_)
        --budget_->depth_;
}

const template_limits& active_limits() noexcept {
    static const template_limits defaults;
    return current_budget ? current_budget->limits() : defaults;
}

void budget_step(std::uint64_t n) {
    if (current_budget)
        current_budget->step(n);
}

void budget_charge(std::size_t bytes) {
    if (current_budget)
        current_budget->charge(bytes);
}

void check_growth(std::size_t bytes) {
    const template_limits& l = active_limits();
    if (bytes > l.max_value_bytes)
        fail_limit("max_value_bytes", l.max_value_bytes, "bytes in one string or list");
}

} // namespace sluice::chat
