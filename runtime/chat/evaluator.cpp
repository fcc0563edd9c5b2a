// Statement rendering: output, if, for (with loop variables, filters, else, break/continue), set, macros, blocks.
#include "runtime/chat/evaluator.hpp"

#include "runtime/chat/limits.hpp"

namespace sluice::chat {

const value* scope::lookup(std::string_view name) const {
    for (const scope* s = this; s != nullptr; s = s->parent.get()) {
        if (const value* v = s->vars.find(name))
            return v;
    }
    return nullptr;
}

flow evaluator::render(const stmt_list& body, const scope_ptr& sc, std::string& out) {
    for (const auto& s : body) {
        flow f = render_stmt(*s, sc, out);
        if (f != flow::normal)
            return f;
    }
    return flow::normal;
}

// Appends rendered text, within max_output_bytes.
static void emit(std::string& out, std::string_view text) {
    if (auto* budget = render_budget::current())
        budget->check_output(out.size() + text.size());
    out += text;
}

flow evaluator::render_stmt(const stmt& s, const scope_ptr& sc, std::string& out) {
    depth_guard depth;
    budget_step();
    switch (s.kind) {
    case stmt_kind::text:
        emit(out, s.name);
        return flow::normal;
    case stmt_kind::output:
        emit(out, to_str(eval(*s.value, sc)));
        return flow::normal;
    case stmt_kind::if_: {
        flow f = flow::normal;
        render_if(s, sc, out, f);
        return f;
    }
    case stmt_kind::for_:
        return render_for(s, sc, out);
    case stmt_kind::set:
        render_set(s, sc);
        return flow::normal;
    case stmt_kind::macro:
        define_macro(s, sc);
        return flow::normal;
    case stmt_kind::break_:
        return flow::break_;
    case stmt_kind::continue_:
        return flow::continue_;
    case stmt_kind::generation:
        return render(s.body, sc, out);
    case stmt_kind::filter: {
        std::string body;
        render(s.body, sc, body);
        value input(std::move(body));
        emit(out, to_str(eval_filter(*s.value, sc, &input)));
        return flow::normal;
    }
    case stmt_kind::call_block: {
        const stmt* block = &s;
        std::weak_ptr<scope> weak = sc;
        value caller = value::make_function("caller", [this, block, weak](call_args&) {
            std::string body;
            render(block->body, weak.lock(), body);
            return value(std::move(body));
        });
        const expr& call = *s.value;
        if (call.kind != expr_kind::call)
            fail("call block needs a call expression");
        value callee = eval(*call.operands[0], sc);
        call_args args = eval_args(call, sc);
        args.keywords.emplace_back("caller", caller);
        if (!callee.is_function())
            fail("'" + callee.type_name() + "' object is not callable");
        emit(out, to_str(callee.as_function().call(args)));
        return flow::normal;
    }
    }
    return flow::normal;
}

void evaluator::render_if(const stmt& s, const scope_ptr& sc, std::string& out, flow& f) {
    for (const auto& [condition, body] : s.branches) {
        if (!condition || eval(*condition, sc).truthy()) {
            f = render(body, sc, out);
            return;
        }
    }
}

// Builds the `loop` object jinja2 exposes inside a for body.
static value make_loop(const value_list& items, std::size_t i) {
    value loop = value::make_dict();
    auto& d = loop.as_dict();
    auto n = static_cast<std::int64_t>(items.size());
    auto idx = static_cast<std::int64_t>(i);
    d.set("index0", value(idx));
    d.set("index", value(idx + 1));
    d.set("revindex", value(n - idx));
    d.set("revindex0", value(n - idx - 1));
    d.set("first", value(i == 0));
    d.set("last", value(idx == n - 1));
    d.set("length", value(n));
    d.set("depth", value(1));
    d.set("depth0", value(0));
    d.set("previtem", i > 0 ? items[i - 1] : value::undefined("there is no previous item"));
    d.set("nextitem", idx + 1 < n ? items[i + 1] : value::undefined("there is no next item"));
    d.set("cycle", value::make_function("cycle", [idx](call_args& args) {
              if (args.positional.empty())
                  fail("no items for cycling given");
              return args.positional[static_cast<std::size_t>(idx) % args.positional.size()];
          }));
    return loop;
}

flow evaluator::render_for(const stmt& s, const scope_ptr& sc, std::string& out) {
    value iterable = eval(*s.value, sc);
    value_list items = iterate(iterable);
    if (s.condition) {
        value_list kept;
        for (auto& item : items) {
            auto probe = std::make_shared<scope>();
            probe->parent = sc;
            assign(*s.target, item, probe);
            if (eval(*s.condition, probe).truthy())
                kept.push_back(item);
        }
        items = std::move(kept);
    }
    if (items.empty()) {
        render(s.else_body, sc, out);
        return flow::normal;
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto body_scope = std::make_shared<scope>();
        body_scope->parent = sc;
        body_scope->vars.set("loop", make_loop(items, i));
        assign(*s.target, items[i], body_scope);
        flow f = render(s.body, body_scope, out);
        if (f == flow::break_)
            break;
    }
    return flow::normal;
}

void evaluator::assign(const expr& target, value v, const scope_ptr& sc) {
    if (target.kind == expr_kind::name) {
        sc->vars.set(target.name, std::move(v));
        return;
    }
    if (target.kind == expr_kind::tuple) {
        value_list parts = iterate(v);
        if (parts.size() != target.operands.size()) {
            fail(parts.size() < target.operands.size()
                     ? "not enough values to unpack (expected " + std::to_string(target.operands.size()) + ", got " +
                           std::to_string(parts.size()) + ")"
                     : "too many values to unpack (expected " + std::to_string(target.operands.size()) + ")",
                 "ValueError");
        }
        for (std::size_t i = 0; i < parts.size(); ++i)
            assign(*target.operands[i], parts[i], sc);
        return;
    }
    if (target.kind == expr_kind::attribute) {
        value obj = eval(*target.operands[0], sc);
        if (!obj.is_dict() || !obj.as_dict().is_namespace)
            fail("cannot assign attribute on non-namespace object");
        obj.as_dict().set(target.name, std::move(v));
        return;
    }
    fail("cannot assign to this expression", "TemplateSyntaxError");
}

void evaluator::render_set(const stmt& s, const scope_ptr& sc) {
    if (s.name != "block") {
        assign(*s.target, eval(*s.value, sc), sc);
        return;
    }
    std::string body;
    render(s.body, sc, body);
    value v(std::move(body));
    if (s.value)
        v = eval_filter(*s.value, sc, &v);
    assign(*s.target, std::move(v), sc);
}

void evaluator::define_macro(const stmt& s, const scope_ptr& sc) {
    const stmt* macro = &s;
    std::weak_ptr<scope> weak = sc;
    value fn = value::make_function(s.name, [this, macro, weak](call_args& args) {
        auto defining = weak.lock();
        if (!defining)
            fail("macro '" + macro->name + "' called after its template finished");
        if (++macro_depth_ > 200)
            fail("maximum macro recursion depth exceeded", "RecursionError");
        auto local = std::make_shared<scope>();
        local->parent = defining;
        for (std::size_t i = 0; i < macro->params.size(); ++i) {
            const auto& p = macro->params[i];
            if (const value* v = args.get(p.name, i)) {
                local->vars.set(p.name, *v);
            } else if (p.default_value) {
                local->vars.set(p.name, eval(*p.default_value, local));
            } else {
                local->vars.set(p.name, value::undefined("parameter '" + p.name + "' was not provided"));
            }
        }
        if (const value* c = args.get("caller", static_cast<std::size_t>(-1)))
            local->vars.set("caller", *c);
        value_list varargs;
        for (std::size_t i = macro->params.size(); i < args.positional.size(); ++i)
            varargs.push_back(args.positional[i]);
        local->vars.set("varargs", value::make_list(std::move(varargs)));
        std::string out;
        render(macro->body, local, out);
        --macro_depth_;
        return value(std::move(out));
    });
    sc->vars.set(s.name, std::move(fn));
}

} // namespace sluice::chat
