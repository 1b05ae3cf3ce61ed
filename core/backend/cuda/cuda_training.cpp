// CudaModel's training step (backend/cuda_model.h): the CPU trainer's batch_forward, batch_backward, tie_gradients,
// clip_gradients and Adam::step (train/), on the GPU. The backward follows transformer/passes.cpp's model_backward;
// inside a layer it runs transformer/layer_order.h, as the CPU does. The formulas are in nn/backward.h and
// nn/attention.h.
#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "backend/cuda/device_model.h"
#include "backend/cuda_model.h"
#include "train/batched_model.h"
#include "transformer/layer_order.h"

namespace sf {

namespace {

// The gradients' layout is the weights': a DWeights over another base.
DWeights weights_at(const CudaModel::Impl& m, float* base) {
  DWeights d;
  d.encoder.resize(m.w.encoder.size());
  d.decoder.resize(m.w.decoder.size());
  for (size_t i = 0; i < m.layout.size(); ++i) place(d, m.layout[i], base + m.offsets[i]);
  return d;
}

// Host weights <-> GPU memory laid out as weight_memory (gradients, Adam's moments): to the GPU from const host
// weights, back into mutable ones (their packed copies dropped: the floats change under them).
template <typename W>
void transfer(const CudaModel::Impl& m, float* base, W& host, const char* what) {
  if (!base) fail(ErrorKind::Input, "cuda", std::string("no ") + what + " on the GPU: start_training first");
  constexpr bool to_gpu = std::is_const_v<W>;
  size_t i = 0;
  for_each_weight(&m.config, host, [&](const WeightRefT<W>& r) {
    const size_t n = static_cast<size_t>(r.size());
    if (i >= m.layout.size() || n != m.floats_of(i))
      fail(ErrorKind::Shape, "cuda", std::string(what) + ": " + r.name + " is not shaped as the model's");
    float* gpu = base + m.offsets[i];
    if constexpr (to_gpu) {
      check_cuda(cudaMemcpy(gpu, r.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy to the GPU");
    } else {
      if (r.linear) drop_packed_weights(*r.linear);
      check_cuda(cudaMemcpy(r.data(), gpu, n * sizeof(float), cudaMemcpyDeviceToHost), "copy to host");
    }
    ++i;
  });
}

// Gradient pointers are written through: DWeights holds them as const (it was made for the weights).
float* out(const float* p) { return const_cast<float*>(p); }

class Backward {
 public:
  Backward(CudaModel::Impl& m, const DevicePass& p, int batch, float* grads)
      : m_(m), p_(p), batch_(batch), g_(weights_at(m, grads)) {}

  // dL/dlogits (B*T, Vt) -> every weight's gradient (added to the zeroed gradient memory), back through the
  // stacks the model has (the output head sits on the decoder, or on an encoder-only model's encoder).
  void run(const DMat& dlogits) {
    const Config& c = m_.config;
    if (!c.has_decoder()) {
      encoder_stack(linear_backward(p_.enc_out, m_.w.generator, g_.generator, dlogits, true));
      return;
    }
    DMat d = linear_backward(p_.dec_out, m_.w.generator, g_.generator, dlogits, true);
    if (c.decoder_final_norm)
      d = layer_norm_backward(p_.decoder.back().out, p_.decoder_norm, m_.w.decoder_norm, g_.decoder_norm, d);
    if (c.has_cross_attention()) {  // every layer's cross-attention adds its share of dL/d enc.out
      d_encoder_out_ = m_.mat(p_.enc_out.rows, p_.enc_out.cols);
      check_cuda(cudaMemsetAsync(d_encoder_out_.data, 0, static_cast<size_t>(d_encoder_out_.size()) * sizeof(float)),
                 "cudaMemsetAsync");
    }
    for (int l = c.n_decoder_layers - 1; l >= 0; --l) d = decoder_layer(l, d);
    embedding(p_.tgt, false, d);
    if (c.has_encoder()) encoder_stack(d_encoder_out_);
  }
  // dL/d enc.out -> the encoder's weights and the source embedding.
  void encoder_stack(DMat d) {
    const Config& c = m_.config;
    if (c.encoder_final_norm)
      d = layer_norm_backward(p_.encoder.back().out, p_.encoder_norm, m_.w.encoder_norm, g_.encoder_norm, d);
    for (int l = c.n_encoder_layers - 1; l >= 0; --l) d = encoder_layer(l, d);
    embedding(p_.src, true, d);
  }

  // The layer order's backward operations (transformer/layer_order.h has the contract), on this GPU.
  DMat layer_norm_backward(const DMat& x, const DLayerNorm& t, const DNorm& w, const DNorm& g, const DMat& dy) {
    DMat dx = m_.mat(x.rows, x.cols);
    cuda::layer_norm_backward(x.data, t.mean, t.stddev, w.gamma, dy.data, x.rows, x.cols, dx.data, out(g.gamma),
                              out(g.beta), partials(x.rows, x.cols, 2), nullptr);
    return dx;
  }

  DMat feed_forward_backward(const DMat& x, const DFeedForward& f, const DLayerWeights& w, const DLayerWeights& g,
                             const DMat& d_out) {
    DMat dh = linear_backward(f.hidden, w.fc2, g.fc2, d_out, true);  // (N, F)
    if (f.keep.data) cuda::multiply(dh.data, f.keep.data, dh.data, dh.size(), nullptr);
    cuda::activation_backward(f.hidden_pre.data, dh.data, dh.size(), activation_kind(m_.config.activation),
                              nullptr);
    return linear_backward(x, w.fc1, g.fc1, dh, true);
  }

  DMat times_keep(const DMat& d, const DMat& keep) {
    if (!keep.data) return d;
    DMat y = m_.mat(d.rows, d.cols);
    cuda::multiply(d.data, keep.data, y.data, d.size(), nullptr);
    return y;
  }

  DMat add(const DMat& a, const DMat& b) { return m_.add(a, b); }

 private:
  // dW += dy^T x, db += column sums of dy; dx = dy W when asked. Column-major as in Impl::linear: dW^T (in, out) =
  // x^T (in, N) dy (N, out), dx^T (in, N) = W^T (in, out) dy^T (out, N).
  DMat linear_backward(const DMat& x, const DLinear& w, const DLinear& g, const DMat& dy, bool want_dx) {
    const float one = 1.0f, zero = 0.0f;
    const int n = dy.rows;
    check_cublas(cuda::cublas().sgemm(m_.handle, CUBLAS_OP_N, CUBLAS_OP_T, w.in, w.out, n, &one, x.data, w.in, dy.data,
                                      w.out, &one, out(g.weight), w.in),
                 "linear backward (weights)");
    if (g.bias) cuda::add_column_sums(dy.data, n, w.out, out(g.bias), partials(n, w.out, 1), nullptr);
    if (!want_dx) return {};
    DMat dx = m_.mat(n, w.in);
    check_cublas(cuda::cublas().sgemm(m_.handle, CUBLAS_OP_N, CUBLAS_OP_N, w.in, n, w.out, &one, w.weight, w.in,
                                      dy.data, w.out, &zero, dx.data, w.in),
                 "linear backward (input)");
    return dx;
  }

  // Room for `sets` sets of column partial sums (kernels.h).
  float* partials(int rows, int cols, int sets) {
    return m_.floats(static_cast<int>(sets * cuda::column_partials_floats(rows, cols)));
  }

  // The attention sublayer's backward (nn/attention.h's attend_backward per sequence and head, as batched products):
  //   dV = drop(P)^T dO     dP = (dO V^T) * keep     dS = P * (dP - rowsum(dP * P)) * scale
  //   dQ = dS K             dK = dS^T Q
  // Returns dL/dx_q; dL/dx_kv into d_x_kv.
  DMat attention(const DMat& x_q, const DMat& x_kv, const DAttention& a, const DAttentionWeights& w,
                 const DAttentionWeights& g, const DMat& d_attn_out, DMat& d_x_kv) {
    const int H = m_.config.n_heads, D = m_.config.head_dim(), C = m_.config.d_model, pairs = batch_ * H;
    const int tq = x_q.rows / batch_, tk = x_kv.rows / batch_;
    const int64_t per_head = static_cast<int64_t>(tq) * tk;
    DMat d_heads = linear_backward(a.heads_out, w.out, g.out, d_attn_out, true);  // (B*Tq, C)
    DMat dq = m_.mat(x_q.rows, C), dk = m_.mat(x_kv.rows, C), dv = m_.mat(x_kv.rows, C);
    DMat dp = m_.mat(pairs * tq, tk), ds = m_.mat(pairs * tq, tk);
    const DMat& dropped = a.dropped.data ? a.dropped : a.probs;
    // Each (sequence, head) pair's blocks: rows of its sequence, columns of its head (or its own (Tq, Tk) matrix).
    enum { kDO, kP, kV, kDV, kDP, kK, kDS, kDQ, kQ, kDK, kArrays };
    std::vector<float*> host(static_cast<size_t>(pairs) * kArrays);
    for (int b = 0; b < batch_; ++b)
      for (int h = 0; h < H; ++h) {
        const int i = b * H + h;
        const int64_t q_rows = static_cast<int64_t>(b) * tq * C + h * D, k_rows = static_cast<int64_t>(b) * tk * C + h * D;
        auto at = [&](int array) -> float*& { return host[static_cast<size_t>(array * pairs + i)]; };
        at(kDO) = d_heads.data + q_rows;
        at(kP) = dropped.data + i * per_head;
        at(kV) = a.values.data + k_rows;
        at(kDV) = dv.data + k_rows;
        at(kDP) = dp.data + i * per_head;
        at(kK) = a.keys.data + k_rows;
        at(kDS) = ds.data + i * per_head;
        at(kDQ) = dq.data + q_rows;
        at(kQ) = a.queries.data + q_rows;
        at(kDK) = dk.data + k_rows;
      }
    float* const* ptr = m_.upload(host.data(), host.size());
    auto arr = [&](int array) { return ptr + static_cast<int64_t>(array) * pairs; };
    const float one = 1.0f, zero = 0.0f, scale = attention_scale(m_.config);
    // dV^T (D, Tk) = dO^T (D, Tq) drop(P) (Tq, Tk)
    check_cublas(cuda::cublas().sgemm_batched(m_.handle, CUBLAS_OP_N, CUBLAS_OP_T, D, tk, tq, &one, arr(kDO), C, arr(kP),
                                              tk, &zero, arr(kDV), C, pairs),
                 "attention backward dV");
    // dP^T (Tk, Tq) = V (Tk, D) dO^T (D, Tq)
    check_cublas(cuda::cublas().sgemm_batched(m_.handle, CUBLAS_OP_T, CUBLAS_OP_N, tk, tq, D, &one, arr(kV), C, arr(kDO),
                                              C, &zero, arr(kDP), tk, pairs),
                 "attention backward dP");
    if (a.keep.data) cuda::multiply(dp.data, a.keep.data, dp.data, dp.size(), nullptr);
    cuda::softmax_backward(a.probs.data, dp.data, scale, pairs * tq, tk, ds.data, nullptr);
    // dQ^T (D, Tq) = K^T (D, Tk) dS^T (Tk, Tq);  dK^T (D, Tk) = Q^T (D, Tq) dS (Tq, Tk)
    check_cublas(cuda::cublas().sgemm_batched(m_.handle, CUBLAS_OP_N, CUBLAS_OP_N, D, tq, tk, &one, arr(kK), C, arr(kDS),
                                              tk, &zero, arr(kDQ), C, pairs),
                 "attention backward dQ");
    check_cublas(cuda::cublas().sgemm_batched(m_.handle, CUBLAS_OP_N, CUBLAS_OP_T, D, tk, tq, &one, arr(kQ), C, arr(kDS),
                                              tk, &zero, arr(kDK), C, pairs),
                 "attention backward dK");
    DMat d_x_q = linear_backward(x_q, w.q, g.q, dq, true);
    d_x_kv = m_.add(linear_backward(x_kv, w.k, g.k, dk, true), linear_backward(x_kv, w.v, g.v, dv, true));
    return d_x_q;
  }

  DMat self_attention(const DMat& in, const DAttention& a, const DAttentionWeights& w, const DAttentionWeights& g,
                      const DMat& d) {
    DMat d_kv;
    const DMat d_q = attention(in, in, a, w, g, d, d_kv);
    return m_.add(d_q, d_kv);
  }

  DMat encoder_layer(int l, const DMat& d_out) {
    const bool post = m_.config.norm_placement == NormPlacement::Post;
    const DLayerWeights& w = m_.w.encoder[static_cast<size_t>(l)];
    const DLayerWeights& g = g_.encoder[static_cast<size_t>(l)];
    const DMat& x = l == 0 ? p_.src.sum : p_.encoder[static_cast<size_t>(l - 1)].out;
    auto self = [&](const DMat& in, const DAttention& a, const DMat& d) {
      return self_attention(in, a, w.self_attn, g.self_attn, d);
    };
    return layer_order::encoder_layer_backward(*this, post, w, g, x, p_.encoder[static_cast<size_t>(l)], self, d_out);
  }

  DMat decoder_layer(int l, const DMat& d_out) {
    const bool post = m_.config.norm_placement == NormPlacement::Post;
    const DLayerWeights& w = m_.w.decoder[static_cast<size_t>(l)];
    const DLayerWeights& g = g_.decoder[static_cast<size_t>(l)];
    const DMat& x = l == 0 ? p_.tgt.sum : p_.decoder[static_cast<size_t>(l - 1)].out;
    auto cross = [&](const DMat& in, const DAttention& a, const DMat& d) {
      DMat d_kv;
      DMat d_q = attention(in, p_.enc_out, a, w.cross_attn, g.cross_attn, d, d_kv);
      cuda::add(d_encoder_out_.data, d_kv.data, d_encoder_out_.data, d_kv.size(), nullptr);  // every layer reads enc.out
      return d_q;
    };
    auto self = [&](const DMat& in, const DAttention& a, const DMat& d) {
      return self_attention(in, a, w.self_attn, g.self_attn, d);
    };
    return layer_order::decoder_layer_backward(*this, post, m_.config.has_cross_attention(), w, g, x,
                                               p_.decoder[static_cast<size_t>(l)], self, cross, d_out);
  }

  // sum = drop(E[id] * scale + P[position]): the table's rows and the learned positions' get d_sum * keep.
  void embedding(const DEmbedding& e, bool source, const DMat& d_sum) {
    const Config& c = m_.config;
    const DMat d = times_keep(d_sum, e.keep);
    const float scale = c.embedding_scale == EmbeddingScale::SqrtDModel ? std::sqrt(static_cast<float>(c.d_model)) : 1.0f;
    cuda::embedding_backward(e.ids, d.rows, d.data, scale, d.cols, out(source ? g_.src_embedding : g_.tgt_embedding),
                             nullptr);
    if (c.positional_encoding == PositionalEncoding::Learned)  // training adds the positions (no interventions)
      cuda::embedding_backward(e.positions, d.rows, d.data, 1.0f, d.cols,
                               out(source ? g_.src_positions : g_.tgt_positions), nullptr);
  }

  CudaModel::Impl& m_;
  const DevicePass& p_;
  int batch_;
  DWeights g_;
  DMat d_encoder_out_;
};

}  // namespace

void CudaModel::start_training(const AdamSettings& adam, const ModelWeights* first_moment,
                               const ModelWeights* second_moment, int64_t adam_steps) {
  Impl& m = *impl_;
  const size_t bytes = m.weight_floats * sizeof(float);
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (!m.grad_memory && 3 * bytes > free_bytes)
    fail(ErrorKind::Unsupported, "cuda",
         "training needs " + mib(3 * bytes) + " more GPU memory (gradients, Adam's moments), " + m.name + " has " +
             mib(free_bytes) + " free");
  for (float** p : {&m.grad_memory, &m.adam_m, &m.adam_v})
    if (!*p) check_cuda(cudaMalloc(reinterpret_cast<void**>(p), bytes), "cudaMalloc for training");
  auto fill = [&](float* base, const ModelWeights* host) {
    if (host) transfer(m, base, *host, "Adam's moments");
    else check_cuda(cudaMemset(base, 0, bytes), "cudaMemset");
  };
  fill(m.adam_m, first_moment);
  fill(m.adam_v, second_moment);
  m.adam_settings = adam;
  m.adam_step = adam_steps;
}

LossResult CudaModel::train_step(const Batch& batch, const DropoutSettings& dropout, float smoothing, float clip_norm,
                                 float lr, double* grad_norm) {
  Impl& m = *impl_;
  const Config& c = m.config;
  if (!m.grad_memory) fail(ErrorKind::Input, "train_step", "start_training first");
  check_batch(c, batch, "train_step");

  // Forward with dropout (the masks the CPU would make for this step), then the loss.
  DevicePass p;
  m.dropout = dropout;
  m.dropout_site = 0;
  try {
    m.run(batch.source, batch.target_in, batch.size, Interventions{}, 0, p);
  } catch (...) {
    m.dropout = {};
    throw;
  }
  m.dropout = {};
  const int rows = p.logits.rows, vocab = p.logits.cols;
  LossResult r;
  for (int t : batch.target_out) r.tokens += t != c.pad_id;
  DMat dlogits = m.mat(rows, vocab);
  double* row_terms = static_cast<double*>(m.scratch(2 * static_cast<size_t>(rows) * sizeof(double)));
  cuda::label_smoothed_loss(p.logits.data, m.upload(batch.target_out.data(), batch.target_out.size()), rows, vocab,
                            c.pad_id, smoothing, r.tokens > 0 ? 1.0f / static_cast<float>(r.tokens) : 0.0f, row_terms,
                            row_terms + rows, dlogits.data, nullptr);
  std::vector<double> terms(2 * static_cast<size_t>(rows));
  check_cuda(cudaMemcpy(terms.data(), row_terms, terms.size() * sizeof(double), cudaMemcpyDeviceToHost), "the loss");
  double loss = 0.0, nll = 0.0;
  for (int i = 0; i < rows; ++i) {  // in row order, as the CPU
    loss += terms[static_cast<size_t>(i)];
    nll += terms[static_cast<size_t>(rows + i)];
  }
  r.loss = r.tokens > 0 ? loss / r.tokens : 0.0;  // no target token: zero gradients, and Adam still steps (as the CPU)
  r.nll = r.tokens > 0 ? nll / r.tokens : 0.0;
  if (!std::isfinite(r.loss))  // before the update: the weights stay those of the last good step
    fail(ErrorKind::Value, "train", "the loss became " + std::to_string(r.loss) + " (learning rate too high?)");

  // Backward into zeroed gradients.
  const int64_t n = static_cast<int64_t>(m.weight_floats);
  check_cuda(cudaMemsetAsync(m.grad_memory, 0, static_cast<size_t>(n) * sizeof(float)), "cudaMemsetAsync");
  Backward(m, p, batch.size, m.grad_memory).run(dlogits);

  // Tied weights share one gradient (train/init.h's tie_gradients).
  const DWeights g = weights_at(m, m.grad_memory);
  auto add_into = [&](const float* from, const float* into, int64_t count) {
    cuda::add(into, from, out(into), count, nullptr);
  };
  auto copy = [&](const float* from, const float* to, int64_t count) {
    check_cuda(cudaMemcpyAsync(out(to), from, static_cast<size_t>(count) * sizeof(float), cudaMemcpyDeviceToDevice),
               "cudaMemcpyAsync");
  };
  // The generator's weight is tied to the last stack's input embedding (an encoder-only model's: the source's).
  const int64_t tgt_table = static_cast<int64_t>(c.tgt_vocab_size) * c.d_model;  // what tie_gradients touches
  if (c.tie_output_embedding) {
    const float* tied = c.has_decoder() ? g.tgt_embedding : g.src_embedding;
    const int64_t table = static_cast<int64_t>(c.output_vocab_size()) * c.d_model;
    add_into(g.generator.weight, tied, table);
    copy(tied, g.generator.weight, table);
  }
  if (c.share_embeddings) {
    add_into(g.tgt_embedding, g.src_embedding, tgt_table);
    copy(g.src_embedding, g.tgt_embedding, tgt_table);
    if (c.tie_output_embedding) copy(g.src_embedding, g.generator.weight, tgt_table);
  }

  // Clipping by the global norm (fixed blocks, their partial sums added here in order).
  constexpr int kBlocks = 1024;
  double* partials = static_cast<double*>(m.scratch(kBlocks * sizeof(double)));
  cuda::sum_of_squares(m.grad_memory, n, partials, kBlocks, nullptr);
  std::vector<double> host(kBlocks);
  check_cuda(cudaMemcpy(host.data(), partials, kBlocks * sizeof(double), cudaMemcpyDeviceToHost), "the gradient norm");
  double sum = 0.0;
  for (double x : host) sum += x;
  const double norm = std::sqrt(sum);
  if (grad_norm) *grad_norm = norm;
  if (clip_norm > 0 && norm > clip_norm)
    cuda::scale(m.grad_memory, n, static_cast<float>(clip_norm / (norm + 1e-6)), nullptr);

  // Adam, every weight in one kernel (train/optimizer.cpp).
  ++m.adam_step;
  const AdamSettings& a = m.adam_settings;
  const float bias1 = 1.0f - static_cast<float>(std::pow(a.beta1, static_cast<double>(m.adam_step)));
  const float bias2 = 1.0f - static_cast<float>(std::pow(a.beta2, static_cast<double>(m.adam_step)));
  cuda::adam(m.weight_memory, m.grad_memory, m.adam_m, m.adam_v, n, a.beta1, a.beta2, lr / bias1,
             1.0f / std::sqrt(bias2), a.eps, nullptr);
  check_cuda(cudaGetLastError(), "kernel launch");
  check_cuda(cudaDeviceSynchronize(), "training step");
  return r;
}

void CudaModel::download_weights(ModelWeights& weights) const { transfer(*impl_, impl_->weight_memory, weights, "weights"); }
void CudaModel::download_gradients(ModelWeights& grads) const { transfer(*impl_, impl_->grad_memory, grads, "gradients"); }
void CudaModel::download_adam(ModelWeights& first_moment, ModelWeights& second_moment) const {
  transfer(*impl_, impl_->adam_m, first_moment, "Adam's first moment");
  transfer(*impl_, impl_->adam_v, second_moment, "Adam's second moment");
}
int64_t CudaModel::adam_steps() const { return impl_->adam_step; }

}  // namespace sf
