// The softmax of one row, the step that attention's scores and the output layer's logits both end in:
//   p_j = exp(s x_j - m) / sum_k exp(s x_k - m)      m = max_k s x_k, s > 0 (attention's 1/sqrt(D), or 1)
// over `count` cells; a cell of -inf (blocked) gets exactly 0.
//
// One pass for the maximum, one for exp and its sum, one multiplying by 1 / sum, each over a row that stays in the
// first-level cache (a row of 256 keys is 1 KB, of 8,000 logits 32 KB). With AVX-512 the exponential is Cephes'
// expf polynomial on 16 lanes: the row {0, x} gives e^x / (1 + e^x) within 2.0e-7 relatively for x in [-87, 0]
// (tests/unit/test_softmax.cpp holds it to 4e-7). Without AVX-512: the same passes with Eigen's exp. Timings:
// README, Speed.
//
// A row gives the same floats whatever other rows there are (a cached decoding step and the full pass agree bit
// for bit): its sum runs over its own cells in an order fixed by `count` alone.
#pragma once

namespace sf {

// out[0..count) = softmax(scale * in[0..count)); `in` and `out` may be the same row. Returns false, writing
// nothing, when every cell is -inf (or count is 0): such a row has no softmax and its caller says what it holds.
bool softmax_row(const float* in, float* out, int count, float scale = 1.0f);

}  // namespace sf
