// `sluice template --model FILE --messages JSON [--tools JSON] [--add-generation-prompt] [--kwargs JSON]
// [--template FILE.jinja]` prints the prompt the model's chat template renders. JSON arguments are inline text
// or @FILE. Errors: message on stderr, exit 1.
#include "cli/template_command.hpp"

#include "cli/common_flags.hpp"

#include "runtime/chat/chat_template.hpp"

#include <boost/json/parse.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace sluice::cli {
namespace {

namespace chat = sluice::chat;

struct template_options {
    std::string model;
    std::string template_file;
    std::string messages;
    std::string tools;
    std::string kwargs;
    std::string bos_token;
    std::string eos_token;
    bool add_generation_prompt = false;
};

// Parses `arg` (inline JSON, or @path to a JSON file) and names the option in errors.
result<boost::json::value> parse_json_arg(const std::string& arg, const std::string& option) {
    std::string text = arg;
    if (!arg.empty() && arg[0] == '@') {
        std::ifstream in(arg.substr(1), std::ios::binary);
        if (!in)
            return make_error(std::errc::no_such_file_or_directory, option + ": cannot open " + arg.substr(1));
        std::stringstream s;
        s << in.rdbuf();
        text = s.str();
    }
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(text, ec);
    if (ec)
        return make_error(std::errc::invalid_argument, option + ": invalid JSON: " + ec.message());
    return v;
}

result<chat::chat_inputs> make_inputs(const template_options& o) {
    chat::chat_inputs in;
    auto messages = parse_json_arg(o.messages, "--messages");
    if (!messages)
        return messages.error();
    if (messages->is_object() && messages->as_object().contains("messages")) {
        // An OpenAI-style request body: {"messages": [...], "tools": [...]}.
        const auto& body = messages->as_object();
        if (const auto* t = body.if_contains("tools"))
            in.tools = *t;
        *messages = body.at("messages");
    }
    if (!messages->is_array())
        return make_error(std::errc::invalid_argument, "--messages: expected a JSON array");
    in.messages = messages->as_array();
    if (!o.tools.empty()) {
        auto tools = parse_json_arg(o.tools, "--tools");
        if (!tools)
            return tools.error();
        in.tools = *tools;
    }
    if (!o.kwargs.empty()) {
        auto kwargs = parse_json_arg(o.kwargs, "--kwargs");
        if (!kwargs)
            return kwargs.error();
        if (!kwargs->is_object())
            return make_error(std::errc::invalid_argument, "--kwargs: expected a JSON object");
        in.kwargs = kwargs->as_object();
    }
    in.add_generation_prompt = o.add_generation_prompt;
    return in;
}

int run_template(const template_options& o) {
    if (o.model.empty() && o.template_file.empty()) {
        std::cerr << "sluice template: give --model FILE or --template FILE.jinja\n";
        return 1;
    }
    chat::template_source source;
    if (!o.model.empty()) {
        auto loaded = chat::load_template_source(o.model);
        if (!loaded) {
            std::cerr << "sluice template: " << loaded.error().message << "\n";
            return 1;
        }
        source = std::move(*loaded);
    }
    if (!o.template_file.empty()) {
        auto loaded = chat::load_template_source(o.template_file);
        if (!loaded) {
            std::cerr << "sluice template: " << loaded.error().message << "\n";
            return 1;
        }
        source.text = std::move(loaded->text);
    }
    auto inputs = make_inputs(o);
    if (!inputs) {
        std::cerr << "sluice template: " << inputs.error().message << "\n";
        return 1;
    }
    inputs->bos_token = o.bos_token.empty() ? source.bos_token : o.bos_token;
    inputs->eos_token = o.eos_token.empty() ? source.eos_token : o.eos_token;
    auto prompt = chat::render_chat(source.text, *inputs);
    if (!prompt) {
        std::cerr << "sluice template: " << prompt.error().message << "\n";
        return 1;
    }
    std::cout << *prompt;
    return 0;
}

} // namespace

void add_template_command(CLI::App& app) {
    auto opts = std::make_shared<template_options>();
    CLI::App* cmd = app.add_subcommand("template", "Render a model's chat template over messages");
    add_model_option(*cmd, opts->model, "GGUF file or tokenizer_config.json holding the chat template");
    cmd->add_option("--template", opts->template_file, "Jinja template file (overrides the model's template)");
    cmd->add_option("--messages", opts->messages, "Messages as a JSON array (or @file.json)")->required();
    cmd->add_option("--tools", opts->tools, "Tool definitions as a JSON array (or @file.json)");
    cmd->add_option("--kwargs", opts->kwargs,
                    "Extra template variables as a JSON object, e.g. {\"enable_thinking\":false}");
    cmd->add_option("--bos-token", opts->bos_token, "Text of bos_token (default: from the model)");
    cmd->add_option("--eos-token", opts->eos_token, "Text of eos_token (default: from the model)");
    cmd->add_flag("--add-generation-prompt", opts->add_generation_prompt, "End with the assistant turn's opening");
    cmd->callback([opts] {
        if (const int rc = run_template(*opts); rc != 0)
            throw CLI::RuntimeError(rc);
    });
}

} // namespace sluice::cli
