// The CUDA backend's internals, shared by cuda_model.cpp (the inference API) and cuda_training.cpp (the training
// step): GPU buffers, the weights in GPU memory, one pass's record (DevicePass) and CudaModel::Impl, which runs the
// encoder and decoder passes. Compiled by the C++ compiler (Eigen is fine here; it stays out of the .cu files).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda_model.h"
#include "transformer/decoder_plan.h"
#include "transformer/dropout_mask.h"
#include "transformer/forward.h"
#include "transformer/layer_order.h"
#include "transformer/layers.h"
#include "util/error.h"

// Internal to core/backend/cuda/: the D* structs mirror the host's weights and traces, in GPU memory.
namespace sf {

// The kernels' activation numbers (backend/cuda/kernels.h).
inline int activation_kind(Activation a) {
  return a == Activation::ReLU ? 0 : a == Activation::GELU ? 1 : a == Activation::SiLU ? 2 : 3;
}

inline std::string mib(size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

inline void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky error where the runtime allows it
  fail(ErrorKind::Unsupported, "cuda", std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::Unsupported, "cuda", std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

// Memory that grows (never shrinks) to the largest size asked, rounded up to a power of two so that a decoder pass
// one token longer than the last reuses it: GPU memory (kPinned false), or page-locked host memory, what uploads
// are staged in so that the copy runs after the kernels before it without the host waiting for them (a copy from
// ordinary memory waits).
template <bool kPinned>
class GrowingBuffer {
 public:
  GrowingBuffer() = default;
  ~GrowingBuffer() { release(); }
  GrowingBuffer(const GrowingBuffer&) = delete;
  GrowingBuffer& operator=(const GrowingBuffer&) = delete;
  void* reserve(size_t bytes) {
    if (bytes <= capacity_) return ptr_;
    size_t rounded = 256;
    while (rounded < bytes) rounded <<= 1;
    release();
    const cudaError_t status = kPinned ? cudaMallocHost(&ptr_, rounded) : cudaMalloc(&ptr_, rounded);
    check_cuda(status, ((kPinned ? "cudaMallocHost of " : "cudaMalloc of ") + mib(rounded)).c_str());
    capacity_ = rounded;
    return ptr_;
  }
  void* data() const { return ptr_; }

 private:
  void release() {
    if (kPinned) cudaFreeHost(ptr_);
    else cudaFree(ptr_);
    ptr_ = nullptr;
    capacity_ = 0;
  }
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};
using DeviceBuffer = GrowingBuffer<false>;
using PinnedBuffer = GrowingBuffer<true>;

// A matrix on the GPU: rows x cols floats, row-major.
struct DMat {
  float* data = nullptr;
  int rows = 0, cols = 0;
  int64_t size() const { return static_cast<int64_t>(rows) * cols; }
};

struct DLayerNorm {
  DMat out;
  float* mean = nullptr;
  float* stddev = nullptr;
};

struct DAttention {
  DMat queries, keys, values, scores, probs, heads_out, attn_out;  // scores, probs: (B*H*Tq, Tk)
  DMat keep, dropped;  // training: the probabilities' dropout masks, and probs * keep (what meets v); else empty
  AttentionMask mask;  // as applied (host): the trace's mask matrices are made from it
};

struct DFeedForward {
  DMat hidden_pre, hidden, out;
  DMat keep;  // training: the hidden layer's dropout masks
};

struct DEncoderLayer {
  DAttention self_attn;
  DMat residual1, residual2, out;
  DLayerNorm norm1, norm2;
  DFeedForward ffn;
  DMat self_attn_keep, ffn_keep;  // training: the sublayer outputs' dropout masks
};

struct DDecoderLayer {
  DAttention self_attn, cross_attn;
  DMat residual1, residual2, residual3, out;
  DLayerNorm norm1, norm2, norm3;
  DFeedForward ffn;
  DMat self_attn_keep, cross_attn_keep, ffn_keep;
};

struct DEmbedding {
  DMat tok, pos, sum;
  DMat keep;                     // training: the sum's dropout masks
  const int* ids = nullptr;      // (N) on the GPU (the embedding's backward scatters by them)
  const int* positions = nullptr;
};

// What one pass left on the GPU, by the Trace's names.
struct DevicePass {
  DEmbedding src, tgt;
  std::vector<DEncoderLayer> encoder;
  std::vector<DDecoderLayer> decoder;
  DLayerNorm encoder_norm, decoder_norm;  // out.data null: the config has none
  DMat enc_out, dec_out, logits, probs;
};

inline void copy_to_host(const DMat& d, Mat& m) {
  m.resize(d.rows, d.cols);
  if (d.size() > 0)
    check_cuda(cudaMemcpy(m.data(), d.data, static_cast<size_t>(d.size()) * sizeof(float), cudaMemcpyDeviceToHost),
               "copy to host");
}

inline void copy_to_host(const float* d, int n, Vec& v) {
  v.resize(n);
  if (n > 0) check_cuda(cudaMemcpy(v.data(), d, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToHost), "copy to host");
}

// The weights in GPU memory, in the shape of ModelWeights (model/weights.h).
struct DLinear {
  const float* weight = nullptr;  // (out, in)
  const float* bias = nullptr;    // (out) or null
  int out = 0, in = 0;
};
struct DNorm {
  const float* gamma = nullptr;
  const float* beta = nullptr;
};
struct DAttentionWeights {
  DLinear q, k, v, out;
};
struct DLayerWeights {  // an encoder layer leaves cross_attn and cross_attn_norm empty
  DAttentionWeights self_attn, cross_attn;
  DNorm self_attn_norm, cross_attn_norm, ffn_norm;
  DLinear fc1, fc2;
};
struct DWeights {
  const float* src_embedding = nullptr;
  const float* tgt_embedding = nullptr;
  const float* src_positions = nullptr;
  const float* tgt_positions = nullptr;
  std::vector<DLayerWeights> encoder, decoder;
  DNorm encoder_norm, decoder_norm;
  DLinear generator;
};

// Where the weight `r` (one visit of for_each_weight) goes in DWeights.
inline void place(DWeights& d, const ConstWeightRef& r, const float* p) {
  auto linear = [&](DLinear& l) {
    if (r.param == WeightParam::Weight) {
      l.weight = p;
      l.out = static_cast<int>(r.rows);
      l.in = static_cast<int>(r.cols);
    } else {
      l.bias = p;
    }
  };
  auto norm = [&](DNorm& n) { (r.param == WeightParam::Weight ? n.gamma : n.beta) = p; };
  auto attention = [&](DAttentionWeights& a) {
    linear(r.projection == Projection::Q ? a.q : r.projection == Projection::K ? a.k
                                               : r.projection == Projection::V ? a.v
                                                                               : a.out);
  };
  switch (r.block) {
    case WeightBlock::SrcEmbedding: d.src_embedding = p; return;
    case WeightBlock::TgtEmbedding: d.tgt_embedding = p; return;
    case WeightBlock::SrcPositions: d.src_positions = p; return;
    case WeightBlock::TgtPositions: d.tgt_positions = p; return;
    case WeightBlock::EncoderNorm: norm(d.encoder_norm); return;
    case WeightBlock::DecoderNorm: norm(d.decoder_norm); return;
    case WeightBlock::Generator: linear(d.generator); return;
    case WeightBlock::SrcTokenTypes:
    case WeightBlock::EmbeddingNorm:
    case WeightBlock::HeadTransform:
    case WeightBlock::HeadNorm: return;  // BERT's parts: such a model is refused first (model_not_for_gpu)
    case WeightBlock::EncoderLayer:
    case WeightBlock::DecoderLayer: {
      DLayerWeights& l = (r.block == WeightBlock::EncoderLayer ? d.encoder : d.decoder)[static_cast<size_t>(r.layer)];
      switch (r.part) {
        case LayerPart::SelfAttn: attention(l.self_attn); return;
        case LayerPart::CrossAttn: attention(l.cross_attn); return;
        case LayerPart::SelfAttnNorm: norm(l.self_attn_norm); return;
        case LayerPart::CrossAttnNorm: norm(l.cross_attn_norm); return;
        case LayerPart::FfnNorm: norm(l.ffn_norm); return;
        case LayerPart::Fc1: linear(l.fc1); return;
        case LayerPart::Fc2: linear(l.fc2); return;
        case LayerPart::None: return;
      }
    }
  }
}

struct CudaModel::Impl {
  Config config;
  std::string name;
  cublasHandle_t handle = nullptr;
  DWeights w;
  float* weight_memory = nullptr;  // every weight, one allocation
  float* sinusoid = nullptr;       // (P, C) the sinusoidal table (inside weight_memory), null for learned positions
  // Where each weight sits in weight_memory, in for_each_weight's order: what it is (its ref, host pointers
  // cleared: the host weights may be gone) and its first float. Gradients and Adam's moments use the same layout.
  std::vector<ConstWeightRef> layout;
  std::vector<size_t> offsets;
  size_t weight_floats = 0;       // the weights' part of weight_memory (the sinusoidal table follows)
  size_t floats_of(size_t i) const { return (i + 1 < offsets.size() ? offsets[i + 1] : weight_floats) - offsets[i]; }
  // Workspace: a pass's n-th buffer is slots[n], reused by the next pass (no allocation when lengths repeat); its
  // n-th upload is staged in staging[n].
  std::vector<std::unique_ptr<DeviceBuffer>> slots;
  size_t next_slot = 0;
  std::vector<std::unique_ptr<PinnedBuffer>> staging;
  size_t next_staging = 0;
  // Dropout of a training pass (p 0: none), its masks made as the CPU's Dropout (transformer/layers.h).
  DropoutSettings dropout;
  uint64_t dropout_site = 0;

  // Training (cuda_training.cpp): gradients and Adam's moments, each weight_floats in weight_memory's layout.
  float* grad_memory = nullptr;
  float* adam_m = nullptr;
  float* adam_v = nullptr;
  AdamSettings adam_settings;
  int64_t adam_step = 0;

  ~Impl() {
    cudaFree(grad_memory);
    cudaFree(adam_m);
    cudaFree(adam_v);
    cudaFree(weight_memory);
    if (handle) cuda::cublas().destroy(handle);
  }

  void* scratch(size_t bytes) {
    if (next_slot == slots.size()) slots.push_back(std::make_unique<DeviceBuffer>());
    return slots[next_slot++]->reserve(std::max<size_t>(bytes, 4));
  }
  DMat mat(int rows, int cols) {
    return DMat{static_cast<float*>(scratch(static_cast<size_t>(rows) * cols * sizeof(float))), rows, cols};
  }
  float* floats(int n) { return static_cast<float*>(scratch(static_cast<size_t>(n) * sizeof(float))); }
  // A copy of host[0..n) in GPU memory, enqueued after the work before it (staged in page-locked memory).
  template <typename T>
  T* upload(const T* host, size_t n) {
    void* p = scratch(n * sizeof(T));
    if (n == 0) return static_cast<T*>(p);
    if (next_staging == staging.size()) staging.push_back(std::make_unique<PinnedBuffer>());
    void* stage = staging[next_staging++]->reserve(n * sizeof(T));
    std::copy_n(host, n, static_cast<T*>(stage));
    check_cuda(cudaMemcpyAsync(p, stage, n * sizeof(T), cudaMemcpyHostToDevice, nullptr), "copy to GPU");
    return static_cast<T*>(p);
  }
  // Starts a pass's use of the workspace (after the last pass finished: its buffers are free again).
  void start_pass() {
    next_slot = 0;
    next_staging = 0;
  }

  // `count` dropout masks of rows x cols each, made in order, numbered on from the pass's last (empty without
  // dropout): the masks Dropout::make makes at the same places of the CPU's pass.
  DMat keep_masks(int count, int rows, int cols) {
    if (dropout.p <= 0.0f) return {};
    std::vector<uint64_t> keys(static_cast<size_t>(count));
    for (uint64_t& k : keys) k = dropout_mask_key(dropout.seed, dropout.step, ++dropout_site);
    DMat keep = mat(count * rows, cols);
    cuda::dropout_masks(keep.data, upload(keys.data(), keys.size()), count, static_cast<int64_t>(rows) * cols,
                        dropout.p, nullptr);
    return keep;
  }
  // x + drop(f): the residual connection around a sublayer; its mask into keep.
  DMat add_dropped(const DMat& x, const DMat& f, DMat& keep) {
    keep = keep_masks(1, f.rows, f.cols);
    if (!keep.data) return add(x, f);
    DMat y = mat(x.rows, x.cols);
    cuda::add_multiplied(x.data, f.data, keep.data, y.data, y.size(), nullptr);
    return y;
  }

  // y (N, out) = x (N, in) W^T + b. cuBLAS is column-major: there y^T (out, N) = W (out, in) x^T, with W's
  // row-major storage read as the column-major (in, out) matrix W^T (so op T) and x's as x^T (in, N).
  DMat linear(const DMat& x, const DLinear& l, int rows_from = 0) {
    const int rows = x.rows - rows_from;
    DMat y = mat(rows, l.out);
    if (rows == 0) return y;
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cuda::cublas().sgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, l.out, rows, l.in, &one, l.weight, l.in,
                             x.data + static_cast<int64_t>(rows_from) * x.cols, l.in, &zero, y.data, l.out),
                 "linear");
    if (l.bias) cuda::add_bias(y.data, l.bias, y.rows, y.cols, nullptr);
    return y;
  }

  DLayerNorm layer_norm(const DMat& x, const DNorm& n) {
    DLayerNorm t{mat(x.rows, x.cols), floats(x.rows), floats(x.rows)};
    cuda::layer_norm(x.data, n.gamma, n.beta, config.layer_norm_eps, x.rows, x.cols, t.out.data, t.mean, t.stddev,
                     nullptr);
    return t;
  }

  DMat add(const DMat& a, const DMat& b) {
    DMat y = mat(a.rows, a.cols);
    cuda::add(a.data, b.data, y.data, a.size(), nullptr);
    return y;
  }

  DFeedForward feed_forward(const DMat& x, const DLayerWeights& l) {
    DFeedForward f;
    f.hidden_pre = linear(x, l.fc1);
    f.hidden = mat(f.hidden_pre.rows, f.hidden_pre.cols);
    cuda::activation(f.hidden_pre.data, f.hidden.data, f.hidden.size(), activation_kind(config.activation),
                     nullptr);
    f.keep = keep_masks(1, f.hidden.rows, f.hidden.cols);
    if (f.keep.data) cuda::multiply(f.hidden.data, f.keep.data, f.hidden.data, f.hidden.size(), nullptr);
    f.out = linear(f.hidden, l.fc2);
    return f;
  }

  // B sequences stacked as rows: x_q (B*Tq, C), x_kv (B*Tk, C), one mask per sequence. Queries from x_q, keys and
  // values from x_kv; per sequence b and head h (at b*H + h) scores = q_h k_h^T * scale, probs = masked softmax,
  // heads_out[:, h] = probs_h v_h (zero for a head switched off), then W_o. The products of all (b, h) pairs are
  // one batched cuBLAS call each.
  DAttention attention(const DMat& x_q, const DMat& x_kv, int batch, const DAttentionWeights& aw,
                       const std::vector<AttentionMask>& masks, const std::vector<bool>& on) {
    DAttention a;
    a.queries = linear(x_q, aw.q);
    a.keys = linear(x_kv, aw.k);
    a.values = linear(x_kv, aw.v);
    const int tk = x_kv.rows / batch;
    std::vector<const float*> keys(static_cast<size_t>(batch)), values(static_cast<size_t>(batch));
    for (int b = 0; b < batch; ++b) {
      keys[static_cast<size_t>(b)] = a.keys.data + static_cast<int64_t>(b) * tk * config.d_model;
      values[static_cast<size_t>(b)] = a.values.data + static_cast<int64_t>(b) * tk * config.d_model;
    }
    attend(a, keys, values, tk, aw, masks, on);
    return a;
  }

  // The rest of attention() once a.queries (B*Tq, C) are there: sequence b's queries meet its keys and values at
  // keys[b], values[b] (Tk rows of C floats each: a.keys and a.values, or a KV cache's rows). Fills scores,
  // probs, heads_out and attn_out.
  void attend(DAttention& a, const std::vector<const float*>& keys, const std::vector<const float*>& values, int tk,
              const DAttentionWeights& aw, const std::vector<AttentionMask>& masks, const std::vector<bool>& on) {
    const int batch = static_cast<int>(keys.size());
    const int H = config.n_heads, D = config.head_dim(), C = config.d_model, pairs = batch * H;
    const int tq = a.queries.rows / batch;
    a.scores = mat(pairs * tq, tk);
    a.probs = mat(pairs * tq, tk);
    a.heads_out = mat(batch * tq, C);
    const float scale = attention_scale(config), one = 1.0f, zero = 0.0f;
    const int64_t per_head = static_cast<int64_t>(tq) * tk;
    // Each pair's matrices inside the stacked ones: q, k, v, heads_out rows of sequence b, columns of head h.
    std::vector<float*> host(static_cast<size_t>(pairs) * 5);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < H; ++h) {
        const size_t i = static_cast<size_t>(b * H + h);
        host[i] = const_cast<float*>(keys[static_cast<size_t>(b)]) + h * D;
        host[pairs + i] = a.queries.data + static_cast<int64_t>(b) * tq * C + h * D;
        host[2 * pairs + i] = a.scores.data + static_cast<int64_t>(i) * per_head;
        host[3 * pairs + i] = const_cast<float*>(values[static_cast<size_t>(b)]) + h * D;
        host[4 * pairs + i] = a.heads_out.data + static_cast<int64_t>(b) * tq * C + h * D;
      }
    float* const* ptrs = upload(host.data(), host.size());
    // scores^T (Tk, Tq) = k_h (Tk, D) q_h^T: k's rows read as the column-major (C, Tk), head h from row h*D.
    check_cublas(cuda::cublas().sgemm_batched(handle, CUBLAS_OP_T, CUBLAS_OP_N, tk, tq, D, &scale, ptrs, C,
                                              ptrs + pairs, C, &zero, ptrs + 2 * pairs, tk, pairs),
                 "attention scores");
    // The computed mask (padding keys, causal) is made by the softmax kernel itself; a painted mask replaces it
    // for its head, so with one the whole mask goes to the GPU (one sequence only: the app's pass).
    const float* blocked = nullptr;
    const unsigned char* key_blocked = nullptr;
    int causal_first = -1;
    if (batch == 1 && !masks[0].painted.empty()) {
      std::vector<float> cells(static_cast<size_t>(H * per_head));
      for (int h = 0; h < H; ++h) {
        const Mat m = masks[0].matrix(h, tq, tk);
        std::copy_n(m.data(), per_head, cells.begin() + h * per_head);
      }
      blocked = upload(cells.data(), cells.size());
    } else {
      std::vector<uint8_t> keys;
      for (int b = 0; b < batch; ++b)
        if (!masks[static_cast<size_t>(b)].key_blocked.empty()) {
          if (keys.empty()) keys.assign(static_cast<size_t>(batch) * tk, 0);
          std::copy(masks[static_cast<size_t>(b)].key_blocked.begin(), masks[static_cast<size_t>(b)].key_blocked.end(),
                    keys.begin() + static_cast<int64_t>(b) * tk);
        }
      if (!keys.empty()) key_blocked = upload(keys.data(), keys.size());
      if (masks[0].causal && tq > 0) causal_first = masks[0].query_positions.front();  // rows: first, first + 1, ..
    }
    cuda::masked_softmax(a.scores.data, blocked, key_blocked, causal_first, tq, H * tq, pairs * tq, tk, a.probs.data,
                         nullptr);
    a.mask = masks[0];
    // Training: drop(probs) = probs * keep meets v (the probabilities themselves are kept for the backward).
    a.keep = keep_masks(pairs, tq, tk);
    const DMat* attended = &a.probs;
    if (a.keep.data) {
      a.dropped = mat(a.probs.rows, a.probs.cols);
      cuda::multiply(a.probs.data, a.keep.data, a.dropped.data, a.probs.size(), nullptr);
      attended = &a.dropped;
    }
    // heads_out[:, h*D..] (Tq, D) = probs_h (Tq, Tk) v_h (Tk, D); column-major: out^T (D, Tq) = v_h^T probs_h^T.
    for (int i = 0; i < pairs; ++i) host[static_cast<size_t>(2 * pairs + i)] = attended->data + i * per_head;
    float* const* with_probs = upload(host.data(), host.size());
    check_cublas(cuda::cublas().sgemm_batched(handle, CUBLAS_OP_N, CUBLAS_OP_N, D, tq, tk, &one, with_probs + 3 * pairs,
                                              C, with_probs + 2 * pairs, tk, &zero, with_probs + 4 * pairs, C, pairs),
                 "attention output");
    for (int h = 0; h < H; ++h)
      if (!on.empty() && !on[static_cast<size_t>(h)])
        cuda::zero_columns(a.heads_out.data, batch * tq, C, h * D, D, nullptr);
    a.attn_out = linear(a.heads_out, aw.out);
  }

  // ids: B sequences of one length stacked; row r is at position first_position + r % length (a KV cache's
  // step: B rows of length 1 at the caches' length).
  DEmbedding embed(bool source, const std::vector<int>& ids, int batch, bool positional, int first_position = 0) {
    const int n = static_cast<int>(ids.size()), C = config.d_model, length = n / batch;
    std::vector<int> positions(ids.size());
    for (int r = 0; r < n; ++r) positions[static_cast<size_t>(r)] = first_position + r % length;
    const int* d_ids = upload(ids.data(), ids.size());
    const int* d_positions = upload(positions.data(), positions.size());
    const float* position_table = nullptr;
    if (positional)
      position_table = sinusoid ? sinusoid : source ? w.src_positions : w.tgt_positions;
    const float scale = config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(C)) : 1.0f;
    DEmbedding e;
    e.tok = mat(n, C);
    e.pos = mat(n, C);
    e.sum = mat(n, C);
    e.ids = d_ids;
    e.positions = d_positions;
    cuda::embed(d_ids, d_positions, n, source ? w.src_embedding : w.tgt_embedding, scale, position_table, C, e.tok.data,
                e.pos.data, e.sum.data, nullptr);
    e.keep = keep_masks(1, n, C);  // training: drop(tok + pos)
    if (e.keep.data) cuda::multiply(e.sum.data, e.keep.data, e.sum.data, e.sum.size(), nullptr);
    return e;
  }

  // The encoder's masks of a stacked batch, one per sentence (build_mask on each one's ids).
  std::vector<AttentionMask> encoder_masks(const Interventions& iv, int layer, int batch,
                                           const std::vector<int>& src) const {
    const size_t S = src.size() / static_cast<size_t>(batch);
    std::vector<AttentionMask> out;
    for (int b = 0; b < batch; ++b)
      out.push_back(build_mask(config, iv, AttentionKind::Encoder, layer, 0, static_cast<Eigen::Index>(S),
                               std::vector<int>(src.begin() + static_cast<int64_t>(b * S),
                                                src.begin() + static_cast<int64_t>((b + 1) * S)),
                               false));
    return out;
  }
  // The decoder's masks of layer `layer`, one per sequence of the plan (transformer/decoder_plan.h).
  std::vector<AttentionMask> decoder_masks(const DecoderPlan& plan, bool self, int layer) const {
    std::vector<AttentionMask> out;
    for (size_t s = 0; s < plan.sequences.size(); ++s)
      out.push_back(self ? plan.self_mask(config, s, layer) : plan.cross_mask(config, s, layer));
    return out;
  }

  // The stack's output: LN(x) where the config has the final norm (t filled), else x (t cleared).
  DMat final_norm(bool present, const DNorm& n, const DMat& x, DLayerNorm& t) {
    t = present ? layer_norm(x, n) : DLayerNorm{};
    return present ? t.out : x;
  }

  // This GPU's operations for the layer order (transformer/layer_order.h has the contract); each result is a new
  // buffer of the pass's workspace.
  struct LayerOps {
    Impl& m;
    const DMat& layer_norm(const DMat& x, const DNorm& n, DLayerNorm& t) {
      t = m.layer_norm(x, n);
      return t.out;
    }
    void residual(const DMat& x, const DMat& f, DMat& keep, DMat& sum) { sum = m.add_dropped(x, f, keep); }
    void feed_forward(const DMat& x, const DLayerWeights& w, DFeedForward& t) { t = m.feed_forward(x, w); }
  };

  // The encoder pass (transformer/layer_order.h has the order inside a layer).
  void encoder(const std::vector<int>& src, int batch, const Interventions& iv, DevicePass& p) {
    p.src = embed(true, src, batch, iv.positional_encoding);
    p.encoder.resize(static_cast<size_t>(config.n_encoder_layers));
    const bool post = config.norm_placement == NormPlacement::Post;
    LayerOps ops{*this};
    for (int l = 0; l < config.n_encoder_layers; ++l) {
      const DLayerWeights& lw = w.encoder[static_cast<size_t>(l)];
      DEncoderLayer& t = p.encoder[static_cast<size_t>(l)];
      const DMat& x = l == 0 ? p.src.sum : p.encoder[static_cast<size_t>(l - 1)].out;
      const std::vector<AttentionMask> mask = encoder_masks(iv, l, batch, src);
      const std::vector<bool> on = heads_on(config, iv, AttentionKind::Encoder, l);
      auto self_attn = [&](const DMat& x_all, const DMat& in, DAttention& a) -> const DMat& {
        a = attention(in, in, batch, lw.self_attn, mask, on);
        return x_all;
      };
      layer_order::encoder_layer(ops, post, lw, x, self_attn, t);
    }
    p.enc_out = final_norm(config.encoder_final_norm, w.encoder_norm, p.encoder.back().out, p.encoder_norm);
  }

  // The decoder pass over tgt (bos first) on the encoder output in p; the output layer on rows output_from.. only.
  void decoder(const std::vector<int>& src, const std::vector<int>& tgt, int batch, const Interventions& iv,
               int output_from, DevicePass& p) {
    const int T = static_cast<int>(tgt.size()) / batch;
    // The pass's plan, as the CPU's decoder pass makes it: sequence b is tgt's b-th stretch of T tokens and reads
    // source b; its masks (painted decoder masks fitted to T) come from the plan.
    DecoderRows rows;
    for (int b = 0; b < batch; ++b)
      rows.add_sequence(std::vector<int>(tgt.begin() + static_cast<int64_t>(b) * T,
                                         tgt.begin() + static_cast<int64_t>(b + 1) * T));
    DecoderPlanRequest request(rows, src, batch, iv);
    request.record = Record::Trace;  // every row through every layer
    std::vector<int> sources(static_cast<size_t>(batch));
    std::iota(sources.begin(), sources.end(), 0);
    const bool cross = config.has_cross_attention();  // a decoder-only model reads no source
    if (cross) request.source_of = sources;
    const DecoderPlan plan = plan_decoder_pass(config, request);
    p.tgt = embed(false, tgt, batch, iv.positional_encoding);
    p.decoder.resize(static_cast<size_t>(config.n_decoder_layers));
    const bool post = config.norm_placement == NormPlacement::Post;
    LayerOps ops{*this};
    for (int l = 0; l < config.n_decoder_layers; ++l) {
      const DLayerWeights& lw = w.decoder[static_cast<size_t>(l)];
      DDecoderLayer& t = p.decoder[static_cast<size_t>(l)];
      const DMat& x = l == 0 ? p.tgt.sum : p.decoder[static_cast<size_t>(l - 1)].out;
      const std::vector<AttentionMask> self_mask = decoder_masks(plan, true, l);
      const std::vector<AttentionMask> cross_mask = cross ? decoder_masks(plan, false, l) : std::vector<AttentionMask>{};
      const std::vector<bool> self_on = heads_on(config, iv, AttentionKind::Decoder, l);
      const std::vector<bool> cross_on = cross ? heads_on(config, iv, AttentionKind::Cross, l) : std::vector<bool>{};
      auto self_attn = [&](const DMat& x_all, const DMat& in, DAttention& a) -> const DMat& {
        a = attention(in, in, batch, lw.self_attn, self_mask, self_on);
        return x_all;
      };
      auto cross_attn = [&](const DMat& h, DAttention& a) {
        a = attention(h, p.enc_out, batch, lw.cross_attn, cross_mask, cross_on);
      };
      layer_order::decoder_layer(ops, post, cross, lw, x, self_attn, cross_attn, t);
    }
    p.dec_out = final_norm(config.decoder_final_norm, w.decoder_norm, p.decoder.back().out, p.decoder_norm);
    output_head(p.dec_out, output_from, p);  // (T - output_from, Vt)
  }

  // The output head over the last stack's output x (the decoder's, or an encoder-only model's encoder's), rows
  // output_from.. only: logits = x W^T + b, probs = softmax(logits) row by row.
  void output_head(const DMat& x, int output_from, DevicePass& p) {
    p.logits = linear(x, w.generator, output_from);
    p.probs = mat(p.logits.rows, p.logits.cols);
    cuda::masked_softmax(p.logits.data, nullptr, nullptr, -1, 1, 1, p.logits.rows, p.logits.cols, p.probs.data,
                         nullptr);
  }

  // The checks of forward() (transformer/forward.h), before anything runs (the weights' shapes were checked when
  // they came to the GPU).
  void check_input(const std::vector<int>& src, const std::vector<int>& tgt, const Interventions& iv) const {
    validate_interventions(config, iv);
    auto from_zero = [](size_t n) {
      std::vector<int> p(n);
      std::iota(p.begin(), p.end(), 0);
      return p;
    };
    // Each shape reads what its stacks take (forward.h): a source with an encoder, a decoder input with a decoder.
    if (config.has_encoder()) check_token_ids(config, true, src, from_zero(src.size()));
    else if (!src.empty()) fail(ErrorKind::Input, "forward", "a decoder_only model reads no source sentence");
    if (config.has_decoder()) check_token_ids(config, false, tgt, from_zero(tgt.size()));
    else if (!tgt.empty()) fail(ErrorKind::Input, "forward", "an encoder_only model takes no decoder input");
    check_custom_mask_sizes(iv, static_cast<int>(src.size()), config.has_decoder() ? static_cast<int>(tgt.size()) : -1);
  }

  // One pass on the GPU, waited for (a kernel's failure shows here). with_encoder false: the decoder only, on the
  // encoder output of the last pass with the same source (its buffers are the first slots, untouched since). A
  // decoder-only model runs its decoder alone; an encoder-only model its encoder and the output head on it.
  void run(const std::vector<int>& src, const std::vector<int>& tgt, int batch, const Interventions& iv,
           int output_from, DevicePass& p, bool with_encoder = true) {
    if (!config.has_encoder()) {
      start_pass();
    } else if (with_encoder || !config.has_decoder()) {
      start_pass();
      encoder(src, batch, iv, p);
      encoder_slots = next_slot;
      encoder_staging = next_staging;
    } else {
      next_slot = encoder_slots;
      next_staging = encoder_staging;
    }
    if (config.has_decoder()) decoder(src, tgt, batch, iv, output_from, p);
    else output_head(p.enc_out, output_from, p);  // (B*S - output_from, V)
    check_cuda(cudaGetLastError(), "kernel launch");
    check_cuda(cudaDeviceSynchronize(), "forward pass");
  }
  size_t encoder_slots = 0, encoder_staging = 0;
};


}  // namespace sf
