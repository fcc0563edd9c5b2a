// Loading weights: check the tensor table against the architecture, read each file's data region in large
// aligned O_DIRECT reads into one arena per file, then point views into the arenas.
#include "runtime/models/weights.hpp"

#include "kernels/quant.hpp"
#include "runtime/models/tensor_names.hpp"

#include <algorithm>
#include <cstdint>

#include <unordered_map>
#include <unordered_set>

namespace sluice::models {

namespace {

/// Which view of layer_weights holds each layer tensor.
struct layer_field {
    tensor_kind kind;
    tensor_suffix suffix;
    weight_view layer_weights::*member;
};

constexpr layer_field layer_fields[] = {
    {tensor_kind::attn_norm, tensor_suffix::weight, &layer_weights::attn_norm},
    {tensor_kind::attn_q, tensor_suffix::weight, &layer_weights::wq},
    {tensor_kind::attn_k, tensor_suffix::weight, &layer_weights::wk},
    {tensor_kind::attn_v, tensor_suffix::weight, &layer_weights::wv},
    {tensor_kind::attn_output, tensor_suffix::weight, &layer_weights::wo},
    {tensor_kind::attn_q, tensor_suffix::bias, &layer_weights::bq},
    {tensor_kind::attn_k, tensor_suffix::bias, &layer_weights::bk},
    {tensor_kind::attn_v, tensor_suffix::bias, &layer_weights::bv},
    {tensor_kind::attn_q_norm, tensor_suffix::weight, &layer_weights::q_norm},
    {tensor_kind::attn_k_norm, tensor_suffix::weight, &layer_weights::k_norm},
    {tensor_kind::ffn_norm, tensor_suffix::weight, &layer_weights::ffn_norm},
    {tensor_kind::ffn_gate, tensor_suffix::weight, &layer_weights::ffn_gate},
    {tensor_kind::ffn_up, tensor_suffix::weight, &layer_weights::ffn_up},
    {tensor_kind::ffn_down, tensor_suffix::weight, &layer_weights::ffn_down},
    {tensor_kind::ffn_gate_inp, tensor_suffix::weight, &layer_weights::router},
    {tensor_kind::ffn_gate_exps, tensor_suffix::weight, &layer_weights::gate_exps},
    {tensor_kind::ffn_up_exps, tensor_suffix::weight, &layer_weights::up_exps},
    {tensor_kind::ffn_down_exps, tensor_suffix::weight, &layer_weights::down_exps},
    {tensor_kind::ffn_gate_exps, tensor_suffix::bias, &layer_weights::gate_exps_bias},
    {tensor_kind::ffn_up_exps, tensor_suffix::bias, &layer_weights::up_exps_bias},
    {tensor_kind::ffn_down_exps, tensor_suffix::bias, &layer_weights::down_exps_bias},
    {tensor_kind::ffn_gate_inp_shexp, tensor_suffix::weight, &layer_weights::shexp_gate_inp},
    {tensor_kind::ffn_gate_shexp, tensor_suffix::weight, &layer_weights::shexp_gate},
    {tensor_kind::ffn_up_shexp, tensor_suffix::weight, &layer_weights::shexp_up},
    {tensor_kind::ffn_down_shexp, tensor_suffix::weight, &layer_weights::shexp_down},
    {tensor_kind::attn_output, tensor_suffix::bias, &layer_weights::bo},
    {tensor_kind::attn_sinks, tensor_suffix::weight, &layer_weights::sinks},
    {tensor_kind::attn_post_norm, tensor_suffix::weight, &layer_weights::post_attn_norm},
    {tensor_kind::ffn_gate_inp, tensor_suffix::bias, &layer_weights::router_bias},
    {tensor_kind::attn_q_a, tensor_suffix::weight, &layer_weights::wq_a},
    {tensor_kind::attn_q_a_norm, tensor_suffix::weight, &layer_weights::q_a_norm},
    {tensor_kind::attn_q_b, tensor_suffix::weight, &layer_weights::wq_b},
    {tensor_kind::attn_kv_a_mqa, tensor_suffix::weight, &layer_weights::wkv_a},
    {tensor_kind::attn_kv_a_norm, tensor_suffix::weight, &layer_weights::kv_a_norm},
    {tensor_kind::attn_k_b, tensor_suffix::weight, &layer_weights::wk_b},
    {tensor_kind::attn_v_b, tensor_suffix::weight, &layer_weights::wv_b},
    {tensor_kind::exp_probs_b, tensor_suffix::bias, &layer_weights::exp_probs_b},
};

/// Which view of hybrid_layer_weights holds each hybrid tensor.
struct hybrid_field {
    tensor_kind kind;
    tensor_suffix suffix;
    weight_view hybrid_layer_weights::*member;
};

constexpr hybrid_field hybrid_fields[] = {
    {tensor_kind::attn_qkv, tensor_suffix::weight, &hybrid_layer_weights::qkv},
    {tensor_kind::attn_gate, tensor_suffix::weight, &hybrid_layer_weights::gate},
    {tensor_kind::ssm_conv1d, tensor_suffix::weight, &hybrid_layer_weights::conv1d},
    {tensor_kind::ssm_dt, tensor_suffix::bias, &hybrid_layer_weights::dt},
    {tensor_kind::ssm_a, tensor_suffix::none, &hybrid_layer_weights::a},
    {tensor_kind::ssm_alpha, tensor_suffix::weight, &hybrid_layer_weights::alpha},
    {tensor_kind::ssm_beta, tensor_suffix::weight, &hybrid_layer_weights::beta},
    {tensor_kind::ssm_ba, tensor_suffix::weight, &hybrid_layer_weights::ba},
    {tensor_kind::ssm_norm, tensor_suffix::weight, &hybrid_layer_weights::norm},
    {tensor_kind::ssm_out, tensor_suffix::weight, &hybrid_layer_weights::out},
    {tensor_kind::nextn_eh_proj, tensor_suffix::weight, &hybrid_layer_weights::eh_proj},
    {tensor_kind::nextn_enorm, tensor_suffix::weight, &hybrid_layer_weights::enorm},
    {tensor_kind::nextn_hnorm, tensor_suffix::weight, &hybrid_layer_weights::hnorm},
    {tensor_kind::nextn_shared_head_norm, tensor_suffix::weight, &hybrid_layer_weights::shared_head_norm},
    {tensor_kind::nextn_embed_tokens, tensor_suffix::weight, &hybrid_layer_weights::embed_tokens},
    {tensor_kind::nextn_shared_head_head, tensor_suffix::weight, &hybrid_layer_weights::shared_head_head},
};

/// The matrices of a layer that only ever go through the matrix products (never dequantized row by row or read
/// as bytes elsewhere), so they may take a repacked layout.
constexpr weight_view layer_weights::*product_only[] = {
    &layer_weights::wq,         &layer_weights::wk,        &layer_weights::wv,         &layer_weights::wo,
    &layer_weights::ffn_gate,   &layer_weights::ffn_up,    &layer_weights::ffn_down,   &layer_weights::gate_exps,
    &layer_weights::up_exps,    &layer_weights::down_exps, &layer_weights::shexp_gate, &layer_weights::shexp_up,
    &layer_weights::shexp_down,
};

/// Whether a tensor stays on disk: routed experts that stream, and those of blocks past the main stack unless
/// their multi-token prediction runs (`nextn_experts`: then they are resident whether the main stack streams or not).
bool stays_on_disk(const gguf::tensor_info& t, const model_hparams& hp, bool skip_experts, bool nextn_experts) {
    if (!t.is_expert()) {
        return false;
    }
    const auto parsed = parse_tensor_name(t.name);
    if (parsed && parsed->layer && *parsed->layer >= hp.n_layer) {
        return !nextn_experts;
    }
    return skip_experts;
}

constexpr std::uint64_t chunk_bytes = std::uint64_t{16} << 20; // one read
constexpr std::size_t reads_per_batch = 32;                    // 512 MiB submitted at once

std::string shape_text(std::span<const std::uint64_t> ne) {
    std::string s = "[";
    for (std::size_t i = 0; i < ne.size(); ++i) {
        s += (i ? ", " : "") + std::to_string(ne[i]);
    }
    return s + "]";
}

result<void> check_one(const tensor_spec& spec, const gguf::tensor_info& t) {
    const std::string context = "tensor " + spec.name;
    if (t.shape().size() != spec.ne.size() || !std::equal(spec.ne.begin(), spec.ne.end(), t.shape().begin())) {
        // A trailing 1 is the same shape (some writers keep [n, 1]).
        const bool trailing_one = t.n_dims == spec.ne.size() + 1 && t.ne[t.n_dims - 1] == 1 &&
                                  std::equal(spec.ne.begin(), spec.ne.end(), t.shape().begin());
        if (!trailing_one) {
            return make_error(std::errc::invalid_argument,
                              context + ": shape " + gguf::shape_string(t) + ", expected " + shape_text(spec.ne));
        }
    }
    const bool needs_f32 = spec.role == tensor_role::vector || spec.role == tensor_role::router;
    if (needs_f32 && t.type != kernels::quant_type::f32) {
        return make_error(std::errc::not_supported,
                          context + ": type " + std::string(kernels::traits_of(t.type).name) + ", expected f32");
    }
    if (!needs_f32 && !kernels::has_kernels(t.type)) {
        return make_error(std::errc::not_supported,
                          context + ": type " + std::string(kernels::traits_of(t.type).name) + " has no CPU kernels");
    }
    return {};
}

} // namespace

result<void> check_tensors(const gguf::model_files& files, const architecture& arch, const model_hparams& hp) {
    const auto specs = arch.tensors(hp);
    std::unordered_map<std::string_view, const tensor_spec*> expected;
    for (const auto& spec : specs) {
        expected.emplace(spec.name, &spec);
        const auto* t = files.find_tensor(spec.name);
        if (!t) {
            if (spec.optional) {
                continue;
            }
            return make_error(std::errc::invalid_argument,
                              "tensor " + spec.name + ": missing (architecture " + std::string(arch.name) + ")");
        }
        if (auto r = check_one(spec, *t); !r) {
            return r;
        }
    }
    for (const auto& t : files.tensors()) {
        if (!expected.contains(t.name)) {
            return make_error(std::errc::invalid_argument, "tensor " + t.name + ": not used by architecture " +
                                                               std::string(arch.name) + " with these hyperparameters");
        }
    }
    return {};
}

boost::asio::awaitable<result<model_weights>> model_weights::load(io::reader& reader, const gguf::model_files& files,
                                                                  const architecture& arch, const model_hparams& hp,
                                                                  load_progress progress, bool skip_experts,
                                                                  bool nextn_experts) {
    if (auto r = check_tensors(files, arch, hp); !r) {
        co_return r.error();
    }
    model_weights w;
    // Step 1: the page-aligned ranges of the tensors to hold, merged where they touch, per part; one arena per
    // part holds its ranges back to back.
    struct range {
        std::uint64_t lo, hi, arena_offset;
    };
    const auto n_parts = files.parts().size();
    std::vector<std::vector<range>> ranges(n_parts);
    {
        std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> spans(n_parts);
        for (const auto& t : files.tensors()) {
            if (stays_on_disk(t, hp, skip_experts, nextn_experts)) {
                continue;
            }
            const auto lo = t.offset & ~std::uint64_t{io::dma_buffer::alignment - 1};
            const auto hi = io::dma_buffer::round_up(t.offset + t.bytes);
            spans[t.split].emplace_back(lo, hi);
        }
        for (std::size_t p = 0; p < n_parts; ++p) {
            std::sort(spans[p].begin(), spans[p].end());
            std::uint64_t arena = 0;
            for (const auto& [lo, hi] : spans[p]) {
                if (!ranges[p].empty() && lo <= ranges[p].back().hi) {
                    auto& last = ranges[p].back();
                    arena += std::max(hi, last.hi) - last.hi;
                    last.hi = std::max(hi, last.hi);
                } else {
                    ranges[p].push_back({lo, hi, arena});
                    arena += hi - lo;
                }
            }
        }
    }
    std::uint64_t total = 0;
    for (const auto& part_ranges : ranges) {
        for (const auto& r : part_ranges) {
            total += r.hi - r.lo;
        }
    }
    std::uint64_t done = 0;
    for (std::size_t p = 0; p < n_parts; ++p) {
        if (ranges[p].empty()) {
            w.arenas_.emplace_back();
            continue;
        }
        const auto& part = files.parts()[p];
        const std::uint64_t file_size = part.file.size();
        auto& arena = w.arenas_.emplace_back(ranges[p].back().arena_offset + ranges[p].back().hi - ranges[p].back().lo);
        arena.advise_huge_pages();
        // Every chunk of every range, in batches; reads past the end of the file are trimmed to the file.
        std::vector<io::read_request> batch;
        auto flush_batch = [&]() -> boost::asio::awaitable<result<void>> {
            auto results = co_await reader.read_batch(batch);
            for (auto& r : results) {
                if (!r) {
                    co_return r.error().with_context("loading " + part.path.string());
                }
            }
            for (const auto& req : batch) {
                done += req.dest.size();
            }
            batch.clear();
            if (progress) {
                progress(std::min(done, total), total);
            }
            co_return result<void>{};
        };
        for (const auto& r : ranges[p]) {
            const std::uint64_t readable = std::min(r.hi, file_size) - std::min(r.lo, file_size);
            for (std::uint64_t off = 0; off < readable;) {
                const std::uint64_t n = std::min(chunk_bytes, readable - off);
                batch.push_back({&part.file, r.lo + off, arena.span().subspan(r.arena_offset + off, n)});
                off += n;
                if (batch.size() == reads_per_batch) {
                    auto flushed = co_await flush_batch();
                    if (!flushed) {
                        co_return flushed.error();
                    }
                }
            }
        }
        if (!batch.empty()) {
            auto flushed = co_await flush_batch();
            if (!flushed) {
                co_return flushed.error();
            }
        }
    }
    // Step 2: views (an expert tensor left on disk gets its shape and type but no data).
    auto view = [&](std::string_view name) {
        weight_view v;
        const auto* t = files.find_tensor(name);
        if (!t) {
            return v;
        }
        if (!stays_on_disk(*t, hp, skip_experts, nextn_experts)) {
            const auto& part_ranges = ranges[t->split];
            const auto it = std::upper_bound(part_ranges.begin(), part_ranges.end(), t->offset,
                                             [](std::uint64_t off, const range& r) { return off < r.lo; });
            const auto& r = *std::prev(it);
            v.data = w.arenas_[t->split].data() + r.arena_offset + (t->offset - r.lo);
        }
        v.type = t->type;
        v.cols = t->ne[0];
        v.rows = t->ne[1];
        v.row_bytes = t->row_bytes();
        if (t->is_expert() && t->n_dims >= 2) {
            v.n_expert = t->ne[t->n_dims - 1];
            v.expert_stride = t->n_dims == 3 ? t->ne[1] * v.row_bytes : v.row_bytes;
        }
        return v;
    };
    w.token_embd = view(tensor_name(tensor_kind::token_embd));
    w.output_norm = view(tensor_name(tensor_kind::output_norm));
    w.output = view(tensor_name(tensor_kind::output));
    if (!w.output) {
        w.output = w.token_embd;
    }
    const auto layer_views = [&](std::uint32_t il, layer_weights& l) {
        for (const auto& f : layer_fields) {
            l.*f.member = view(tensor_name(f.kind, il, f.suffix));
        }
        if (hp.hybrid.enabled()) {
            for (const auto& f : hybrid_fields) {
                l.hybrid.*f.member = view(tensor_name(f.kind, il, f.suffix));
            }
            l.ffn_norm = view(tensor_name(tensor_kind::attn_post_norm, il)); // their pre-FFN norm's name
        } else if (il >= hp.n_layer) {
            for (const auto& f : hybrid_fields) { // an MTP block's own tensors (deepseek2, glm4moe)
                if (f.member == &hybrid_layer_weights::eh_proj || f.member == &hybrid_layer_weights::enorm ||
                    f.member == &hybrid_layer_weights::hnorm || f.member == &hybrid_layer_weights::shared_head_norm ||
                    f.member == &hybrid_layer_weights::embed_tokens ||
                    f.member == &hybrid_layer_weights::shared_head_head) {
                    l.hybrid.*f.member = view(tensor_name(f.kind, il, f.suffix));
                }
            }
        }
    };
    w.layers.resize(hp.n_layer);
    for (std::uint32_t il = 0; il < hp.n_layer; ++il) {
        layer_views(il, w.layers[il]);
    }
    w.nextn.resize(hp.hybrid.nextn_layers);
    for (std::uint32_t i = 0; i < hp.hybrid.nextn_layers; ++i) {
        layer_views(hp.n_layer + i, w.nextn[i]);
    }
    co_return w;
}

std::vector<repack_job> model_weights::choose_layouts() {
    std::vector<repack_job> jobs;
    std::unordered_set<const std::byte*> seen; // a tensor two views share is rewritten once
    auto choose = [&](weight_view& v) {
        if (v.data == nullptr || v.layout != kernels::weight_layout::rows) {
            return;
        }
        const auto layout = kernels::preferred_layout(v.type, v.rows);
        if (layout == kernels::weight_layout::rows) {
            return;
        }
        v.layout = layout;
        if (seen.insert(v.data).second) {
            // The arena is ours and writable; views hold const pointers because nothing else writes weights.
            const std::uint64_t n_mats = v.n_expert ? v.n_expert : 1; // stacked experts: their rows, contiguous
            jobs.push_back({const_cast<std::byte*>(v.data), v.rows * n_mats, v.cols, v.row_bytes, layout});
        }
    };
    for (auto& l : layers) {
        for (const auto member : product_only) {
            choose(l.*member);
        }
    }
    if (output.data != token_embd.data) { // tied embeddings are also read row by row
        choose(output);
    }
    return jobs;
}

std::uint64_t model_weights::resident_bytes() const noexcept {
    std::uint64_t n = 0;
    for (const auto& a : arenas_) {
        n += a.size();
    }
    return n;
}

} // namespace sluice::models
