// JSON serialization with plain decimal numbers.
#include "cli/json_text.hpp"

#include <boost/json/serialize.hpp>

#include <charconv>
#include <cmath>

namespace sluice::cli {
namespace {

void write(const boost::json::value& v, std::string& out) {
    switch (v.kind()) {
    case boost::json::kind::double_: {
        const double d = v.get_double();
        if (!std::isfinite(d)) {
            out += "null";
            return;
        }
        char buf[32];
        auto res = std::to_chars(buf, buf + sizeof buf, d);
        out.append(buf, res.ptr);
        return;
    }
    case boost::json::kind::array: {
        out += '[';
        bool first = true;
        for (const auto& item : v.get_array()) {
            if (!first)
                out += ',';
            first = false;
            write(item, out);
        }
        out += ']';
        return;
    }
    case boost::json::kind::object: {
        out += '{';
        bool first = true;
        for (const auto& kv : v.get_object()) {
            if (!first)
                out += ',';
            first = false;
            out += boost::json::serialize(boost::json::string_view(kv.key()));
            out += ':';
            write(kv.value(), out);
        }
        out += '}';
        return;
    }
    default:
        out += boost::json::serialize(v);
        return;
    }
}

} // namespace

std::string json_text(const boost::json::value& v) {
    std::string out;
    write(v, out);
    return out;
}

} // namespace sluice::cli
