// The CUDA kernels of the forward pass, as plain launchers on device pointers (no Eigen, no CUDA types in the
// signatures: cuda_model.cpp, compiled by the C++ compiler, calls them). Every matrix is row-major, as the
// host's Mat. Each launcher enqueues on `stream` (a cudaStream_t passed as void*) and returns at once.
//
// The matrix products are cuBLAS's (cuda_model.cpp); these are the rest:
//   embed:          out_tok[i] = E[id_i] * scale;  out_pos[i] = P[pos_i] (or 0);  sum[i] = out_tok[i] + out_pos[i]
//   add_bias:       y[r] += b                      (N, n)
//   activation:     y = act(x)                     ReLU, the exact GELU 0.5 x (1 + erf(x / sqrt 2)), or SiLU x / (1 + e^-x)
//   add:            y = a + b
//   layer_norm:     mean, std = sqrt(var + eps) (biased variance), y = (x - mean) / std * gamma + beta
//   masked_softmax: per row of H*Tq rows of Tk: softmax over the cells not blocked, zeros for a row with every
//                   cell blocked (as nn/attention.h)
//   zero_columns:   y[:, begin:begin+count] = 0   (a head switched off)
//   scatter_rows:   dst[r][0:cols] = x[r]          (row r of a decoding step into its KV cache)
#pragma once
#include <cstdint>

namespace sf::cuda {

void embed(const int* ids, const int* positions, int n, const float* table, float scale, const float* position_table,
           int d_model, float* tok, float* pos, float* sum, void* stream);
void add_bias(float* y, const float* bias, int rows, int cols, void* stream);
// activation: 0 ReLU, 1 GELU (erf), 2 SiLU, 3 GELU's tanh form (gelu_new) (activation_kind)
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
// dst: `rows` device pointers (an array in GPU memory), each to `cols` floats.
void scatter_rows(const float* x, float* const* dst, int rows, int cols, void* stream);

// [SECTION] training (the backward of each kernel above, the loss and the optimiser)
// Dropout masks as the CPU's Dropout::make makes them (the formulas of transformer/dropout_mask.h): keep holds
// key_count masks of per_key elements, mask j made with keys[j].
void dropout_masks(float* keep, const uint64_t* keys, int key_count, int64_t per_key, float p, void* stream);
void multiply(const float* a, const float* b, float* y, int64_t count, void* stream);             // y = a * b
void add_multiplied(const float* x, const float* f, const float* keep, float* y, int64_t count,
                    void* stream);                                                                // y = x + f * keep
void scale(float* x, int64_t count, float factor, void* stream);                                  // x *= factor
// Column sums over many rows run in two passes: partial sums of kColumnChunk rows each (every chunk in parallel),
// then the partials added in chunk order (the same sums on every run). `partials` must hold
// column_partials_floats(rows, cols) floats (twice that for layer_norm_backward).
constexpr int kColumnChunk = 32;
inline int64_t column_partials_floats(int rows, int cols) {
  return static_cast<int64_t>((rows + kColumnChunk - 1) / kColumnChunk) * cols;
}
// out[c] += sum over rows of x[r][c] (a bias's gradient).
void add_column_sums(const float* x, int rows, int cols, float* out, float* partials, void* stream);
// From y = LN(x) (mean, std as recorded): dgamma[c] += sum_r dy * xhat, dbeta[c] += sum_r dy, and
//   dx = (g - mean(g) - xhat * mean(g * xhat)) / std,   g = dy * gamma
void layer_norm_backward(const float* x, const float* mean, const float* stddev, const float* gamma, const float* dy,
                         int rows, int cols, float* dx, float* dgamma, float* dbeta, float* partials, void* stream);
// d *= act'(pre): ReLU (pre > 0), the exact GELU's derivative Phi(x) + x phi(x), or SiLU's s (1 + x (1 - s)).
void activation_backward(const float* pre, float* d, int64_t count, int kind, void* stream);
// Per row of a softmax: ds = p * (dp - sum(dp * p)) * scale.
void softmax_backward(const float* p, const float* dp, float factor, int rows, int cols, float* ds, void* stream);
// dtable[ids[r]] += d[r] * factor for every row r (rows repeating an id add up: atomics).
void embedding_backward(const int* ids, int rows, const float* d, float factor, int cols, float* dtable, void* stream);
// The label-smoothed cross-entropy of train/loss.h per row: row_loss, row_nll (0 for pad targets) and, scaled by
// inv_tokens, dlogits (zeros for pad targets).
void label_smoothed_loss(const float* logits, const int* targets, int rows, int cols, int pad_id, float smoothing,
                         float inv_tokens, double* row_loss, double* row_nll, float* dlogits, void* stream);
// Partial sums of squares of x over `blocks` fixed blocks (partials[blocks]); the caller adds them in order.
void sum_of_squares(const float* x, int64_t count, double* partials, int blocks, void* stream);
// Adam (train/optimizer.h): m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= step_size m / (sqrt(v) c + eps).
void adam(float* w, const float* g, float* m, float* v, int64_t count, float beta1, float beta2, float step_size,
          float inv_sqrt_bias2, float eps, void* stream);

}  // namespace sf::cuda
