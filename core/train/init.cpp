#include "train/init.h"

#include <cmath>
#include <random>

#include "model/name_tables.h"
#include "train/parameters.h"

namespace sf {

ModelWeights initialize_weights(const Config& config, uint64_t seed) {
  config.validate();
  ModelWeights w = allocate_weights(config);
  std::mt19937_64 rng(seed);
  auto xavier = [&](Mat& m) {
    if (m.size() == 0) return;
    const float a = std::sqrt(6.0f / static_cast<float>(m.rows() + m.cols()));
    std::uniform_real_distribution<float> u(-a, a);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  };
  auto norm = [](LayerNormWeights& n) {
    if (n.gamma.size()) n.gamma.setOnes();
    if (n.beta.size()) n.beta.setZero();
  };
  auto linear = [&](LinearWeights& l) {
    xavier(l.weight);
    if (l.bias.size()) l.bias.setZero();
  };
  auto attention = [&](AttentionWeights& a) {
    linear(a.q);
    linear(a.k);
    linear(a.v);
    linear(a.out);
  };
  xavier(w.src_embedding);
  xavier(w.tgt_embedding);
  xavier(w.src_positions);
  xavier(w.tgt_positions);
  for (auto& l : w.encoder_layers) {
    attention(l.self_attn);
    norm(l.self_attn_norm);
    linear(l.ffn.fc1);
    linear(l.ffn.fc2);
    norm(l.ffn_norm);
  }
  for (auto& l : w.decoder_layers) {
    attention(l.self_attn);
    norm(l.self_attn_norm);
    attention(l.cross_attn);
    norm(l.cross_attn_norm);
    linear(l.ffn.fc1);
    linear(l.ffn.fc2);
    norm(l.ffn_norm);
  }
  norm(w.encoder_norm);
  norm(w.decoder_norm);
  linear(w.generator);
  complete_shared_weights(config, w);
  return w;
}

void tie_gradients(const Config& config, ModelWeights& g) {
  if (config.tie_output_embedding) {
    g.tgt_embedding += g.generator.weight;
    g.generator.weight = g.tgt_embedding;
  }
  if (config.share_embeddings) {
    g.src_embedding += g.tgt_embedding;
    g.tgt_embedding = g.src_embedding;
    if (config.tie_output_embedding) g.generator.weight = g.src_embedding;
  }
}

}  // namespace sf
