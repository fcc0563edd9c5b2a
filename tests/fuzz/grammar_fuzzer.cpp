// libFuzzer target: arbitrary bytes as GBNF grammar text (and, when they parse as JSON, as a JSON schema). Every
// input must give a grammar or an error with a message, within the parser's bounds; a grammar that parses is
// then run over the input's own bytes, which the matcher must accept or refuse without crashing.
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/matcher.hpp"

#include <boost/json/parse.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace {

void run_matcher(const std::shared_ptr<const sluice::grammar::grammar>& g, std::string_view bytes) {
    sluice::grammar::matcher m(g);
    if (m.current() == sluice::grammar::matcher::dead) {
        return;
    }
    for (const char c : bytes) {
        if (!m.accept(std::string_view(&c, 1))) {
            break;
        }
    }
    (void)m.is_complete();
    m.compact(64, 64);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace sluice::grammar;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    auto g = parse_gbnf(text);
    if (!g) {
        if (g.error().message.empty())
            std::abort(); // every refusal says why
    } else {
        run_matcher(*g, text);
    }
    boost::system::error_code ec;
    boost::json::parse_options opts;
    opts.max_depth = 64;
    const auto schema = boost::json::parse(text, ec, {}, opts);
    if (!ec) {
        auto compiled = compile_json_schema(schema);
        if (!compiled && compiled.error().message.empty())
            std::abort();
        if (compiled)
            run_matcher(*compiled, text);
    }
    return 0;
}
