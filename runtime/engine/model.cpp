// Loading a model: headers, architecture and hyperparameters, tokenizer, chat template, then the weights.
#include "runtime/engine/model.hpp"

#include "runtime/experts/expert_cache.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <thread>

namespace sluice {

model::~model() = default;

experts::expert_cache_counters model::expert_counters() const {
    if (cache_ == nullptr) {
        experts::expert_cache_counters none;
        none.layers.resize(hp_.n_layer);
        return none;
    }
    return cache_->counters();
}

boost::asio::awaitable<result<std::shared_ptr<model>>> model::load(std::filesystem::path path, model_options options,
                                                                   load_progress progress) {
    if (options.kv_type != kernels::quant_type::f16 && options.kv_type != kernels::quant_type::f32) {
        co_return make_error(std::errc::invalid_argument, "the KV cache type must be f16 or f32");
    }
    std::shared_ptr<model> m(new model());
    m->path_ = path;
    auto files = gguf::model_files::open(path);
    if (!files) {
        co_return files.error();
    }
    m->files_ = std::make_unique<gguf::model_files>(std::move(*files));
    const auto& kv = m->files_->kv();
    auto hp = models::load_hparams(kv, m->arch_);
    if (!hp) {
        co_return hp.error().with_context(path.string());
    }
    m->hp_ = std::move(*hp);
    if (m->hp_.n_vocab == 0) {
        if (const auto* emb = m->files_->find_tensor(models::tensor_name(models::tensor_kind::token_embd))) {
            m->hp_.n_vocab = static_cast<std::uint32_t>(emb->ne[1]);
        }
    }
    auto vocab = tokenizer::vocab_from_gguf(kv);
    if (!vocab) {
        co_return vocab.error().with_context(path.string());
    }
    auto tok = tokenizer::tokenizer::create(std::move(*vocab));
    if (!tok) {
        co_return tok.error().with_context(path.string());
    }
    if (tok->size() > m->hp_.n_vocab) {
        co_return make_error(std::errc::invalid_argument,
                             path.string() + ": the tokenizer has " + std::to_string(tok->size()) +
                                 " tokens but the model only " + std::to_string(m->hp_.n_vocab));
    }
    m->tokenizer_.emplace(std::move(*tok));
    if (kv.contains(gguf::keys::chat_template)) {
        if (auto t = chat::gguf_template_source(kv)) { // the header is parsed already: no second read
            m->template_ = std::move(*t);
        }
    }
    if (options.n_ctx == 0) {
        options.n_ctx = std::min<std::uint32_t>(m->hp_.n_ctx_train, 4096);
    }
    if (options.n_threads == 0) {
        options.n_threads = std::max(1u, std::thread::hardware_concurrency());
    }
    m->options_ = options;
    auto reader = io::make_reader(co_await boost::asio::this_coro::executor, options.io);
    if (!reader) {
        co_return reader.error();
    }
    // The memory plan: everything resident, or the routed experts streamed through a cache of what is left.
    if (auto checked = models::check_tensors(*m->files_, *m->arch_, m->hp_); !checked) {
        co_return checked.error().with_context(path.string());
    }
    auto layout = experts::make_expert_layout(*m->files_, m->hp_);
    if (!layout) {
        co_return layout.error().with_context(path.string());
    }
    plan_inputs in;
    in.budget = options.memory_budget;
    in.n_ctx = options.n_ctx;
    in.n_seq = std::max(1u, options.n_seq);
    in.n_batch = options.n_batch;
    in.n_threads = options.n_threads;
    in.kv_type = options.kv_type;
    in.disk_bandwidth = options.disk_bandwidth;
    in.cache_layout = models::cache_layout_of(*m->arch_, m->hp_);
    auto plan = plan_memory(*m->files_, m->hp_, *layout, in);
    if (!plan) {
        co_return plan.error().with_context(path.string());
    }
    m->plan_ = std::move(*plan);
    if (m->plan_.streams() && options.disk_bandwidth <= 0) {
        // The speed bound needs the disk's random-read bandwidth: a short probe on the model file itself.
        auto measured = co_await probe_disk_bandwidth(**reader, *m->files_, *layout);
        if (measured) {
            auto again = in;
            again.disk_bandwidth = *measured;
            if (auto replanned = plan_memory(*m->files_, m->hp_, *layout, again)) {
                m->plan_ = std::move(*replanned);
            }
        }
    }
    // The reader belongs to the loading executor, which may be gone when the model is used: keep it local.
    auto weights = co_await models::model_weights::load(**reader, *m->files_, *m->arch_, m->hp_, progress,
                                                        m->plan_.streams());
    if (!weights) {
        co_return weights.error().with_context(path.string());
    }
    m->weights_ = std::move(*weights);
    m->pool_ = std::make_unique<runtime::compute_pool>(options.n_threads);
    if (m->plan_.streams()) {
        experts::expert_cache_options cache_options;
        cache_options.slots = m->plan_.cache_slots;
        cache_options.prefetch = options.prefetch;
        cache_options.policy = options.cache_policy;
        cache_options.io = options.io;
        auto cache = experts::expert_cache::create(*m->files_, std::move(*layout), cache_options);
        if (!cache) {
            co_return cache.error().with_context(path.string());
        }
        m->cache_ = cache->get();
        m->experts_ = std::move(*cache);
    } else {
        m->experts_ = std::make_unique<experts::resident_experts>(m->weights_);
    }
    co_return m;
}

} // namespace sluice
