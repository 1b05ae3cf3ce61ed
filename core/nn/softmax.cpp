#include "nn/softmax.h"

#include "nn/kernels.h"

namespace sf {

// The kernel set in use computes it (nn/kernels.h, nn/isa/softmax_row.cpp).
bool softmax_row(const float* in, float* out, int count, float scale) {
  return kernels().softmax_row(in, out, count, scale);
}

}  // namespace sf
