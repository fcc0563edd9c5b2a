// Control-token text in user strings: replaced by markers before rendering, restored and marked after.
#include "runtime/chat/content_guard.hpp"

#include <algorithm>
#include <array>
#include <charconv>

namespace sluice::chat {
namespace {

constexpr std::string_view marker_open = "\xEF\xB7\x90";  // U+FDD0
constexpr std::string_view marker_close = "\xEF\xB7\x91"; // U+FDD1

// The texts to hide, bucketed by first byte, longest first (leftmost-longest, as the tokenizer matches). Entry 0
// is U+FDD0 itself, so a user's own marker character also round-trips exactly.
struct hidden_texts {
    std::vector<std::string> texts;
    std::array<std::vector<std::size_t>, 256> by_first_byte;

    explicit hidden_texts(std::span<const std::string> control_tokens) {
        texts.emplace_back(marker_open);
        for (const auto& t : control_tokens) {
            if (!t.empty())
                texts.push_back(t);
        }
        for (std::size_t i = 0; i < texts.size(); ++i)
            by_first_byte[static_cast<unsigned char>(texts[i][0])].push_back(i);
        for (auto& bucket : by_first_byte) {
            std::stable_sort(bucket.begin(), bucket.end(),
                             [&](std::size_t a, std::size_t b) { return texts[a].size() > texts[b].size(); });
        }
    }

    std::string hide(std::string_view s) const {
        std::string out;
        std::size_t start = 0;
        for (std::size_t pos = 0; pos < s.size();) {
            const std::size_t* hit = nullptr;
            for (const std::size_t& i : by_first_byte[static_cast<unsigned char>(s[pos])]) {
                if (s.compare(pos, texts[i].size(), texts[i]) == 0) {
                    hit = &i;
                    break;
                }
            }
            if (!hit) {
                ++pos;
                continue;
            }
            out.append(s, start, pos - start);
            out += marker_open;
            out += std::to_string(*hit);
            out += marker_close;
            pos += texts[*hit].size();
            start = pos;
        }
        if (start == 0)
            return std::string(s);
        out.append(s, start);
        return out;
    }

    // Every string of a JSON value, hidden; keys stay as they are.
    boost::json::value hide_all(const boost::json::value& v) const {
        switch (v.kind()) {
        case boost::json::kind::string:
            return boost::json::value(boost::json::string(hide(std::string_view(v.get_string()))));
        case boost::json::kind::array: {
            boost::json::array out;
            for (const auto& item : v.get_array())
                out.push_back(hide_all(item));
            return out;
        }
        case boost::json::kind::object: {
            boost::json::object out;
            for (const auto& kv : v.get_object())
                out[kv.key()] = hide_all(kv.value());
            return out;
        }
        default:
            return v;
        }
    }

    // Puts the hidden texts back into `rendered`, recording where they went.
    guarded_prompt restore(const std::string& rendered) const {
        guarded_prompt p;
        std::size_t start = 0;
        for (std::size_t pos = rendered.find(marker_open); pos != std::string::npos;
             pos = rendered.find(marker_open, pos)) {
            std::size_t digits = pos + marker_open.size();
            std::size_t index = 0;
            auto [end, ec] = std::from_chars(rendered.data() + digits, rendered.data() + rendered.size(), index);
            std::size_t close = static_cast<std::size_t>(end - rendered.data());
            if (ec != std::errc() || index >= texts.size() ||
                rendered.compare(close, marker_close.size(), marker_close) != 0) {
                pos = digits; // a marker the template cut: its pieces stay as text
                continue;
            }
            p.text.append(rendered, start, pos - start);
            p.literal_spans.emplace_back(p.text.size(), p.text.size() + texts[index].size());
            p.text += texts[index];
            pos = close + marker_close.size();
            start = pos;
        }
        p.text.append(rendered, start);
        return p;
    }
};

} // namespace

result<guarded_prompt> render_chat_guarded(const jinja_template& tmpl, const chat_inputs& inputs,
                                           std::span<const std::string> control_tokens) {
    const hidden_texts hidden(control_tokens);
    chat_inputs hidden_inputs;
    hidden_inputs.messages = hidden.hide_all(inputs.messages).as_array();
    hidden_inputs.tools = hidden.hide_all(inputs.tools);
    hidden_inputs.add_generation_prompt = inputs.add_generation_prompt;
    hidden_inputs.kwargs = hidden.hide_all(inputs.kwargs).as_object();
    hidden_inputs.bos_token = inputs.bos_token;
    hidden_inputs.eos_token = inputs.eos_token;
    auto rendered = render_chat(tmpl, hidden_inputs);
    if (!rendered)
        return rendered.error();
    return hidden.restore(*rendered);
}

} // namespace sluice::chat
