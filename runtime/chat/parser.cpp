// Jinja parser: recursive descent over statements and expressions, with jinja2's operator precedence.
#include "runtime/chat/parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string_view>

namespace sluice::chat {
namespace {

class parser {
public:
    parser(const std::vector<token>& tokens, unsigned max_height) : tokens_(tokens), max_height_(max_height) {}

    stmt_list parse_body(std::initializer_list<std::string_view> end_tags);
    /// After a block tag's arguments: its `%}`, the body, and the closing `{% end_tag %}`.
    stmt_list parse_block_to_end(std::string_view end_tag);
    const token& peek(std::size_t ahead = 0) const {
        std::size_t i = pos_ + ahead;
        return i < tokens_.size() ? tokens_[i] : tokens_.back();
    }

private:
    [[noreturn]] void error_at(const token& t, const std::string& message) const {
        fail("line " + std::to_string(t.line) + ": " + message, "TemplateSyntaxError");
    }
    std::string describe(const token& t) const;
    const token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
    bool is_op(std::string_view op, std::size_t ahead = 0) const {
        return peek(ahead).kind == token_kind::op && peek(ahead).text == op;
    }
    bool is_name(std::string_view n, std::size_t ahead = 0) const {
        return peek(ahead).kind == token_kind::name && peek(ahead).text == n;
    }
    bool accept_op(std::string_view op);
    bool accept_name(std::string_view n);
    void expect_op(std::string_view op);
    std::string expect_identifier();
    void expect_block_end();

    stmt_ptr parse_statement();
    stmt_ptr parse_if(int line);
    stmt_ptr parse_for(int line);
    stmt_ptr parse_set(int line);
    stmt_ptr parse_macro(int line);
    stmt_ptr parse_call_block(int line);
    stmt_ptr parse_filter_block(int line);

    expr_ptr parse_tuple(bool with_condexpr, bool assignment = false);
    expr_ptr parse_expression(bool with_condexpr = true);
    /// Parses `operand (op operand)*` left-associatively while `matches()` sees an operator token.
    template <class Match, class Operand>
    expr_ptr parse_left_assoc(Match matches, Operand operand);
    expr_ptr parse_or();
    expr_ptr parse_and();
    expr_ptr parse_not();
    expr_ptr parse_compare();
    expr_ptr parse_math1();
    expr_ptr parse_concat();
    expr_ptr parse_math2();
    expr_ptr parse_pow();
    expr_ptr parse_unary(bool with_filter = true);
    expr_ptr parse_primary();
    expr_ptr parse_container(int line);
    expr_ptr parse_postfix(expr_ptr node);
    expr_ptr parse_filters(expr_ptr node, bool first_without_pipe = false);
    expr_ptr parse_filter_call(expr_ptr node);
    expr_ptr parse_test(expr_ptr node);
    expr_ptr parse_subscript(expr_ptr node);
    void parse_call_args(expr& node);
    expr_ptr make(expr_kind kind, int line, std::string name = {});
    /// Raises `parent`'s height over `child`'s: a chain built by a loop (1~1~1..., x|f|f..., a.b.c...) grows
    /// without recursion here, but evaluating or destroying it recurses, so its height is bounded.
    void grow(expr& parent, const expr& child);
    /// Appends `child` (may be null) to one of `parent`'s operand lists.
    void adopt(expr& parent, std::vector<expr_ptr>& into, expr_ptr child);

    // Bounds recursion on hostile input such as ((((((... or - - - - x.
    static constexpr int max_depth = 200;
    struct depth_guard {
        int* depth;
        explicit depth_guard(int* d) : depth(d) { ++*depth; }
        depth_guard(const depth_guard&) = delete;
        depth_guard& operator=(const depth_guard&) = delete;
        ~depth_guard() { --*depth; }
    };
    depth_guard enter() {
        if (depth_ >= max_depth)
            error_at(peek(), "expression nested too deeply");
        return depth_guard(&depth_);
    }
    const std::vector<token>& tokens_;
    unsigned max_height_;
    std::size_t pos_ = 0;
    int depth_ = 0;
    int block_depth_ = 0;
};

std::string parser::describe(const token& t) const {
    switch (t.kind) {
    case token_kind::eof:
        return "end of template";
    case token_kind::block_end:
        return "end of statement block";
    case token_kind::var_end:
        return "end of print statement";
    case token_kind::text:
        return "template data";
    default:
        return "'" + t.text + "'";
    }
}

bool parser::accept_op(std::string_view op) {
    if (!is_op(op))
        return false;
    next();
    return true;
}

bool parser::accept_name(std::string_view n) {
    if (!is_name(n))
        return false;
    next();
    return true;
}

void parser::expect_op(std::string_view op) {
    if (!accept_op(op))
        error_at(peek(), "expected '" + std::string(op) + "', found " + describe(peek()));
}

std::string parser::expect_identifier() {
    if (peek().kind != token_kind::name)
        error_at(peek(), "expected a name, found " + describe(peek()));
    return next().text;
}

void parser::expect_block_end() {
    if (peek().kind != token_kind::block_end)
        error_at(peek(), "expected end of statement block, found " + describe(peek()));
    next();
}

expr_ptr parser::make(expr_kind kind, int line, std::string name) {
    auto e = std::make_unique<expr>();
    e->kind = kind;
    e->line = line;
    e->name = std::move(name);
    return e;
}

void parser::grow(expr& parent, const expr& child) {
    parent.height = std::max(parent.height, child.height + 1);
    if (parent.height > max_height_) {
        fail("line " + std::to_string(parent.line) +
                 ": expression nested too deeply (the template exceeded max_depth = " + std::to_string(max_height_) +
                 ")",
             "TemplateLimitError");
    }
}

void parser::adopt(expr& parent, std::vector<expr_ptr>& into, expr_ptr child) {
    if (child)
        grow(parent, *child);
    into.push_back(std::move(child));
}

// Parses statements until a block tag whose keyword is in `end_tags` (left unconsumed) or the end.
stmt_list parser::parse_block_to_end(std::string_view end_tag) {
    expect_block_end();
    stmt_list body = parse_body({end_tag});
    next(); // the `{%` of the closing tag
    next(); // its name
    expect_block_end();
    return body;
}

stmt_list parser::parse_body(std::initializer_list<std::string_view> end_tags) {
    stmt_list body;
    while (true) {
        const token& t = peek();
        if (t.kind == token_kind::eof) {
            if (end_tags.size() == 0)
                return body;
            error_at(t, "unexpected end of template, expected '" + std::string(*(end_tags.end() - 1)) + "'");
        }
        if (t.kind == token_kind::text) {
            auto s = std::make_unique<stmt>();
            s->kind = stmt_kind::text;
            s->line = t.line;
            s->name = next().text;
            body.push_back(std::move(s));
            continue;
        }
        if (t.kind == token_kind::var_begin) {
            next();
            auto s = std::make_unique<stmt>();
            s->kind = stmt_kind::output;
            s->line = t.line;
            s->value = parse_tuple(true);
            if (peek().kind != token_kind::var_end)
                error_at(peek(), "expected end of print statement, found " + describe(peek()));
            next();
            body.push_back(std::move(s));
            continue;
        }
        if (t.kind != token_kind::block_begin)
            error_at(t, "unexpected " + describe(t));
        const token& keyword = peek(1);
        for (auto end : end_tags) {
            if (keyword.kind == token_kind::name && keyword.text == end)
                return body;
        }
        next();
        body.push_back(parse_statement());
    }
}

stmt_ptr parser::parse_statement() {
    const token& t = peek();
    if (++block_depth_ > max_depth)
        error_at(t, "blocks nested too deeply");
    struct leave {
        int& depth;
        ~leave() { --depth; }
    } leave_block{block_depth_};
    if (t.kind != token_kind::name)
        error_at(t, "expected a statement keyword, found " + describe(t));
    std::string keyword = next().text;
    int line = t.line;
    if (keyword == "if")
        return parse_if(line);
    if (keyword == "for")
        return parse_for(line);
    if (keyword == "set")
        return parse_set(line);
    if (keyword == "macro")
        return parse_macro(line);
    if (keyword == "call")
        return parse_call_block(line);
    if (keyword == "filter")
        return parse_filter_block(line);
    auto s = std::make_unique<stmt>();
    s->line = line;
    if (keyword == "break" || keyword == "continue") {
        s->kind = keyword == "break" ? stmt_kind::break_ : stmt_kind::continue_;
        expect_block_end();
        return s;
    }
    if (keyword == "generation") {
        s->kind = stmt_kind::generation;
        s->body = parse_block_to_end("endgeneration");
        return s;
    }
    error_at(t, "unknown tag '" + keyword + "'");
}

stmt_ptr parser::parse_if(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::if_;
    s->line = line;
    expr_ptr condition = parse_tuple(true);
    while (true) {
        expect_block_end();
        stmt_list body = parse_body({"elif", "else", "endif"});
        s->branches.emplace_back(std::move(condition), std::move(body));
        next(); // block_begin
        std::string keyword = next().text;
        if (keyword == "elif") {
            condition = parse_tuple(true);
            continue;
        }
        if (keyword == "else") {
            expect_block_end();
            s->branches.emplace_back(nullptr, parse_body({"endif"}));
            next();
            next();
        }
        expect_block_end();
        return s;
    }
}

stmt_ptr parser::parse_for(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::for_;
    s->line = line;
    s->target = parse_tuple(false, true);
    if (!accept_name("in"))
        error_at(peek(), "expected 'in', found " + describe(peek()));
    s->value = parse_tuple(false);
    if (accept_name("if"))
        s->condition = parse_expression();
    accept_name("recursive");
    expect_block_end();
    s->body = parse_body({"else", "endfor"});
    next();
    if (next().text == "else") {
        expect_block_end();
        s->else_body = parse_body({"endfor"});
        next();
        next();
    }
    expect_block_end();
    return s;
}

stmt_ptr parser::parse_set(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::set;
    s->line = line;
    s->target = parse_tuple(false, true);
    if (accept_op("=")) {
        s->value = parse_tuple(true);
        expect_block_end();
        return s;
    }
    s->name = "block";
    if (is_op("|"))
        s->value = parse_filters(nullptr);
    s->body = parse_block_to_end("endset");
    return s;
}

stmt_ptr parser::parse_macro(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::macro;
    s->line = line;
    s->name = expect_identifier();
    expect_op("(");
    while (!accept_op(")")) {
        if (!s->params.empty())
            expect_op(",");
        macro_param p;
        p.name = expect_identifier();
        if (accept_op("="))
            p.default_value = parse_expression();
        s->params.push_back(std::move(p));
    }
    expect_block_end();
    s->body = parse_body({"endmacro"});
    next();
    next();
    if (peek().kind == token_kind::name)
        next();
    expect_block_end();
    return s;
}

stmt_ptr parser::parse_call_block(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::call_block;
    s->line = line;
    s->value = parse_expression();
    s->body = parse_block_to_end("endcall");
    return s;
}

stmt_ptr parser::parse_filter_block(int line) {
    auto s = std::make_unique<stmt>();
    s->kind = stmt_kind::filter;
    s->line = line;
    s->value = parse_filters(nullptr, true);
    s->body = parse_block_to_end("endfilter");
    return s;
}

// A tuple (for targets, `set a, b = ...` and bare `a, b` expressions) or a single expression.
expr_ptr parser::parse_tuple(bool with_condexpr, bool assignment) {
    int line = peek().line;
    auto parse_one = [&]() {
        if (assignment) {
            auto n = make(expr_kind::name, peek().line, expect_identifier());
            if (accept_op(".")) {
                auto a = make(expr_kind::attribute, n->line, expect_identifier());
                adopt(*a, a->operands, std::move(n));
                return a;
            }
            return n;
        }
        return parse_expression(with_condexpr);
    };
    expr_ptr first = parse_one();
    if (!is_op(","))
        return first;
    auto t = make(expr_kind::tuple, line);
    adopt(*t, t->operands, std::move(first));
    while (accept_op(",")) {
        if (peek().kind == token_kind::block_end || peek().kind == token_kind::var_end || is_name("in") || is_op("="))
            break;
        adopt(*t, t->operands, parse_one());
    }
    return t;
}

expr_ptr parser::parse_expression(bool with_condexpr) {
    depth_guard guard = enter();
    expr_ptr node = parse_or();
    if (!with_condexpr)
        return node;
    while (is_name("if")) {
        int line = next().line;
        auto c = make(expr_kind::conditional, line);
        adopt(*c, c->operands, std::move(node));
        adopt(*c, c->operands, parse_or());
        adopt(*c, c->operands, accept_name("else") ? parse_expression() : nullptr);
        node = std::move(c);
    }
    return node;
}

template <class Match, class Operand>
expr_ptr parser::parse_left_assoc(Match matches, Operand operand) {
    expr_ptr left = operand();
    while (matches()) {
        const token& op = next();
        auto b = make(expr_kind::binary, op.line, op.text);
        adopt(*b, b->operands, std::move(left));
        adopt(*b, b->operands, operand());
        left = std::move(b);
    }
    return left;
}

expr_ptr parser::parse_or() {
    return parse_left_assoc([this] { return is_name("or"); }, [this] { return parse_and(); });
}

expr_ptr parser::parse_and() {
    return parse_left_assoc([this] { return is_name("and"); }, [this] { return parse_not(); });
}

expr_ptr parser::parse_not() {
    depth_guard guard = enter();
    if (is_name("not")) {
        auto u = make(expr_kind::unary, next().line, "not");
        adopt(*u, u->operands, parse_not());
        return u;
    }
    return parse_compare();
}

expr_ptr parser::parse_compare() {
    int line = peek().line;
    expr_ptr first = parse_math1();
    expr_ptr node;
    while (true) {
        std::string op;
        if (peek().kind == token_kind::op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                              peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
            op = next().text;
        } else if (is_name("in")) {
            next();
            op = "in";
        } else if (is_name("not") && is_name("in", 1)) {
            next();
            next();
            op = "notin";
        } else {
            break;
        }
        if (!node) {
            node = make(expr_kind::compare, line);
            adopt(*node, node->operands, std::move(first));
        }
        node->ops.push_back(op);
        adopt(*node, node->operands, parse_math1());
    }
    return node ? std::move(node) : std::move(first);
}

expr_ptr parser::parse_math1() {
    return parse_left_assoc([this] { return is_op("+") || is_op("-"); }, [this] { return parse_concat(); });
}

expr_ptr parser::parse_concat() {
    return parse_left_assoc([this] { return is_op("~"); }, [this] { return parse_math2(); });
}

expr_ptr parser::parse_math2() {
    return parse_left_assoc([this] { return is_op("*") || is_op("/") || is_op("//") || is_op("%"); }, [this] { return parse_pow(); });
}

expr_ptr parser::parse_pow() {
    return parse_left_assoc([this] { return is_op("**"); }, [this] { return parse_unary(); });
}

expr_ptr parser::parse_unary(bool with_filter) {
    depth_guard guard = enter();
    if (is_op("-") || is_op("+")) {
        auto u = make(expr_kind::unary, peek().line, next().text);
        adopt(*u, u->operands, parse_unary(false));
        return with_filter ? parse_filters(std::move(u)) : std::move(u);
    }
    expr_ptr node = parse_postfix(parse_primary());
    return with_filter ? parse_filters(std::move(node)) : std::move(node);
}

expr_ptr parser::parse_primary() {
    const token& t = peek();
    int line = t.line;
    switch (t.kind) {
    case token_kind::name: {
        std::string n = next().text;
        auto lit = make(expr_kind::literal, line);
        if (n == "true" || n == "True")
            lit->literal = value(true);
        else if (n == "false" || n == "False")
            lit->literal = value(false);
        else if (n == "none" || n == "None")
            lit->literal = value(nullptr);
        else
            return make(expr_kind::name, line, n);
        return lit;
    }
    case token_kind::string: {
        std::string s = next().text;
        while (peek().kind == token_kind::string)
            s += next().text;
        auto lit = make(expr_kind::literal, line);
        lit->literal = value(std::move(s));
        return lit;
    }
    case token_kind::integer: {
        auto lit = make(expr_kind::literal, line);
        std::int64_t v = 0;
        const token& digits = next();
        const std::string& d = digits.text;
        if (std::from_chars(d.data(), d.data() + d.size(), v).ec != std::errc())
            error_at(digits, "integer literal " + d + " does not fit in 64 bits (template integers are 64-bit)");
        lit->literal = value(v);
        return lit;
    }
    case token_kind::floating: {
        auto lit = make(expr_kind::literal, line);
        // strtod, not stod: 1e999 is inf in Python, not an exception.
        lit->literal = value(std::strtod(next().text.c_str(), nullptr));
        return lit;
    }
    default:
        break;
    }
    if (expr_ptr container = parse_container(line))
        return container;
    error_at(t, "unexpected " + describe(t));
}

// Parenthesized expressions and tuples, list and dict literals; nullptr when none starts here.
expr_ptr parser::parse_container(int line) {
    if (accept_op("(")) {
        if (accept_op(")"))
            return make(expr_kind::tuple, line);
        expr_ptr inner = parse_expression();
        if (is_op(",")) {
            auto t2 = make(expr_kind::tuple, line);
            adopt(*t2, t2->operands, std::move(inner));
            while (accept_op(",")) {
                if (is_op(")"))
                    break;
                adopt(*t2, t2->operands, parse_expression());
            }
            inner = std::move(t2);
        }
        expect_op(")");
        return inner;
    }
    if (accept_op("[")) {
        auto l = make(expr_kind::list, line);
        while (!accept_op("]")) {
            if (!l->operands.empty())
                expect_op(",");
            if (accept_op("]"))
                break;
            adopt(*l, l->operands, parse_expression());
        }
        return l;
    }
    if (accept_op("{")) {
        auto d = make(expr_kind::dict, line);
        while (!accept_op("}")) {
            if (!d->operands.empty())
                expect_op(",");
            if (accept_op("}"))
                break;
            adopt(*d, d->operands, parse_expression());
            expect_op(":");
            adopt(*d, d->operands, parse_expression());
        }
        return d;
    }
    return nullptr;
}

expr_ptr parser::parse_postfix(expr_ptr node) {
    while (true) {
        if (is_op(".")) {
            int line = next().line;
            const token& t = peek();
            if (t.kind != token_kind::name && t.kind != token_kind::integer)
                error_at(t, "expected attribute name");
            auto a =
                make(t.kind == token_kind::integer ? expr_kind::subscript : expr_kind::attribute, line, next().text);
            adopt(*a, a->operands, std::move(node));
            if (a->kind == expr_kind::subscript) {
                auto idx = make(expr_kind::literal, line);
                std::int64_t index = 0;
                if (std::from_chars(a->name.data(), a->name.data() + a->name.size(), index).ec != std::errc())
                    error_at(t,
                             "integer literal " + a->name + " does not fit in 64 bits (template integers are 64-bit)");
                idx->literal = value(index);
                adopt(*a, a->operands, std::move(idx));
            }
            node = std::move(a);
        } else if (is_op("[")) {
            next();
            node = parse_subscript(std::move(node));
        } else if (is_op("(")) {
            auto c = make(expr_kind::call, next().line);
            adopt(*c, c->operands, std::move(node));
            parse_call_args(*c);
            node = std::move(c);
        } else {
            return node;
        }
    }
}

// After '[': an index or a slice with optional start, stop and step.
expr_ptr parser::parse_subscript(expr_ptr node) {
    int line = peek().line;
    expr_ptr parts[3];
    int colons = 0;
    while (!is_op("]")) {
        if (accept_op(":")) {
            if (++colons > 2)
                error_at(peek(), "invalid slice");
            continue;
        }
        if (parts[colons])
            error_at(peek(), "expected ']' or ':', found " + describe(peek()));
        parts[colons] = parse_expression();
    }
    expect_op("]");
    if (colons == 0) {
        if (!parts[0])
            error_at(peek(), "expected subscript expression");
        auto s = make(expr_kind::subscript, line);
        adopt(*s, s->operands, std::move(node));
        adopt(*s, s->operands, std::move(parts[0]));
        return s;
    }
    auto s = make(expr_kind::slice, line);
    adopt(*s, s->operands, std::move(node));
    for (auto& p : parts)
        adopt(*s, s->operands, std::move(p));
    return s;
}

// After '(': positional and keyword arguments up to ')'.
void parser::parse_call_args(expr& node) {
    bool first = true;
    while (!accept_op(")")) {
        if (!first)
            expect_op(",");
        first = false;
        if (accept_op(")"))
            break;
        if (peek().kind == token_kind::name && is_op("=", 1)) {
            std::string key = next().text;
            next();
            expr_ptr kwarg = parse_expression();
            grow(node, *kwarg);
            node.kwargs.emplace_back(std::move(key), std::move(kwarg));
        } else {
            adopt(node, node.args, parse_expression());
        }
    }
}

expr_ptr parser::parse_filter_call(expr_ptr node) {
    int line = peek().line;
    std::string name = expect_identifier();
    while (accept_op("."))
        name += "." + expect_identifier();
    auto f = make(expr_kind::filter, line, name);
    if (node)
        adopt(*f, f->operands, std::move(node));
    if (accept_op("("))
        parse_call_args(*f);
    return f;
}

expr_ptr parser::parse_test(expr_ptr node) {
    int line = peek().line;
    bool negated = accept_name("not");
    std::string name = expect_identifier();
    auto t = make(expr_kind::test, line, name);
    t->negated = negated;
    adopt(*t, t->operands, std::move(node));
    const token& n = peek();
    if (accept_op("(")) {
        parse_call_args(*t);
    } else if ((n.kind == token_kind::name || n.kind == token_kind::string || n.kind == token_kind::integer ||
                n.kind == token_kind::floating || is_op("[") || is_op("{")) &&
               !(n.kind == token_kind::name && (n.text == "else" || n.text == "or" || n.text == "and" ||
                                                n.text == "if" || n.text == "in" || n.text == "not"))) {
        adopt(*t, t->args, parse_postfix(parse_primary()));
    }
    return t;
}

// Applies `| filter(args)` and `is [not] test` suffixes to `node`.
expr_ptr parser::parse_filters(expr_ptr node, bool first_without_pipe) {
    if (first_without_pipe)
        node = parse_filter_call(std::move(node));
    while (true) {
        if (accept_op("|")) {
            node = parse_filter_call(std::move(node));
        } else if (is_name("is")) {
            next();
            node = parse_test(std::move(node));
        } else if (is_op("(") && node && node->kind == expr_kind::filter) {
            auto c = make(expr_kind::call, next().line);
            adopt(*c, c->operands, std::move(node));
            parse_call_args(*c);
            node = std::move(c);
        } else {
            return node;
        }
    }
}

} // namespace

result<stmt_list> parse_tokens(const std::vector<token>& tokens, unsigned max_height) {
    try {
        parser p(tokens, max_height);
        return p.parse_body({});
    } catch (const template_error& e) {
        return make_error(std::errc::invalid_argument, e.kind() + ": " + e.what());
    }
}

} // namespace sluice::chat
