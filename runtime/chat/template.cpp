// Template parsing entry point, the globals Hugging Face provides, and rendering with errors as values.
#include "runtime/chat/template.hpp"

#include "runtime/chat/evaluator.hpp"
#include "runtime/chat/lexer.hpp"
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
    // Templates are data from model files: bound what one call may allocate.
    constexpr std::int64_t max_range = 1 << 20;
    if ((stop - start) / step > max_range)
        fail("range() too large (more than 1048576 items)", "OverflowError");
    value_list out;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        out.emplace_back(i);
    return value::make_list(std::move(out));
}

value dict_from_args(call_args& a, bool is_namespace) {
    value d = value::make_dict();
    d.as_dict().is_namespace = is_namespace;
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

result<jinja_template> jinja_template::parse(std::string_view source, const template_options& options) {
    auto tokens = tokenize(source, lexer_options{options.trim_blocks, options.lstrip_blocks});
    if (!tokens)
        return tokens.error();
    auto body = parse_tokens(*tokens);
    if (!body)
        return body.error();
    if (auto checked = check_names(*body); !checked)
        return checked.error();
    jinja_template t;
    t.body_ = std::make_shared<const stmt_list>(std::move(*body));
    t.options_ = options;
    return t;
}

result<std::string> jinja_template::render(const value& variables) const {
    try {
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
    }
}

} // namespace sluice::chat
