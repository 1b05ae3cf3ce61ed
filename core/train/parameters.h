// The trainable parameters of a ModelWeights as a flat list of named views, in one fixed order. The same
// function applied to the weights, their gradients and the optimiser's moment estimates (all ModelWeights of
// the same shapes) lines them up element for element.
#pragma once
#include <string>
#include <vector>

#include "model/weights.h"

namespace sf {

struct ParameterView {
  std::string name;  // e.g. "decoder.layers.1.cross_attn.q.weight"
  float* data = nullptr;
  Eigen::Index size = 0;
};

// Every non-empty matrix and vector of w, under the "stepformer" family's names (model/name_tables.h) (absent parts, e.g. sinusoidal positions or final norms a config
// does not have, are empty and skipped).
std::vector<ParameterView> parameter_views(ModelWeights& w);

// A ModelWeights of the same shapes as w, all zeros (for gradients and moment estimates).
ModelWeights zeros_like(const ModelWeights& w);
// The layers of w with every tensor empty: the gradients a backward leaves alone (nn/backward.h), for a backward
// that is run for its inputs' gradients only (explain/attribution.h).
ModelWeights empty_gradients(const ModelWeights& w);

}  // namespace sf
