#include "decode/kv_cache.h"

#include <cmath>

#include "nn/linear.h"
#include "transformer/forward.h"
#include "util/error.h"

namespace sf {

bool kv_cache_exact(const Interventions& iv) {
  if (!iv.causal_mask) return false;
  // A painted decoder self-attention mask keeps the cache exact while it lets no query see a later key (cells
  // past its edge take the causal mask, fit_decoder_masks); cross-attention masks concern one query row each.
  for (const CustomMask& m : iv.custom_masks)
    if (m.where.kind == AttentionKind::Decoder)
      for (Eigen::Index i = 0; i < m.blocked.rows(); ++i)
        for (Eigen::Index j = i + 1; j < m.blocked.cols(); ++j)
          if (m.blocked(i, j) <= 0.5f) return false;
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

// What a decoder layer's self-attention reads, so its keys and values: x itself (post-norm) or LN(x) (pre-norm,
// computed into `normed`).
const Mat& self_attention_input(const Config& config, const DecoderLayerWeights& w, const Mat& x,
                                LayerNormTrace& normed) {
  if (config.norm_placement == NormPlacement::Post) return x;
  layer_norm_forward(x, w.self_attn_norm, config.layer_norm_eps, normed);
  return normed.out;
}

}  // namespace

Mat decode_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, KvCache& cache, int out_rows) {
  const int k = static_cast<int>(tokens.size());
  if (k == 0 || out_rows < 1 || out_rows > k)
    fail(ErrorKind::Input, "decode_chunk",
         "asked for " + std::to_string(out_rows) + " rows of logits from " + std::to_string(k) + " tokens");
  const int first = cache.length();  // position of tokens[0]
  const int total = first + k;
  EmbeddingTrace emb;
  embed_tokens(config, weights, false, tokens, first, encoded.interventions.positional_encoding, emb);  // (k, C)
  // Painted decoder-side masks fitted to a pass over all `total` positions; the chunk takes their last rows.
  const Interventions iv = fit_decoder_masks(encoded.interventions, static_cast<int>(encoded.src.ids.size()), total);
  check_custom_mask_sizes(iv, static_cast<int>(encoded.src.ids.size()), total);
  cache.tokens.insert(cache.tokens.end(), tokens.begin(), tokens.end());
  Mat x = std::move(emb.sum);  // (k, C), then (out_rows, C) in the last layer
  DecoderLayerTrace t;
  for (int l = 0; l < config.n_decoder_layers; ++l) {
    const DecoderLayerWeights& w = weights.decoder_layers[static_cast<size_t>(l)];
    DecoderLayerCache& c = cache.layers[static_cast<size_t>(l)];
    // The keys and values of all k rows go into the cache. In the last layer only the last out_rows rows
    // need queries (nothing reads the others' outputs): their keys and values come from the self-attention's
    // input of every row (post-norm: x itself; pre-norm: LN(x)), computed here.
    const bool last = l + 1 == config.n_decoder_layers;
    const bool fewer_queries = last && out_rows < static_cast<int>(x.rows());
    if (fewer_queries) {
      std::vector<Mat> k_new, v_new;
      LayerNormTrace normed;
      attention_keys_values(self_attention_input(config, w, x, normed), w.self_attn, config.n_heads, k_new,
                            v_new);  // H x (k, D)
      append_rows(c.self_k, k_new);
      append_rows(c.self_v, v_new);
      x = Mat(x.bottomRows(out_rows));
    }
    const Eigen::Index first_query = total - x.rows();
    AttentionFn self_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      if (!fewer_queries) {
        std::vector<Mat> k_new, v_new;
        attention_keys_values(xq, w.self_attn, config.n_heads, k_new, v_new);  // H x (k, D)
        append_rows(c.self_k, k_new);
        append_rows(c.self_v, v_new);
      }
      attention_from_keys_values(
          xq, c.self_k, c.self_v, w.self_attn, config.n_heads,
          build_masks(config, iv, AttentionKind::Decoder, l, first_query, xq.rows(), cache.tokens, iv.causal_mask),
          heads_on(config, iv, AttentionKind::Decoder, l), a);
    };
    AttentionFn cross_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      attention_from_keys_values(
          xq, c.cross_k, c.cross_v, w.cross_attn, config.n_heads,
          build_masks(config, iv, AttentionKind::Cross, l, first_query, xq.rows(), encoded.src.ids, false),
          heads_on(config, iv, AttentionKind::Cross, l), a);
    };
    decoder_layer_forward(config, w, x, self_attn, cross_attn, t);
    x = std::move(t.out);
  }
  if (config.decoder_final_norm) {
    LayerNormTrace n;
    layer_norm_forward(x, weights.decoder_norm, config.layer_norm_eps, n);
    x = std::move(n.out);
  }
  if (x.rows() > out_rows) x = Mat(x.bottomRows(out_rows));
  Mat logits;
  linear_forward(x, weights.generator, logits);  // (out_rows, Vt)
  return logits;
}

Mat decode_prefixes(const Config& config, const ModelWeights& weights, const Trace& encoded,
                    const std::vector<int>& tokens, const std::vector<int>& lengths, const KvCache& cross) {
  for (size_t j = 0; j < lengths.size(); ++j)
    if (lengths[j] < 1 || lengths[j] > static_cast<int>(tokens.size()) || (j > 0 && lengths[j] <= lengths[j - 1]))
      fail(ErrorKind::Input, "decode_prefixes",
           "prefix lengths must rise from 1 to the " + std::to_string(tokens.size()) + " tokens given");
  if (lengths.empty()) return Mat(0, config.tgt_vocab_size);
  const int S = static_cast<int>(encoded.src.ids.size());
  const int H = config.n_heads, D = config.head_dim();
  // The passes' rows one under another: prefix j is rows first[j] .. first[j] + lengths[j] - 1.
  std::vector<int> first(lengths.size());
  std::vector<int> stacked_ids;
  for (size_t j = 0; j < lengths.size(); ++j) {
    first[j] = static_cast<int>(stacked_ids.size());
    stacked_ids.insert(stacked_ids.end(), tokens.begin(), tokens.begin() + lengths[j]);
  }
  const Eigen::Index R = static_cast<Eigen::Index>(stacked_ids.size());
  Mat x(R, config.d_model);  // (R, C) embeddings, each prefix from position 0
  for (size_t j = 0; j < lengths.size(); ++j) {
    EmbeddingTrace emb;
    embed_tokens(config, weights, false, std::vector<int>(tokens.begin(), tokens.begin() + lengths[j]), 0,
                 encoded.interventions.positional_encoding, emb);
    x.middleRows(first[j], lengths[j]) = emb.sum;
  }
  // Each prefix's interventions, painted masks fitted to its length (as a pass over it alone would have them).
  std::vector<Interventions> fitted;
  for (int n : lengths) fitted.push_back(fit_decoder_masks(encoded.interventions, S, n));
  for (const Interventions& iv : fitted) check_custom_mask_sizes(iv, S, -1);
  const float inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(D));
  const Eigen::Index P = static_cast<Eigen::Index>(lengths.size());
  DecoderLayerTrace t;
  for (int l = 0; l < config.n_decoder_layers; ++l) {
    const DecoderLayerWeights& w = weights.decoder_layers[static_cast<size_t>(l)];
    const std::vector<bool> self_on = heads_on(config, encoded.interventions, AttentionKind::Decoder, l);
    // In the last layer only each prefix's last row is asked for: the keys and values come from every row's
    // input (post-norm: x itself; pre-norm: LN(x)), the rest of the layer runs on the P last rows alone.
    const bool last_rows = l + 1 == config.n_decoder_layers;
    Mat k_all, v_all;  // (R, C)
    if (last_rows) {
      LayerNormTrace normed;
      const Mat& kv_in = self_attention_input(config, w, x, normed);
      linear_forward(kv_in, w.self_attn.k, k_all);
      linear_forward(kv_in, w.self_attn.v, v_all);
      Mat ends(P, config.d_model);
      for (size_t j = 0; j < lengths.size(); ++j)
        ends.row(static_cast<Eigen::Index>(j)) = x.row(first[j] + lengths[j] - 1);
      x = std::move(ends);
    }
    // The query rows of prefix j: all its rows, or in the last layer its last row (row j).
    auto query_rows = [&](size_t j) {
      return last_rows ? std::pair<int, int>(static_cast<int>(j), 1) : std::pair<int, int>(first[j], lengths[j]);
    };
    // Self-attention: the projections over all rows at once, the attention itself within each prefix.
    AttentionFn self_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      Mat q, k_own, v_own;
      linear_forward(xq, w.self_attn.q, q);  // (rows, C)
      if (!last_rows) {
        linear_forward(xq, w.self_attn.k, k_own);
        linear_forward(xq, w.self_attn.v, v_own);
      }
      const Mat& k = last_rows ? k_all : k_own;
      const Mat& v = last_rows ? v_all : v_own;
      a.heads_out.setZero(xq.rows(), config.d_model);
      Mat scores, probs;
      for (size_t j = 0; j < lengths.size(); ++j) {
        const int n = lengths[j];
        const auto [q0, qn] = query_rows(j);
        const std::vector<int> ids(tokens.begin(), tokens.begin() + n);
        const std::vector<Mat> masks =
            build_masks(config, fitted[j], AttentionKind::Decoder, l, n - qn, qn, ids, fitted[j].causal_mask);
        for (int h = 0; h < H; ++h) {
          if (!self_on[static_cast<size_t>(h)]) continue;  // a head switched off adds zeros
          scores.noalias() = q.block(q0, h * D, qn, D) * k.block(first[j], h * D, n, D).transpose();
          scores *= inv_sqrt_d;
          masked_softmax(scores, masks[static_cast<size_t>(h)], probs);  // (qn, n)
          a.heads_out.block(q0, h * D, qn, D).noalias() = probs * v.block(first[j], h * D, n, D);
        }
      }
      linear_forward(a.heads_out, w.self_attn.out, a.attn_out);  // (rows, C)
    };
    // Cross-attention: every row against the source's keys and values, each prefix's rows under its masks.
    AttentionFn cross_attn = [&](const ConstMatRef& xq, AttentionTrace& a) {
      std::vector<Mat> masks(static_cast<size_t>(H), Mat(xq.rows(), S));
      for (size_t j = 0; j < lengths.size(); ++j) {
        const auto [q0, qn] = query_rows(j);
        const std::vector<Mat> m =
            build_masks(config, fitted[j], AttentionKind::Cross, l, lengths[j] - qn, qn, encoded.src.ids, false);
        for (int h = 0; h < H; ++h) masks[static_cast<size_t>(h)].middleRows(q0, qn) = m[static_cast<size_t>(h)];
      }
      const DecoderLayerCache& c = cross.layers[static_cast<size_t>(l)];
      attention_from_keys_values(xq, c.cross_k, c.cross_v, w.cross_attn, H, std::move(masks),
                                 heads_on(config, encoded.interventions, AttentionKind::Cross, l), a);
    };
    decoder_layer_forward(config, w, x, self_attn, cross_attn, t);
    x = std::move(t.out);
  }
  Mat last = std::move(x);  // (P, C): each prefix's last row
  if (config.decoder_final_norm) {
    LayerNormTrace n;
    layer_norm_forward(last, weights.decoder_norm, config.layer_norm_eps, n);
    last = std::move(n.out);
  }
  Mat logits;
  linear_forward(last, weights.generator, logits);  // (prefixes, Vt)
  return logits;
}

RowVec decode_step(const Config& config, const ModelWeights& weights, const Trace& encoded, int token,
                   KvCache& cache) {
  return decode_chunk(config, weights, encoded, {token}, cache, 1).row(0);
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
