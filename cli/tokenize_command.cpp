// `sluice tokenize --model FILE [--text T] [--json]` prints the ids of stdin or T; `sluice detokenize
// --model FILE [--ids "1 2 3"]` prints the text of ids read from stdin or --ids. Errors: message, exit 1.
#include "cli/tokenize_command.hpp"

#include "cli/common_flags.hpp"
#include "cli/json_text.hpp"

#include "runtime/gguf/value.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/json.hpp>

#include <charconv>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sluice::cli {
namespace {

namespace tk = sluice::tokenizer;

struct tokenize_options {
    std::string model;
    std::optional<std::string> text;
    bool json = false;
    bool no_parse_special = false;
    bool add_special = false;
    bool skip_special = false;
};

std::string read_stdin() {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

std::optional<tk::tokenizer> load(const std::string& path) {
    auto tok = tk::load_tokenizer(path);
    if (!tok) {
        std::cerr << "sluice: " << tok.error().message << "\n";
        return std::nullopt;
    }
    return std::move(*tok);
}

/// A piece for display: its bytes when they are valid UTF-8, else the token text as stored.
std::string display_piece(const tk::tokenizer& tok, tk::token_id id) {
    const std::string_view p = tok.piece(id);
    return gguf::is_valid_utf8(p) ? std::string(p) : tok.token_text(id);
}

int run_tokenize(const tokenize_options& o) {
    auto tok = load(o.model);
    if (!tok)
        return 1;
    const std::string text = o.text ? *o.text : read_stdin();
    const auto ids = tok->encode(text, {.add_special = o.add_special, .parse_special = !o.no_parse_special});
    if (o.json) {
        boost::json::array jids;
        boost::json::array pieces;
        for (const auto id : ids) {
            jids.emplace_back(id);
            pieces.emplace_back(display_piece(*tok, id));
        }
        std::cout << json_text(boost::json::object{{"ids", jids}, {"pieces", pieces}}) << "\n";
        return 0;
    }
    for (std::size_t i = 0; i < ids.size(); ++i)
        std::cout << (i ? " " : "") << ids[i];
    std::cout << "\n";
    return 0;
}

/// Parses ids separated by white space, commas or JSON brackets; nullopt (with a message) on bad input.
std::optional<std::vector<tk::token_id>> parse_ids(std::string_view s, std::size_t vocab_size) {
    std::vector<tk::token_id> ids;
    for (std::size_t pos = 0; pos < s.size();) {
        const char c = s[pos];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']') {
            ++pos;
            continue;
        }
        tk::token_id id = 0;
        const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), id);
        if (ec != std::errc{} || id < 0 || static_cast<std::size_t>(id) >= vocab_size) {
            const std::size_t stop = s.find_first_of(" \t\r\n,]", pos);
            std::cerr << "sluice: bad token id '" << s.substr(pos, stop - pos) << "' (vocabulary has " << vocab_size
                      << " tokens)\n";
            return std::nullopt;
        }
        ids.push_back(id);
        pos = static_cast<std::size_t>(end - s.data());
    }
    return ids;
}

int run_detokenize(const tokenize_options& o) {
    auto tok = load(o.model);
    if (!tok)
        return 1;
    const std::string text = o.text ? *o.text : read_stdin();
    const auto ids = parse_ids(text, tok->size());
    if (!ids)
        return 1;
    std::cout << tok->decode(*ids, {.skip_special = o.skip_special});
    return 0;
}

} // namespace

void add_tokenize_commands(CLI::App& app) {
    auto opts = std::make_shared<tokenize_options>();
    auto* tok = app.add_subcommand("tokenize", "Print the token ids of text read from stdin or --text");
    add_model_option(*tok, opts->model, "GGUF file or tokenizer.json")->required();
    tok->add_option("--text", opts->text, "Text to tokenize (default: stdin)");
    tok->add_flag("--json", opts->json, "Print {\"ids\": [...], \"pieces\": [...]}");
    tok->add_flag("--no-parse-special", opts->no_parse_special, "Treat special-token text as plain text");
    tok->add_flag("--add-special", opts->add_special, "Add BOS/EOS as the model's metadata asks");
    tok->callback([opts] {
        if (const int rc = run_tokenize(*opts); rc != 0)
            throw CLI::RuntimeError(rc);
    });

    auto* detok = app.add_subcommand("detokenize", "Print the text of token ids read from stdin or --ids");
    add_model_option(*detok, opts->model, "GGUF file or tokenizer.json")->required();
    detok->add_option("--ids", opts->text, "Ids separated by spaces or commas (default: stdin)");
    detok->add_flag("--skip-special", opts->skip_special, "Leave out control tokens such as BOS and <|im_end|>");
    detok->callback([opts] {
        if (const int rc = run_detokenize(*opts); rc != 0)
            throw CLI::RuntimeError(rc);
    });
}

} // namespace sluice::cli
