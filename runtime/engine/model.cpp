// Loading a model: headers, architecture and hyperparameters, tokenizer, chat template, then the weights.
#include "runtime/engine/model.hpp"

#include "runtime/engine/batch_engine.hpp"
#include "runtime/engine/mtp.hpp"
#include "runtime/engine/speculative.hpp"

#include "runtime/experts/expert_cache.hpp"
#include "runtime/experts/routing_log.hpp"
#include "runtime/grammar/token_mask.hpp"
#include "runtime/tokenizer/loaders.hpp"

#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

namespace sluice {

/// Everything a loaded model holds.
struct model::state {
    std::filesystem::path path;
    model_options options;
    std::unique_ptr<gguf::model_files> files;
    const models::architecture* arch = nullptr;
    models::model_hparams hp;
    models::model_weights weights;
    memory_plan plan;
    std::optional<tokenizer::tokenizer> vocab;
    std::optional<chat::template_source> chat_template;
    std::optional<result<chat::jinja_template>> parsed_template;
    std::shared_ptr<runtime::compute_pool> pool; ///< a draft model shares its target's
    std::unique_ptr<experts::expert_source> experts;
    const experts::expert_cache* cache = nullptr; ///< `experts` when it is a cache
    std::unique_ptr<experts::routing_log> routing;
    std::mutex engine_mu;
    std::shared_ptr<batch_engine> engine; ///< made by the first session (batch())
    std::shared_ptr<model> draft;
    std::string draft_warning;
    std::unique_ptr<speculation::mtp_block> mtp; ///< options.mtp: the file's MTP block, run for drafting
    std::unique_ptr<speculation::counters> speculation = std::make_unique<speculation::counters>();
    mutable std::once_flag trie_once;
    mutable std::shared_ptr<const grammar::token_trie> trie; ///< built by the first constrained generation
};

model::model() : state_(std::make_unique<state>()) {}
model::~model() = default;

const model_options& model::options() const noexcept { return state_->options; }
const std::filesystem::path& model::path() const noexcept { return state_->path; }
std::uint64_t model::resident_bytes() const noexcept { return state_->weights.resident_bytes(); }
bool model::streams_experts() const noexcept { return state_->plan.streams(); }
std::uint32_t model::training_context() const noexcept { return state_->hp.n_ctx_train; }
std::uint32_t model::vocab_size() const noexcept { return static_cast<std::uint32_t>(state_->vocab->size()); }
const models::model_hparams& model::hparams() const noexcept { return state_->hp; }
const models::architecture& model::arch() const noexcept { return *state_->arch; }
const tokenizer::tokenizer& model::vocab() const noexcept { return *state_->vocab; }
const std::optional<chat::template_source>& model::chat_template() const noexcept { return state_->chat_template; }
const result<chat::jinja_template>* model::parsed_chat_template() const noexcept {
    return state_->parsed_template ? &*state_->parsed_template : nullptr;
}
std::string model::file_fault() const {
    if (!state_->plan.streams()) {
        return {};
    }
    for (const auto& part : state_->files->parts()) {
        const auto now = part.file.current_size();
        if (!now) {
            return now.error().message;
        }
        if (*now < part.file.size()) {
            return part.file.path() + ": truncated from " + std::to_string(part.file.size()) + " to " +
                   std::to_string(*now) + " bytes while experts stream from it";
        }
    }
    return {};
}

const memory_plan& model::plan() const noexcept { return state_->plan; }

std::shared_ptr<const grammar::token_trie> model::token_trie() const {
    std::call_once(state_->trie_once, [this] {
        state_->trie = std::make_shared<const grammar::token_trie>(*state_->vocab, state_->hp.n_vocab);
    });
    return state_->trie;
}
runtime::compute_pool& model::pool() noexcept { return *state_->pool; }
const models::model_weights& model::weights() const noexcept { return state_->weights; }
experts::expert_source& model::experts() noexcept { return *state_->experts; }
experts::routing_log* model::routing() noexcept { return state_->routing.get(); }
const std::shared_ptr<model>& model::draft() const noexcept { return state_->draft; }
const std::string& model::draft_warning() const noexcept { return state_->draft_warning; }
speculation::counters& model::speculation() const noexcept { return *state_->speculation; }
speculation::mtp_block* model::mtp() const noexcept {
    return state_->mtp.get();
}
bool model::cache_has_state() const {
    const auto layout = models::cache_layout_of(*state_->arch, state_->hp);
    return std::any_of(layout.begin(), layout.end(), [](const auto& l) { return l.state_floats > 0; });
}

std::shared_ptr<batch_engine> model::batch() {
    auto* m = state_.get();
    const std::lock_guard lock(m->engine_mu);
    if (!m->engine) {
        m->engine = std::make_shared<batch_engine>(*m->arch, m->hp, m->weights, *m->pool, *m->experts,
                                                   std::max(1u, m->options.n_batch), m->routing.get());
    }
    return m->engine;
}

result<void> model::set_routing(const std::string& record_to, const std::string& replay_from) {
    auto* m = state_.get();
    {
        const std::lock_guard lock(m->engine_mu);
        m->engine.reset(); // sessions created from now on record or replay through a new engine
    }
    if (record_to.empty() && replay_from.empty()) {
        m->routing.reset();
        return {};
    }
    auto name = m->files->kv().find_string(gguf::keys::name);
    auto routing = experts::routing_log::open(record_to, replay_from, {m->hp.n_layer, m->hp.n_expert, m->hp.n_expert_used},
                                              name && *name ? std::string(**name) : m->path.filename().string());
    if (!routing) {
        return routing.error().with_context(m->path.string());
    }
    m->routing = std::move(*routing);
    return {};
}

experts::expert_cache_counters model::expert_counters() const {
    if (state_->cache == nullptr) {
        experts::expert_cache_counters none;
        none.layers.resize(state_->hp.n_layer);
        return none;
    }
    return state_->cache->counters();
}

boost::asio::awaitable<result<std::shared_ptr<model>>> model::load_draft(const model& target, std::uint64_t budget) {
    const auto& options = target.options();
    auto draft_options = options;
    draft_options.draft_model.clear();
    draft_options.mtp = false; // the target's MTP block, not the draft's
    draft_options.speculative = speculative_mode::off;
    draft_options.memory_budget = budget;
    draft_options.disk_bandwidth = 1; // no disk probe: a draft that does not fit resident is refused anyway
    const std::string where = "draft model " + options.draft_model;
    auto draft = co_await load(options.draft_model, draft_options);
    if (!draft) {
        co_return draft.error().with_context(where);
    }
    const auto& d = **draft;
    if (d.streams_experts()) {
        co_return make_error(std::errc::not_enough_memory,
                             where + ": does not fit in memory within the budget (" + std::to_string(budget >> 20) +
                                 " MiB); a draft must be resident");
    }
    if (d.cache_has_state()) {
        co_return make_error(std::errc::invalid_argument,
                             where + ": has recurrent layers, whose state cannot be cut back after a rejected draft");
    }
    // Same vocabulary: the same number of tokens with the same texts, so that token ids mean the same.
    const auto& tv = target.vocab();
    const auto& dv = d.vocab();
    if (d.hparams().n_vocab != target.hparams().n_vocab || dv.size() != tv.size()) {
        co_return make_error(std::errc::invalid_argument,
                             where + ": its vocabulary has " + std::to_string(d.hparams().n_vocab) + " tokens (" +
                                 std::to_string(dv.size()) + " in the tokenizer), the model's " +
                                 std::to_string(target.hparams().n_vocab) + " (" + std::to_string(tv.size()) +
                                 "); a draft needs the same vocabulary");
    }
    for (std::size_t id = 0; id < tv.size(); ++id) {
        const auto t = static_cast<tokenizer::token_id>(id);
        if (tv.token_text(t) != dv.token_text(t)) {
            co_return make_error(std::errc::invalid_argument,
                                 where + ": token " + std::to_string(id) + " differs from the model's (a draft " +
                                     "needs the same vocabulary)");
        }
    }
    co_return std::move(*draft);
}

boost::asio::awaitable<result<std::shared_ptr<model>>> model::load(std::filesystem::path path) {
    model_options options;
    return load(std::move(path), options);
}

boost::asio::awaitable<result<std::shared_ptr<model>>> model::load(std::filesystem::path path, model_options options,
                                                                   load_progress progress) {
    std::shared_ptr<model> owner(new model());
    auto* m = owner->state_.get();
    m->path = path;
    auto files = gguf::model_files::open(path);
    if (!files) {
        co_return files.error();
    }
    m->files = std::make_unique<gguf::model_files>(std::move(*files));
    const auto& kv = m->files->kv();
    auto hp = models::load_hparams(kv, m->arch);
    if (!hp) {
        co_return hp.error().with_context(path.string());
    }
    m->hp = std::move(*hp);
    if (m->hp.n_vocab == 0) {
        if (const auto* emb = m->files->find_tensor(models::tensor_name(models::tensor_kind::token_embd))) {
            m->hp.n_vocab = static_cast<std::uint32_t>(emb->ne[1]);
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
    if (tok->size() > m->hp.n_vocab) {
        co_return make_error(std::errc::invalid_argument,
                             path.string() + ": the tokenizer has " + std::to_string(tok->size()) +
                                 " tokens but the model only " + std::to_string(m->hp.n_vocab));
    }
    m->vocab.emplace(std::move(*tok));
    if (kv.contains(gguf::keys::chat_template)) {
        if (auto t = chat::gguf_template_source(kv)) { // the header is parsed already: no second read
            m->chat_template = std::move(*t);
        }
    }
    if (options.n_ctx == 0) {
        options.n_ctx = std::min<std::uint32_t>(m->hp.n_ctx_train, 4096);
    }
    if (options.n_threads == 0) {
        options.n_threads = std::max(1u, std::thread::hardware_concurrency());
    }
    m->options = options;
    if (m->chat_template) {
        // Parsed once, under the sandbox's limits: a template that fails to parse leaves the model usable for
        // plain completions, and every chat request gets the parse error.
        chat::template_options topts;
        topts.limits = options.template_limits;
        m->parsed_template.emplace(chat::jinja_template::parse(m->chat_template->text, topts));
    }
    auto reader = io::make_reader(co_await boost::asio::this_coro::executor, options.io);
    if (!reader) {
        co_return reader.error();
    }
    // The memory plan: everything resident, or the routed experts streamed through a cache of what is left.
    if (auto checked = models::check_tensors(*m->files, *m->arch, m->hp); !checked) {
        co_return checked.error().with_context(path.string());
    }
    auto layout = experts::make_expert_layout(*m->files, m->hp);
    if (!layout) {
        co_return layout.error().with_context(path.string());
    }
    plan_inputs in;
    in.budget = options.memory_budget;
    in.n_ctx = options.n_ctx;
    in.n_seq = std::max(1u, options.n_seq);
    in.n_batch = options.n_batch;
    in.n_threads = options.n_threads;
    in.kv_type = options.kv_type == kv_cache_type::f32 ? kernels::quant_type::f32 : kernels::quant_type::f16;
    in.disk_bandwidth = options.disk_bandwidth;
    in.cache_layout = models::cache_layout_of(*m->arch, m->hp);
    in.state_checkpoints = options.state_checkpoints;
    if (in.budget == 0) {
        in.budget = default_memory_budget();
    }
    const std::uint64_t budget = in.budget;
    std::uint64_t mtp_bytes = 0;
    if (options.mtp) {
        // Drafting with the file's own MTP block: planned first, like a draft model, and the target gets the rest.
        if (m->hp.hybrid.nextn_layers == 0) {
            co_return make_error(std::errc::invalid_argument,
                                 path.string() + ": --mtp: the file has no multi-token prediction (MTP / NextN) " +
                                     "layers (" + m->hp.arch + ".nextn_predict_layers is 0 or absent); use --draft " +
                                     "or --lookup");
        }
        if (owner->cache_has_state()) {
            co_return make_error(std::errc::invalid_argument,
                                 path.string() + ": --mtp: the model has recurrent layers, whose state cannot be cut " +
                                     "back after a rejected draft");
        }
        mtp_bytes = plan_mtp_bytes(*m->files, m->hp, in);
        if (mtp_bytes >= in.budget) {
            co_return make_error(std::errc::not_enough_memory,
                                 path.string() + ": the memory budget (" + std::to_string(budget >> 20) +
                                     " MiB) cannot hold the MTP block's experts, caches and buffers (" +
                                     std::to_string(mtp_bytes >> 20) + " MiB)");
        }
        in.budget -= mtp_bytes;
    }
    if (!options.draft_model.empty()) {
        auto draft = co_await load_draft(*owner, in.budget);
        if (!draft) {
            co_return draft.error();
        }
        m->draft = std::move(*draft);
        in.budget -= std::min(in.budget, m->draft->plan().planned_bytes());
    }
    auto plan = plan_memory(*m->files, m->hp, *layout, in);
    if (!plan && m->draft && options.draft_optional) {
        // The target comes first: it gets the whole budget and generates without the draft.
        m->draft_warning = "the memory budget (" + std::to_string(budget >> 20) + " MiB) cannot hold the draft " +
                           options.draft_model + " (" + std::to_string(m->draft->plan().planned_bytes() >> 20) +
                           " MiB) and the target; loaded without the draft: " + plan.error().message;
        std::fprintf(stderr, "sluice: warning: %s\n", m->draft_warning.c_str());
        m->draft.reset();
        in.budget = budget - mtp_bytes;
        plan = plan_memory(*m->files, m->hp, *layout, in);
    } else if (!plan && m->draft) {
        co_return make_error(std::errc::not_enough_memory,
                             path.string() + ": the memory budget (" + std::to_string(budget >> 20) +
                                 " MiB) cannot hold the draft model " + options.draft_model + " (" +
                                 std::to_string(m->draft->plan().planned_bytes() >> 20) +
                                 " MiB planned) and this model (--draft-optional loads it alone): " +
                                 plan.error().message);
    }
    if (!plan && options.mtp) {
        // Name the MTP block's share: the plan's message speaks of the budget left after it.
        co_return make_error(std::errc::not_enough_memory,
                             path.string() + ": the memory budget (" + std::to_string(budget >> 20) +
                                 " MiB) less the MTP block's experts, caches and buffers (" +
                                 std::to_string(mtp_bytes >> 20) + " MiB) cannot hold this model (load it without "
                                 "--mtp to give it the whole budget): " + plan.error().message);
    }
    if (!plan) {
        co_return plan.error().with_context(path.string());
    }
    m->plan = std::move(*plan);
    in.budget = budget;
    if (m->plan.streams() && (m->draft || options.mtp)) {
        // Drafting's share of the budget can be what makes the experts stream: say so, as drafting then has to beat
        // decode from disk, not resident decode.
        if (auto alone = plan_memory(*m->files, m->hp, *layout, in); alone && !alone->streams()) {
            std::fprintf(stderr,
                         "sluice: warning: %s: %s's %llu MiB make the experts stream (%llu of %llu cached); "
                         "without it the model would be held resident in the %llu MiB budget, so drafting has to "
                         "beat decoding from disk\n",
                         path.string().c_str(), m->draft ? "the draft model" : "the MTP block",
                         static_cast<unsigned long long>((m->draft ? m->draft->plan().planned_bytes() : mtp_bytes) >> 20),
                         static_cast<unsigned long long>(m->plan.cache_slots),
                         static_cast<unsigned long long>(m->plan.total_experts),
                         static_cast<unsigned long long>(budget >> 20));
        }
    }
    if (m->plan.streams() && options.disk_bandwidth <= 0) {
        // The speed bound needs the disk's random-read bandwidth: a short probe on the model file itself.
        auto measured = co_await probe_disk_bandwidth(**reader, *m->files, *layout);
        if (measured) {
            auto again = in;
            again.disk_bandwidth = *measured;
            again.budget = m->plan.budget;
            if (auto replanned = plan_memory(*m->files, m->hp, *layout, again)) {
                m->plan = std::move(*replanned);
            }
        }
    }
    if (m->draft) {
        m->plan.budget = budget; // the draft's share is planned apart and shown as draft_bytes
        m->plan.draft_bytes = m->draft->plan().planned_bytes();
    }
    if (options.mtp) {
        m->plan.budget = budget; // as the draft's: planned apart, shown as mtp_bytes
        m->plan.mtp_bytes = mtp_bytes;
    }
    // The reader belongs to the loading executor, which may be gone when the model is used: keep it local.
    auto weights = co_await models::model_weights::load(**reader, *m->files, *m->arch, m->hp, progress,
                                                        m->plan.streams(), options.mtp);
    if (!weights) {
        co_return weights.error().with_context(path.string());
    }
    m->weights = std::move(*weights);
    if (options.mtp) {
        auto block = speculation::mtp_block::create(*m->arch, m->hp, m->weights);
        if (!block) {
            co_return block.error().with_context(path.string());
        }
        m->mtp = std::move(*block);
    }
    m->pool = std::make_shared<runtime::compute_pool>(options.n_threads);
    {
        // Resident matrices into their kernels' layout, on the compute threads, in pieces of 256 rows.
        constexpr std::uint64_t piece_rows = 256;
        struct piece {
            const models::repack_job* job;
            std::uint64_t row0, rows;
        };
        const auto jobs = m->weights.choose_layouts();
        std::vector<piece> pieces;
        for (const auto& j : jobs) {
            for (std::uint64_t r = 0; r < j.rows; r += piece_rows) {
                pieces.push_back({&j, r, std::min(piece_rows, j.rows - r)});
            }
        }
        co_await m->pool->run(pieces.size(), [&pieces](std::size_t i) {
            const auto& p = pieces[i];
            kernels::repack_rows(p.job->layout, p.job->data + p.row0 * p.job->row_bytes, p.rows, p.job->cols);
        });
    }
    if (m->draft) {
        // One set of compute threads: the draft and the target run one after the other, and a second pool's
        // workers would spin on the cores the other one computes on.
        m->draft->state_->pool = m->pool;
    }
    if (m->plan.streams()) {
        experts::expert_cache_options cache_options;
        cache_options.slots = m->plan.cache_slots;
        cache_options.prefetch = options.prefetch;
        cache_options.prefetch_depth = options.prefetch_depth;
        cache_options.policy = {options.cache_policy, options.cache_pin_percent};
        cache_options.reads = {options.read_order,
                               options.read_window ? options.read_window : experts::default_read_window};
        cache_options.io = options.io;
        auto cache = experts::expert_cache::create(*m->files, std::move(*layout), cache_options);
        if (!cache) {
            co_return cache.error().with_context(path.string());
        }
        m->cache = cache->get();
        m->experts = std::move(*cache);
    } else {
        m->experts = std::make_unique<experts::resident_experts>(m->weights);
    }
    co_return owner;
}

} // namespace sluice
