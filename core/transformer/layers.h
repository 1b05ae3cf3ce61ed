// The Transformer's layers, forward and backward side by side, over a batch of sequences stacked as rows:
// what the encoder and decoder passes (transformer/passes.h) call for inference and for training alike.
//
//   embedding:  x = drop(E[id] * scale + PE(position))                                  (N, C)
//               BERT's (source): x = drop(LN(E[id] + P[position] + T[0])) (config.h: token types, embedding norm)
//   encoder layer (post-norm, the paper):  h = LN(x + drop(SelfAttn(x)));  out = LN(h + drop(FFN(h)))
//   decoder layer (post-norm):             h1 = LN(x + drop(SelfAttn(x)));  h2 = LN(h1 + drop(CrossAttn(h1, enc)))
//                                          out = LN(h2 + drop(FFN(h2)))
//   pre-norm (norm_first):                 h = x + drop(Attn(LN(x)));  out = h + drop(FFN(LN(h)))  (and so on)
//   feed-forward:  FFN(x) = drop(act(x W1^T + b1)) W2^T + b2
//   output:        logits = x W_gen^T + b_gen                                             (N, Vt)
// The member names of the layer traces (trace.h) follow the post-/pre-norm tables there. Dropout (training)
// is PyTorch's placement: the embedding sum, the attention probabilities, the feed-forward hidden layer and
// each sublayer's output; with p = 0 (inference) the layers compute exactly the app's trace.
//
// The order of the operations inside a layer is transformer/layer_order.h's, shared with the CUDA backend; here
// it runs on the CPU's kernels. Attention inside a layer is a callback (AttentionFn): the pass decides where keys
// and values come from (the rows of the same sequence, a KV cache, the encoder) and which masks apply; the layer
// decides what it reads.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "transformer/trace.h"

namespace sf {

// What a pass keeps of what it computes.
enum class Record {
  Output,    // only what the next layer reads (decoding steps, checks of guessed tokens)
  Rows,      // every row's own numbers (embeddings, projections, norms, feed-forward), no attention maps and no
             // copy of the encoder's keys and values: a chunk of decoding that a traced pass is later assembled
             // from (assemble_traced_pass, transformer/passes.h)
  Backward,  // also what the backward reads (training): attention projections and probabilities, norms, keeps
  Trace      // everything the app shows: per-head q, k, v, scores, masks, head outputs (one sequence)
};

// [SECTION] dropout
struct DropoutSettings {
  float p = 0.0f;       // probability of dropping an element (0: off, e.g. for evaluation)
  uint64_t seed = 0;    // with `step`, fixes every mask: a run is reproducible whatever the thread count
  uint64_t step = 0;
};

// Counter-based masks (transformer/dropout_mask.h): element i of the k-th mask made in a pass at step s is kept iff
// hash(seed, s, k, i) >= p. The same masks whatever the number of threads, and no generator state to checkpoint.
class Dropout {
 public:
  explicit Dropout(const DropoutSettings& settings) : s_(settings) {}
  bool on() const { return s_.p > 0.0f; }
  // keep (rows, cols): 0 with probability p, else 1 / (1 - p) (inverted dropout: no rescaling at test time).
  // Leaves keep empty when dropout is off.
  void make(Mat& keep, Eigen::Index rows, Eigen::Index cols);

 private:
  DropoutSettings s_;
  uint64_t site_ = 0;
};

// [SECTION] embeddings
// The checks of embed_rows alone (ErrorKind::Input): not empty, ids inside the vocabulary, positions inside
// the model's (and the learned table's). check_token_ids makes those that need the config only (what a model
// whose weights live elsewhere, on a GPU, checks).
void check_token_ids(const Config& config, bool source, const std::vector<int>& ids, const std::vector<int>& positions);
void check_embedding_input(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                           const std::vector<int>& positions);
// Token embedding + position for `ids` at `positions` (one position per row), dropout on the sum; checks ids
// against the vocabulary and positions against the model (ErrorKind::Input, naming the "source" or "target").
void embed_rows(const Config& config, const ModelWeights& weights, bool source, const std::vector<int>& ids,
                const std::vector<int>& positions, bool positional_encoding, Dropout* dropout, EmbeddingTrace& t);
// dL/d(weights) of embed_rows from dL/d(t.sum): token table rows, learned positions (when the pass added them:
// positional_encoding) and BERT's parts (the embedding norm's gamma and beta, the token-type table's row 0).
// d_tok_embed, when given: dL/d(t.tok_embed) (N, C), the gradient at the token embeddings as the model uses them
// (what attribution reads: explain/attribution.h).
void embed_rows_backward(const Config& config, const ModelWeights& weights, bool source, const EmbeddingTrace& t,
                         const std::vector<int>& positions, bool positional_encoding, Mat d_sum, ModelWeights& grads,
                         Mat* d_tok_embed = nullptr);

// [SECTION] layers
// One attention sublayer: from its query input x_q (the rows asked for), fill t.attn_out (and what `record`
// asks). For self-attention the layer has already put the keys and values of all its rows in t.keys, t.values.
using AttentionFn = std::function<void(const ConstMatRef& x_q, AttentionTrace& t)>;

// x (N, C) -> (N, C) through one of an attention block's Q, K, V projections: x W^T + b (SplitHeads), or with
// ReshapeHeads each row's H pieces of D through the shared (D, D) map (x viewed as (N*H, D)).
void attention_projection(const Config& config, const ConstMatRef& x, const LinearWeights& w, Mat& out);
// ReshapeHeads' heads (config.h) in SplitHeads' columns, and back: x (T, C) read as (H, T, D) gives head h's row
// i = flat piece h*T + i, i.e. columns ((h*T + i) % H)*D .. +D of row (h*T + i) / H. reshape_heads_to_columns
// puts head h in columns h*D .. h*D+D-1, so one attend() serves both; columns_to_reshape_heads undoes it
// (the note's reshape of the heads' output back to (T, C)).
Mat reshape_heads_to_columns(const ConstMatRef& x, int n_heads);
Mat columns_to_reshape_heads(const ConstMatRef& x, int n_heads);

void encoder_layer_forward(const Config& config, const EncoderLayerWeights& w, const Mat& x,
                           const AttentionFn& self_attn, Dropout* dropout, EncoderLayerTrace& t);
// query_rows: the rows of x whose outputs are wanted (nullptr: all rows): every row gives its keys and values
// to self-attention, only these go on through the rest of the layer (the last layer of a decoding step needs
// one row; a pass that only fills a KV cache, none). t.out then has query_rows->size() rows.
void decoder_layer_forward(const Config& config, const DecoderLayerWeights& w, const Mat& x,
                           const std::vector<int>* query_rows, const AttentionFn& self_attn,
                           const AttentionFn& cross_attn, Dropout* dropout, DecoderLayerTrace& t);

// Backward of the layers (from a pass recorded with Record::Backward or Record::Trace). dx is written with
// dL/dx, grads accumulate. The attention backward is a callback as the forward was: from dL/d(attn_out) it
// accumulates the attention's weight gradients and returns dL/d(x_q) (and for cross-attention adds dL/d(enc)
// itself).
using AttentionBackwardFn =
    std::function<void(const ConstMatRef& x_q, const AttentionTrace& t, const Mat& d_attn_out, AttentionWeights& g,
                       Mat& d_x_q)>;
void encoder_layer_backward(const Config& config, const EncoderLayerWeights& w, const Mat& x,
                            const EncoderLayerTrace& t, const AttentionBackwardFn& self_attn, Mat d_out,
                            EncoderLayerWeights& grads, Mat& dx);
void decoder_layer_backward(const Config& config, const DecoderLayerWeights& w, const Mat& x,
                            const DecoderLayerTrace& t, const AttentionBackwardFn& self_attn,
                            const AttentionBackwardFn& cross_attn, Mat d_out, DecoderLayerWeights& grads, Mat& dx);

// [SECTION] final norm and output layer
// out = LN(x) when the config has the final norm (t filled), else x (t cleared).
void final_norm_forward(const Config& config, bool present, const LayerNormWeights& w, const Mat& x,
                        LayerNormTrace& t, Mat& out);
// x (N, C) -> logits (N, Vt) = x W_gen^T + b_gen.
void output_logits(const ModelWeights& weights, const ConstMatRef& x, Mat& logits);
// The model's output head over x (N, C): output_logits, or with output_head masked_lm (BERT's) its transform first,
// recorded in t: t.norm.out = LN(act(x W_d^T + b_d)) (N, C), logits = t.norm.out W_gen^T + b_gen (N, V). t is
// cleared for the linear head.
void output_head_forward(const Config& config, const ModelWeights& weights, const ConstMatRef& x, OutputHeadTrace& t,
                         Mat& logits);

// [SECTION] masks
// The mask of one attention block for queries at positions first_query .. first_query + tq - 1 over the keys
// key_ids (Tk), with the interventions of a pass over positions 0 .. first_query + tq - 1: the computed mask
// (padding of the keys; causal: key j > query position blocked), replaced for a head with a custom mask by its
// rows first_query.. (it must be (first_query + tq, Tk)). ErrorKind::Input for a custom mask of another size.
// ReshapeHeads (config.h) follows the note instead: padded queries (query_ids, needed then) block their rows,
// the decoder's self-attention has no padding mask, and a fully blocked row is uniform.
AttentionMask build_mask(const Config& config, const Interventions& iv, AttentionKind kind, int layer,
                         Eigen::Index first_query, Eigen::Index tq, const std::vector<int>& key_ids, bool causal,
                         const std::vector<int>* query_ids = nullptr);
// The head_on flags of one attention block.
std::vector<bool> heads_on(const Config& config, const Interventions& iv, AttentionKind kind, int layer);
// Scores scale of the model's attention: 1 / sqrt(D) (ReshapeHeads: 1 / sqrt(C)).
float attention_scale(const Config& config);

}  // namespace sf
