// The forward pass's kernels (kernels.h has the math). Row-wise reductions (layer norm, softmax) run one block of
// 256 threads per row: rows are at most a few thousand values (C, Tk, Vt), and one block per row keeps the
// order of a row's sums fixed, so a pass gives the same numbers every time.
#include <cuda_runtime.h>

#include <cmath>

#include "backend/cuda/kernels.h"
#include "transformer/dropout_mask.h"

namespace sf::cuda {

namespace {

constexpr int kThreads = 256;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

int blocks_for(int64_t count) { return static_cast<int>((count + kThreads - 1) / kThreads); }

// Sum (or max) of one value per thread over the block; every thread gets the result.
template <bool kMax, typename T = float>
__device__ T block_reduce(T v, T* shared) {
  for (int o = 16; o > 0; o >>= 1) {
    const T other = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? (v > other ? v : other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? shared[lane] : (kMax ? T(-INFINITY) : T(0));
    for (int o = 16; o > 0; o >>= 1) {
      const T other = __shfl_xor_sync(0xffffffffu, v, o);
      v = kMax ? (v > other ? v : other) : v + other;
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  const T result = shared[0];
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

__global__ void scatter_rows_kernel(const float* x, float* const* dst, int rows, int cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<int64_t>(rows) * cols) dst[i / cols][i % cols] = x[i];
}

__global__ void add_bias_kernel(float* y, const float* bias, int rows, int cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < static_cast<int64_t>(rows) * cols) y[i] += bias[i % cols];
}

__global__ void activation_kernel(const float* x, float* y, int64_t count, int kind) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const float v = x[i];
  y[i] = kind == 0   ? fmaxf(v, 0.0f)
         : kind == 1 ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f))
         : kind == 3 ? 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)))  // gelu_new
                     : v / (1.0f + expf(-v));
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

// [SECTION] training kernels

__global__ void dropout_masks_kernel(float* keep, const uint64_t* keys, int64_t per_key, int64_t count, float p,
                                     float kept) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  keep[i] = dropout_keep(keys[i / per_key], static_cast<uint64_t>(i % per_key), p, kept);
}

__global__ void multiply_kernel(const float* a, const float* b, float* y, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] = a[i] * b[i];
}

__global__ void add_multiplied_kernel(const float* x, const float* f, const float* keep, float* y, int64_t count) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) y[i] = x[i] + f[i] * keep[i];
}

__global__ void scale_kernel(float* x, int64_t count, float factor) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) x[i] *= factor;
}

// Thread (column c, chunk k): the sums of rows k*kColumnChunk.. of column c (and, with `mean`, of dy * xhat too).
__global__ void column_partials_kernel(const float* dy, const float* x, const float* mean, const float* stddev,
                                       int rows, int cols, float* partial_dy, float* partial_dy_xhat) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  const int first = blockIdx.y * kColumnChunk, last = min(rows, first + kColumnChunk);
  float s = 0.0f, sx = 0.0f;
  for (int r = first; r < last; ++r) {
    const int64_t i = static_cast<int64_t>(r) * cols + c;
    s += dy[i];
    if (x) sx += dy[i] * ((x[i] - mean[r]) / stddev[r]);
  }
  partial_dy[static_cast<int64_t>(blockIdx.y) * cols + c] = s;
  if (x) partial_dy_xhat[static_cast<int64_t>(blockIdx.y) * cols + c] = sx;
}

// out[c] += the chunks' partial sums of column c, in chunk order.
__global__ void finish_column_sums_kernel(const float* partial, int chunks, int cols, float* out) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int k = 0; k < chunks; ++k) s += partial[static_cast<int64_t>(k) * cols + c];
  out[c] += s;
}

__global__ void layer_norm_dx_kernel(const float* x, const float* mean, const float* stddev, const float* gamma,
                                     const float* dy, int cols, float* dx) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  const float* dr = dy + row * cols;
  const float mu = mean[row], sd = stddev[row];
  float sg = 0.0f, sgx = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = dr[c] * gamma[c];
    sg += g;
    sgx += g * ((xr[c] - mu) / sd);
  }
  const float mean_g = block_reduce<false>(sg, shared) / static_cast<float>(cols);
  const float mean_gx = block_reduce<false>(sgx, shared) / static_cast<float>(cols);
  float* out = dx + row * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (xr[c] - mu) / sd;
    out[c] = (dr[c] * gamma[c] - mean_g - xhat * mean_gx) / sd;
  }
}

__global__ void activation_backward_kernel(const float* pre, float* d, int64_t count, int kind) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const float x = pre[i];
  if (kind == 0) {
    d[i] *= x > 0.0f ? 1.0f : 0.0f;
  } else if (kind == 2) {  // SiLU'(x) = s + x s (1 - s), s = sigmoid(x)
    const float s = 1.0f / (1.0f + expf(-x));
    d[i] *= s * (1.0f + x * (1.0f - s));
  } else if (kind == 3) {  // gelu_new: f' = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 a x^2), t = tanh(k (x + a x^3))
    const float k = 0.79788456080286536f, a = 0.044715f;
    const float t = tanhf(k * (x + a * x * x * x));
    d[i] *= 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * k * (1.0f + 3.0f * a * x * x);
  } else {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    const float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    d[i] *= cdf + x * pdf;
  }
}

__global__ void softmax_backward_kernel(const float* p, const float* dp, float factor, int cols, float* ds) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* pr = p + row * cols;
  const float* dr = dp + row * cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += dr[c] * pr[c];
  s = block_reduce<false>(s, shared);
  float* out = ds + row * cols;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = pr[c] * (dr[c] - s) * factor;
}

__global__ void embedding_backward_kernel(const int* ids, int rows, const float* d, float factor, int cols,
                                          float* dtable) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<int64_t>(rows) * cols) return;
  const int r = static_cast<int>(i / cols), c = static_cast<int>(i % cols);
  atomicAdd(dtable + static_cast<int64_t>(ids[r]) * cols + c, d[i] * factor);
}

__global__ void label_smoothed_loss_kernel(const float* logits, const int* targets, int cols, int pad_id,
                                           float smoothing, float inv_tokens, double* row_loss, double* row_nll,
                                           float* dlogits) {
  __shared__ float shared[32];
  __shared__ double shared_d[32];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * cols;
  float* d = dlogits + row * cols;
  const int y = targets[row];
  if (y == pad_id || y < 0 || y >= cols) {
    for (int c = threadIdx.x; c < cols; c += blockDim.x) d[c] = 0.0f;
    if (threadIdx.x == 0) row_loss[row] = row_nll[row] = 0.0;
    return;
  }
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, z[c]);
  m = block_reduce<true>(m, shared);
  float e = 0.0f;
  double zsum = 0.0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    e += expf(z[c] - m);
    zsum += z[c];
  }
  e = block_reduce<false>(e, shared);
  zsum = block_reduce<false, double>(zsum, shared_d);
  const double log_sum = m + log(static_cast<double>(e));
  const double log_p_y = z[y] - log_sum;
  const double mean_log_p = zsum / cols - log_sum;
  if (threadIdx.x == 0) {
    row_nll[row] = -log_p_y;
    row_loss[row] = -(1.0 - smoothing) * log_p_y - smoothing * mean_log_p;
  }
  const float ls = static_cast<float>(log_sum), off = smoothing / static_cast<float>(cols);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    d[c] = (expf(z[c] - ls) - off - (c == y ? 1.0f - smoothing : 0.0f)) * inv_tokens;
}

__global__ void sum_of_squares_kernel(const float* x, int64_t count, double* partials) {
  __shared__ double shared[32];
  double s = 0.0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    s += static_cast<double>(x[i]) * x[i];
  s = block_reduce<false, double>(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, int64_t count, float b1, float b2,
                            float step_size, float inv_sqrt_bias2, float eps) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  const float gi = g[i];
  const float mi = b1 * m[i] + (1.0f - b1) * gi;
  const float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  w[i] -= step_size * mi / (sqrtf(vi) * inv_sqrt_bias2 + eps);
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

void scatter_rows(const float* x, float* const* dst, int rows, int cols, void* stream) {
  const int64_t total = static_cast<int64_t>(rows) * cols;
  if (total > 0) scatter_rows_kernel<<<blocks_for(total), kThreads, 0, as_stream(stream)>>>(x, dst, rows, cols);
}

// [SECTION] training launchers

void dropout_masks(float* keep, const uint64_t* keys, int key_count, int64_t per_key, float p, void* stream) {
  const int64_t count = key_count * per_key;
  if (count > 0)
    dropout_masks_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(keep, keys, per_key, count, p,
                                                                                1.0f / (1.0f - p));
}

void multiply(const float* a, const float* b, float* y, int64_t count, void* stream) {
  if (count > 0) multiply_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(a, b, y, count);
}

void add_multiplied(const float* x, const float* f, const float* keep, float* y, int64_t count, void* stream) {
  if (count > 0) add_multiplied_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(x, f, keep, y, count);
}

void scale(float* x, int64_t count, float factor, void* stream) {
  if (count > 0) scale_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(x, count, factor);
}

void add_column_sums(const float* x, int rows, int cols, float* out, float* partials, void* stream) {
  if (cols == 0 || rows == 0) return;
  const int chunks = (rows + kColumnChunk - 1) / kColumnChunk;
  column_partials_kernel<<<dim3(blocks_for(cols), chunks), kThreads, 0, as_stream(stream)>>>(
      x, nullptr, nullptr, nullptr, rows, cols, partials, nullptr);
  finish_column_sums_kernel<<<blocks_for(cols), kThreads, 0, as_stream(stream)>>>(partials, chunks, cols, out);
}

void layer_norm_backward(const float* x, const float* mean, const float* stddev, const float* gamma, const float* dy,
                         int rows, int cols, float* dx, float* dgamma, float* dbeta, float* partials, void* stream) {
  if (rows == 0) return;
  const int chunks = (rows + kColumnChunk - 1) / kColumnChunk;
  float* partial_xhat = partials + static_cast<int64_t>(chunks) * cols;
  column_partials_kernel<<<dim3(blocks_for(cols), chunks), kThreads, 0, as_stream(stream)>>>(
      dy, x, mean, stddev, rows, cols, partials, partial_xhat);
  finish_column_sums_kernel<<<blocks_for(cols), kThreads, 0, as_stream(stream)>>>(partials, chunks, cols, dbeta);
  finish_column_sums_kernel<<<blocks_for(cols), kThreads, 0, as_stream(stream)>>>(partial_xhat, chunks, cols, dgamma);
  layer_norm_dx_kernel<<<rows, kThreads, 0, as_stream(stream)>>>(x, mean, stddev, gamma, dy, cols, dx);
}

void activation_backward(const float* pre, float* d, int64_t count, int kind, void* stream) {
  if (count > 0) activation_backward_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(pre, d, count, kind);
}

void softmax_backward(const float* p, const float* dp, float factor, int rows, int cols, float* ds, void* stream) {
  if (rows > 0) softmax_backward_kernel<<<rows, kThreads, 0, as_stream(stream)>>>(p, dp, factor, cols, ds);
}

void embedding_backward(const int* ids, int rows, const float* d, float factor, int cols, float* dtable, void* stream) {
  const int64_t count = static_cast<int64_t>(rows) * cols;
  if (count > 0)
    embedding_backward_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(ids, rows, d, factor, cols,
                                                                                     dtable);
}

void label_smoothed_loss(const float* logits, const int* targets, int rows, int cols, int pad_id, float smoothing,
                         float inv_tokens, double* row_loss, double* row_nll, float* dlogits, void* stream) {
  if (rows > 0)
    label_smoothed_loss_kernel<<<rows, kThreads, 0, as_stream(stream)>>>(logits, targets, cols, pad_id, smoothing,
                                                                         inv_tokens, row_loss, row_nll, dlogits);
}

void sum_of_squares(const float* x, int64_t count, double* partials, int blocks, void* stream) {
  sum_of_squares_kernel<<<blocks, kThreads, 0, as_stream(stream)>>>(x, count, partials);
}

void adam(float* w, const float* g, float* m, float* v, int64_t count, float beta1, float beta2, float step_size,
          float inv_sqrt_bias2, float eps, void* stream) {
  if (count > 0)
    adam_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(w, g, m, v, count, beta1, beta2, step_size,
                                                                       inv_sqrt_bias2, eps);
}

}  // namespace sf::cuda
