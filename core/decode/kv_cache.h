// Incremental decoding with a key/value cache (the cache itself: transformer/passes.h). With the causal mask on,
// the decoder's row t depends only on tokens 0..t, so feeding one token at a time and keeping every layer's
// self-attention keys/values gives the same logits as recomputing the whole prefix (tests/unit/test_decode.cpp
// checks it), in O(t) instead of O(t^2) per token. Cross-attention keys/values come from enc.out and are
// computed once (start_kv_cache).
//
// Each function here is one call of decoder_pass (passes.h) with the rows it needs:
//   decode_step      one token continuing the cache: its logits
//   decode_steps     one token continuing each of N caches (a beam's hypotheses), all in one pass: N rows
//   decode_chunk     k tokens continuing the cache in one pass: the logits of the last out_rows of them
//   record_chunk     the same, keeping its rows for a traced pass put together from chunks
//   decode_prefixes  without a cache, several prefixes of one translation at once: the last row of each
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/passes.h"
#include "transformer/trace.h"

namespace sf {

// An empty cache on the encoder half of `encoded` (computes the cross-attention keys and values).
KvCache start_kv_cache(const Config& config, const ModelWeights& weights, const Trace& encoded);

// Feeds `tokens` (k) at positions cache.length() .. in one pass: each query sees the cached keys and the
// chunk's own under the masks of a pass over all positions (causal mask, padding, painted masks fitted by
// fit_decoder_masks), and their keys/values are appended. Returns the logits (out_rows, Vt) of the last
// out_rows tokens: row i predicts the token after tokens[k - out_rows + i].
//   k tokens, out_rows k: checks k guessed tokens at once (speculative decoding);
//   a whole prefix on an empty cache, out_rows 1: one decoding step without the causal mask.
Mat decode_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, KvCache& cache, int out_rows);

// decode_chunk that keeps the chunk's rows (Record::Rows) in `rows` and computes no logits yet: output_rows
// (transformer/forward.h) computes the rows a check reads (it stops at the first wrong guess), and the rows it
// takes are a piece of the translation's traced pass (assemble_traced_pass).
void record_chunk(const Config& config, const ModelWeights& weights, const Trace& encoded,
                  const std::vector<int>& tokens, KvCache& cache, Trace& rows);

// Without an exact cache (causal mask off, a painted mask that lets a query see a later key), several decoding
// steps checked at once: for each length n in `lengths` (rising), a pass over tokens[0 .. n-1] alone, as a
// decoder step would run it, all of them in one batch of sequences. Returns the logits (lengths.size(), Vt) of
// each prefix's last row.
Mat decode_prefixes(const Config& config, const ModelWeights& weights, const Trace& encoded,
                    const std::vector<int>& tokens, const std::vector<int>& lengths, const CrossKeysValues& cross);

// Feeds `token` at position cache.length() and returns the logits (1, Vt) that predict the token after it.
RowVec decode_step(const Config& config, const ModelWeights& weights, const Trace& encoded, int token,
                   KvCache& cache);

// decode_step for N sequences at once: tokens[i] (N) continues *caches[i] (each its own sequence, at its own
// length; all on the same encoder pass). Returns the logits (N, Vt), row i predicting the token after tokens[i].
// One pass of N rows: every projection is one (N, C) product instead of N row-by-matrix products, which is what
// makes a beam of 64 a few times faster than feeding its hypotheses one by one. The same numbers as N decode_step
// calls up to float rounding (products of another shape sum in another order).
Mat decode_steps(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const std::vector<int>& tokens, const std::vector<KvCache*>& caches);

}  // namespace sf
