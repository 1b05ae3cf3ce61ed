// Incremental decoding with a key/value cache. With the causal mask on, the decoder's row t depends only on
// tokens 0..t, so feeding one token at a time and keeping every layer's self-attention keys/values gives
// the same logits as recomputing the whole prefix (tests/unit/test_decode.cpp checks it), in O(t) instead of
// O(t^2) per token. Cross-attention keys/values come from enc.out and are computed once.
//
// The cache holds the same interventions as the encoder trace it starts from (heads off, padding mask,
// positional encoding, painted masks). Causal mask off, or a painted decoder mask that lets a query see a later
// key, makes later tokens change earlier rows: kv_cache_exact() is false then, and decoders recompute the
// prefix instead (decode_chunk from an empty cache, every token at once; several steps at once: decode_prefixes).
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/trace.h"

namespace sf {

struct DecoderLayerCache {
  std::vector<Mat> self_k;   // H x (t, D) keys of the tokens fed so far
  std::vector<Mat> self_v;   // H x (t, D)
  std::vector<Mat> cross_k;  // H x (S, D) from enc.out
  std::vector<Mat> cross_v;  // H x (S, D)
};

struct KvCache {
  std::vector<DecoderLayerCache> layers;
  std::vector<int> tokens;  // (t) the decoder input fed so far
  int length() const { return static_cast<int>(tokens.size()); }
};

bool kv_cache_exact(const Interventions& interventions);

// An empty cache on the encoder half of `encoded` (computes the cross-attention keys and values).
KvCache start_kv_cache(const Config& config, const ModelWeights& weights, const Trace& encoded);

// Feeds `tokens` (k) at positions cache.length() .. in one pass: their rows go through every layer together,
// each query seeing the cached keys and the chunk's own under the masks of a pass over all positions (causal
// mask, padding, painted masks fitted by fit_decoder_masks), and their keys/values are appended. Returns the
// logits (out_rows, Vt) of the last out_rows tokens: row i predicts the token after tokens[k - out_rows + i].
// In the last layer only those rows are queried, and only they reach the output projection.
//   k tokens, out_rows k: checks k guessed tokens at once (speculative decoding);
//   a whole prefix on an empty cache, out_rows 1: one decoding step without the causal mask.
Mat decode_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, KvCache& cache, int out_rows);

// Without an exact cache (causal mask off, a painted mask that lets a query see a later key), several decoding
// steps checked at once: for each length n in `lengths` (rising), a pass over tokens[0 .. n-1] alone, as a
// decoder step would run it, all of them stacked into one batch (each prefix's rows attend within the prefix,
// under the masks fitted to its length). Returns the logits (lengths.size(), Vt) of each prefix's last row.
// `cross` supplies the cross-attention keys and values (start_kv_cache); its self-attention part is not used.
Mat decode_prefixes(const Config& config, const ModelWeights& weights, const Trace& encoded,
                    const std::vector<int>& tokens, const std::vector<int>& lengths, const KvCache& cross);

// Feeds `token` at position cache.length() and returns the logits (1, Vt) that predict the token after it.
RowVec decode_step(const Config& config, const ModelWeights& weights, const Trace& encoded, int token,
                   KvCache& cache);

// Forgets every token from position `length` on (stepping back).
void truncate_kv_cache(KvCache& cache, int length);

}  // namespace sf
