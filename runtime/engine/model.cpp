// Loading a model: headers, architecture and hyperparameters, tokenizer, chat template, then the weights.
#include "runtime/engine/model.hpp"

#include "runtime/tokenizer/loaders.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <thread>

namespace sluice {

model::~model() = default;

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
        if (const auto* emb = m->files_->find_tensor("token_embd.weight")) {
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
    // The reader belongs to the loading executor, which may be gone when the model is used: keep it local.
    auto weights = co_await models::model_weights::load(**reader, *m->files_, *m->arch_, m->hp_, progress);
    if (!weights) {
        co_return weights.error().with_context(path.string());
    }
    m->weights_ = std::move(*weights);
    m->pool_ = std::make_unique<runtime::compute_pool>(options.n_threads);
    m->experts_ = std::make_unique<models::resident_experts>(m->weights_);
    co_return m;
}

} // namespace sluice
