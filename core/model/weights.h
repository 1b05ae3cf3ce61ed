// Model weights: immutable after loading, shared read-only by every forward pass (run state such as traces,
// KV caches and interventions lives elsewhere). Linear layers keep PyTorch's (out, in) layout, so
//   y = x W^T + b      x (N, in), W (out, in), b (out)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "model/config.h"
#include "util/tensor.h"

namespace sf {

struct PackedWeights;  // nn/small_gemm.h

struct LinearWeights {
  Mat weight;   // (out, in)
  RowVec bias;  // (1, out); size 0 when the config has no biases
  // The same weight laid out for the few-row kernel (nn/small_gemm.h: panels of 64 outputs, k-major), as IEEE
  // halves where every value is exactly a half (a model stored as F16, as the shipped ones are: half the bytes),
  // else as floats (one more copy of the weight). linear_forward reads it for any number of rows. Made by
  // attach_packed_weights (load_model) and valid only for the matrix it was made from (packed_of ==
  // weight.data()): a copied or resized weight is packed again on every call, with the same result, and
  // training drops it (parameter_views).
  std::shared_ptr<const PackedWeights> packed;
  const float* packed_of = nullptr;
};

// Whether `w` holds a packed copy made from the very matrix it holds now; and whether that copy is halves.
bool has_packed_weights(const LinearWeights& w);
bool has_half_weights(const LinearWeights& w);
// Drops the packed copy (the floats are about to change under it).
void drop_packed_weights(LinearWeights& w);

struct LayerNormWeights {
  RowVec gamma;  // (1, C)
  RowVec beta;   // (1, C)
};

// Multi-head attention: Q, K, V projections to C = H * D (head h owns columns h*D .. h*D+D-1), and the
// output projection W_o applied to the concatenated heads. With config.attention ReshapeHeads, q, k and v are
// one (D, D) map each, without bias, applied to every D-wide piece of a row (config.h).
struct AttentionWeights {
  LinearWeights q, k, v;  // (C, C) each; (D, D) for ReshapeHeads
  LinearWeights out;      // (C, C)
};

struct FeedForwardWeights {
  LinearWeights fc1;  // (F, C)
  LinearWeights fc2;  // (C, F)
};

struct EncoderLayerWeights {
  AttentionWeights self_attn;
  LayerNormWeights self_attn_norm;
  FeedForwardWeights ffn;
  LayerNormWeights ffn_norm;
};

struct DecoderLayerWeights {
  AttentionWeights self_attn;  // masked (causal) self-attention
  LayerNormWeights self_attn_norm;
  AttentionWeights cross_attn; // queries from the decoder, keys and values from the encoder output
  LayerNormWeights cross_attn_norm;
  FeedForwardWeights ffn;
  LayerNormWeights ffn_norm;
};

struct ModelWeights {
  // A stack the config's shape lacks (config.stacks) has its members empty: a decoder-only model no src_*,
  // encoder layers, encoder norm or cross-attention; an encoder-only model no tgt_*, decoder layers or decoder norm.
  Mat src_embedding;  // (Vs, C)
  Mat tgt_embedding;  // (Vt, C); equal to src_embedding when the config shares embeddings
  Mat src_positions;  // (P, C) learned positions; empty for sinusoidal encoding
  Mat tgt_positions;  // (P, C) learned positions; empty for sinusoidal encoding
  std::vector<EncoderLayerWeights> encoder_layers;
  std::vector<DecoderLayerWeights> decoder_layers;
  LayerNormWeights encoder_norm;  // present when config.encoder_final_norm
  LayerNormWeights decoder_norm;  // present when config.decoder_final_norm
  LinearWeights generator;        // (V, C) output head to logits, V = config.output_vocab_size(); its weight equals
                                  // the last stack's input embedding when tied
  // BERT's parts (config.h), present only where the config has them:
  Mat src_token_types;              // (type_vocab_size, C) token-type embeddings (config.type_vocab_size > 0)
  LayerNormWeights embedding_norm;  // (C) the norm over the source embedding sum (config.embedding_norm)
  LinearWeights head_transform;     // (C, C) output_head masked_lm: the dense layer before the generator
  LayerNormWeights head_norm;       // (C) output_head masked_lm: the norm after its activation
};

// [SECTION] the one walk of the weights
// for_each_weight visits every weight of a ModelWeights in one fixed order, with where it sits and the shape the
// config gives it. Every walk of the weights is a call of it: the name tables of the checkpoint families
// (model/name_tables.h), allocation, the trainer's parameter views, the packed copies and initialisation.
enum class WeightBlock {
  SrcEmbedding, TgtEmbedding, SrcPositions, TgtPositions, EncoderLayer, DecoderLayer, EncoderNorm, DecoderNorm,
  Generator,
  SrcTokenTypes, EmbeddingNorm, HeadTransform, HeadNorm  // BERT's parts (config.h: encoder_only models)
};
enum class LayerPart { None, SelfAttn, SelfAttnNorm, CrossAttn, CrossAttnNorm, Fc1, Fc2, FfnNorm };
enum class Projection { None, Q, K, V, Out };  // which projection of an attention block
enum class WeightParam { Weight, Bias };       // a LayerNorm's gamma is its Weight, beta its Bias (PyTorch's names)

template <typename W>  // ModelWeights or const ModelWeights
struct WeightRefT {
  static constexpr bool kConst = std::is_const_v<W>;
  using M = std::conditional_t<kConst, const Mat, Mat>;
  using R = std::conditional_t<kConst, const RowVec, RowVec>;
  using L = std::conditional_t<kConst, const LinearWeights, LinearWeights>;

  WeightBlock block = WeightBlock::SrcEmbedding;
  int layer = -1;                               // EncoderLayer, DecoderLayer
  LayerPart part = LayerPart::None;             // within a layer
  Projection projection = Projection::None;     // within an attention block
  WeightParam param = WeightParam::Weight;
  std::string name;                             // our name ("stepformer" family), "decoder.layers.1.cross_attn.q.weight"
  int64_t rows = 0, cols = 0;                   // the shape the config gives (without one: the member's); cols 0: a vector
  bool stored = true;                           // false: the config shares or ties it (complete_shared_weights copies it)
  M* matrix = nullptr;                          // exactly one of matrix, vector
  R* vector = nullptr;
  L* linear = nullptr;                          // the linear layer it is the weight or bias of
  bool is_matrix() const { return matrix != nullptr; }
  auto* data() const { return matrix ? matrix->data() : vector->data(); }
  Eigen::Index size() const { return matrix ? matrix->size() : vector->size(); }
};

using WeightRef = WeightRefT<ModelWeights>;
using ConstWeightRef = WeightRefT<const ModelWeights>;

// Gives every linear layer its packed copy (LinearWeights::packed), as halves where the weight is exactly
// representable in half precision (and `halves` allows); returns how many are halves. Results do not change:
// each half converts back to the very float it came from, and a weight without a copy is packed the same way
// for each call.
int attach_packed_weights(ModelWeights& weights, bool halves = true);

// Calls f(ref) for every weight, in this order (our file order):
//   src_embedding, tgt_embedding, src_positions, tgt_positions, src_token_types, embedding_norm,
//   encoder.layers.N.{self_attn.{q,k,v,out}, self_attn_norm, ffn.{fc1,fc2}, ffn_norm},
//   decoder.layers.N.{self_attn.{q,k,v,out}, self_attn_norm, cross_attn.{q,k,v,out}, cross_attn_norm, ffn.{fc1,fc2},
//   ffn_norm}, encoder.norm, decoder.norm, head_transform, head_norm, generator   (each linear: weight, then bias)
// With a config: what it has (the stacks of its shape, cross-attention only with an encoder and a decoder, biases
// with config.bias, the generator's with output_bias, positions when learned, final norms when present), shapes
// from it (the generator's rows: output_vocab_size), `stored` false for a shared target embedding and a tied
// generator weight. Without one (nullptr):
// every member that is not empty, with its own shape. The layer lists must hold the layers to visit.
template <typename W, typename F>
void for_each_weight(const Config* config, W& weights, F&& f) {
  using Ref = WeightRefT<W>;
  const Config* c = config;
  const int64_t C = c ? c->d_model : 0, FF = c ? c->d_ff : 0;
  // One matrix or vector: skipped where the config (or, without one, the member's emptiness) says it is absent.
  auto visit = [&](Ref r, auto& member, int64_t rows, int64_t cols, bool present) {
    if (c ? !present : member.size() == 0) return;
    if constexpr (std::is_same_v<std::remove_cv_t<std::remove_reference_t<decltype(member)>>, Mat>) {
      r.matrix = &member;
      r.rows = c ? rows : member.rows();
      r.cols = c ? cols : member.cols();
    } else {
      r.vector = &member;
      r.rows = c ? rows : member.size();
      r.cols = 0;
    }
    f(static_cast<const Ref&>(r));
  };
  auto linear = [&](Ref r, const std::string& name, auto& l, int64_t out, int64_t in, bool stored_weight = true,
                    bool has_bias = true, bool present = true) {
    r.linear = &l;
    r.name = name + ".weight";
    r.param = WeightParam::Weight;
    r.stored = !c || stored_weight;
    visit(r, l.weight, out, in, present);
    r.name = name + ".bias";
    r.param = WeightParam::Bias;
    r.stored = true;
    visit(r, l.bias, out, 0, !c || (present && c->bias && has_bias));
  };
  auto norm = [&](Ref r, const std::string& name, auto& n, bool present) {
    r.name = name + ".weight";
    r.param = WeightParam::Weight;
    visit(r, n.gamma, C, 0, present);
    r.name = name + ".bias";
    r.param = WeightParam::Bias;
    visit(r, n.beta, C, 0, present);
  };
  auto attention = [&](Ref r, const std::string& name, auto& a, bool present = true) {
    const std::pair<Projection, const char*> projections[] = {
        {Projection::Q, "q"}, {Projection::K, "k"}, {Projection::V, "v"}, {Projection::Out, "out"}};
    // ReshapeHeads: Q, K, V are one (D, D) map without bias that every head shares (config.h)
    const bool reshape = c && c->attention == AttentionStyle::ReshapeHeads;
    const int64_t D = c ? c->head_dim() : 0;
    for (const auto& [projection, suffix] : projections) {
      r.projection = projection;
      auto& l = projection == Projection::Q ? a.q : projection == Projection::K ? a.k : projection == Projection::V ? a.v : a.out;
      const bool shared = reshape && projection != Projection::Out;
      linear(r, name + "." + suffix, l, shared ? D : C, shared ? D : C, true, !shared, present);
    }
  };
  auto part = [](Ref r, LayerPart p) {
    r.part = p;
    return r;
  };
  const bool learned = c && c->positional_encoding == PositionalEncoding::Learned;
  // The model's shape (config.stacks): a stack it lacks has no embedding, positions or layers; a decoder without
  // an encoder has no cross-attention.
  const bool encoder = c && c->has_encoder(), decoder = c && c->has_decoder();
  const bool cross = c && c->has_cross_attention();
  Ref r;
  r.block = WeightBlock::SrcEmbedding;
  r.name = "src_embedding.weight";
  visit(r, weights.src_embedding, c ? c->src_vocab_size : 0, C, encoder);
  r.block = WeightBlock::TgtEmbedding;
  r.name = "tgt_embedding.weight";
  r.stored = !c || !c->share_embeddings;
  visit(r, weights.tgt_embedding, c ? c->tgt_vocab_size : 0, C, decoder);
  r.stored = true;
  r.block = WeightBlock::SrcPositions;
  r.name = "src_positions.weight";
  visit(r, weights.src_positions, c ? c->max_positions : 0, C, learned && encoder);
  r.block = WeightBlock::TgtPositions;
  r.name = "tgt_positions.weight";
  visit(r, weights.tgt_positions, c ? c->max_positions : 0, C, learned && decoder);
  r.block = WeightBlock::SrcTokenTypes;
  r.name = "src_token_types.weight";
  visit(r, weights.src_token_types, c ? c->type_vocab_size : 0, C, encoder && c->type_vocab_size > 0);
  Ref e;
  e.block = WeightBlock::EmbeddingNorm;
  norm(e, "embedding_norm", weights.embedding_norm, encoder && c->embedding_norm);
  for (size_t i = 0; i < weights.encoder_layers.size(); ++i) {
    Ref l;
    l.block = WeightBlock::EncoderLayer;
    l.layer = static_cast<int>(i);
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    auto& w = weights.encoder_layers[i];
    attention(part(l, LayerPart::SelfAttn), p + "self_attn", w.self_attn);
    norm(part(l, LayerPart::SelfAttnNorm), p + "self_attn_norm", w.self_attn_norm, true);
    linear(part(l, LayerPart::Fc1), p + "ffn.fc1", w.ffn.fc1, FF, C);
    linear(part(l, LayerPart::Fc2), p + "ffn.fc2", w.ffn.fc2, C, FF);
    norm(part(l, LayerPart::FfnNorm), p + "ffn_norm", w.ffn_norm, true);
  }
  for (size_t i = 0; i < weights.decoder_layers.size(); ++i) {
    Ref l;
    l.block = WeightBlock::DecoderLayer;
    l.layer = static_cast<int>(i);
    const std::string p = "decoder.layers." + std::to_string(i) + ".";
    auto& w = weights.decoder_layers[i];
    attention(part(l, LayerPart::SelfAttn), p + "self_attn", w.self_attn);
    norm(part(l, LayerPart::SelfAttnNorm), p + "self_attn_norm", w.self_attn_norm, true);
    attention(part(l, LayerPart::CrossAttn), p + "cross_attn", w.cross_attn, cross);
    norm(part(l, LayerPart::CrossAttnNorm), p + "cross_attn_norm", w.cross_attn_norm, cross);
    linear(part(l, LayerPart::Fc1), p + "ffn.fc1", w.ffn.fc1, FF, C);
    linear(part(l, LayerPart::Fc2), p + "ffn.fc2", w.ffn.fc2, C, FF);
    norm(part(l, LayerPart::FfnNorm), p + "ffn_norm", w.ffn_norm, true);
  }
  Ref n;
  n.block = WeightBlock::EncoderNorm;
  norm(n, "encoder.norm", weights.encoder_norm, c && c->encoder_final_norm);
  n.block = WeightBlock::DecoderNorm;
  norm(n, "decoder.norm", weights.decoder_norm, c && c->decoder_final_norm);
  const bool masked_lm = c && c->output_head == OutputHead::MaskedLM;
  Ref h;
  h.block = WeightBlock::HeadTransform;
  linear(h, "head_transform", weights.head_transform, C, C, true, true, masked_lm);
  h.block = WeightBlock::HeadNorm;
  norm(h, "head_norm", weights.head_norm, masked_lm);
  Ref g;
  g.block = WeightBlock::Generator;
  linear(g, "generator", weights.generator, c ? c->output_vocab_size() : 0, C, !c || !c->tie_output_embedding,
         !c || c->output_bias);
}

}  // namespace sf
