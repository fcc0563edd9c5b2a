// Jinja lexer: text between tags, expression tokens inside tags, '-'/'+' modifiers, trim_blocks/lstrip_blocks.
#include "runtime/chat/lexer.hpp"

#include <cctype>

namespace sluice::chat {
namespace {

bool is_space(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}
bool is_ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class lexer {
public:
    lexer(std::string_view src, const lexer_options& options) : src_(src), options_(options) {}

    result<std::vector<token>> run();

private:
    bool at(std::string_view s) const { return src_.substr(pos_, s.size()) == s; }
    void advance(std::size_t n);
    error fail_at(int line, const std::string& message) const {
        return make_error(std::errc::invalid_argument,
                          "TemplateSyntaxError: line " + std::to_string(line) + ": " + message);
    }
    void emit_text(std::string text, bool strip_before, std::size_t line_ws);
    std::size_t line_leading_ws(std::size_t tag_pos) const;
    result<void> lex_tag(char kind);
    result<void> lex_comment();
    bool lex_raw_block();
    result<void> lex_string(int line);
    void lex_number(int line);
    void close_tag(bool minus, bool block);

    std::string_view src_;
    lexer_options options_;
    std::size_t pos_ = 0;
    int line_ = 1;
    bool strip_next_ = false; // a '-' closed the previous tag
    bool trim_next_ = false;  // trim_blocks applies to the next text
    std::vector<token> tokens_;
};

void lexer::advance(std::size_t n) {
    for (std::size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
        if (src_[pos_] == '\n')
            ++line_;
    }
}

// Number of spaces/tabs before `tag_pos` when only they separate the tag from the start of its line.
std::size_t lexer::line_leading_ws(std::size_t tag_pos) const {
    std::size_t q = tag_pos;
    while (q > 0 && (src_[q - 1] == ' ' || src_[q - 1] == '\t'))
        --q;
    if (q == 0 || src_[q - 1] == '\n')
        return tag_pos - q;
    return 0;
}

// Applies the right-side control of the previous tag and the left-side control of the next one.
void lexer::emit_text(std::string text, bool strip_before, std::size_t line_ws) {
    int line = line_;
    if (strip_next_) {
        std::size_t i = 0;
        while (i < text.size() && is_space(text[i]))
            ++i;
        text.erase(0, i);
    } else if (trim_next_ && !text.empty() && text[0] == '\n') {
        text.erase(0, 1);
    } else if (trim_next_ && text.size() >= 2 && text[0] == '\r' && text[1] == '\n') {
        text.erase(0, 2);
    }
    if (strip_before) {
        std::size_t end = text.size();
        while (end > 0 && is_space(text[end - 1]))
            --end;
        text.resize(end);
    } else if (line_ws > 0) {
        text.resize(text.size() >= line_ws ? text.size() - line_ws : 0);
    }
    strip_next_ = false;
    trim_next_ = false;
    if (!text.empty())
        tokens_.push_back(token{token_kind::text, std::move(text), line});
}

void lexer::close_tag(bool minus, bool block) {
    strip_next_ = minus;
    trim_next_ = block && options_.trim_blocks;
}

result<void> lexer::lex_comment() {
    int line = line_;
    std::size_t end = src_.find("#}", pos_);
    if (end == std::string_view::npos)
        return fail_at(line, "unterminated comment");
    bool minus = end > pos_ && src_[end - 1] == '-';
    advance(end + 2 - pos_);
    close_tag(minus, true);
    return {};
}

result<void> lexer::lex_string(int line) {
    char quote = src_[pos_];
    advance(1);
    std::string out;
    while (pos_ < src_.size() && src_[pos_] != quote) {
        char c = src_[pos_];
        if (c == '\\' && pos_ + 1 < src_.size()) {
            char e = src_[pos_ + 1];
            switch (e) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case '\n':
                break;
            default:
                out += '\\';
                out += e;
                break;
            }
            advance(2);
            continue;
        }
        out += c;
        advance(1);
    }
    if (pos_ >= src_.size())
        return fail_at(line, "unterminated string literal");
    advance(1);
    tokens_.push_back(token{token_kind::string, std::move(out), line});
    return {};
}

void lexer::lex_number(int line) {
    std::size_t start = pos_;
    bool is_float = false;
    while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
        advance(1);
    }
    if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
        is_float = true;
        advance(1);
        while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_])))
            advance(1);
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        is_float = true;
        advance(1);
        if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-'))
            advance(1);
        while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_])))
            advance(1);
    }
    std::string digits;
    for (char c : src_.substr(start, pos_ - start)) {
        if (c != '_')
            digits += c;
    }
    tokens_.push_back(token{is_float ? token_kind::floating : token_kind::integer, digits, line});
}

// Lexes the inside of a {{ }} or {% %} tag; `kind` is '{' or '%'.
result<void> lexer::lex_tag(char kind) {
    int open_line = line_;
    std::string_view close = kind == '%' ? "%}" : "}}";
    int depth = 0;
    static constexpr std::string_view ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
                                               ">",  "=",  "(",  ")",  "[",  "]",  "{", "}", ",", ".", ":", "|"};
    while (true) {
        while (pos_ < src_.size() && is_space(src_[pos_]))
            advance(1);
        if (pos_ >= src_.size())
            return fail_at(open_line, "unterminated tag");
        int line = line_;
        if (depth == 0 && (at(close) || (src_[pos_] == '-' && src_.substr(pos_ + 1, 2) == close))) {
            bool minus = src_[pos_] == '-';
            advance(minus ? 3 : 2);
            tokens_.push_back(token{kind == '%' ? token_kind::block_end : token_kind::var_end, "", line});
            close_tag(minus, kind == '%');
            return {};
        }
        char c = src_[pos_];
        if (c == '\'' || c == '"') {
            if (auto r = lex_string(line); !r)
                return r;
            continue;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) {
            lex_number(line);
            continue;
        }
        if (is_ident_start(c)) {
            std::size_t start = pos_;
            while (pos_ < src_.size() && is_ident(src_[pos_]))
                advance(1);
            tokens_.push_back(token{token_kind::name, std::string(src_.substr(start, pos_ - start)), line});
            continue;
        }
        bool matched = false;
        for (auto op : ops) {
            if (!at(op))
                continue;
            if (op == "(" || op == "[" || op == "{")
                ++depth;
            if ((op == ")" || op == "]" || op == "}") && depth > 0)
                --depth;
            tokens_.push_back(token{token_kind::op, std::string(op), line});
            advance(op.size());
            matched = true;
            break;
        }
        if (!matched)
            return fail_at(line, std::string("unexpected character '") + c + "'");
    }
}

// At a `{% raw %}` tag (pos_ just after "{%" and its modifier): emits everything up to `{% endraw %}` as text.
bool lexer::lex_raw_block() {
    std::size_t p = pos_;
    while (p < src_.size() && is_space(src_[p]))
        ++p;
    if (src_.substr(p, 3) != "raw")
        return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p]))
        ++p;
    bool minus_after = p < src_.size() && src_[p] == '-';
    if (minus_after)
        ++p;
    if (src_.substr(p, 2) != "%}")
        return false;
    std::size_t body = p + 2;
    for (std::size_t q = src_.find("{%", body); q != std::string_view::npos; q = src_.find("{%", q + 2)) {
        std::size_t r = q + 2;
        bool minus_before = r < src_.size() && src_[r] == '-';
        if (minus_before || (r < src_.size() && src_[r] == '+'))
            ++r;
        while (r < src_.size() && is_space(src_[r]))
            ++r;
        if (src_.substr(r, 6) != "endraw")
            continue;
        r += 6;
        while (r < src_.size() && is_space(src_[r]))
            ++r;
        bool minus_end = r < src_.size() && src_[r] == '-';
        if (minus_end)
            ++r;
        if (src_.substr(r, 2) != "%}")
            continue;
        advance(body - pos_);
        close_tag(minus_after, true);
        std::size_t ws = options_.lstrip_blocks && !minus_before ? line_leading_ws(q) : 0;
        emit_text(std::string(src_.substr(body, q - body)), minus_before, ws);
        advance(r + 2 - pos_);
        close_tag(minus_end, true);
        return true;
    }
    return false;
}

result<std::vector<token>> lexer::run() {
    while (pos_ < src_.size()) {
        std::size_t next = pos_;
        char kind = 0;
        while ((next = src_.find('{', next)) != std::string_view::npos) {
            if (next + 1 < src_.size() && (src_[next + 1] == '{' || src_[next + 1] == '%' || src_[next + 1] == '#')) {
                kind = src_[next + 1];
                break;
            }
            ++next;
        }
        if (next == std::string_view::npos)
            next = src_.size();
        bool minus = kind != 0 && next + 2 < src_.size() && src_[next + 2] == '-';
        bool plus = kind != 0 && next + 2 < src_.size() && src_[next + 2] == '+';
        std::size_t line_ws =
            (kind == '%' || kind == '#') && options_.lstrip_blocks && !plus ? line_leading_ws(next) : 0;
        emit_text(std::string(src_.substr(pos_, next - pos_)), minus, line_ws);
        advance(next - pos_);
        if (kind == 0)
            break;
        int line = line_;
        advance(minus || plus ? 3 : 2);
        if (kind == '#') {
            if (auto r = lex_comment(); !r)
                return r.error();
            continue;
        }
        if (kind == '%' && lex_raw_block())
            continue;
        tokens_.push_back(token{kind == '%' ? token_kind::block_begin : token_kind::var_begin, "", line});
        if (auto r = lex_tag(kind == '%' ? '%' : '{'); !r)
            return r.error();
    }
    tokens_.push_back(token{token_kind::eof, "", line_});
    return std::move(tokens_);
}

} // namespace

result<std::vector<token>> tokenize(std::string_view source, const lexer_options& options) {
    return lexer(source, options).run();
}

} // namespace sluice::chat
