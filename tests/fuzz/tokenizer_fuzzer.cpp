// libFuzzer target: arbitrary bytes encoded and decoded by real tokenizers (the bundled model's byte-level BPE,
// and the GGUF vocabularies of ../shared/fixtures/vocab: SentencePiece, GPT-2, DeepSeek), with and without
// special-token parsing, plus arbitrary ids decoded. Nothing may crash, and every id must be in the vocabulary.
#include "runtime/gguf/parser.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using sluice::tokenizer::tokenizer;

std::unique_ptr<tokenizer> load(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return nullptr;
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto header = sluice::gguf::parse_header(std::as_bytes(std::span(bytes)));
    if (!header)
        return nullptr;
    auto v = sluice::tokenizer::vocab_from_gguf(header->kv);
    if (!v)
        return nullptr;
    auto t = tokenizer::create(std::move(*v));
    return t ? std::make_unique<tokenizer>(std::move(*t)) : nullptr;
}

// Run from the repository root (replay.sh and bench/fuzz/run.sh do); SLUICE_SHARED_DIR overrides ../shared.
const std::vector<std::unique_ptr<tokenizer>>& tokenizers() {
    static const auto all = [] {
        const char* env = std::getenv("SLUICE_SHARED_DIR");
        const std::string shared = env ? env : "../shared";
        std::vector<std::unique_ptr<tokenizer>> out;
        for (const std::string& path :
             {std::string("models/sluice-tiny-moe.gguf"), shared + "/fixtures/vocab/ggml-vocab-llama-spm.gguf",
              shared + "/fixtures/vocab/ggml-vocab-gpt-2.gguf",
              shared + "/fixtures/vocab/ggml-vocab-deepseek-coder.gguf"}) {
            if (auto t = load(path))
                out.push_back(std::move(t));
        }
        if (out.empty())
            std::abort(); // no vocabulary found: run from the repository root
        return out;
    }();
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const auto& all = tokenizers();
    // First byte: which tokenizer (low bits) and the encode options (high bits).
    const tokenizer& tok = *all[data[0] % all.size()];
    sluice::tokenizer::encode_options opts;
    opts.parse_special = (data[0] & 0x40) != 0;
    opts.add_special = (data[0] & 0x80) != 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    auto ids = tok.encode(text, opts);
    for (auto id : ids) {
        if (id < 0 || static_cast<std::size_t>(id) >= tok.size())
            std::abort(); // an id outside the vocabulary
    }
    (void)tok.decode(ids);
    (void)tok.decode(ids, {.skip_special = true});
    // The same bytes read as ids.
    std::vector<sluice::tokenizer::token_id> raw(size / 4);
    for (std::size_t i = 0; i < raw.size(); ++i)
        raw[i] = static_cast<sluice::tokenizer::token_id>(
            static_cast<std::uint32_t>(data[4 * i]) | static_cast<std::uint32_t>(data[4 * i + 1]) << 8 |
            static_cast<std::uint32_t>(data[4 * i + 2]) << 16 | static_cast<std::uint32_t>(data[4 * i + 3]) << 24);
    (void)tok.decode(raw);
    return 0;
}
