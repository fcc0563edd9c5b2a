// Reads a model's chat template and its bos/eos token texts from the metadata of a GGUF file.
#include "runtime/chat/chat_template.hpp"

#include "runtime/gguf/byte_source.hpp"
#include "runtime/gguf/metadata.hpp"
#include "runtime/gguf/parser.hpp"

namespace sluice::chat {
namespace {

// The text of the token whose id is stored under `id_key`, or "" when the model has none.
std::string token_text(const gguf::metadata& kv, std::string_view id_key) {
    auto id = kv.find_u32(id_key);
    if (!id || !*id)
        return {};
    auto tokens = kv.get_array_of_strings(gguf::keys::tokenizer_tokens);
    if (!tokens || **id >= tokens->size())
        return {};
    return (*tokens)[**id];
}

} // namespace

result<template_source> gguf_template_source(const gguf::metadata& kv) {
    auto text = kv.find_string(gguf::keys::chat_template);
    if (!text)
        return text.error();
    if (!*text)
        return make_error(std::errc::invalid_argument, "no tokenizer.chat_template key");
    return template_source{std::string(**text), token_text(kv, gguf::keys::tokenizer_bos_id),
                           token_text(kv, gguf::keys::tokenizer_eos_id)};
}

result<template_source> load_gguf_template_source(const std::filesystem::path& path) {
    auto src = gguf::file_source::open(path);
    if (!src)
        return src.error();
    auto header = gguf::parse_header(**src);
    if (!header)
        return header.error().with_context(path.string());
    auto t = gguf_template_source(header->kv);
    if (!t)
        return t.error().with_context(path.string());
    return t;
}

} // namespace sluice::chat
