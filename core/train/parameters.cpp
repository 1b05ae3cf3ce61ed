#include "train/parameters.h"

#include <algorithm>

namespace sf {

namespace {

template <typename M>
void add(std::vector<ParameterView>& out, const std::string& name, M& m) {
  if (m.size() > 0) out.push_back({name, m.data(), m.size()});
}

void add_linear(std::vector<ParameterView>& out, const std::string& name, LinearWeights& l) {
  l.half.reset();  // the floats are about to change: the half copy would go stale
  l.half_of = nullptr;
  add(out, name + ".weight", l.weight);
  add(out, name + ".bias", l.bias);
}

void add_norm(std::vector<ParameterView>& out, const std::string& name, LayerNormWeights& n) {
  add(out, name + ".weight", n.gamma);
  add(out, name + ".bias", n.beta);
}

void add_attention(std::vector<ParameterView>& out, const std::string& name, AttentionWeights& a) {
  add_linear(out, name + ".q", a.q);
  add_linear(out, name + ".k", a.k);
  add_linear(out, name + ".v", a.v);
  add_linear(out, name + ".out", a.out);
}

void add_ffn(std::vector<ParameterView>& out, const std::string& name, FeedForwardWeights& f) {
  add_linear(out, name + ".fc1", f.fc1);
  add_linear(out, name + ".fc2", f.fc2);
}

}  // namespace

std::vector<ParameterView> parameter_views(ModelWeights& w) {
  std::vector<ParameterView> out;
  add(out, "src_embedding.weight", w.src_embedding);
  add(out, "tgt_embedding.weight", w.tgt_embedding);
  add(out, "src_positions.weight", w.src_positions);
  add(out, "tgt_positions.weight", w.tgt_positions);
  for (size_t l = 0; l < w.encoder_layers.size(); ++l) {
    const std::string p = "encoder.layers." + std::to_string(l);
    EncoderLayerWeights& layer = w.encoder_layers[l];
    add_attention(out, p + ".self_attn", layer.self_attn);
    add_norm(out, p + ".self_attn_norm", layer.self_attn_norm);
    add_ffn(out, p + ".ffn", layer.ffn);
    add_norm(out, p + ".ffn_norm", layer.ffn_norm);
  }
  for (size_t l = 0; l < w.decoder_layers.size(); ++l) {
    const std::string p = "decoder.layers." + std::to_string(l);
    DecoderLayerWeights& layer = w.decoder_layers[l];
    add_attention(out, p + ".self_attn", layer.self_attn);
    add_norm(out, p + ".self_attn_norm", layer.self_attn_norm);
    add_attention(out, p + ".cross_attn", layer.cross_attn);
    add_norm(out, p + ".cross_attn_norm", layer.cross_attn_norm);
    add_ffn(out, p + ".ffn", layer.ffn);
    add_norm(out, p + ".ffn_norm", layer.ffn_norm);
  }
  add_norm(out, "encoder.norm", w.encoder_norm);
  add_norm(out, "decoder.norm", w.decoder_norm);
  add_linear(out, "generator", w.generator);
  return out;
}

ModelWeights zeros_like(const ModelWeights& w) {
  ModelWeights z = w;
  for (ParameterView& p : parameter_views(z)) std::fill(p.data, p.data + p.size, 0.0f);
  return z;
}

}  // namespace sf
