// Model weights: immutable after loading, shared read-only by every forward pass (run state such as traces,
// KV caches and interventions lives elsewhere). Linear layers keep PyTorch's (out, in) layout, so
//   y = x W^T + b      x (N, in), W (out, in), b (out)
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "util/tensor.h"

namespace sf {

struct LinearWeights {
  Mat weight;   // (out, in)
  RowVec bias;  // (1, out); size 0 when the config has no biases
  // The same weight in IEEE half precision, where every value is exactly a half (a model stored as F16, as the
  // shipped ones are): linear_forward reads these, half the bytes from memory for the same products. Made by
  // attach_half_weights (load_model) and valid only for the matrix it was made from (half_of ==
  // weight.data()): a copied or resized weight computes from its floats, and training drops it
  // (parameter_views).
  std::shared_ptr<const std::vector<uint16_t>> half;
  const float* half_of = nullptr;
};

// Whether `w` holds a half copy made from the very matrix it holds now.
bool has_half_weights(const LinearWeights& w);

struct LayerNormWeights {
  RowVec gamma;  // (1, C)
  RowVec beta;   // (1, C)
};

// Multi-head attention: Q, K, V projections to C = H * D (head h owns columns h*D .. h*D+D-1), and the
// output projection W_o applied to the concatenated heads.
struct AttentionWeights {
  LinearWeights q, k, v;  // (C, C) each
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
  Mat src_embedding;  // (Vs, C)
  Mat tgt_embedding;  // (Vt, C); equal to src_embedding when the config shares embeddings
  Mat src_positions;  // (P, C) learned positions; empty for sinusoidal encoding
  Mat tgt_positions;  // (P, C) learned positions; empty for sinusoidal encoding
  std::vector<EncoderLayerWeights> encoder_layers;
  std::vector<DecoderLayerWeights> decoder_layers;
  LayerNormWeights encoder_norm;  // present when config.encoder_final_norm
  LayerNormWeights decoder_norm;  // present when config.decoder_final_norm
  LinearWeights generator;        // (Vt, C) output projection to logits; weight equals tgt_embedding when tied
};

// Gives every linear layer whose weight is exactly representable in half precision its half copy
// (LinearWeights::half); returns how many got one. Results do not change: each half converts back to the very
// float it came from, and the kernel sums the products in the same order (nn/small_gemm.h).
int attach_half_weights(ModelWeights& weights);

}  // namespace sf
