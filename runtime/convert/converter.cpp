// The conversion driver: config and tokenizer to metadata, checkpoint rows to typed GGUF tensor data.
#include "runtime/convert/converter.hpp"

#include "kernels/quant.hpp"
#include "runtime/convert/hf_config.hpp"
#include "runtime/convert/hf_tokenizer.hpp"
#include "runtime/convert/mxfp4_import.hpp"
#include "runtime/convert/safetensors.hpp"
#include "runtime/convert/tensor_map.hpp"
#include "runtime/convert/text_file.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/models/architecture.hpp"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstring>

namespace sluice::convert {

namespace {

using kernels::quant_type;

/// Values converted per batch: bounds the memory one tensor needs whatever its size.
constexpr std::uint64_t batch_values = std::uint64_t{1} << 20;

quant_type requested_type(output_type t) noexcept {
    switch (t) {
    case output_type::f32:
        return quant_type::f32;
    case output_type::f16:
        return quant_type::f16;
    case output_type::bf16:
        return quant_type::bf16;
    case output_type::q8_0:
        return quant_type::q8_0;
    case output_type::q4_k:
        return quant_type::q4_k;
    case output_type::q6_k:
        return quant_type::q6_k;
    case output_type::q2_k:
        return quant_type::q2_k;
    case output_type::q3_k:
        return quant_type::q3_k;
    case output_type::q5_k:
        return quant_type::q5_k;
    }
    return quant_type::f16;
}

bool is_weight(models::tensor_role role) noexcept {
    return role == models::tensor_role::matrix || role == models::tensor_role::embedding ||
           role == models::tensor_role::experts;
}

std::uint64_t row_count(const models::tensor_spec& spec) {
    std::uint64_t n = 1;
    for (std::size_t d = 1; d < spec.ne.size(); ++d) {
        n *= spec.ne[d];
    }
    return n;
}

/// Streams one tensor: reads its runs in batches of rows, permutes, converts and appends to the writer.
class tensor_streamer {
public:
    tensor_streamer(checkpoint& ckpt, gguf::writer& w) : ckpt_(ckpt), w_(w) {}

    result<void> write(const tensor_source& src, quant_type type) {
        if (!src.mxfp4.empty()) {
            return write_mxfp4(src);
        }
        if (!src.gathers.empty()) {
            return write_gathers(src, type);
        }
        const std::uint64_t row_elems = src.spec.ne[0];
        const std::uint64_t rows = row_count(src.spec);
        const std::uint64_t head_dim = src.permute_heads ? rows / src.permute_heads : 1;
        std::uint64_t batch = std::max<std::uint64_t>(1, batch_values / row_elems);
        batch = (batch + head_dim - 1) / head_dim * head_dim;
        const std::uint64_t out_row = *kernels::row_bytes(type, row_elems);
        std::size_t run = 0;
        std::uint64_t in_run = 0; // rows of runs[run] already consumed
        for (std::uint64_t done = 0; done < rows;) {
            const std::uint64_t n = std::min(batch, rows - done);
            values_.resize(n * row_elems);
            // Gather rows from the runs.
            for (std::uint64_t filled = 0; filled < n;) {
                const row_run& r = src.runs[run];
                const std::uint64_t take = std::min(n - filled, r.n_rows - in_run);
                if (auto ok =
                        ckpt_.read_rows(*r.tensor, r.first_row + in_run, take, values_.data() + filled * row_elems);
                    !ok) {
                    return ok.error();
                }
                filled += take;
                in_run += take;
                if (in_run == r.n_rows) {
                    ++run;
                    in_run = 0;
                }
            }
            if (src.permute_heads) {
                permute_qk_rows(values_.data(), n, row_elems, head_dim);
            }
            apply_value_transform(src.transform, values_.data(), n * row_elems);
            if (!src.column_order.empty()) {
                permute_columns(values_.data(), n, row_elems, src.column_order);
            }
            // Convert row by row.
            bytes_.resize(n * out_row);
            if (type == quant_type::f32) {
                std::memcpy(bytes_.data(), values_.data(), bytes_.size());
            } else {
                for (std::uint64_t i = 0; i < n; ++i) {
                    kernels::quantize_row(type, values_.data() + i * row_elems, bytes_.data() + i * out_row, row_elems);
                }
            }
            if (auto ok = w_.append(bytes_); !ok) {
                return ok.error();
            }
            done += n;
        }
        return {};
    }

private:
    /// values_ holds `n` rows of `row_elems` floats: converts them to `type` and appends them.
    result<void> append_rows(std::uint64_t n, std::uint64_t row_elems, quant_type type) {
        const std::uint64_t out_row = *kernels::row_bytes(type, row_elems);
        bytes_.resize(n * out_row);
        for (std::uint64_t i = 0; i < n; ++i) {
            kernels::quantize_row(type, values_.data() + i * row_elems, bytes_.data() + i * out_row, row_elems);
        }
        return w_.append(bytes_);
    }

    /// gpt-oss's transposed and interleaved tensors: each run's block of rows read at once, then gathered.
    result<void> write_gathers(const tensor_source& src, quant_type type) {
        const std::uint64_t row_elems = src.spec.ne[0];
        for (const auto& g : src.gathers) {
            source_.resize(g.src_rows * g.tensor->row_elems());
            if (auto ok = ckpt_.read_rows(*g.tensor, g.first_row, g.src_rows, source_.data()); !ok) {
                return ok.error();
            }
            values_.resize(g.n_rows * row_elems);
            for (std::uint64_t i = 0; i < g.n_rows; ++i) {
                for (std::uint64_t j = 0; j < row_elems; ++j) {
                    values_[i * row_elems + j] = source_[g.offset + i * g.row_step + j * g.elem_step];
                }
            }
            if (auto ok = append_rows(g.n_rows, row_elems, type); !ok) {
                return ok;
            }
        }
        return {};
    }

    /// gpt-oss's MXFP4 experts: each run's rows of blocks and scales read at once, the chosen rows repacked.
    result<void> write_mxfp4(const tensor_source& src) {
        for (const auto& r : src.mxfp4) {
            const std::uint64_t n_blocks = r.scales->row_elems(); // blocks per matrix row
            const std::uint64_t span = (r.n_rows - 1) * r.row_step + 1;
            blocks_.resize(span * n_blocks * hf_mxfp4_block_bytes);
            scales_.resize(span * n_blocks);
            if (auto ok = ckpt_.read_bytes(*r.blocks, r.first_row * n_blocks, span * n_blocks, blocks_.data()); !ok) {
                return ok.error();
            }
            if (auto ok = ckpt_.read_bytes(*r.scales, r.first_row, span, scales_.data()); !ok) {
                return ok.error();
            }
            bytes_.resize(r.n_rows * n_blocks * gguf_mxfp4_block_bytes);
            auto* out = reinterpret_cast<std::uint8_t*>(bytes_.data());
            for (std::uint64_t i = 0; i < r.n_rows; ++i) {
                const std::uint64_t row = i * r.row_step;
                repack_mxfp4_row(blocks_.data() + row * n_blocks * hf_mxfp4_block_bytes,
                                 scales_.data() + row * n_blocks, n_blocks,
                                 out + i * n_blocks * gguf_mxfp4_block_bytes);
            }
            if (auto ok = w_.append(bytes_); !ok) {
                return ok;
            }
        }
        return {};
    }

    checkpoint& ckpt_;
    gguf::writer& w_;
    std::vector<float> values_;
    std::vector<float> source_;
    std::vector<std::uint8_t> blocks_, scales_;
    std::vector<std::byte> bytes_;
};

std::string default_name(const std::filesystem::path& dir) {
    std::error_code ec;
    auto p = std::filesystem::absolute(dir, ec).lexically_normal();
    if (p.filename().empty()) {
        p = p.parent_path();
    }
    return p.filename().string();
}

/// The number of MTP blocks a hybrid checkpoint holds: mtp.layers.<i>.* (or model.mtp..., model.language_model.mtp...).
std::uint32_t count_mtp_layers(const checkpoint& ckpt) {
    std::uint32_t n = 0;
    for (const auto& t : ckpt.tensors()) {
        const auto at = t.name.find("mtp.layers.");
        if (at == std::string::npos || (at != 0 && t.name[at - 1] != '.')) {
            continue;
        }
        std::uint32_t i = 0;
        const char* p = t.name.data() + at + 11;
        const auto [end, ec] = std::from_chars(p, t.name.data() + t.name.size(), i);
        if (ec == std::errc{} && end != p && i < 64) {
            n = std::max(n, i + 1);
        }
    }
    return n;
}

/// Metadata: hyperparameters, general.*, tokenizer. Also sets the architecture's flags in `hp`.
result<const models::architecture*> write_metadata(const std::filesystem::path& dir, const convert_options& options,
                                                   hf_model_config& cfg, gguf::metadata& kv) {
    auto arch = models::find_architecture(cfg.hp.arch);
    if (!arch) {
        return arch.error();
    }
    models::write_hparams(cfg.hp, kv);
    if (cfg.norm_topk_prob) {
        kv.set_bool(cfg.hp.arch + ".expert_weights_norm", *cfg.norm_topk_prob);
    }
    kv.set_string(gguf::keys::name, options.name.empty() ? default_name(dir) : options.name);
    kv.set_u32("general.file_type", file_type_of(options.type));
    kv.set_u32("general.quantization_version", 2);
    if (auto r = (*arch)->configure(kv, cfg.hp); !r) {
        return r.error();
    }
    if (auto r = models::check_hparams(cfg.hp); !r) {
        return r.error().with_context("config.json");
    }
    if (auto r = write_hf_tokenizer(dir, cfg.hp.n_vocab, kv); !r) {
        return r.error();
    }
    return *arch;
}

result<convert_summary> convert_into(const std::filesystem::path& dir, const std::filesystem::path& tmp,
                                     const convert_options& options) {
    auto text = read_text_file(dir / "config.json");
    if (!text) {
        return text.error();
    }
    auto cfg = parse_hf_config(*text);
    if (!cfg) {
        return cfg.error();
    }
    auto ckpt = checkpoint::open(dir);
    if (!ckpt) {
        return ckpt.error();
    }
    if (cfg->hybrid) {
        // MTP blocks as the checkpoint holds them (Qwen3-Next's config does not count them; llama.cpp counts too).
        cfg->hp.hybrid.nextn_layers = count_mtp_layers(*ckpt);
    }
    // FP8 weights with block scales and packed integer weights read back dequantised; --type requantises them.
    if (cfg->fp8_block) {
        if (auto r = ckpt->attach_block_scales((*cfg->fp8_block)[0], (*cfg->fp8_block)[1]); !r) {
            return r.error();
        }
    }
    if (cfg->packed_int) {
        if (auto r = ckpt->attach_packed_int((*cfg->packed_int)[0], (*cfg->packed_int)[1]); !r) {
            return r.error();
        }
    }
    gguf::writer w(tmp);
    auto arch = write_metadata(dir, options, *cfg, w.kv());
    if (!arch) {
        return arch.error();
    }
    auto sources = map_tensors(*cfg, *ckpt, (*arch)->tensors(cfg->hp));
    if (!sources) {
        return sources.error();
    }
    convert_summary summary;
    summary.arch = cfg->hp.arch;
    std::vector<quant_type> types;
    for (const auto& s : *sources) {
        const bool weight = is_weight(s.spec.role);
        // MXFP4 experts (gpt-oss) stay MXFP4 whatever the type asked, as llama.cpp's converter keeps them.
        types.push_back(s.mxfp4.empty() ? tensor_type(options.type, weight, s.spec.ne[0]) : quant_type::mxfp4);
        summary.fallbacks += weight && s.mxfp4.empty() && types.back() != requested_type(options.type);
        if (auto r = w.add_tensor(s.spec.name, types.back(), s.spec.ne); !r) {
            return r.error();
        }
    }
    tensor_streamer streamer(*ckpt, w);
    for (std::size_t i = 0; i < sources->size(); ++i) {
        const auto& s = (*sources)[i];
        if (auto r = streamer.write(s, types[i]); !r) {
            return r.error().with_context("tensor " + s.spec.name);
        }
        const std::uint64_t bytes = w.tensors()[i].bytes;
        summary.bytes += bytes;
        ++summary.tensors;
        if (options.on_tensor) {
            options.on_tensor({i, sources->size(), s.spec.name, types[i], bytes});
        }
    }
    if (auto r = w.finish(); !r) {
        return r.error();
    }
    return summary;
}

} // namespace

std::optional<output_type> parse_output_type(std::string_view name) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    constexpr std::pair<std::string_view, output_type> names[] = {
        {"f32", output_type::f32},   {"f16", output_type::f16},   {"bf16", output_type::bf16},
        {"q8_0", output_type::q8_0}, {"q4_k", output_type::q4_k}, {"q6_k", output_type::q6_k},
        {"q2_k", output_type::q2_k}, {"q3_k", output_type::q3_k}, {"q5_k", output_type::q5_k},
    };
    for (const auto& [n, t] : names) {
        if (n == lower) {
            return t;
        }
    }
    return std::nullopt;
}

std::uint32_t file_type_of(output_type type) noexcept {
    switch (type) {
    case output_type::f32:
        return 0;
    case output_type::f16:
        return 1;
    case output_type::q8_0:
        return 7;
    case output_type::q4_k:
        return 15;
    case output_type::q6_k:
        return 18;
    case output_type::q2_k:
        return 10;
    case output_type::q3_k:
        return 11;
    case output_type::q5_k:
        return 16;
    case output_type::bf16:
        return 32;
    }
    return 1;
}

kernels::quant_type tensor_type(output_type type, bool weight, std::uint64_t row_elems) noexcept {
    if (!weight) {
        return quant_type::f32;
    }
    for (const quant_type t : {requested_type(type), quant_type::q8_0, quant_type::f16}) {
        if (row_elems % kernels::traits_of(t).block_elems == 0) {
            return t;
        }
    }
    return quant_type::f16;
}

result<convert_summary> convert_checkpoint(const std::filesystem::path& hf_dir, const std::filesystem::path& out,
                                           const convert_options& options) {
    std::filesystem::path tmp = out;
    tmp += ".tmp";
    auto summary = convert_into(hf_dir, tmp, options);
    std::error_code ec;
    if (!summary) {
        std::filesystem::remove(tmp, ec);
        return summary.error();
    }
    std::filesystem::rename(tmp, out, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        return make_error(std::errc::io_error, "cannot rename " + tmp.string() + " to " + out.string());
    }
    return summary;
}

} // namespace sluice::convert
