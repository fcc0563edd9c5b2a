// Template parsing entry point, the globals Hugging Face provides, and rendering with errors as values.
#include "runtime/chat/template.hpp"

#include "runtime/chat/evaluator.hpp"
#include "runtime/chat/lexer.hpp"
#include "runtime/chat/limits.hpp"
#include "runtime/chat/parser.hpp"

namespace sluice::chat {
namespace {

value range_global(call_args& a) {
    std::int64_t start = 0;
    std::int64_t stop = 0;
    std::int64_t step = 1;
    if (a.positional.size() == 1) {
        stop = a.positional[0].as_int();
    } else if (a.positional.size() >= 2) {
        start = a.positional[0].as_int();
        stop = a.positional[1].as_int();
        if (a.positional.size() >= 3)
            step = a.positional[2].as_int();
    } else {
        fail("range expected at least 1 argument, got 0");
    }
    if (step == 0)
        fail("range() arg 3 must not be zero", "ValueError");
    // The item count, computed without overflow (stop - start may not fit in 64 bits), checked first.
    std::uint64_t count = 0;
    if (step > 0 && stop > start) {
        std::uint64_t span = static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start);
        count = (span - 1) / static_cast<std::uint64_t>(step) + 1;
    } else if (step < 0 && start > stop) {
        std::uint64_t span = static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
        std::uint64_t magnitude = 0 - static_cast<std::uint64_t>(step);
        count = (span - 1) / magnitude + 1;
    }
    const std::size_t max_items = active_limits().max_value_bytes / sizeof(value);
    if (count > max_items)
        fail_limit("max_value_bytes", active_limits().max_value_bytes, "range() of more items than one list may hold");
    value_list out;
    out.reserve(static_cast<std::size_t>(count));
    std::int64_t i = start;
    for (std::uint64_t k = 0; k < count; ++k) {
        out.emplace_back(i);
        i = static_cast<std::int64_t>(static_cast<std::uint64_t>(i) +
                                      static_cast<std::uint64_t>(step)); // wraps only past the last item
    }
    return value::make_list(std::move(out));
}

value dict_from_args(call_args& a, bool is_namespace) {
    value d = value::make_dict();
    d.as_dict().is_namespace = is_namespace;
    if (is_namespace) {
        if (auto* budget = render_budget::current())
            budget->keep_namespace(d.dict_ptr());
    }
    for (const auto& p : a.positional) {
        if (!p.is_dict())
            fail("dict() positional argument must be a mapping");
        for (const auto& [k, v] : p.as_dict().items)
            d.as_dict().set(k, v);
    }
    for (const auto& [k, v] : a.keywords)
        d.as_dict().set(k, v);
    return d;
}

value strftime_global(call_args& a, std::optional<std::time_t> fixed) {
    const value* fmt = a.get("format", 0);
    if (!fmt || !fmt->is_string())
        fail("strftime_now() needs a format string");
    std::time_t t = fixed ? *fixed : std::time(nullptr);
    std::tm tm{};
    if (fixed)
        gmtime_r(&t, &tm);
    else
        localtime_r(&t, &tm);
    char buf[512];
    std::size_t n = std::strftime(buf, sizeof buf, fmt->as_string().c_str(), &tm);
    return value(std::string(buf, n));
}

scope_ptr make_globals(const template_options& options) {
    auto g = std::make_shared<scope>();
    g->vars.set("range", value::make_function("range", range_global));
    g->vars.set("namespace", value::make_function("namespace", [](call_args& a) { return dict_from_args(a, true); }));
    g->vars.set("dict", value::make_function("dict", [](call_args& a) { return dict_from_args(a, false); }));
    g->vars.set("raise_exception", value::make_function("raise_exception", [](call_args& a) -> value {
                    const value* m = a.get("message", 0);
                    fail(m ? to_str(*m) : std::string(), "TemplateError");
                }));
    auto fixed = options.fixed_time;
    g->vars.set("strftime_now",
                value::make_function("strftime_now", [fixed](call_args& a) { return strftime_global(a, fixed); }));
    return g;
}

} // namespace

result<jinja_template> jinja_template::parse(std::string_view source, const template_options& options) try {
    auto tokens = tokenize(source, lexer_options{options.trim_blocks, options.lstrip_blocks});
    if (!tokens)
        return tokens.error();
    auto body = parse_tokens(*tokens, options.limits.max_depth);
    if (!body)
        return body.error();
    if (auto checked = check_names(*body); !checked)
        return checked.error();
    jinja_template t;
    t.body_ = std::make_shared<const stmt_list>(std::move(*body));
    t.options_ = options;
    return t;
} catch (const std::bad_alloc&) {
    return make_error(std::errc::not_enough_memory, "MemoryError: out of memory while parsing the template");
} catch (const std::exception& e) {
    // A library error escaping the lexer or parser (a bug, not the template's fault) fails only this parse.
    return make_error(std::errc::invalid_argument, std::string("InternalError: ") + e.what());
}

result<std::string> jinja_template::render(const value& variables) const {
    try {
        // Declared first so that it outlives every value of this render (it empties the namespaces last).
        render_budget budget(options_.limits);
        auto globals = make_globals(options_);
        auto top = std::make_shared<scope>();
        top->parent = globals;
        if (variables.is_dict())
            top->vars.items = variables.as_dict().items;
        evaluator ev(body_);
        std::string out;
        ev.render(*body_, top, out);
        // Macros hold weak references to their scope; clearing breaks nothing and frees cycles early.
        top->vars.items.clear();
        return out;
    } catch (const template_error& e) {
        return make_error(std::errc::invalid_argument, e.kind() + ": " + e.what());
    } catch (const std::bad_alloc&) {
        return make_error(std::errc::not_enough_memory, "MemoryError: out of memory while rendering the template");
    } catch (const std::exception& e) {
        // A library error escaping a builtin (a bug, not the template's fault) still fails only this render.
        return make_error(std::errc::invalid_argument, std::string("InternalError: ") + e.what());
    }
}

} // namespace sluice::chat
