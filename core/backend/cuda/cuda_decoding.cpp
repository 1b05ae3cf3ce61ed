// CudaDecoding (backend/cuda_model.h): decoding steps on the GPU with key/value caches in GPU memory, the CPU's
// decode_steps (decode/kv_cache.h) step for step. With the causal mask the decoder's row t depends only on tokens
// 0..t, so a step needs one new row per hypothesis: its keys and values go into the cache at row t, its query
// meets the cache's rows 0..t, and the cross-attention meets keys and values of the encoder output that were
// computed once. Each projection is one (N, C) product for the N hypotheses of a step.
#include <map>

#include "backend/cuda/device_model.h"
#include "backend/cuda_model.h"
#include "transformer/passes.h"

namespace sf {

struct CudaDecoding::State {
  CudaModel::Impl& m;
  std::vector<int> src;
  Interventions iv;
  int capacity = 0;  // rows a cache holds: the model's positions
  // Layer l's cross-attention keys at floats 2 l S C, its values at (2 l + 1) S C: (S, C) each.
  DeviceBuffer cross;
  std::vector<AttentionMask> cross_masks;  // per layer: the source's padding
  struct Cache {
    std::unique_ptr<DeviceBuffer> memory;  // layer l's keys at floats 2 l P C, values at (2 l + 1) P C: (P, C) each
    std::vector<int> tokens;               // the rows it holds: their ids (the self-attention's padding mask)
    bool used = false;
  };
  std::vector<Cache> caches;

  explicit State(CudaModel::Impl& model) : m(model) {}

  const DLayerWeights& w_decoder(int layer) const { return m.w.decoder[static_cast<size_t>(layer)]; }

  int64_t cache_floats() const {
    return static_cast<int64_t>(m.config.n_decoder_layers) * 2 * capacity * m.config.d_model;
  }
  float* keys(int cache, int layer) {
    return static_cast<float*>(caches[static_cast<size_t>(cache)].memory->data()) +
           static_cast<int64_t>(2 * layer) * capacity * m.config.d_model;
  }
  float* values(int cache, int layer) { return keys(cache, layer) + static_cast<int64_t>(capacity) * m.config.d_model; }
  const float* cross_keys(int layer) {
    return static_cast<const float*>(cross.data()) + static_cast<int64_t>(2 * layer) * src.size() * m.config.d_model;
  }
  const float* cross_values(int layer) {
    return cross_keys(layer) + static_cast<int64_t>(src.size()) * m.config.d_model;
  }
  Cache& at(int cache) {
    if (cache < 0 || cache >= static_cast<int>(caches.size()) || !caches[static_cast<size_t>(cache)].used)
      fail(ErrorKind::Input, "CudaDecoding", "no cache " + std::to_string(cache));
    return caches[static_cast<size_t>(cache)];
  }

  // One step of hypotheses whose caches all hold `length` rows: rows `which` of caches/tokens. Their logits go to
  // the same rows of `logits`.
  void step_group(const std::vector<int>& caches_of, const std::vector<int>& tokens, const std::vector<size_t>& which,
                  int length, Mat& logits);
};

CudaDecoding::CudaDecoding(CudaModel& model, const std::vector<int>& src_ids, const Interventions& interventions)
    : state_(std::make_unique<State>(*model.impl_)) {
  State& s = *state_;
  CudaModel::Impl& m = s.m;
  const Config& c = m.config;
  if (!interventions.custom_masks.empty())
    fail(ErrorKind::Unsupported, "cuda", "painted masks are not in the GPU's KV-cache decoding: it runs on the CPU");
  if (!kv_cache_exact(c, interventions))
    fail(ErrorKind::Unsupported, "cuda", "without the causal mask a decoding step recomputes every row: it runs on the CPU");
  m.check_input(src_ids, {c.bos_id}, interventions);
  s.src = src_ids;
  s.iv = interventions;
  s.capacity = c.max_positions;
  const int S = static_cast<int>(src_ids.size()), C = c.d_model, L = c.n_decoder_layers;
  DevicePass p;
  m.start_pass();
  m.encoder(src_ids, 1, interventions, p);
  float* cross = static_cast<float*>(s.cross.reserve(static_cast<size_t>(2) * L * S * C * sizeof(float)));
  const size_t bytes = static_cast<size_t>(S) * C * sizeof(float);
  for (int l = 0; l < L; ++l) {
    const DAttentionWeights& aw = m.w.decoder[static_cast<size_t>(l)].cross_attn;
    const DMat k = m.linear(p.enc_out, aw.k), v = m.linear(p.enc_out, aw.v);  // (S, C)
    check_cuda(cudaMemcpyAsync(cross + static_cast<int64_t>(2 * l) * S * C, k.data, bytes, cudaMemcpyDeviceToDevice, nullptr),
               "copy of the cross-attention keys");
    check_cuda(cudaMemcpyAsync(cross + static_cast<int64_t>(2 * l + 1) * S * C, v.data, bytes, cudaMemcpyDeviceToDevice,
                               nullptr),
               "copy of the cross-attention values");
    s.cross_masks.push_back(build_mask(c, interventions, AttentionKind::Cross, l, 0, 1, src_ids, false));
  }
  check_cuda(cudaGetLastError(), "kernel launch");
  check_cuda(cudaDeviceSynchronize(), "encoder pass");
}

CudaDecoding::~CudaDecoding() = default;

int CudaDecoding::new_cache() {
  State& s = *state_;
  size_t i = 0;
  while (i < s.caches.size() && s.caches[i].used) ++i;
  if (i == s.caches.size()) s.caches.emplace_back();
  State::Cache& cache = s.caches[i];
  if (!cache.memory) {
    cache.memory = std::make_unique<DeviceBuffer>();
    cache.memory->reserve(static_cast<size_t>(s.cache_floats()) * sizeof(float));
  }
  cache.tokens.clear();
  cache.used = true;
  return static_cast<int>(i);
}

int CudaDecoding::copy_cache(int from) {
  State& s = *state_;
  const int to = new_cache();
  const int rows = static_cast<int>(s.at(from).tokens.size());
  const size_t bytes = static_cast<size_t>(rows) * s.m.config.d_model * sizeof(float);
  for (int l = 0; l < s.m.config.n_decoder_layers && rows > 0; ++l) {
    check_cuda(cudaMemcpyAsync(s.keys(to, l), s.keys(from, l), bytes, cudaMemcpyDeviceToDevice, nullptr), "copy of a cache");
    check_cuda(cudaMemcpyAsync(s.values(to, l), s.values(from, l), bytes, cudaMemcpyDeviceToDevice, nullptr),
               "copy of a cache");
  }
  s.caches[static_cast<size_t>(to)].tokens = s.at(from).tokens;
  return to;
}

void CudaDecoding::release_cache(int cache) {
  State::Cache& c = state_->at(cache);
  c.used = false;  // its memory stays, for the next new_cache
  c.tokens.clear();
}

void CudaDecoding::truncate_cache(int cache, int length) {
  State::Cache& c = state_->at(cache);
  if (length < 0 || length > static_cast<int>(c.tokens.size()))
    fail(ErrorKind::Input, "CudaDecoding", "cannot truncate a cache of " + std::to_string(c.tokens.size()) + " rows to " +
                                              std::to_string(length));
  c.tokens.resize(static_cast<size_t>(length));  // the rows past it are overwritten by the next steps
}

int CudaDecoding::cache_length(int cache) const { return static_cast<int>(state_->at(cache).tokens.size()); }

Mat CudaDecoding::step(const std::vector<int>& caches, const std::vector<int>& tokens) {
  State& s = *state_;
  const Config& c = s.m.config;
  if (caches.empty() || caches.size() != tokens.size())
    fail(ErrorKind::Input, "CudaDecoding", std::to_string(tokens.size()) + " tokens for " + std::to_string(caches.size()) +
                                              " caches");
  // Hypotheses of one length form one pass (a beam's always do).
  std::map<int, std::vector<size_t>> by_length;
  for (size_t i = 0; i < caches.size(); ++i) {
    const int length = static_cast<int>(s.at(caches[i]).tokens.size());
    if (length >= s.capacity)
      fail(ErrorKind::Input, "CudaDecoding", "a cache is full: the model has " + std::to_string(s.capacity) + " positions");
    check_token_ids(c, false, {tokens[i]}, {length});
    for (size_t j = 0; j < i; ++j)
      if (caches[j] == caches[i]) fail(ErrorKind::Input, "CudaDecoding", "cache " + std::to_string(caches[i]) + " twice");
    by_length[length].push_back(i);
  }
  Mat logits(static_cast<Eigen::Index>(caches.size()), c.tgt_vocab_size);
  for (const auto& [length, which] : by_length) s.step_group(caches, tokens, which, length, logits);
  return logits;
}

void CudaDecoding::State::step_group(const std::vector<int>& caches_of, const std::vector<int>& tokens,
                                     const std::vector<size_t>& which, int t, Mat& logits) {
  const Config& c = m.config;
  const int n = static_cast<int>(which.size()), C = c.d_model;
  std::vector<int> ids, slot;
  for (size_t i : which) {
    ids.push_back(tokens[i]);
    slot.push_back(caches_of[i]);
    caches[static_cast<size_t>(caches_of[i])].tokens.push_back(tokens[i]);  // row t
  }
  m.start_pass();
  const DEmbedding e = m.embed(false, ids, n, iv.positional_encoding, t);  // (n, C) at position t
  const bool post = c.norm_placement == NormPlacement::Post;
  // Self-attention of the new rows: their keys and values become row t of their caches, their queries meet rows
  // 0..t there. The masks are those of the query at position t over the cache's ids (padding, causal: nothing
  // later exists); without painted masks they are the same in every layer.
  std::vector<AttentionMask> self_masks;
  for (int i = 0; i < n; ++i)
    self_masks.push_back(build_mask(c, iv, AttentionKind::Decoder, 0, t, 1, caches[static_cast<size_t>(slot[i])].tokens, true));
  auto self_attention = [&](const DMat& x, int l) {
    const DAttentionWeights& aw = w_decoder(l).self_attn;
    DAttention a;
    a.queries = m.linear(x, aw.q);
    const DMat k = m.linear(x, aw.k), v = m.linear(x, aw.v);  // (n, C)
    std::vector<float*> rows(static_cast<size_t>(2 * n));
    std::vector<const float*> key_rows(static_cast<size_t>(n)), value_rows(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const size_t u = static_cast<size_t>(i);
      key_rows[u] = keys(slot[u], l);
      value_rows[u] = values(slot[u], l);
      rows[u] = keys(slot[u], l) + static_cast<int64_t>(t) * C;
      rows[static_cast<size_t>(n) + u] = values(slot[u], l) + static_cast<int64_t>(t) * C;
    }
    float* const* d_rows = m.upload(rows.data(), rows.size());
    cuda::scatter_rows(k.data, d_rows, n, C, nullptr);
    cuda::scatter_rows(v.data, d_rows + n, n, C, nullptr);
    m.attend(a, key_rows, value_rows, t + 1, aw, self_masks, heads_on(c, iv, AttentionKind::Decoder, l));
    return a.attn_out;
  };
  auto cross_attention = [&](const DMat& x, int l) {
    const DAttentionWeights& aw = w_decoder(l).cross_attn;
    DAttention a;
    a.queries = m.linear(x, aw.q);
    const std::vector<const float*> key_rows(static_cast<size_t>(n), cross_keys(l)),
        value_rows(static_cast<size_t>(n), cross_values(l));
    const std::vector<AttentionMask> masks(static_cast<size_t>(n), cross_masks[static_cast<size_t>(l)]);
    m.attend(a, key_rows, value_rows, static_cast<int>(src.size()), aw, masks, heads_on(c, iv, AttentionKind::Cross, l));
    return a.attn_out;
  };
  DMat x = e.sum;
  for (int l = 0; l < c.n_decoder_layers; ++l) {
    const DLayerWeights& lw = w_decoder(l);
    if (post) {  // x = LN(x + sublayer(x)), three times
      const DLayerNorm n1 = m.layer_norm(m.add(x, self_attention(x, l)), lw.self_attn_norm);
      const DLayerNorm n2 = m.layer_norm(m.add(n1.out, cross_attention(n1.out, l)), lw.cross_attn_norm);
      x = m.layer_norm(m.add(n2.out, m.feed_forward(n2.out, lw).out), lw.ffn_norm).out;
    } else {  // x = x + sublayer(LN(x)), three times
      const DMat r1 = m.add(x, self_attention(m.layer_norm(x, lw.self_attn_norm).out, l));
      const DMat r2 = m.add(r1, cross_attention(m.layer_norm(r1, lw.cross_attn_norm).out, l));
      x = m.add(r2, m.feed_forward(m.layer_norm(r2, lw.ffn_norm).out, lw).out);
    }
  }
  if (c.decoder_final_norm) x = m.layer_norm(x, m.w.decoder_norm).out;
  const DMat out = m.linear(x, m.w.generator);  // (n, Vt)
  check_cuda(cudaGetLastError(), "kernel launch");
  Mat host;
  copy_to_host(out, host);  // waits for the pass
  for (int i = 0; i < n; ++i) logits.row(static_cast<Eigen::Index>(which[static_cast<size_t>(i)])) = host.row(i);
}

}  // namespace sf
