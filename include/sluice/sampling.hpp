// Sampling settings of a generation and the log-probability entries it reports (public).
#pragma once

#include <cstdint>

namespace sluice {

/// How the next token is chosen from a row of logits. Defaults follow llama.cpp.
struct sampling_params {
    float temperature = 0.8f;        ///< <= 0: greedy (argmax after penalties; ties go to the lowest id)
    std::int32_t top_k = 40;         ///< <= 0: off
    float top_p = 0.95f;             ///< in (0, 1]; 1: off
    float min_p = 0.05f;             ///< in [0, 1]; 0: off; keeps tokens with p >= min_p * p_max
    float repeat_penalty = 1.0f;     ///< > 0; CTRL style: logit > 0 ? logit / penalty : logit * penalty; 1: off
    std::int32_t repeat_last_n = 64; ///< window of the three penalties; -1: whole history, 0: penalties off
    float presence_penalty = 0.0f;   ///< in [-2, 2]; OpenAI: logit -= presence * (count > 0)
    float frequency_penalty = 0.0f;  ///< in [-2, 2]; OpenAI: logit -= frequency * count
    std::uint64_t seed = 0;          ///< same seed + same accepted tokens + same logits => same tokens
};

/// One entry of a top-n logprobs list.
struct token_logprob {
    std::int32_t token = 0;
    float logprob = 0.0f;
};

} // namespace sluice
