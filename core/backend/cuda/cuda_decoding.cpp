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

  // One pass of B caches that all hold t rows, each continued by k tokens: ids (B*k) stacked cache by cache, cache
  // b's at rows b*k .. b*k + k - 1, at positions t .. t + k - 1 (a beam's step: k = 1; a guided check's chunk:
  // B = 1). Returns the logits (B*k, Vt), row b*k + i predicting the token after ids[b*k + i].
  Mat pass(const std::vector<int>& slots, const std::vector<int>& ids, int k, int t);
};

CudaDecoding::CudaDecoding(CudaModel& model, const std::vector<int>& src_ids, const Interventions& interventions)
    : state_(std::make_unique<State>(*model.impl_)) {
  State& s = *state_;
  CudaModel::Impl& m = s.m;
  const Config& c = m.config;
  // (first: an encoder-only model generates nothing anywhere, which is not a reason to try the CPU)
  if (!c.has_decoder()) fail(ErrorKind::Input, "CudaDecoding", "an encoder_only model does not generate text");
  if (!interventions.custom_masks.empty())
    fail(ErrorKind::Unsupported, "cuda", "painted masks are not in the GPU's KV-cache decoding: it runs on the CPU");
  if (!kv_cache_exact(c, interventions))
    fail(ErrorKind::Unsupported, "cuda", "without the causal mask a decoding step recomputes every row: it runs on the CPU");
  m.check_input(src_ids, {c.bos_id}, interventions);  // (a decoder-only model: no source; its prompt is fed)
  s.src = src_ids;
  s.iv = interventions;
  s.capacity = c.max_positions;
  if (!c.has_cross_attention()) return;  // no encoder pass, no cross-attention keys and values
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
  for (const auto& [length, which] : by_length) {
    std::vector<int> slots, ids;
    for (size_t i : which) {
      slots.push_back(caches[i]);
      ids.push_back(tokens[i]);
    }
    const Mat group = s.pass(slots, ids, 1, length);
    for (size_t r = 0; r < which.size(); ++r) logits.row(static_cast<Eigen::Index>(which[r])) = group.row(static_cast<Eigen::Index>(r));
  }
  return logits;
}

Mat CudaDecoding::chunk(int cache, const std::vector<int>& tokens) {
  State& s = *state_;
  const int length = static_cast<int>(s.at(cache).tokens.size()), k = static_cast<int>(tokens.size());
  if (k == 0) return Mat(0, s.m.config.tgt_vocab_size);
  if (length + k > s.capacity)
    fail(ErrorKind::Input, "CudaDecoding", std::to_string(k) + " tokens after " + std::to_string(length) +
                                              " do not fit: the model has " + std::to_string(s.capacity) + " positions");
  std::vector<int> positions(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) positions[static_cast<size_t>(i)] = length + i;
  check_token_ids(s.m.config, false, tokens, positions);
  return s.pass({cache}, tokens, k, length);
}

Mat CudaDecoding::State::pass(const std::vector<int>& slot, const std::vector<int>& ids, int k, int t) {
  const Config& c = m.config;
  const int B = static_cast<int>(slot.size()), n = B * k, C = c.d_model;
  // The pass's plan, as the CPU's decoder pass makes it (transformer/decoder_plan.h): sequence b is ids' b-th
  // stretch of k tokens continuing cache slot[b], which holds t; every row's logits are wanted.
  DecoderRows sequences;
  std::vector<const std::vector<int>*> held;
  for (int b = 0; b < B; ++b) {
    sequences.add_sequence(
        std::vector<int>(ids.begin() + static_cast<int64_t>(b) * k, ids.begin() + static_cast<int64_t>(b + 1) * k), t);
    held.push_back(&caches[static_cast<size_t>(slot[static_cast<size_t>(b)])].tokens);
  }
  DecoderPlanRequest request(sequences, src, 1, iv);
  request.cached_tokens = held;
  std::vector<int> every_row(static_cast<size_t>(n));
  std::iota(every_row.begin(), every_row.end(), 0);
  request.output_rows = every_row;
  const DecoderPlan plan = plan_decoder_pass(c, request);
  for (int b = 0; b < B; ++b) {  // rows t .. t + k - 1 of their caches
    std::vector<int>& tokens = caches[static_cast<size_t>(slot[static_cast<size_t>(b)])].tokens;
    tokens.insert(tokens.end(), ids.begin() + static_cast<int64_t>(b) * k, ids.begin() + static_cast<int64_t>(b + 1) * k);
  }
  m.start_pass();
  const DEmbedding e = m.embed(false, ids, B, iv.positional_encoding, t);  // (n, C) at positions t .. t + k - 1
  const bool post = c.norm_placement == NormPlacement::Post;
  // Self-attention of the new rows: their keys and values become rows t .. t + k - 1 of their caches, their
  // queries meet rows 0 .. t + k - 1 there, query t + i blocked from the keys after it (causal; the softmax
  // kernel blocks them from the mask's first query position), under the plan's masks of each layer.
  int l = 0;  // the layer the attention callbacks serve
  // Layer l's self-attention from `in` (x, or LN(x) in pre-norm): every row is queried, so the rows of x going on
  // are x's.
  auto self_attention = [&](const DMat& x_all, const DMat& in, DAttention& a) -> const DMat& {
    const DAttentionWeights& aw = w_decoder(l).self_attn;
    a = {};
    a.queries = m.linear(in, aw.q);
    const DMat new_keys = m.linear(in, aw.k), new_values = m.linear(in, aw.v);  // (n, C)
    std::vector<float*> rows(static_cast<size_t>(2 * n));  // where row r of new_keys / new_values goes
    std::vector<const float*> key_rows(static_cast<size_t>(B)), value_rows(static_cast<size_t>(B));
    for (int b = 0; b < B; ++b) {
      const int cache = slot[static_cast<size_t>(b)];
      key_rows[static_cast<size_t>(b)] = keys(cache, l);
      value_rows[static_cast<size_t>(b)] = values(cache, l);
      for (int i = 0; i < k; ++i) {
        const size_t r = static_cast<size_t>(b * k + i);
        rows[r] = keys(cache, l) + static_cast<int64_t>(t + i) * C;
        rows[static_cast<size_t>(n) + r] = values(cache, l) + static_cast<int64_t>(t + i) * C;
      }
    }
    float* const* d_rows = m.upload(rows.data(), rows.size());
    cuda::scatter_rows(new_keys.data, d_rows, n, C, nullptr);
    cuda::scatter_rows(new_values.data, d_rows + n, n, C, nullptr);
    m.attend(a, key_rows, value_rows, t + k, aw, m.decoder_masks(plan, true, l), heads_on(c, iv, AttentionKind::Decoder, l));
    return x_all;
  };
  auto cross_attention = [&](const DMat& h, DAttention& a) {
    const DAttentionWeights& aw = w_decoder(l).cross_attn;
    a = {};
    a.queries = m.linear(h, aw.q);
    const std::vector<const float*> key_rows(static_cast<size_t>(B), cross_keys(l)),
        value_rows(static_cast<size_t>(B), cross_values(l));
    m.attend(a, key_rows, value_rows, static_cast<int>(src.size()), aw, m.decoder_masks(plan, false, l),
             heads_on(c, iv, AttentionKind::Cross, l));
  };
  CudaModel::Impl::LayerOps ops{m};
  DDecoderLayer layer;  // one layer's buffers, handles into the pass's workspace
  DMat x = e.sum;
  for (l = 0; l < c.n_decoder_layers; ++l) {
    layer_order::decoder_layer(ops, post, c.has_cross_attention(), w_decoder(l), x, self_attention, cross_attention,
                               layer);
    x = layer.out;
  }
  if (c.decoder_final_norm) x = m.layer_norm(x, m.w.decoder_norm).out;
  const DMat out = m.linear(x, m.w.generator);  // (n, Vt)
  check_cuda(cudaGetLastError(), "kernel launch");
  Mat host;
  copy_to_host(out, host);  // waits for the pass
  return host;
}

}  // namespace sf
