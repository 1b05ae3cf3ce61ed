// The trace: every number one forward pass computes, by name. Filled by the encoder and decoder passes
// (passes.h, through forward.h), read by the GUI panels, the CLI dump, the PyTorch fixture tests and the
// backward of training, which records a batch of B sentences stacked as rows (B*S, B*T) in the same structure.
//
// Shapes: S source length, T decoder input length, C d_model, H heads, D = C / H, F d_ff, Vt target vocabulary.
// Per-head tensors are H matrices; trace_tensors() flattens them to (H, rows, cols).
//
// Norm placement (config.norm_placement) decides the order inside a layer; the member names are the same:
//   post (the paper):  residual1 = x + Attn(x);          norm1 = LN(residual1);   residual2 = norm1 + FFN(norm1);
//                      norm2 = LN(residual2);            out = norm2
//   pre  (norm_first): norm1 = LN(x);  residual1 = x + Attn(norm1);  norm2 = LN(residual1);
//                      residual2 = residual1 + FFN(norm2);  out = residual2
// The decoder has three blocks (self-attention, cross-attention, feed-forward) and so residual1..3, norm1..3.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/layer_norm.h"
#include "transformer/interventions.h"
#include "util/tensor.h"

namespace sf {

struct EmbeddingTrace {
  std::vector<int> ids;  // (N) token ids as given (pad ids included)
  // (N) an input, read by the pass (integrated gradients' path: explain/attribution.h): row i's token embedding
  // scaled by it, tok_embed = token_scale[i] * E[id] * scale; empty: 1 for every row
  std::vector<float> token_scale;
  Mat tok_embed;         // (N, C) E[id] * scale
  Mat pos;               // (N, C) positional encoding (zeros when switched off)
  // BERT's parts (config.h), the source side only; empty where the model has none:
  Mat type_embed;             // (N, C) the token-type embedding of each token: row 0 of the table (one text)
  Mat embed_sum;              // (N, C) tok_embed + pos + type_embed, before the embedding norm (embedding_norm)
  LayerNormTrace embed_norm;  // (N, C) LN(embed_sum), mean/std (N) (embedding_norm)
  Mat sum;               // (N, C) drop(tok_embed + pos [+ type_embed]), or drop(LN(embed_sum)) with the embedding
                         // norm: the stack's input
  Mat keep;              // (N, C) dropout scale (training), or empty
};

// BERT's masked-LM head's transform (config.output_head masked_lm), before the generator:
//   dense = h W_d^T + b_d (N, C);  act = act(dense) (N, C);  norm = LN(act) (N, C): what the generator scores
struct OutputHeadTrace {
  Mat dense;           // (N, C)
  Mat act;             // (N, C)
  LayerNormTrace norm; // (N, C), mean/std (N)
};

struct EncoderLayerTrace {
  AttentionTrace self_attn;  // Tq = Tk = S
  Mat residual1;             // (S, C)
  LayerNormTrace norm1;      // (S, C), mean/std (S)
  FeedForwardTrace ffn;      // hidden (S, F), out (S, C)
  Mat residual2;             // (S, C)
  LayerNormTrace norm2;      // (S, C)
  Mat out;                   // (S, C) the layer's output
  Mat self_attn_keep, ffn_keep;  // (S, C) dropout scales of the sublayer outputs (training), or empty
};

struct DecoderLayerTrace {
  AttentionTrace self_attn;   // Tq = Tk = T, causal
  Mat residual1;              // (T, C)
  LayerNormTrace norm1;       // (T, C)
  AttentionTrace cross_attn;  // Tq = T, Tk = S: queries from the decoder, keys/values from enc.out
  Mat residual2;              // (T, C)
  LayerNormTrace norm2;       // (T, C)
  FeedForwardTrace ffn;       // hidden (T, F), out (T, C)
  Mat residual3;              // (T, C)
  LayerNormTrace norm3;       // (T, C)
  Mat out;                    // (T, C)
  Mat self_attn_keep, cross_attn_keep, ffn_keep;  // (T, C) dropout scales (training), or empty
};

struct Trace {
  int sequences = 1;                        // B: sentences stacked as rows (training); 1 for the app's pass
  Interventions interventions;              // what this pass ran with
  EmbeddingTrace src;                       // S rows
  std::vector<EncoderLayerTrace> encoder;   // one per encoder layer
  LayerNormTrace encoder_norm;              // the final encoder norm; empty when the config has none
  Mat enc_out;                              // (S, C) after the final norm if any
  EmbeddingTrace tgt;                       // T rows (the decoder input: bos + target tokens)
  std::vector<DecoderLayerTrace> decoder;   // one per decoder layer
  LayerNormTrace decoder_norm;              // empty when the config has none
  Mat dec_out;                              // (T, C)
  OutputHeadTrace head;                     // output_head masked_lm: the transform over enc_out; else empty
  Mat logits;                               // (T, Vt) dec_out W_gen^T + b; encoder-only: (S, Vs) from enc_out
                                            // (masked_lm: from head.norm.out)
  Mat probs;                                // (T, Vt) softmax(logits): row t predicts token t+1 (encoder-only:
                                            // row s scores the token at position s)

  // Which halves hold a pass (an encoder-only model's trace has no decoder half, a decoder-only model's no
  // encoder half; the output head's logits follow the last stack either way).
  bool has_encoder() const { return enc_out.size() > 0; }
  bool has_decoder() const { return !tgt.ids.empty() && logits.size() > 0; }
  bool has_output() const { return logits.size() > 0; }
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// [SECTION] the one walk of a trace
// for_each_trace_tensor visits every tensor a trace holds, in the order of the pass, under its documented name
// (docs/trace.md, whose list of names a test compares with this walk), with the stage of the pass it belongs to.
// trace_tensors(), the CLI's trace file and the tests' comparisons with PyTorch read the trace through it.
enum class TraceStage {
  SourceEmbedding,  // src.*, enc.in
  EncoderLayer,     // enc.l.*
  EncoderOutput,    // enc.final_norm_*, enc.out
  TargetEmbedding,  // tgt.*, dec.in
  DecoderLayer,     // dec.l.*
  DecoderOutput,    // dec.final_norm_*, dec.out
  Output,           // head.* (masked_lm), logits, probs: the output head over the last stack
};
const char* to_string(TraceStage stage);  // "source embedding", "encoder layer", ...

struct TraceTensorRef {
  std::string name;    // "enc.0.self_attn.probs"
  TraceStage stage = TraceStage::Output;
  int layer = -1;      // EncoderLayer, DecoderLayer
  // Exactly one of these: a matrix (rows, cols), a vector (n), per-head matrices (H, rows, cols), or the per-head
  // masks of an attention record (made when read: AttentionTrace::mask_matrix).
  const Mat* mat = nullptr;
  const Vec* vec = nullptr;
  const std::vector<Mat>* heads = nullptr;
  const AttentionTrace* masks_of = nullptr;
  std::vector<int64_t> shape() const;
  Tensor tensor() const;  // a copy
};
// Calls f for every tensor the trace holds (an empty one is skipped: a stack the model lacks, a norm it has not).
void for_each_trace_tensor(const Trace& trace, const std::function<void(const TraceTensorRef&)>& f);

// The whole trace of an encoder pass and a decoder pass run apart (a decoder's passes reuse one encoder pass):
// encoder_half's encoder (src .. enc_out) with decoder_half's decoder (tgt .. probs) and interventions.
Trace join_halves(const Trace& encoder_half, Trace decoder_half);

// Every traced tensor under its documented name (docs/trace.md), e.g. "enc.0.self_attn.probs" (H, S, S).
std::vector<NamedTensor> trace_tensors(const Trace& trace);

}  // namespace sf
