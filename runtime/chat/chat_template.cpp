// Chat-template rendering over JSON messages, and loading a template from a tokenizer_config.json or .jinja file.
#include "runtime/chat/chat_template.hpp"

#include <boost/json/parse.hpp>

#include <fstream>
#include <sstream>

namespace sluice::chat {

value from_json(const boost::json::value& json) {
    switch (json.kind()) {
    case boost::json::kind::null:
        return value(nullptr);
    case boost::json::kind::bool_:
        return value(json.get_bool());
    case boost::json::kind::int64:
        return value(json.get_int64());
    case boost::json::kind::uint64:
        return value(static_cast<std::int64_t>(json.get_uint64()));
    case boost::json::kind::double_:
        return value(json.get_double());
    case boost::json::kind::string:
        return value(std::string_view(json.get_string()));
    case boost::json::kind::array: {
        value_list items;
        for (const auto& item : json.get_array())
            items.push_back(from_json(item));
        return value::make_list(std::move(items));
    }
    case boost::json::kind::object: {
        value d = value::make_dict();
        for (const auto& kv : json.get_object())
            d.as_dict().set(std::string(kv.key()), from_json(kv.value()));
        return d;
    }
    }
    return value(nullptr);
}

value make_chat_variables(const chat_inputs& inputs) {
    value vars = value::make_dict();
    auto& d = vars.as_dict();
    d.set("messages", from_json(inputs.messages));
    d.set("tools", from_json(inputs.tools));
    d.set("documents", value(nullptr));
    d.set("add_generation_prompt", value(inputs.add_generation_prompt));
    d.set("bos_token", value(inputs.bos_token));
    d.set("eos_token", value(inputs.eos_token));
    for (const auto& kv : inputs.kwargs)
        d.set(std::string(kv.key()), from_json(kv.value()));
    return vars;
}

result<std::string> render_chat(const jinja_template& tmpl, const chat_inputs& inputs) {
    value variables;
    try {
        variables = make_chat_variables(inputs);
    } catch (const template_error& e) { // JSON nested past max_nesting
        return make_error(std::errc::invalid_argument, e.kind() + ": " + e.what());
    }
    return tmpl.render(variables);
}

result<std::string> render_chat(std::string_view tmpl, const chat_inputs& inputs, const template_options& options) {
    auto parsed = jinja_template::parse(tmpl, options);
    if (!parsed)
        return parsed.error();
    return render_chat(*parsed, inputs);
}

namespace {

std::string special_token(const boost::json::object& config, std::string_view key) {
    const auto* v = config.if_contains(key);
    if (!v)
        return {};
    if (v->is_string())
        return std::string(v->get_string());
    if (v->is_object()) {
        if (const auto* c = v->get_object().if_contains("content"); c && c->is_string())
            return std::string(c->get_string());
    }
    return {};
}

result<std::string> pick_template(const boost::json::value& t) {
    if (t.is_string())
        return std::string(t.get_string());
    if (t.is_array()) {
        std::string first;
        for (const auto& entry : t.get_array()) {
            if (!entry.is_object())
                continue;
            const auto* name = entry.get_object().if_contains("name");
            const auto* text = entry.get_object().if_contains("template");
            if (!text || !text->is_string())
                continue;
            if (name && name->is_string() && name->get_string() == "default")
                return std::string(text->get_string());
            if (first.empty())
                first = std::string(text->get_string());
        }
        if (!first.empty())
            return first;
    }
    return make_error(std::errc::invalid_argument, "chat_template is neither a string nor a list of named templates");
}

} // namespace

result<template_source> load_template_source(const std::filesystem::path& path) {
    if (path.extension() == ".gguf")
        return load_gguf_template_source(path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return make_error(std::errc::no_such_file_or_directory, path.string() + ": cannot open file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    if (path.extension() != ".json")
        return template_source{std::move(text), {}, {}};
    boost::system::error_code ec;
    boost::json::value json = boost::json::parse(text, ec);
    if (ec)
        return make_error(std::errc::invalid_argument, path.string() + ": invalid JSON: " + ec.message());
    if (!json.is_object())
        return make_error(std::errc::invalid_argument, path.string() + ": expected a JSON object");
    const auto& config = json.get_object();
    const auto* t = config.if_contains("chat_template");
    if (!t)
        return make_error(std::errc::invalid_argument, path.string() + ": no chat_template key");
    auto picked = pick_template(*t);
    if (!picked)
        return picked.error().with_context(path.string());
    return template_source{std::move(*picked), special_token(config, "bos_token"), special_token(config, "eos_token")};
}

} // namespace sluice::chat
