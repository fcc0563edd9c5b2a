// The tool-call block readers behind output_parser: given text that starts at a block's opening marker, each
// format's reader says whether the block is complete, still open, or malformed, and what calls it holds.
#pragma once

#include "runtime/chat/output_parser.hpp"

#include <boost/json/array.hpp>
#include <boost/json/value.hpp>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

namespace sluice::chat::detail {

enum class block_status {
    complete,   ///< `length` bytes form the block; `calls` holds its calls
    incomplete, ///< the block is not closed yet (more text may finish it)
    malformed,  ///< the first `length` bytes look like a block but are not one: they are content
};

struct block_result {
    block_status status = block_status::incomplete;
    std::size_t length = 0;
    std::vector<parsed_tool_call> calls;
};

/// The markers that open a block of format `f` (empty for none and harmony).
std::span<const std::string_view> block_openers(tool_format f) noexcept;

/// Reads the block at the start of `text` (which starts with one of block_openers(f), or with '{' for llama3).
/// `at_end`: no more text will come, so an unclosed block is malformed. `tools` gives parameter types.
block_result read_block(tool_format f, std::string_view text, bool at_end, const boost::json::array& tools);

/// End (one past) of the JSON object or array starting at text[0], or npos while it is unfinished. Tracks
/// strings and escapes; does not validate.
std::size_t json_extent(std::string_view text);

/// `value` (as written between XML-style tags) for a parameter of `function`: a string when the tool's schema
/// says the parameter is a string or the text is no JSON value, else the JSON value the text holds.
boost::json::value parameter_value(std::string_view function, std::string_view parameter, std::string_view value,
                                   const boost::json::array& tools);

/// A call from a name and an arguments JSON text; false when `arguments` is not a JSON object (or a JSON string
/// holding one).
bool make_call(std::string_view name, std::string_view arguments, parsed_tool_call& out);

} // namespace sluice::chat::detail
