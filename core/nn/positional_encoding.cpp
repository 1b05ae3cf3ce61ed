#include "nn/positional_encoding.h"

#include <cmath>

namespace sf {

Mat sinusoidal_positional_encoding(int positions, int d_model) {
  Mat pe = Mat::Zero(positions, d_model);  // (P, C)
  for (int i = 0; 2 * i < d_model; ++i) {
    // 1 / 10000^(2i/C) = exp(-2i * ln(10000) / C)
    const double inv_freq = std::exp(-(2.0 * i) * std::log(10000.0) / d_model);
    for (int pos = 0; pos < positions; ++pos) {
      const double angle = pos * inv_freq;
      pe(pos, 2 * i) = static_cast<float>(std::sin(angle));
      if (2 * i + 1 < d_model) pe(pos, 2 * i + 1) = static_cast<float>(std::cos(angle));
    }
  }
  return pe;
}

}  // namespace sf
