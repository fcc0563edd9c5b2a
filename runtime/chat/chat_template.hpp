// Chat-template rendering: turns messages, tools and flags into a prompt through a model's Jinja template.
#pragma once

#include "runtime/chat/template.hpp"
#include "runtime/chat/value.hpp"
#include "runtime/gguf/metadata.hpp"
#include "sluice/error.hpp"

#include <boost/json/value.hpp>

#include <filesystem>
#include <string>
#include <string_view>

namespace sluice::chat {

/// What a chat template is rendered with, as transformers' apply_chat_template passes it.
struct chat_inputs {
    boost::json::array messages; ///< [{role, content (string or [{type: "text", text}]), tool_calls, ...}]
    boost::json::value tools;    ///< a list of tool definitions, or null (then `tools` is None)
    bool add_generation_prompt = false;
    boost::json::object kwargs; ///< extra template variables (enable_thinking, ...); they override the rest
    std::string bos_token;
    std::string eos_token;
};

/// A model's chat template with the special tokens it refers to.
struct template_source {
    std::string text;
    std::string bos_token;
    std::string eos_token;
};

/// Converts JSON to a template value (objects keep their key order; integers stay integers).
value from_json(const boost::json::value& json);

/// Builds the variables transformers passes: messages, tools, documents (None), add_generation_prompt,
/// bos_token, eos_token, then every kwarg.
value make_chat_variables(const chat_inputs& inputs);

/// Parses `tmpl` and renders it over `inputs`. Errors start with jinja2's exception name: syntax errors
/// ("TemplateSyntaxError: line 3: ...") and render errors ("TemplateError: <raise_exception message>").
result<std::string> render_chat(std::string_view tmpl, const chat_inputs& inputs, const template_options& options = {});

/// Renders an already parsed template over `inputs` (the limits are those it was parsed with).
result<std::string> render_chat(const jinja_template& tmpl, const chat_inputs& inputs);

/// Reads the chat template of a model from `path`: a GGUF file (tokenizer.chat_template, special tokens from
/// tokenizer.ggml.bos/eos_token_id), a tokenizer_config.json (key chat_template, a string or a list of
/// {name, template} where "default" wins; bos_token/eos_token as strings or {content}), or any other file taken
/// as the template text itself (.jinja). Errors: unreadable file, bad JSON or GGUF, no chat template.
result<template_source> load_template_source(const std::filesystem::path& path);

/// The chat template and bos/eos token texts held in already parsed GGUF metadata.
result<template_source> gguf_template_source(const gguf::metadata& kv);

/// The GGUF part of load_template_source.
result<template_source> load_gguf_template_source(const std::filesystem::path& path);

} // namespace sluice::chat
