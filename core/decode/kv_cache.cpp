#include "decode/kv_cache.h"

#include "nn/linear.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {

bool kv_cache_exact(const Interventions& iv) {
  if (!iv.causal_mask) return false;
  for (const CustomMask& m : iv.custom_masks)
    if (m.where.kind != AttentionKind::Encoder) return false;
  return true;
}

KvCache start_kv_cache(const Config& config, const ModelWeights& weights, const Trace& encoded) {
  if (!encoded.has_encoder()) fail(ErrorKind::Input, "start_kv_cache", "the trace holds no encoder pass");
  KvCache cache;
  cache.layers.resize(static_cast<size_t>(config.n_decoder_layers));
  for (int l = 0; l < config.n_decoder_layers; ++l) {
    DecoderLayerCache& c = cache.layers[static_cast<size_t>(l)];
    attention_keys_values(encoded.enc_out, weights.decoder_layers[static_cast<size_t>(l)].cross_attn,
                          config.n_heads, c.cross_k, c.cross_v);
    c.self_k.assign(static_cast<size_t>(config.n_heads), Mat(0, config.head_dim()));
    c.self_v = c.self_k;
  }
  return cache;
}

namespace {

void append_rows(std::vector<Mat>& cache, const std::vector<Mat>& rows) {
  for (size_t h = 0; h < cache.size(); ++h) {
    const Eigen::Index t = cache[h].rows();
    cache[h].conservativeResize(t + rows[h].rows(), Eigen::NoChange);
    cache[h].bottomRows(rows[h].rows()) = rows[h];
  }
}

// H copies of a (1, Tk) row: key j blocked when keys[j] is padding (and the padding mask is on).
std::vector<Mat> key_padding_row(const Config& config, const Interventions& iv, const std::vector<int>& keys) {
  Mat row = Mat::Zero(1, static_cast<Eigen::Index>(keys.size()));
  if (iv.padding_mask)
    for (size_t j = 0; j < keys.size(); ++j)
      if (keys[j] == config.pad_id) row(0, static_cast<Eigen::Index>(j)) = 1.0f;
  return std::vector<Mat>(static_cast<size_t>(config.n_heads), row);
}

}  // namespace

RowVec decode_step(const Config& config, const ModelWeights& weights, const Trace& encoded, int token,
                   KvCache& cache) {
  const Interventions& iv = encoded.interventions;
  const int position = cache.length();
  EmbeddingTrace emb;
  embed_tokens(config, weights, false, {token}, position, iv.positional_encoding, emb);  // (1, C)
  cache.tokens.push_back(token);
  const std::vector<Mat> self_mask = key_padding_row(config, iv, cache.tokens);
  const std::vector<Mat> cross_mask = key_padding_row(config, iv, encoded.src.ids);
  Mat x = std::move(emb.sum);  // (1, C)
  DecoderLayerTrace t;
  for (int l = 0; l < config.n_decoder_layers; ++l) {
    const DecoderLayerWeights& w = weights.decoder_layers[static_cast<size_t>(l)];
    DecoderLayerCache& c = cache.layers[static_cast<size_t>(l)];
    AttentionFn self_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      std::vector<Mat> k_new, v_new;
      attention_keys_values(xq, w.self_attn, config.n_heads, k_new, v_new);  // H x (1, D)
      append_rows(c.self_k, k_new);
      append_rows(c.self_v, v_new);
      attention_from_keys_values(xq, c.self_k, c.self_v, w.self_attn, config.n_heads, self_mask,
                                 heads_on(config, iv, AttentionKind::Decoder, l), a);
    };
    AttentionFn cross_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      attention_from_keys_values(xq, c.cross_k, c.cross_v, w.cross_attn, config.n_heads, cross_mask,
                                 heads_on(config, iv, AttentionKind::Cross, l), a);
    };
    decoder_layer_forward(config, w, x, self_attn, cross_attn, t);
    x = t.out;
  }
  if (config.decoder_final_norm) {
    LayerNormTrace n;
    layer_norm_forward(x, weights.decoder_norm, config.layer_norm_eps, n);
    x = std::move(n.out);
  }
  Mat logits;
  linear_forward(x, weights.generator, logits);  // (1, Vt)
  return logits.row(0);
}

void truncate_kv_cache(KvCache& cache, int length) {
  if (length < 0 || length > cache.length())
    fail(ErrorKind::Input, "truncate_kv_cache",
         "length " + std::to_string(length) + " outside 0.." + std::to_string(cache.length()));
  cache.tokens.resize(static_cast<size_t>(length));
  for (DecoderLayerCache& c : cache.layers)
    for (auto* heads : {&c.self_k, &c.self_v})
      for (Mat& m : *heads) m.conservativeResize(length, Eigen::NoChange);
}

}  // namespace sf
