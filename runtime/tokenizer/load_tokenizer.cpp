// load_tokenizer: picks the GGUF or tokenizer.json loader for a path and builds the tokenizer.
#include "runtime/gguf/byte_source.hpp"
#include "runtime/gguf/parser.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <fstream>
#include <sstream>

namespace sluice::tokenizer {
namespace {

result<std::string> read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return make_error(std::errc::no_such_file_or_directory, "cannot open file");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        return make_error(std::errc::io_error, "cannot read file");
    return std::move(ss).str();
}

bool has_gguf_magic(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    in.read(magic, 4);
    return in.gcount() == 4 && std::string_view(magic, 4) == "GGUF";
}

result<vocab> load_vocab(const std::filesystem::path& path) {
    if (has_gguf_magic(path)) {
        auto src = gguf::file_source::open(path);
        if (!src)
            return src.error();
        auto header = gguf::parse_header(**src);
        if (!header)
            return header.error();
        return vocab_from_gguf(header->kv);
    }
    auto text = read_text_file(path);
    if (!text)
        return text.error();
    std::string config;
    const auto config_path = path.parent_path() / "tokenizer_config.json";
    if (std::error_code ec; std::filesystem::exists(config_path, ec)) {
        auto c = read_text_file(config_path);
        if (!c)
            return c.error();
        config = std::move(*c);
    }
    return vocab_from_hf_json(*text, config);
}

} // namespace

result<tokenizer> load_tokenizer(const std::filesystem::path& path) {
    auto v = load_vocab(path);
    if (!v)
        return v.error().with_context(path.string());
    auto t = tokenizer::create(std::move(*v));
    if (!t)
        return t.error().with_context(path.string());
    return t;
}

} // namespace sluice::tokenizer
