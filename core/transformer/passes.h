// The encoder pass and the one decoder pass. Every way the model runs is a call of these two:
//
//   the app's traced pass        one sequence from position 0, Record::Trace, every row's logits
//   a decoding step              one sequence continuing its KV cache by one row, Record::Output, its logits
//   a chunk of guessed tokens    one sequence continuing its cache by k rows, the logits of each (Record::Rows:
//                                its rows kept, so that the translation's traced pass is put together from its
//                                chunks, assemble_traced_pass, instead of run again)
//   prefix passes (no cache)     several sequences (the prefixes of a translation), the last row's logits of each
//   recompute after a change     the traced pass again from the first layer the change reaches
//   training                     B sentences of a padded batch, Record::Backward, dropout, every row's logits
//
// A pass is a batch of rows: each row a token at a position in a sequence. A sequence's rows are together, its
// positions rise by one from where its KV cache ends (0 without one). A row attends to the keys of its own
// sequence only (its cache and its rows), under the masks of a pass over that sequence as far as it reaches:
// the interventions' painted decoder masks are fitted to that length (fit_decoder_masks).
#pragma once
#include <memory>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/decoder_plan.h"
#include "transformer/layers.h"
#include "transformer/trace.h"

namespace sf {

// Each decoder layer's cross-attention keys and values of an encoder pass: computed once per source and shared
// by every pass over it (steps, beams, checks).
struct CrossKeysValues {
  std::vector<Mat> keys, values;  // per decoder layer (S, C)
};

// The decoder's self-attention keys and values of the tokens one sequence has fed so far, per layer: a step
// then costs one row of the decoder instead of the whole prefix. Exact while no row sees a later one
// (kv_cache_exact). Copies (beam hypotheses) share the encoder's cross-attention keys and values.
struct KvCache {
  std::vector<Mat> keys, values;  // per decoder layer (capacity, C); rows 0 .. length() - 1 are the tokens fed
  std::vector<int> tokens;        // (t) the decoder input fed so far
  std::shared_ptr<const CrossKeysValues> cross;  // of the encoder pass it decodes from
  int length() const { return static_cast<int>(tokens.size()); }
};

// Whether a KV cache gives the same numbers as recomputing the prefix under these interventions: the causal
// mask on, and no painted decoder mask that lets a query see a later key.
bool kv_cache_exact(const Interventions& interventions);
// The same for a model: never with config.attention ReshapeHeads, whose heads mix the rows of the whole sequence
// (every step reruns the prefix, as the note's own greedy decoding does).
bool kv_cache_exact(const Config& config, const Interventions& interventions);
// An empty cache for `config`'s decoder.
KvCache empty_kv_cache(const Config& config);
// Forgets every token from position `length` on (stepping back).
void truncate_kv_cache(KvCache& cache, int length);

// Empty for a model without cross-attention (decoder-only): its passes read none.
CrossKeysValues cross_keys_values(const Config& config, const ModelWeights& weights, const Trace& encoded);

// [SECTION] the encoder pass
// Encodes `sequences` sentences of trace.src.ids (each of equal length, stacked) with trace.interventions from
// layer first_layer on (-1: from the embeddings; a later layer: the trace already holds this pass up to it,
// as recompute() uses it), filling trace.src, encoder, encoder_norm, enc_out. With Record::Output the layers run
// in one scratch record and trace.encoder is emptied (a later first layer reads its input from it first).
void encoder_pass(const Config& config, const ModelWeights& weights, int sequences, int first_layer, Record record,
                  Dropout* dropout, Trace& trace);

// [SECTION] the decoder pass
struct DecoderPass {
  DecoderRows rows;
  // One cache per sequence, its rows continuing it (their keys and values are appended), or empty: every
  // sequence from position 0, no cache. A cache given with a Record::Trace pass is filled from it.
  std::vector<KvCache*> caches;
  // Rows whose logits are computed, rising. With Record::Output only these rows go through the last layer.
  std::vector<int> output_rows;
  Record record = Record::Output;
  // Record::Trace, Rows and Backward write the decoder half of this trace (tgt, decoder, decoder_norm,
  // dec_out, logits: rows outside output_rows left to compute; probs with Record::Trace when every row is
  // computed). first_layer > 0: the trace already holds this very pass up to that layer (recompute()).
  Trace* trace = nullptr;
  int first_layer = -1;
  Dropout* dropout = nullptr;  // training
  // Sequence s reads source sequence source_of[s] of the encoder pass (training: its own sentence); empty:
  // every sequence reads the one source.
  std::vector<int> source_of;
};

// Runs the decoder over pass.rows on the encoder half of `encoded` (its interventions apply; its decoder half
// is not read). `cross` gives the cross-attention keys and values (cross_keys_values); nullptr: computed here
// from encoded.enc_out (training, whose gradients flow into them). Returns the logits (output_rows.size(), Vt)
// with Record::Output; otherwise they are in pass.trace and an empty matrix is returned.
// Errors (ErrorKind::Input) before anything is written: those of plan_decoder_pass (transformer/decoder_plan.h:
// rows out of order, a cache that does not match its rows, ...), ids outside the vocabulary, positions past the
// model's, a cache or cross-attention keys of another model or encoder pass.
Mat decoder_pass(const Config& config, const ModelWeights& weights, const Trace& encoded,
                 const CrossKeysValues* cross, DecoderPass& pass);

// [SECTION] a traced pass assembled from recorded rows
// Decoding that checks guessed tokens a chunk at a time through a KV cache computes every row of the final
// translation once; recording those rows (Record::Rows) and putting them together spares the app's traced pass
// over the whole translation (GuidedRedecoder). What a traced pass computes row by row (embeddings, projections,
// norms, feed-forward, output layer) is copied from the chunks; what mixes rows (each attention's per-head q, k,
// v, scores, masks, probabilities and head outputs) is computed here over the whole sequence, under the masks of
// a pass over all of it. The same tensors as decoder_pass with Record::Trace over those tokens, to float rounding
// (the chunks' products ran over fewer rows).
struct RecordedRows {
  std::shared_ptr<const Trace> pass;  // the decoder half of a pass recorded with Record::Rows or Trace
  int first_position = 0;             // the position of its row 0 (a chunk's: the cache's length before it)
  int begin = 0, end = 0;             // its rows taken; their logits must be computed
};
// `pieces` follow each other from position 0 (rows begin..end of each). Returns the decoder half (tgt .. probs)
// of a traced pass over their tokens on the encoder pass `encoded`, whose cross-attention keys and values are
// `cross`. ErrorKind::Input when the pieces leave a gap; ErrorKind::Shape when one lacks a tensor.
Trace assemble_traced_pass(const Config& config, const Trace& encoded, const CrossKeysValues& cross,
                           const std::vector<RecordedRows>& pieces);

// Backward of a recorded training pass (Record::Backward on `sequences` sentences): from dL/dlogits (B*T, Vt;
// an encoder-only model's (B*S, Vs)), accumulates every weight's gradient into grads, BERT's parts (token types,
// the embedding norm, the masked-LM head: config.h) included. d_source_input / d_target_input, when given, receive
// dL/d(src.tok_embed) (B*S, C) and dL/d(tgt.tok_embed) (B*T, C): the gradient at the token embeddings as the
// model uses them, what gradient x input reads (explain/attribution.h).
void model_backward(const Config& config, const ModelWeights& weights, int sequences, const Trace& trace,
                    const Mat& d_logits, ModelWeights& grads, Mat* d_source_input = nullptr,
                    Mat* d_target_input = nullptr);

}  // namespace sf
