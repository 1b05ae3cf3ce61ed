#include "model/weights.h"

#include <cstring>

#include "io/safetensors.h"

namespace sf {

bool has_half_weights(const LinearWeights& w) {
  return w.half && w.half_of == w.weight.data() && w.half->size() == static_cast<size_t>(w.weight.size());
}

namespace {

bool attach_half(LinearWeights& w) {
  w.half.reset();
  w.half_of = nullptr;
  if (w.weight.size() == 0) return false;
  auto half = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(w.weight.size()));
  for (Eigen::Index i = 0; i < w.weight.size(); ++i) {
    const float value = w.weight.data()[i];
    const uint16_t h = float_to_f16(value);
    const float back = f16_to_float(h);
    if (std::memcmp(&back, &value, sizeof(float)) != 0) return false;  // not a half (or a NaN): floats it is
    (*half)[static_cast<size_t>(i)] = h;
  }
  w.half = std::move(half);
  w.half_of = w.weight.data();
  return true;
}

}  // namespace

int attach_half_weights(ModelWeights& weights) {
  int attached = 0;
  for_each_weight(nullptr, weights, [&](const WeightRef& r) {
    if (r.linear && r.param == WeightParam::Weight) attached += attach_half(*r.linear);
  });
  return attached;
}

}  // namespace sf
