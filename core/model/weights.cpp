#include "model/weights.h"

#include <algorithm>

#include "nn/small_gemm.h"
#include "util/parallel.h"

namespace sf {

bool has_packed_weights(const LinearWeights& w) {
  return w.packed && w.packed_of == w.weight.data() && w.packed->rows == w.weight.rows() &&
         w.packed->cols == w.weight.cols();
}

bool has_half_weights(const LinearWeights& w) { return has_packed_weights(w) && w.packed->as_halves(); }

void drop_packed_weights(LinearWeights& w) {
  w.packed.reset();
  w.packed_of = nullptr;
}

int attach_packed_weights(ModelWeights& weights, bool halves_if_exact) {
  std::vector<LinearWeights*> layers;
  for_each_weight(nullptr, weights, [&](const WeightRef& r) {
    if (r.linear && r.param == WeightParam::Weight) layers.push_back(r.linear);
  });
  // The layers side by side on the pool (a model's load, a timeline snapshot shown: tens of milliseconds alone).
  std::vector<char> as_halves(layers.size(), 0);
  parallel_for(static_cast<int>(layers.size()), 1, [&](int begin, int end) {
    for (int i = begin; i < end; ++i) {
      LinearWeights& w = *layers[static_cast<size_t>(i)];
      drop_packed_weights(w);
      if (w.weight.size() == 0) continue;
      auto packed = std::make_shared<PackedWeights>();
      pack_weights(w.weight.data(), static_cast<int>(w.weight.rows()), static_cast<int>(w.weight.cols()),
                   w.weight.cols(), halves_if_exact, *packed);
      as_halves[static_cast<size_t>(i)] = packed->as_halves();
      w.packed = std::move(packed);
      w.packed_of = w.weight.data();
    }
  });
  return static_cast<int>(std::count(as_halves.begin(), as_halves.end(), 1));
}

}  // namespace sf
