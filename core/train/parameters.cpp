#include "train/parameters.h"

#include <algorithm>

namespace sf {

std::vector<ParameterView> parameter_views(ModelWeights& w) {
  std::vector<ParameterView> out;
  for_each_weight(nullptr, w, [&](const WeightRef& r) {
    if (r.linear) drop_packed_weights(*r.linear);  // the floats are about to change: the packed copy would go stale
    out.push_back({r.name, r.data(), r.size()});
  });
  return out;
}

ModelWeights zeros_like(const ModelWeights& w) {
  ModelWeights z = w;
  for (ParameterView& p : parameter_views(z)) std::fill(p.data, p.data + p.size, 0.0f);
  return z;
}

ModelWeights empty_gradients(const ModelWeights& w) {
  ModelWeights g;
  g.encoder_layers.resize(w.encoder_layers.size());
  g.decoder_layers.resize(w.decoder_layers.size());
  return g;
}

}  // namespace sf
