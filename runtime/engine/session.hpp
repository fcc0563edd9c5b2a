// sluice::session inside Sluice: the public classes (include/sluice/session.hpp) with the model's internal types.
#pragma once

#include "runtime/engine/model.hpp"
#include "sluice/session.hpp"
