// Public API of the Jinja engine: parse a template once, render it with variables many times.
#pragma once

#include "runtime/chat/limits.hpp"
#include "runtime/chat/value.hpp"
#include "sluice/error.hpp"

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::chat {

struct stmt;

/// Options of parsing and rendering; the defaults are those of Hugging Face transformers.
struct template_options {
    bool trim_blocks = true;   ///< remove the first newline after a block tag
    bool lstrip_blocks = true; ///< remove spaces/tabs before a block tag at the start of its line
    /// Time `strftime_now` formats (UTC); unset means the current local time. Tests pin it for determinism.
    std::optional<std::time_t> fixed_time;
    /// The sandbox: what parsing and each render may use (limits.hpp).
    template_limits limits;
};

/// A parsed template. Immutable after parsing; `render` may be called concurrently from several threads.
class jinja_template {
public:
    /// Parses `source`. Errors (code invalid_argument) carry jinja2's exception name and the line:
    /// "TemplateSyntaxError: line 3: ...", "TemplateAssertionError: line 1: No filter named 'x'.".
    static result<jinja_template> parse(std::string_view source, const template_options& options = {});

    /// Renders with `variables` (a dict value) on top of the globals (range, namespace, dict,
    /// raise_exception, strftime_now). Errors carry jinja2's exception name and message,
    /// "TemplateError: <message>" for raise_exception, "UndefinedError: 'x' is undefined", ...; a limit of
    /// options.limits exceeded gives "TemplateLimitError: the template exceeded max_steps = ...".
    result<std::string> render(const value& variables) const;

private:
    std::shared_ptr<const std::vector<std::unique_ptr<stmt>>> body_;
    template_options options_;
};

/// The prefix a render error's message has when the template called raise_exception(message).
inline constexpr std::string_view raised_error_prefix = "TemplateError: ";

} // namespace sluice::chat
