// Shared helpers of the reference fidelity tests.
#include "tests/fidelity/reference_fixture.hpp"

#include "kernels/quant.hpp"
#include "runtime/engine/session.hpp"
#include "runtime/gguf/model_files.hpp"
#include "runtime/gguf/writer.hpp"
#include "tests/cli/scratch.hpp"
#include "tests/engine/tiny_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sluice::test {

namespace fs = std::filesystem;

fs::path reference_root() {
    return fs::path(SLUICE_SOURCE_DIR) / "tests" / "fixtures" / "reference";
}

boost::json::object reference_json(const std::string& name) {
    std::ifstream in(reference_root() / name / "reference.json");
    return boost::json::parse(std::string(std::istreambuf_iterator<char>(in), {})).as_object();
}

std::vector<float> floats_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string raw(std::istreambuf_iterator<char>(in), {});
    std::vector<float> out(raw.size() / sizeof(float));
    std::memcpy(out.data(), raw.data(), out.size() * sizeof(float));
    return out;
}

std::vector<std::int32_t> ids_of(const boost::json::value& v) {
    std::vector<std::int32_t> out;
    for (const auto& x : v.as_array()) {
        out.push_back(static_cast<std::int32_t>(x.to_number<std::int64_t>()));
    }
    return out;
}

fs::path converted_fixture(const std::string& name, convert::output_type type) {
    const auto dir = scratch_dir() / "reference_fixture" / name;
    const auto out = dir / ("type" + std::to_string(static_cast<int>(type)) + ".gguf");
    if (fs::exists(out)) {
        return out;
    }
    const auto hf = dir / "hf";
    if (!fs::exists(hf)) {
        fs::create_directories(hf);
        for (const char* f : {"config.json", "model.safetensors"}) {
            fs::create_symlink(reference_root() / name / f, hf / f);
        }
        for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
            fs::create_symlink(reference_root() / "tokenizer" / f, hf / f);
        }
    }
    auto r = convert::convert_checkpoint(hf, out, {.type = type});
    if (!r) {
        throw std::runtime_error(name + ": " + r.error().message);
    }
    return out;
}

std::vector<float> logits_in_pieces(const std::shared_ptr<model>& m, const std::vector<std::int32_t>& ids,
                                    const std::vector<std::size_t>& bounds) {
    session s(m);
    std::vector<float> all, logits;
    for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
        const std::span<const std::int32_t> piece(ids.data() + bounds[i], bounds[i + 1] - bounds[i]);
        auto r = run_sync<result<void>>([&] { return s.evaluate(piece, logits); });
        if (!r) {
            throw std::runtime_error(r.error().message);
        }
        all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0, top = 0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
        top = std::max(top, std::fabs(double(b[i])));
    }
    return a.size() == b.size() ? diff / top : 1e9;
}

std::vector<std::int32_t> greedy_tokens(const std::shared_ptr<model>& m, const std::vector<std::int32_t>& prompt,
                                        std::size_t n) {
    session s(m);
    generate_request req;
    req.prompt_tokens = prompt;
    req.sampling.temperature = 0.0f;
    req.max_tokens = static_cast<std::uint32_t>(n);
    req.ignore_eos = true;
    auto stream = s.generate(std::move(req));
    auto failure = run_sync<std::string>([&]() -> boost::asio::awaitable<std::string> {
        while (true) {
            auto ev = co_await stream.next();
            if (!ev) {
                co_return ev.error().message;
            }
            if (!*ev) {
                co_return std::string();
            }
        }
    });
    if (!failure.empty()) {
        throw std::runtime_error(failure);
    }
    return stream.tokens();
}

fs::path dequantized_copy(const fs::path& src, kernels::quant_type from) {
    const auto out = fs::path(src).replace_extension(".dequantized.gguf");
    auto files = gguf::model_files::open(src);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    gguf::writer w(out);
    for (const auto& e : files->kv().entries()) {
        w.kv().set(e.key, e.value);
    }
    for (const auto& t : files->tensors()) {
        if (!w.add_tensor(t.name, t.type == from ? kernels::quant_type::f32 : t.type, t.shape())) {
            throw std::runtime_error("add_tensor " + t.name);
        }
    }
    std::ifstream in(src, std::ios::binary);
    for (const auto& t : files->tensors()) {
        std::vector<std::byte> raw(t.bytes);
        in.seekg(static_cast<std::streamoff>(t.offset));
        in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()));
        result<void> ok;
        if (t.type != from) {
            ok = w.write_tensor(raw);
        } else {
            std::vector<float> values(t.n_elements);
            for (std::uint64_t r = 0; r < t.n_elements / t.ne[0]; ++r) {
                kernels::dequantize_row(t.type, raw.data() + r * t.row_bytes(), values.data() + r * t.ne[0], t.ne[0]);
            }
            ok = w.write_tensor(std::as_bytes(std::span(values)));
        }
        if (!ok) {
            throw std::runtime_error("write_tensor " + t.name);
        }
    }
    if (auto r = w.finish(); !r) {
        throw std::runtime_error(r.error().message);
    }
    return out;
}

position_agreement agreement(const std::vector<float>& a, const std::vector<float>& b, std::size_t n_vocab,
                             double decisive) {
    position_agreement out;
    double max_abs = 0;
    for (const float x : b) {
        max_abs = std::max(max_abs, std::fabs(double(x)));
    }
    for (std::size_t p = 0; p < std::min(a.size(), b.size()) / n_vocab; ++p) {
        const float* x = a.data() + p * n_vocab;
        const float* y = b.data() + p * n_vocab;
        double dot = 0, nx = 0, ny = 0, top = -INFINITY, second = -INFINITY;
        for (std::size_t i = 0; i < n_vocab; ++i) {
            dot += double(x[i]) * y[i];
            nx += double(x[i]) * x[i];
            ny += double(y[i]) * y[i];
            second = std::max(second, std::min(top, double(y[i])));
            top = std::max(top, double(y[i]));
        }
        out.cosines.push_back(dot / std::sqrt(nx * ny));
        if (top - second >= decisive * max_abs) {
            ++out.decisive;
            out.decisive_agree += std::max_element(x, x + n_vocab) - x == std::max_element(y, y + n_vocab) - y;
        }
    }
    return out;
}

std::map<std::string, tensor_bytes> read_tensors(const fs::path& path) {
    auto files = gguf::model_files::open(path);
    if (!files) {
        throw std::runtime_error(files.error().message);
    }
    std::map<std::string, tensor_bytes> out;
    std::ifstream in(path, std::ios::binary);
    for (const auto& t : files->tensors()) {
        tensor_bytes b{t.type, std::vector<std::uint64_t>(t.shape().begin(), t.shape().end()),
                       std::vector<std::byte>(t.bytes)};
        in.seekg(static_cast<std::streamoff>(t.offset));
        in.read(reinterpret_cast<char*>(b.data.data()), static_cast<std::streamsize>(b.data.size()));
        out.emplace(t.name, std::move(b));
    }
    return out;
}

} // namespace sluice::test
