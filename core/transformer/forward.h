// The encoder-decoder forward pass the app shows, filling a Trace (trace.h): the encoder pass and the decoder
// pass of passes.h on one sentence, with every input checked first.
//
//   src ids ─▶ embed + pos ─▶ encoder layers ─▶ [final norm] ─▶ enc.out ─┐ (keys/values of cross-attention)
//   tgt ids ─▶ embed + pos ─▶ decoder layers (self, cross, FFN) ─▶ [final norm] ─▶ logits ─▶ probs
//
// Masks (the -inf cells before the softmax):
//   encoder self-attention:  key j blocked when src[j] == pad_id              (padding mask)
//   decoder self-attention:  key j blocked when j > i (causal) or tgt[j] == pad_id (no padding mask when
//                            bos_id == pad_id: Marian's decoder starts with <pad>)
//   cross-attention:         key j blocked when src[j] == pad_id
// A custom mask (Interventions::custom_masks) replaces the computed mask of its head. A row with every key
// blocked gets zero probabilities (PyTorch gives NaN; see nn/attention.h).
//
// Errors (sf::Error, ErrorKind::Input): empty input, ids outside the vocabulary, a sequence longer than
// config.max_positions, a custom mask of the wrong size, an intervention naming a missing layer or head.
// Everything is checked before anything is written, so a failed call leaves the trace it was given unchanged.
#pragma once
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/interventions.h"
#include "transformer/trace.h"

namespace sf {

// The whole pass: encoder on src_ids, decoder on tgt_ids (the decoder input, bos first). The model's shape
// (config.stacks) decides which half runs: a decoder-only model takes no src_ids (empty) and runs decoder_pass
// without cross-attention; an encoder-only model takes no tgt_ids (empty) and its output head scores every source
// token (logits (S, V) from enc.out). ErrorKind::Input for ids given to a stack the model lacks.
Trace forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
              const std::vector<int>& tgt_ids, const Interventions& interventions = {});

// The same into an existing trace, reusing its buffers (no allocation when the lengths repeat): for the GUI's
// recomputation on every edit and for benchmarks.
void forward(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
             const std::vector<int>& tgt_ids, const Interventions& interventions, Trace& trace);

// The encoder half: fills trace.interventions, trace.src, trace.encoder, trace.enc_out; clears the decoder half.
void encode(const Config& config, const ModelWeights& weights, const std::vector<int>& src_ids,
            const Interventions& interventions, Trace& trace);

// The encoder half of `previous`, a trace of the same model and source, for a pass with `interventions` where
// they change nothing before the decoder (plan_recompute's encoder_from is past the last layer: a decoder or
// cross-attention head, the causal mask, a decoder-side painted mask): fills `trace` as encode() would, by
// copying. Returns false, trace untouched, where it does not apply (other source, encoder-side change);
// ErrorKind::Input for interventions the model cannot take, as encode().
bool reuse_encoder(const Config& config, const Trace& previous, const std::vector<int>& src_ids,
                   const Interventions& interventions, Trace& trace);

// What decode_pass computes of the output layer (dec_out (T, C) -> logits, probs (T, Vt): C * Vt multiply-adds a
// row, most of a row's cost for a large vocabulary): every row, or none yet, for a caller that checks guessed
// tokens row by row and stops at the first wrong one (GuidedRedecoder::verify): it reads rows with output_rows
// and completes the trace with complete_output only for a pass it keeps.
enum class OutputLayer { AllRows, Deferred };

// The decoder half on the encoder half already in `trace` (with trace.interventions): fills tgt .. probs
// (Deferred: tgt .. dec_out; logits is (T, Vt) with rows still to compute, probs empty).
void decode_pass(const Config& config, const ModelWeights& weights, const std::vector<int>& tgt_ids, Trace& trace,
                 OutputLayer output = OutputLayer::AllRows);
// Logits rows [begin, end) of a Deferred pass: trace.logits.middleRows(begin, end - begin) =
// dec_out rows W^T + b: the full output layer's numbers to the last bits or so (linear_forward may pick another
// kernel for fewer rows, summing in another order).
void output_rows(const ModelWeights& weights, int begin, int end, Trace& trace);
// Completes a Deferred pass: the logits rows not yet computed (all but [done_begin, done_end)) and probs.
void complete_output(const ModelWeights& weights, int done_begin, int done_end, Trace& trace);

// Recomputing only what an intervention affects. Stages are numbered: -1 the embeddings, 0..L-1 the layers,
// L nothing (this half is untouched). A change in the encoder reruns the decoder from layer 0 (every
// cross-attention reads enc.out).
struct RecomputePlan {
  int encoder_from = 0;
  int decoder_from = 0;
};
RecomputePlan plan_recompute(const Config& config, const Interventions& before, const Interventions& after);

// Brings `trace` (a complete pass) to what forward() would give with `interventions`, rerunning only the
// stages from plan_recompute() (the encoder and decoder passes from those layers). Returns the plan it followed.
RecomputePlan recompute(const Config& config, const ModelWeights& weights, const Interventions& interventions,
                        Trace& trace);

// Custom masks against the lengths of a pass (tgt_length < 0: the decoder's are not checked).
void check_custom_mask_sizes(const Interventions& interventions, int src_length, int tgt_length);

}  // namespace sf
