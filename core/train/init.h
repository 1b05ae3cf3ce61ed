// Initial weights for training, as both PyTorch tutorials do it: Xavier-uniform for every matrix
// (U(-a, a), a = sqrt(6 / (fan_in + fan_out))), zero biases, layer norms gamma 1 and beta 0.
#pragma once
#include <cstdint>

#include "model/config.h"
#include "model/weights.h"

namespace sf {

ModelWeights initialize_weights(const Config& config, uint64_t seed);

// Keeps tied and shared matrices equal during training: sums their gradients into every copy (so the same
// Adam update is applied to each copy, which therefore stay identical).
void tie_gradients(const Config& config, ModelWeights& grads);

}  // namespace sf
