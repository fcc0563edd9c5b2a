// sluice::model inside Sluice: the public class (include/sluice/model.hpp) with the internal types its accessors
// name (hyperparameters, architecture, tokenizer, chat template, memory plan, weights, compute pool, experts).
#pragma once

#include "runtime/chat/chat_template.hpp"
#include "runtime/compute/compute_pool.hpp"
#include "runtime/engine/memory_plan.hpp"
#include "runtime/experts/cache_counters.hpp"
#include "runtime/experts/expert_source.hpp"
#include "runtime/models/architecture.hpp"
#include "runtime/models/hparams.hpp"
#include "runtime/models/weights.hpp"
#include "runtime/tokenizer/tokenizer.hpp"
#include "sluice/model.hpp"
