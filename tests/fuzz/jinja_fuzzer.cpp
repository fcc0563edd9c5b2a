// libFuzzer target: parses arbitrary bytes as a Jinja chat template and renders it over a small conversation,
// under tight sandbox limits. Any crash, sanitizer report, hang (libFuzzer's -timeout) or out-of-memory is a bug:
// a template is untrusted input and may only fail with an error.
#include "runtime/chat/template.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace {

using sluice::chat::value;

value conversation() {
    auto message = [](const char* role, const char* content) {
        value m = value::make_dict();
        m.as_dict().set("role", value(role));
        m.as_dict().set("content", value(content));
        return m;
    };
    value tool = value::make_dict();
    tool.as_dict().set("name", value("get_weather"));
    tool.as_dict().set("parameters", value::make_dict());
    value vars = value::make_dict();
    vars.as_dict().set("messages",
                       value::make_list({message("system", "Be brief."), message("user", "Hi <|im_end|>"),
                                         message("assistant", "<think>x</think>Hello"), message("user", "2+2?")}));
    vars.as_dict().set("tools", value::make_list({tool}));
    vars.as_dict().set("add_generation_prompt", value(true));
    vars.as_dict().set("bos_token", value("<s>"));
    vars.as_dict().set("eos_token", value("</s>"));
    return vars;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const value vars = conversation();
    sluice::chat::template_options options;
    options.fixed_time = 1768480496;
    // Small limits keep one input fast; the limits themselves are what is being tested.
    options.limits.max_steps = 200'000;
    options.limits.max_time = std::chrono::milliseconds(2'000);
    options.limits.max_bytes = 32ull << 20;
    options.limits.max_value_bytes = 4ull << 20;
    options.limits.max_output_bytes = 4ull << 20;
    auto t = sluice::chat::jinja_template::parse(std::string_view(reinterpret_cast<const char*>(data), size), options);
    if (!t)
        return 0;
    (void)t->render(vars);
    return 0;
}
