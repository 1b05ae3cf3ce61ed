// The forward pass's kernels (kernels.h has the math). Row-wise reductions (layer norm, softmax) run one block of
// 256 threads per row: rows are at most a few thousand values (C, Tk, Vt), and one block per row keeps the
// order of a row's sums fixed, so a pass gives the same numbers every time.
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/kernels.h"

namespace sf::cuda {

namespace {

constexpr int kThreads = 256;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

int blocks_for(int64_t count) { return static_cast<int>((count + kThreads - 1) / kThreads); }

// Sum (or max) of one value per thread over the block; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? shared[lane] : (kMax ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      const float other = __shfl_xor_sync(0xffffffffu, v, o);
      v = kMax ? fmaxf(v, other) : v + other;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const float result = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return result;
}

__global__ void embed_kernel(const int* ids, const int* positions, int n, const float* table, float scale,
                             const float* position_table, int d_model, float* tok, float* pos, float* sum) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<int64_t>(n) * d_model) return;
  const int row = static_cast<int>(i / d_model), c = static_cast<int>(i % d_model);
  const float t = table[static_cast<int64_t>(ids[row]) * d_model + c] * scale;
  const float p = position_table ? position_table[static_cast<int64_t>(positions[row]) * d_model + c] : 0.0f;
  tok[i] = t;
  pos[i] = p;
  sum[i] = t + p;
}

__global__ void add_bias_kernel(float* y, const float* bias, int rows, int cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<int64_t>(rows) * cols) y[i] += bias[i % cols];
}

__global__ void activation_kernel(const float* x, float* y, int64_t count, int kind) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const float v = x[i];
  y[i] = kind == 0 ? fmaxf(v, 0.0f) : 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
}

__global__ void add_kernel(const float* a, const float* b, float* y, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] = a[i] + b[i];
}

// One block per row: mean, then the biased variance around it (two passes, as the CPU: no E[x^2] - E[x]^2).
__global__ void layer_norm_kernel(const float* x, const float* gamma, const float* beta, float eps, int cols, float* y,
                                  float* mean_out, float* std_out) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
  const float mean = block_reduce<false>(s, shared) / static_cast<float>(cols);
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = xr[c] - mean;
    q += d * d;
  }
  const float stddev = sqrtf(block_reduce<false>(q, shared) / static_cast<float>(cols) + eps);
  float* yr = y + row * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - mean) / stddev * gamma[c] + beta[c];
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    std_out[row] = stddev;
  }
}

__global__ void masked_softmax_kernel(const float* scores, const float* blocked, const unsigned char* key_blocked,
                                      int causal_first, int rows_per_head, int rows_per_sequence, int cols,
                                      float* probs) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* s = scores + row * cols;
  const float* b = blocked ? blocked + row * cols : nullptr;
  // The last key this row may see (causal), or every key.
  const int last_key = causal_first >= 0 && !b ? causal_first + static_cast<int>(row % rows_per_head) : cols - 1;
  const unsigned char* keys = key_blocked ? key_blocked + (row / rows_per_sequence) * cols : nullptr;
  auto allowed = [&](int c) { return b ? b[c] <= 0.5f : c <= last_key && !(keys && keys[c]); };
  float* p = probs + row * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    if (allowed(c)) m = fmaxf(m, s[c]);
  m = block_reduce<true>(m, shared);
  if (m == -INFINITY) {  // every cell blocked: the query attends to nothing
    for (int c = threadIdx.x; c < cols; c += blockDim.x) p[c] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float e = allowed(c) ? expf(s[c] - m) : 0.0f;
    p[c] = e;
    sum += e;
  }
  sum = block_reduce<false>(sum, shared);
  const float inv = 1.0f / sum;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) p[c] *= inv;
}

__global__ void zero_columns_kernel(float* y, int rows, int ld, int begin, int count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<int64_t>(rows) * count) return;
  y[(i / count) * ld + begin + i % count] = 0.0f;
}

}  // namespace

void embed(const int* ids, const int* positions, int n, const float* table, float scale, const float* position_table,
           int d_model, float* tok, float* pos, float* sum, void* stream) {
  const int64_t count = static_cast<int64_t>(n) * d_model;
  embed_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(ids, positions, n, table, scale, position_table,
                                                                      d_model, tok, pos, sum);
}

void add_bias(float* y, const float* bias, int rows, int cols, void* stream) {
  add_bias_kernel<<<blocks_for(static_cast<int64_t>(rows) * cols), kThreads, 0, as_stream(stream)>>>(y, bias, rows,
                                                                                                     cols);
}

void activation(const float* x, float* y, int64_t count, int kind, void* stream) {
  activation_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(x, y, count, kind);
}

void add(const float* a, const float* b, float* y, int64_t count, void* stream) {
  add_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(a, b, y, count);
}

void layer_norm(const float* x, const float* gamma, const float* beta, float eps, int rows, int cols, float* y,
                float* mean, float* stddev, void* stream) {
  if (rows > 0) layer_norm_kernel<<<rows, kThreads, 0, as_stream(stream)>>>(x, gamma, beta, eps, cols, y, mean, stddev);
}

void masked_softmax(const float* scores, const float* blocked, const unsigned char* key_blocked, int causal_first,
                    int rows_per_head, int rows_per_sequence, int rows, int cols, float* probs, void* stream) {
  if (rows > 0)
    masked_softmax_kernel<<<rows, kThreads, 0, as_stream(stream)>>>(scores, blocked, key_blocked, causal_first,
                                                                    rows_per_head, rows_per_sequence, cols, probs);
}

void zero_columns(float* y, int rows, int ld, int begin, int count, void* stream) {
  const int64_t total = static_cast<int64_t>(rows) * count;
  if (total > 0)
    zero_columns_kernel<<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(y, rows, ld, begin, count);
}

}  // namespace sf::cuda
