// CudaModel (backend/cuda_model.h): the host side. It checks the input as forward() does, enqueues the pass on the
// GPU (cuBLAS for the products, backend/cuda/kernels.h for the rest) and copies back what the caller asked for.
// Compiled by the C++ compiler: Eigen stays out of the .cu files.
#include "backend/cuda_model.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/kernels.h"
#include "decode/sampling.h"
#include "nn/embedding.h"
#include "transformer/forward.h"
#include "transformer/layers.h"
#include "util/error.h"

namespace sf {

namespace {

std::string mib(size_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear a sticky error where the runtime allows it
  fail(ErrorKind::Unsupported, "cuda", std::string(what) + ": " + cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(ErrorKind::Unsupported, "cuda", std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(status)));
}

// GPU memory of one buffer; grows (never shrinks) to the largest size asked, rounded up so that a decoder pass
// one token longer than the last reuses it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* reserve(size_t bytes) {
    if (bytes <= capacity_) return ptr_;
    size_t rounded = 256;
    while (rounded < bytes) rounded <<= 1;
    cudaFree(ptr_);
    ptr_ = nullptr;
    capacity_ = 0;
    check_cuda(cudaMalloc(&ptr_, rounded), ("cudaMalloc of " + mib(rounded)).c_str());
    capacity_ = rounded;
    return ptr_;
  }

 private:
  void* ptr_ = nullptr;
  size_t capacity_ = 0;
};

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
  DMat queries, keys, values, scores, probs, heads_out, attn_out;  // scores, probs: (H*Tq, Tk)
  AttentionMask mask;  // as applied (host): the trace's mask matrices are made from it
};

struct DFeedForward {
  DMat hidden_pre, hidden, out;
};

struct DEncoderLayer {
  DAttention self_attn;
  DMat residual1, residual2, out;
  DLayerNorm norm1, norm2;
  DFeedForward ffn;
};

struct DDecoderLayer {
  DAttention self_attn, cross_attn;
  DMat residual1, residual2, residual3, out;
  DLayerNorm norm1, norm2, norm3;
  DFeedForward ffn;
};

struct DEmbedding {
  DMat tok, pos, sum;
};

// What one pass left on the GPU, by the Trace's names.
struct DevicePass {
  DEmbedding src, tgt;
  std::vector<DEncoderLayer> encoder;
  std::vector<DDecoderLayer> decoder;
  DLayerNorm encoder_norm, decoder_norm;  // out.data null: the config has none
  DMat enc_out, dec_out, logits, probs;
};

void copy_to_host(const DMat& d, Mat& m) {
  m.resize(d.rows, d.cols);
  if (d.size() > 0)
    check_cuda(cudaMemcpy(m.data(), d.data, static_cast<size_t>(d.size()) * sizeof(float), cudaMemcpyDeviceToHost),
               "copy to host");
}

void copy_to_host(const float* d, int n, Vec& v) {
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
void place(DWeights& d, const ConstWeightRef& r, const float* p) {
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

}  // namespace


struct CudaModel::Impl {
  Config config;
  std::string name;
  cublasHandle_t handle = nullptr;
  DWeights w;
  float* weight_memory = nullptr;  // every weight, one allocation
  size_t weight_bytes = 0;
  float* sinusoid = nullptr;       // (P, C) the sinusoidal table (inside weight_memory), null for learned positions
  // Workspace: a pass's n-th buffer is slots[n], reused by the next pass (no allocation when lengths repeat).
  std::vector<std::unique_ptr<DeviceBuffer>> slots;
  size_t next_slot = 0;

  ~Impl() {
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
  template <typename T>
  T* upload(const T* host, size_t n) {
    void* p = scratch(n * sizeof(T));
    if (n > 0) check_cuda(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice), "copy to GPU");
    return static_cast<T*>(p);
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
    cuda::activation(f.hidden_pre.data, f.hidden.data, f.hidden.size(), config.activation == Activation::ReLU ? 0 : 1,
                     nullptr);
    f.out = linear(f.hidden, l.fc2);
    return f;
  }

  // B sequences stacked as rows: x_q (B*Tq, C), x_kv (B*Tk, C), one mask per sequence. Queries from x_q, keys and
  // values from x_kv; per sequence b and head h (at b*H + h) scores = q_h k_h^T * scale, probs = masked softmax,
  // heads_out[:, h] = probs_h v_h (zero for a head switched off), then W_o. The products of all (b, h) pairs are
  // one batched cuBLAS call each.
  DAttention attention(const DMat& x_q, const DMat& x_kv, int batch, const DAttentionWeights& aw,
                       const std::vector<AttentionMask>& masks, const std::vector<bool>& on) {
    const int H = config.n_heads, D = config.head_dim(), C = config.d_model, pairs = batch * H;
    DAttention a;
    a.queries = linear(x_q, aw.q);
    a.keys = linear(x_kv, aw.k);
    a.values = linear(x_kv, aw.v);
    const int tq = x_q.rows / batch, tk = x_kv.rows / batch;
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
        host[i] = a.keys.data + static_cast<int64_t>(b) * tk * C + h * D;
        host[pairs + i] = a.queries.data + static_cast<int64_t>(b) * tq * C + h * D;
        host[2 * pairs + i] = a.scores.data + static_cast<int64_t>(i) * per_head;
        host[3 * pairs + i] = a.values.data + static_cast<int64_t>(b) * tk * C + h * D;
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
    // heads_out[:, h*D..] (Tq, D) = probs_h (Tq, Tk) v_h (Tk, D); column-major: out^T (D, Tq) = v_h^T probs_h^T.
    for (int i = 0; i < pairs; ++i) host[static_cast<size_t>(2 * pairs + i)] = a.probs.data + i * per_head;
    float* const* with_probs = upload(host.data(), host.size());
    check_cublas(cuda::cublas().sgemm_batched(handle, CUBLAS_OP_N, CUBLAS_OP_N, D, tq, tk, &one, with_probs + 3 * pairs,
                                              C, with_probs + 2 * pairs, tk, &zero, with_probs + 4 * pairs, C, pairs),
                 "attention output");
    for (int h = 0; h < H; ++h)
      if (!on.empty() && !on[static_cast<size_t>(h)])
        cuda::zero_columns(a.heads_out.data, batch * tq, C, h * D, D, nullptr);
    a.attn_out = linear(a.heads_out, aw.out);
    return a;
  }

  // ids: B sequences of one length stacked; row r is at position r % length.
  DEmbedding embed(bool source, const std::vector<int>& ids, int batch, bool positional) {
    const int n = static_cast<int>(ids.size()), C = config.d_model, length = n / batch;
    std::vector<int> positions(ids.size());
    for (int r = 0; r < n; ++r) positions[static_cast<size_t>(r)] = r % length;
    const int* d_ids = upload(ids.data(), ids.size());
    const int* d_positions = upload(positions.data(), positions.size());
    const float* position_table = nullptr;
    if (positional)
      position_table = sinusoid ? sinusoid : source ? w.src_positions : w.tgt_positions;
    const float scale = config.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(C)) : 1.0f;
    DEmbedding e{mat(n, C), mat(n, C), mat(n, C)};
    cuda::embed(d_ids, d_positions, n, source ? w.src_embedding : w.tgt_embedding, scale, position_table, C, e.tok.data,
                e.pos.data, e.sum.data, nullptr);
    return e;
  }

  // One mask per sequence of a stacked batch (build_mask on each sequence's keys).
  std::vector<AttentionMask> masks(const Interventions& iv, AttentionKind kind, int layer, int batch, int tq,
                                   const std::vector<int>& key_ids, bool causal) const {
    const size_t tk = key_ids.size() / static_cast<size_t>(batch);
    std::vector<AttentionMask> out;
    for (int b = 0; b < batch; ++b)
      out.push_back(build_mask(config, iv, kind, layer, 0, tq,
                               std::vector<int>(key_ids.begin() + static_cast<int64_t>(b * tk),
                                                key_ids.begin() + static_cast<int64_t>((b + 1) * tk)),
                               causal));
    return out;
  }

  // The encoder pass (transformer/layers.h has the post- and pre-norm tables).
  void encoder(const std::vector<int>& src, int batch, const Interventions& iv, DevicePass& p) {
    const int S = static_cast<int>(src.size()) / batch;
    p.src = embed(true, src, batch, iv.positional_encoding);
    p.encoder.resize(static_cast<size_t>(config.n_encoder_layers));
    const bool post = config.norm_placement == NormPlacement::Post;
    for (int l = 0; l < config.n_encoder_layers; ++l) {
      const DLayerWeights& lw = w.encoder[static_cast<size_t>(l)];
      DEncoderLayer& t = p.encoder[static_cast<size_t>(l)];
      const DMat& x = l == 0 ? p.src.sum : p.encoder[static_cast<size_t>(l - 1)].out;
      const std::vector<AttentionMask> mask = masks(iv, AttentionKind::Encoder, l, batch, S, src, false);
      const std::vector<bool> on = heads_on(config, iv, AttentionKind::Encoder, l);
      if (post) {
        t.self_attn = attention(x, x, batch, lw.self_attn, mask, on);
        t.residual1 = add(x, t.self_attn.attn_out);
        t.norm1 = layer_norm(t.residual1, lw.self_attn_norm);
        t.ffn = feed_forward(t.norm1.out, lw);
        t.residual2 = add(t.norm1.out, t.ffn.out);
        t.norm2 = layer_norm(t.residual2, lw.ffn_norm);
        t.out = t.norm2.out;
      } else {
        t.norm1 = layer_norm(x, lw.self_attn_norm);
        t.self_attn = attention(t.norm1.out, t.norm1.out, batch, lw.self_attn, mask, on);
        t.residual1 = add(x, t.self_attn.attn_out);
        t.norm2 = layer_norm(t.residual1, lw.ffn_norm);
        t.ffn = feed_forward(t.norm2.out, lw);
        t.residual2 = add(t.residual1, t.ffn.out);
        t.out = t.residual2;
      }
    }
    p.encoder_norm = {};
    p.enc_out = p.encoder.back().out;
    if (config.encoder_final_norm) {
      p.encoder_norm = layer_norm(p.enc_out, w.encoder_norm);
      p.enc_out = p.encoder_norm.out;
    }
  }

  // The decoder pass over tgt (bos first) on the encoder output in p; the output layer on rows output_from.. only.
  void decoder(const std::vector<int>& src, const std::vector<int>& tgt, int batch, const Interventions& iv,
               int output_from, DevicePass& p) {
    const int S = static_cast<int>(src.size()) / batch, T = static_cast<int>(tgt.size()) / batch;
    // A painted decoder mask fitted to this pass's length, as the CPU's decoder pass does (interventions.h).
    const Interventions fitted = fit_decoder_masks(iv, S, T);
    p.tgt = embed(false, tgt, batch, iv.positional_encoding);
    p.decoder.resize(static_cast<size_t>(config.n_decoder_layers));
    const bool post = config.norm_placement == NormPlacement::Post;
    for (int l = 0; l < config.n_decoder_layers; ++l) {
      const DLayerWeights& lw = w.decoder[static_cast<size_t>(l)];
      DDecoderLayer& t = p.decoder[static_cast<size_t>(l)];
      const DMat& x = l == 0 ? p.tgt.sum : p.decoder[static_cast<size_t>(l - 1)].out;
      const std::vector<AttentionMask> self_mask =
          masks(fitted, AttentionKind::Decoder, l, batch, T, tgt, fitted.causal_mask);
      const std::vector<AttentionMask> cross_mask = masks(fitted, AttentionKind::Cross, l, batch, T, src, false);
      const std::vector<bool> self_on = heads_on(config, iv, AttentionKind::Decoder, l);
      const std::vector<bool> cross_on = heads_on(config, iv, AttentionKind::Cross, l);
      if (post) {
        t.self_attn = attention(x, x, batch, lw.self_attn, self_mask, self_on);
        t.residual1 = add(x, t.self_attn.attn_out);
        t.norm1 = layer_norm(t.residual1, lw.self_attn_norm);
        t.cross_attn = attention(t.norm1.out, p.enc_out, batch, lw.cross_attn, cross_mask, cross_on);
        t.residual2 = add(t.norm1.out, t.cross_attn.attn_out);
        t.norm2 = layer_norm(t.residual2, lw.cross_attn_norm);
        t.ffn = feed_forward(t.norm2.out, lw);
        t.residual3 = add(t.norm2.out, t.ffn.out);
        t.norm3 = layer_norm(t.residual3, lw.ffn_norm);
        t.out = t.norm3.out;
      } else {
        t.norm1 = layer_norm(x, lw.self_attn_norm);
        t.self_attn = attention(t.norm1.out, t.norm1.out, batch, lw.self_attn, self_mask, self_on);
        t.residual1 = add(x, t.self_attn.attn_out);
        t.norm2 = layer_norm(t.residual1, lw.cross_attn_norm);
        t.cross_attn = attention(t.norm2.out, p.enc_out, batch, lw.cross_attn, cross_mask, cross_on);
        t.residual2 = add(t.residual1, t.cross_attn.attn_out);
        t.norm3 = layer_norm(t.residual2, lw.ffn_norm);
        t.ffn = feed_forward(t.norm3.out, lw);
        t.residual3 = add(t.residual2, t.ffn.out);
        t.out = t.residual3;
      }
    }
    p.decoder_norm = {};
    p.dec_out = p.decoder.back().out;
    if (config.decoder_final_norm) {
      p.decoder_norm = layer_norm(p.dec_out, w.decoder_norm);
      p.dec_out = p.decoder_norm.out;
    }
    p.logits = linear(p.dec_out, w.generator, output_from);  // (T - output_from, Vt)
    p.probs = mat(p.logits.rows, p.logits.cols);
    cuda::masked_softmax(p.logits.data, nullptr, nullptr, -1, 1, 1, p.logits.rows, p.logits.cols, p.probs.data,
                         nullptr);
  }

  // The checks of forward() (transformer/forward.h), before anything runs.
  void check_input(const std::vector<int>& src, const std::vector<int>& tgt, const Interventions& iv) const {
    validate_interventions(config, iv);
    auto check_ids = [&](const std::vector<int>& ids, bool source) {
      const char* side = source ? "source" : "target";
      const int vocab = source ? config.src_vocab_size : config.tgt_vocab_size;
      if (ids.empty()) fail(ErrorKind::Input, "forward", std::string("the ") + side + " sequence is empty");
      if (static_cast<int>(ids.size()) > config.max_positions)
        fail(ErrorKind::Input, "forward",
             std::string("the ") + side + " sequence has " + std::to_string(ids.size()) +
                 " tokens, the model accepts at most " + std::to_string(config.max_positions));
      for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= vocab)
          fail(ErrorKind::Input, "forward",
               std::string(side) + " token " + std::to_string(i) + " has id " + std::to_string(ids[i]) +
                   ", outside the " + side + " vocabulary (size " + std::to_string(vocab) + ")");
    };
    check_ids(src, true);
    check_ids(tgt, false);
    check_custom_mask_sizes(iv, static_cast<int>(src.size()), static_cast<int>(tgt.size()));
  }

  // One pass on the GPU, waited for (a kernel's failure shows here). with_encoder false: the decoder only, on the
  // encoder output of the last pass with the same source (its buffers are the first slots, untouched since).
  void run(const std::vector<int>& src, const std::vector<int>& tgt, int batch, const Interventions& iv,
           int output_from, DevicePass& p, bool with_encoder = true) {
    if (with_encoder) {
      next_slot = 0;
      encoder(src, batch, iv, p);
      encoder_slots = next_slot;
    } else {
      next_slot = encoder_slots;
    }
    decoder(src, tgt, batch, iv, output_from, p);
    check_cuda(cudaGetLastError(), "kernel launch");
    check_cuda(cudaDeviceSynchronize(), "forward pass");
  }
  size_t encoder_slots = 0;
};

namespace {

void copy_norm(const DLayerNorm& d, LayerNormTrace& t) {
  copy_to_host(d.out, t.out);
  copy_to_host(d.mean, d.out.rows, t.mean);
  copy_to_host(d.stddev, d.out.rows, t.std);
}

// (H*R, K) on the GPU -> H matrices (R, K).
void copy_heads(const DMat& d, int heads, std::vector<Mat>& out) {
  Mat all;
  copy_to_host(d, all);
  const int rows = d.rows / heads;
  out.resize(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) out[static_cast<size_t>(h)] = all.middleRows(static_cast<Eigen::Index>(h) * rows, rows);
}

// (R, C) -> H matrices (R, D): columns h*D .. h*D+D-1.
void split_columns(const Mat& m, int heads, std::vector<Mat>& out) {
  const Eigen::Index d = m.cols() / heads;
  out.resize(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) out[static_cast<size_t>(h)] = m.middleCols(h * d, d);
}

void copy_attention(const DAttention& d, int heads, AttentionTrace& t) {
  copy_to_host(d.queries, t.queries);
  copy_to_host(d.keys, t.keys);
  copy_to_host(d.values, t.values);
  split_columns(t.queries, heads, t.q);
  split_columns(t.keys, heads, t.k);
  split_columns(t.values, heads, t.v);
  copy_heads(d.scores, heads, t.scores);
  copy_heads(d.probs, heads, t.probs);
  t.mask.resize(static_cast<size_t>(heads));
  for (int h = 0; h < heads; ++h) t.mask[static_cast<size_t>(h)] = d.mask.matrix(h, d.queries.rows, d.keys.rows);
  t.keep.clear();
  copy_to_host(d.heads_out, t.heads_out);
  split_columns(t.heads_out, heads, t.head_out);
  copy_to_host(d.attn_out, t.attn_out);
}

void copy_feed_forward(const DFeedForward& d, FeedForwardTrace& t) {
  copy_to_host(d.hidden_pre, t.hidden_pre);
  copy_to_host(d.hidden, t.hidden);
  t.keep.resize(0, 0);
  copy_to_host(d.out, t.out);
}

void copy_embedding(const DEmbedding& d, const std::vector<int>& ids, EmbeddingTrace& t) {
  t.ids = ids;
  copy_to_host(d.tok, t.tok_embed);
  copy_to_host(d.pos, t.pos);
  copy_to_host(d.sum, t.sum);
  t.keep.resize(0, 0);
}

// An optional final norm: empty when the config has none, as the CPU's final_norm_forward leaves it.
void copy_final_norm(const DLayerNorm& d, LayerNormTrace& t) {
  if (d.out.data) {
    copy_norm(d, t);
  } else {
    t.out.resize(0, 0);
    t.mean.resize(0);
    t.std.resize(0);
  }
}

}  // namespace

CudaModel::CudaModel(const Config& config, const ModelWeights& weights, size_t memory_limit_bytes)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  config.validate();
  m.config = config;
  if (static_cast<int>(weights.encoder_layers.size()) != config.n_encoder_layers ||
      static_cast<int>(weights.decoder_layers.size()) != config.n_decoder_layers)
    fail(ErrorKind::Shape, "CudaModel", "the weights do not hold the config's layers");
  int count = 0;
  const cudaError_t found = cudaGetDeviceCount(&count);
  if (found != cudaSuccess || count == 0) {
    cudaGetLastError();
    fail(ErrorKind::Unsupported, "cuda",
         std::string("no usable GPU: ") + (found != cudaSuccess ? cudaGetErrorString(found) : "no CUDA device"));
  }
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  m.name = prop.name;
  // Every weight in one allocation, in for_each_weight's order, then the sinusoidal table.
  size_t floats = 0;
  for_each_weight(&config, weights, [&](const ConstWeightRef& r) { floats += static_cast<size_t>(r.size()); });
  const bool sinusoidal = config.positional_encoding == PositionalEncoding::Sinusoidal;
  const Mat* table = sinusoidal ? &cached_sinusoidal_encoding(config.max_positions, config.d_model) : nullptr;
  if (table) floats += static_cast<size_t>(table->size());
  m.weight_bytes = floats * sizeof(float);
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  // The weights and room for a pass's workspace (an eighth of the weights, at least 64 MiB).
  const size_t needed = m.weight_bytes + std::max<size_t>(m.weight_bytes / 8, size_t{64} << 20);
  const size_t available = memory_limit_bytes > 0 ? std::min(free_bytes, memory_limit_bytes) : free_bytes;
  if (needed > available)
    fail(ErrorKind::Unsupported, "cuda",
         "the model needs " + mib(needed) + " of GPU memory, " + m.name + " has " + mib(available) + " free");
  check_cublas(cuda::cublas().create(&m.handle), "cublasCreate");
  check_cublas(cuda::cublas().set_math_mode(m.handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");  // FP32, no TF32
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&m.weight_memory), m.weight_bytes), "cudaMalloc of the weights");
  m.w.encoder.resize(static_cast<size_t>(config.n_encoder_layers));
  m.w.decoder.resize(static_cast<size_t>(config.n_decoder_layers));
  size_t offset = 0;
  auto put = [&](const float* host, size_t n) {
    float* d = m.weight_memory + offset;
    check_cuda(cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice), "copy of the weights to the GPU");
    offset += n;
    return d;
  };
  for_each_weight(&config, weights, [&](const ConstWeightRef& r) {
    if (r.size() != (r.cols ? r.rows * r.cols : r.rows))
      fail(ErrorKind::Shape, "CudaModel", "weight " + r.name + " does not have the config's shape");
    place(m.w, r, put(r.data(), static_cast<size_t>(r.size())));
  });
  if (table) m.sinusoid = put(table->data(), static_cast<size_t>(table->size()));
}

CudaModel::~CudaModel() = default;

const Config& CudaModel::config() const { return impl_->config; }
size_t CudaModel::weight_bytes() const { return impl_->weight_bytes; }
std::string CudaModel::device_name() const { return impl_->name; }

void CudaModel::forward(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids,
                        const Interventions& interventions, Trace& trace) {
  Impl& m = *impl_;
  m.check_input(src_ids, tgt_ids, interventions);
  DevicePass p;
  m.run(src_ids, tgt_ids, 1, interventions, 0, p);
  const int H = m.config.n_heads;
  trace.sequences = 1;
  trace.interventions = interventions;
  copy_embedding(p.src, src_ids, trace.src);
  trace.encoder.resize(p.encoder.size());
  for (size_t l = 0; l < p.encoder.size(); ++l) {
    const DEncoderLayer& d = p.encoder[l];
    EncoderLayerTrace& t = trace.encoder[l];
    copy_attention(d.self_attn, H, t.self_attn);
    copy_to_host(d.residual1, t.residual1);
    copy_norm(d.norm1, t.norm1);
    copy_feed_forward(d.ffn, t.ffn);
    copy_to_host(d.residual2, t.residual2);
    copy_norm(d.norm2, t.norm2);
    copy_to_host(d.out, t.out);
    t.self_attn_keep.resize(0, 0);
    t.ffn_keep.resize(0, 0);
  }
  copy_final_norm(p.encoder_norm, trace.encoder_norm);
  copy_to_host(p.enc_out, trace.enc_out);
  copy_embedding(p.tgt, tgt_ids, trace.tgt);
  trace.decoder.resize(p.decoder.size());
  for (size_t l = 0; l < p.decoder.size(); ++l) {
    const DDecoderLayer& d = p.decoder[l];
    DecoderLayerTrace& t = trace.decoder[l];
    copy_attention(d.self_attn, H, t.self_attn);
    copy_to_host(d.residual1, t.residual1);
    copy_norm(d.norm1, t.norm1);
    copy_attention(d.cross_attn, H, t.cross_attn);
    copy_to_host(d.residual2, t.residual2);
    copy_norm(d.norm2, t.norm2);
    copy_feed_forward(d.ffn, t.ffn);
    copy_to_host(d.residual3, t.residual3);
    copy_norm(d.norm3, t.norm3);
    copy_to_host(d.out, t.out);
    t.self_attn_keep.resize(0, 0);
    t.cross_attn_keep.resize(0, 0);
    t.ffn_keep.resize(0, 0);
  }
  copy_final_norm(p.decoder_norm, trace.decoder_norm);
  copy_to_host(p.dec_out, trace.dec_out);
  copy_to_host(p.logits, trace.logits);
  copy_to_host(p.probs, trace.probs);
}

Mat CudaModel::logits(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids,
                      const Interventions& interventions) {
  Impl& m = *impl_;
  m.check_input(src_ids, tgt_ids, interventions);
  DevicePass p;
  m.run(src_ids, tgt_ids, 1, interventions, 0, p);
  Mat out;
  copy_to_host(p.logits, out);
  return out;
}

void CudaModel::compute(const std::vector<int>& src_ids, const std::vector<int>& tgt_ids,
                        const Interventions& interventions) {
  Impl& m = *impl_;
  m.check_input(src_ids, tgt_ids, interventions);
  DevicePass p;
  m.run(src_ids, tgt_ids, 1, interventions, 0, p);
}

void CudaModel::compute_batch(const std::vector<std::vector<int>>& src, const std::vector<std::vector<int>>& tgt,
                              Mat* logits) {
  Impl& m = *impl_;
  if (src.empty() || src.size() != tgt.size())
    fail(ErrorKind::Input, "compute_batch", std::to_string(src.size()) + " sources for " + std::to_string(tgt.size()) +
                                                " targets");
  std::vector<int> src_rows, tgt_rows;
  for (size_t b = 0; b < src.size(); ++b) {
    if (src[b].size() != src[0].size() || tgt[b].size() != tgt[0].size())
      fail(ErrorKind::Input, "compute_batch", "sentence " + std::to_string(b) + " is not as long as the first (pad them)");
    m.check_input(src[b], tgt[b], {});
    src_rows.insert(src_rows.end(), src[b].begin(), src[b].end());
    tgt_rows.insert(tgt_rows.end(), tgt[b].begin(), tgt[b].end());
  }
  DevicePass p;
  m.run(src_rows, tgt_rows, static_cast<int>(src.size()), {}, 0, p);
  if (logits) copy_to_host(p.logits, *logits);
}

std::vector<int> CudaModel::greedy(const std::vector<int>& src_ids, const Interventions& interventions,
                                   int max_length) {
  Impl& m = *impl_;
  const Config& c = m.config;
  if (max_length < 0) fail(ErrorKind::Input, "greedy", "max_length must be >= 0, got " + std::to_string(max_length));
  const int longest = c.max_positions;  // the k-th token is chosen on a decoder input of k rows (bos + k - 1)
  max_length = max_length == 0 ? longest : std::min(max_length, longest);
  std::vector<int> input = {c.bos_id}, generated;
  const int S = static_cast<int>(src_ids.size());
  DevicePass p;
  RowVec last;
  while (static_cast<int>(generated.size()) < max_length) {
    // A painted decoder mask fitted to each prefix, as the CPU's decoder does (interventions.h).
    const Interventions step = fit_decoder_masks(interventions, S, static_cast<int>(input.size()));
    m.check_input(src_ids, input, step);
    // Each step recomputes the decoder on the whole prefix (no KV cache on the GPU yet); the encoder runs once.
    m.run(src_ids, input, 1, step, static_cast<int>(input.size()) - 1, p, generated.empty());
    last.resize(p.logits.cols);
    check_cuda(cudaMemcpy(last.data(), p.logits.data, static_cast<size_t>(p.logits.cols) * sizeof(float),
                          cudaMemcpyDeviceToHost),
               "copy of the logits");
    const size_t i = generated.size();
    const int token = i < interventions.forced_prefix.size() ? interventions.forced_prefix[i] : argmax(last);
    generated.push_back(token);
    input.push_back(token);
    if (token == c.eos_id) break;
  }
  return generated;
}

}  // namespace sf
