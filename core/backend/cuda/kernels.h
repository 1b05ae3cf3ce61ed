// The CUDA kernels of the forward pass, as plain launchers on device pointers (no Eigen, no CUDA types in the
// signatures: cuda_model.cpp, compiled by the C++ compiler, calls them). Every matrix is row-major, as the
// host's Mat. Each launcher enqueues on `stream` (a cudaStream_t passed as void*) and returns at once.
//
// The matrix products are cuBLAS's (cuda_model.cpp); these are the rest:
//   embed:          out_tok[i] = E[id_i] * scale;  out_pos[i] = P[pos_i] (or 0);  sum[i] = out_tok[i] + out_pos[i]
//   add_bias:       y[r] += b                      (N, n)
//   activation:     y = act(x)                     ReLU, or the exact GELU 0.5 x (1 + erf(x / sqrt 2))
//   add:            y = a + b
//   layer_norm:     mean, std = sqrt(var + eps) (biased variance), y = (x - mean) / std * gamma + beta
//   masked_softmax: per row of H*Tq rows of Tk: softmax over the cells not blocked, zeros for a row with every
//                   cell blocked (as nn/attention.h)
//   zero_columns:   y[:, begin:begin+count] = 0   (a head switched off)
#pragma once
#include <cstdint>

namespace sf::cuda {

void embed(const int* ids, const int* positions, int n, const float* table, float scale, const float* position_table,
           int d_model, float* tok, float* pos, float* sum, void* stream);
void add_bias(float* y, const float* bias, int rows, int cols, void* stream);
// activation: 0 ReLU, 1 GELU (erf)
void activation(const float* x, float* y, int64_t count, int kind, void* stream);
void add(const float* a, const float* b, float* y, int64_t count, void* stream);
void layer_norm(const float* x, const float* gamma, const float* beta, float eps, int rows, int cols, float* y,
                float* mean, float* stddev, void* stream);
// The mask, one of two forms:
//   blocked (rows, cols), 1 = blocked: every cell given (a painted mask); key_blocked and causal_first unused
//   else key_blocked (rows / rows_per_sequence, cols) 1 = a padding key of that sequence, or null; causal_first >= 0:
//   the rows are heads of `rows_per_head` query rows each, query row i at position causal_first + i, and key
//   j > that position is blocked
void masked_softmax(const float* scores, const float* blocked, const unsigned char* key_blocked, int causal_first,
                    int rows_per_head, int rows_per_sequence, int rows, int cols, float* probs, void* stream);
void zero_columns(float* y, int rows, int ld, int begin, int count, void* stream);

}  // namespace sf::cuda
