// Token embeddings and the input sum of the Transformer:
//   tok_embed[i] = E[id_i] * scale       scale = sqrt(C) or 1 (config.embedding_scale)
//   pos[i]       = PE(i)  (sinusoidal, interleaved or in halves)  or  P[i] (learned)
//   sum          = tok_embed + pos
#pragma once
#include <vector>

#include "model/config.h"
#include "util/tensor.h"

namespace sf {

// out (N, C): rows of `table` (V, C) picked by ids, times scale. Ids must be inside the table (checked by
// the caller, which knows which vocabulary to name in the error).
void embedding_forward(const std::vector<int>& ids, const Mat& table, float scale, Mat& out);

// The sinusoidal table (positions, C), computed once per (positions, C, layout) and kept for the life of the
// program.
const Mat& cached_sinusoidal_encoding(int positions, int d_model, SinusoidLayout layout = SinusoidLayout::Interleaved);

}  // namespace sf
