#include "model/weights.h"

#include "nn/small_gemm.h"

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
  int halves = 0;
  for_each_weight(nullptr, weights, [&](const WeightRef& r) {
    if (!r.linear || r.param != WeightParam::Weight) return;
    LinearWeights& w = *r.linear;
    drop_packed_weights(w);
    if (w.weight.size() == 0) return;
    auto packed = std::make_shared<PackedWeights>();
    pack_weights(w.weight.data(), static_cast<int>(w.weight.rows()), static_cast<int>(w.weight.cols()),
                 w.weight.cols(), halves_if_exact, *packed);
    halves += packed->as_halves();
    w.packed = std::move(packed);
    w.packed_of = w.weight.data();
  });
  return halves;
}

}  // namespace sf
