#include "nn/positional_encoding.h"

#include <cmath>

namespace sf {

Mat sinusoidal_positional_encoding(int positions, int d_model, SinusoidLayout layout) {
  Mat pe = Mat::Zero(positions, d_model);  // (P, C)
  const int sines = (d_model + 1) / 2;     // frequencies i = 0 .. sines-1; the last has no cosine when C is odd
  for (int i = 0; i < sines; ++i) {
    // 1 / 10000^(2i/C) = exp(-2i * ln(10000) / C)
    const double inv_freq = std::exp(-(2.0 * i) * std::log(10000.0) / d_model);
    const bool has_cos = 2 * i + 1 < d_model;
    const int sin_col = layout == SinusoidLayout::Halves ? i : 2 * i;
    const int cos_col = layout == SinusoidLayout::Halves ? sines + i : 2 * i + 1;
    for (int pos = 0; pos < positions; ++pos) {
      const double angle = pos * inv_freq;
      pe(pos, sin_col) = static_cast<float>(std::sin(angle));
      if (has_cos) pe(pos, cos_col) = static_cast<float>(std::cos(angle));
    }
  }
  return pe;
}

}  // namespace sf
