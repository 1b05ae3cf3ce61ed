#include "model/name_tables.h"

#include <type_traits>

#include "util/error.h"

namespace sf {

const std::vector<std::string>& known_families() {
  static const std::vector<std::string> families = {kFamilyStepformer, kFamilyPytorchTutorial, kFamilySeq2SeqTutorial};
  return families;
}

bool is_known_family(const std::string& family) {
  for (const auto& f : known_families())
    if (f == family) return true;
  return false;
}

int64_t TensorSpec::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_family_config(const std::string& family, const Config& c, const std::string& where) {
  if (!is_known_family(family))
    fail(ErrorKind::Format, where,
         "unknown family '" + family + "' (expected stepformer, pytorch-tutorial or seq2seq-tutorial)");
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) fail(ErrorKind::Config, where, "family '" + family + "' needs " + what);
  };
  if (family == kFamilyPytorchTutorial) {
    need(c.positional_encoding == PositionalEncoding::Sinusoidal, "positional_encoding \"sinusoidal\"");
    need(c.encoder_final_norm && c.decoder_final_norm,
         "encoder_final_norm and decoder_final_norm true (nn.Transformer has both final norms)");
    need(c.bias, "bias true (nn.Transformer's linear layers carry biases)");
    need(!c.share_embeddings && !c.tie_output_embedding,
         "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and generator)");
  } else if (family == kFamilySeq2SeqTutorial) {
    need(c.positional_encoding == PositionalEncoding::Learned, "positional_encoding \"learned\" (pos_embedding)");
    need(!c.encoder_final_norm && !c.decoder_final_norm, "encoder_final_norm and decoder_final_norm false");
    need(c.bias, "bias true (the tutorial's linear layers carry biases)");
    need(!c.share_embeddings && !c.tie_output_embedding,
         "share_embeddings and tie_output_embedding false (the tutorial has separate embeddings and fc_out)");
  }
}

// [SECTION] the tables

namespace {

// Walks a family's names over a ModelWeights (const or not), collecting slots. With check_shapes false (used on
// an unallocated ModelWeights) it records names and shapes only: the parts stay empty.
template <typename W>
class SlotBuilder {
 public:
  static constexpr bool kConst = std::is_const_v<W>;
  using T = std::conditional_t<kConst, const float, float>;
  using M = std::conditional_t<kConst, const Mat, Mat>;
  using R = std::conditional_t<kConst, const RowVec, RowVec>;
  using Linear = std::conditional_t<kConst, const LinearWeights, LinearWeights>;
  using Norm = std::conditional_t<kConst, const LayerNormWeights, LayerNormWeights>;
  using Attention = std::conditional_t<kConst, const AttentionWeights, AttentionWeights>;

  SlotBuilder(std::string where, bool check_shapes, bool bias) : where_(std::move(where)), check_(check_shapes), bias_(bias) {}

  std::vector<WeightSlotT<T>> slots;

  // Names inside a scope are relative to its prefix: { auto s = b.scope("encoder.layers.0."); b.linear("ffn.fc1", ...); }
  class Scope {
   public:
    Scope(std::string& prefix, const std::string& add) : prefix_(prefix), saved_(prefix.size()) { prefix_ += add; }
    ~Scope() { prefix_.resize(saved_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::string& prefix_;
    size_t saved_;
  };
  Scope scope(const std::string& add) { return Scope(prefix_, add); }

  void mat(const std::string& name, M& m, int64_t rows, int64_t cols) { stacked(name, {&m}, rows, cols); }

  // Matrices of (rows, cols) each, stacked along dimension 0 into one tensor of (parts * rows, cols).
  void stacked(const std::string& name, std::initializer_list<M*> parts, int64_t rows, int64_t cols) {
    WeightSlotT<T> slot{prefix_ + name, {static_cast<int64_t>(parts.size()) * rows, cols}, {}};
    for (M* m : parts) {
      if (!check_) continue;
      if (m->rows() != rows || m->cols() != cols)
        fail(ErrorKind::Shape, where_, "weight '" + slot.name + "': expected " + shape_string({rows, cols}) +
                                           ", found " + shape_string({m->rows(), m->cols()}));
      slot.parts.emplace_back(m->data(), static_cast<size_t>(m->size()));
    }
    slots.push_back(std::move(slot));
  }

  void vec(const std::string& name, R& v, int64_t n) { stacked_vec(name, {&v}, n); }

  void stacked_vec(const std::string& name, std::initializer_list<R*> parts, int64_t n) {
    WeightSlotT<T> slot{prefix_ + name, {static_cast<int64_t>(parts.size()) * n}, {}};
    for (R* v : parts) {
      if (!check_) continue;
      if (v->size() != n)
        fail(ErrorKind::Shape, where_, "weight '" + slot.name + "': expected " + shape_string({n}) + ", found " +
                                           shape_string({v->size()}));
      slot.parts.emplace_back(v->data(), static_cast<size_t>(v->size()));
    }
    slots.push_back(std::move(slot));
  }

  // nn.Linear: "<name>.weight" (out, in) and, when the config has biases, "<name>.bias" (out).
  void linear(const std::string& name, Linear& l, int64_t out, int64_t in) {
    mat(name + ".weight", l.weight, out, in);
    if (bias_) vec(name + ".bias", l.bias, out);
  }

  // nn.LayerNorm: gamma as "<name>.weight", beta as "<name>.bias" (C) each.
  void layer_norm(const std::string& name, Norm& n, int64_t width) {
    vec(name + ".weight", n.gamma, width);
    vec(name + ".bias", n.beta, width);
  }

  // Four separate projections: "<name>.<q>", ..., "<name>.<out>".
  void attention(const std::string& name, Attention& a, int64_t width, const char* q, const char* k, const char* v,
                 const char* out) {
    linear(name + "." + q, a.q, width, width);
    linear(name + "." + k, a.k, width, width);
    linear(name + "." + v, a.v, width, width);
    linear(name + "." + out, a.out, width, width);
  }

  // nn.MultiheadAttention: in_proj_weight (3C, C) = [W_q; W_k; W_v], in_proj_bias (3C), out_proj (C, C).
  void multihead_attention(const std::string& name, Attention& a, int64_t width) {
    stacked(name + ".in_proj_weight", {&a.q.weight, &a.k.weight, &a.v.weight}, width, width);
    if (bias_) stacked_vec(name + ".in_proj_bias", {&a.q.bias, &a.k.bias, &a.v.bias}, width);
    linear(name + ".out_proj", a.out, width, width);
  }

 private:
  std::string where_;
  bool check_;
  bool bias_;
  std::string prefix_;
};

template <typename W>
void stepformer_names(SlotBuilder<W>& b, const Config& c, W& w) {
  const int64_t C = c.d_model, F = c.d_ff;
  b.mat("src_embedding.weight", w.src_embedding, c.src_vocab_size, C);                 // (Vs, C)
  if (!c.share_embeddings) b.mat("tgt_embedding.weight", w.tgt_embedding, c.tgt_vocab_size, C);  // (Vt, C)
  if (c.positional_encoding == PositionalEncoding::Learned) {
    b.mat("src_positions.weight", w.src_positions, c.max_positions, C);                // (P, C)
    b.mat("tgt_positions.weight", w.tgt_positions, c.max_positions, C);
  }
  for (size_t i = 0; i < w.encoder_layers.size(); ++i) {
    auto s = b.scope("encoder.layers." + std::to_string(i) + ".");
    auto& l = w.encoder_layers[i];
    b.attention("self_attn", l.self_attn, C, "q", "k", "v", "out");
    b.layer_norm("self_attn_norm", l.self_attn_norm, C);
    b.linear("ffn.fc1", l.ffn.fc1, F, C);
    b.linear("ffn.fc2", l.ffn.fc2, C, F);
    b.layer_norm("ffn_norm", l.ffn_norm, C);
  }
  for (size_t i = 0; i < w.decoder_layers.size(); ++i) {
    auto s = b.scope("decoder.layers." + std::to_string(i) + ".");
    auto& l = w.decoder_layers[i];
    b.attention("self_attn", l.self_attn, C, "q", "k", "v", "out");
    b.layer_norm("self_attn_norm", l.self_attn_norm, C);
    b.attention("cross_attn", l.cross_attn, C, "q", "k", "v", "out");
    b.layer_norm("cross_attn_norm", l.cross_attn_norm, C);
    b.linear("ffn.fc1", l.ffn.fc1, F, C);
    b.linear("ffn.fc2", l.ffn.fc2, C, F);
    b.layer_norm("ffn_norm", l.ffn_norm, C);
  }
  if (c.encoder_final_norm) b.layer_norm("encoder.norm", w.encoder_norm, C);
  if (c.decoder_final_norm) b.layer_norm("decoder.norm", w.decoder_norm, C);
  if (!c.tie_output_embedding) b.mat("generator.weight", w.generator.weight, c.tgt_vocab_size, C);  // (Vt, C)
  if (c.bias) b.vec("generator.bias", w.generator.bias, c.tgt_vocab_size);
}

template <typename W>
void pytorch_tutorial_names(SlotBuilder<W>& b, const Config& c, W& w) {
  const int64_t C = c.d_model, F = c.d_ff;
  b.mat("src_tok_emb.embedding.weight", w.src_embedding, c.src_vocab_size, C);
  b.mat("tgt_tok_emb.embedding.weight", w.tgt_embedding, c.tgt_vocab_size, C);
  // nn.TransformerEncoderLayer: norm1 follows self-attention, norm2 the feed-forward (post- or pre-norm alike).
  for (size_t i = 0; i < w.encoder_layers.size(); ++i) {
    auto s = b.scope("transformer.encoder.layers." + std::to_string(i) + ".");
    auto& l = w.encoder_layers[i];
    b.multihead_attention("self_attn", l.self_attn, C);
    b.linear("linear1", l.ffn.fc1, F, C);
    b.linear("linear2", l.ffn.fc2, C, F);
    b.layer_norm("norm1", l.self_attn_norm, C);
    b.layer_norm("norm2", l.ffn_norm, C);
  }
  b.layer_norm("transformer.encoder.norm", w.encoder_norm, C);
  // nn.TransformerDecoderLayer: norm1 self-attention, norm2 cross-attention (multihead_attn), norm3 feed-forward.
  for (size_t i = 0; i < w.decoder_layers.size(); ++i) {
    auto s = b.scope("transformer.decoder.layers." + std::to_string(i) + ".");
    auto& l = w.decoder_layers[i];
    b.multihead_attention("self_attn", l.self_attn, C);
    b.multihead_attention("multihead_attn", l.cross_attn, C);
    b.linear("linear1", l.ffn.fc1, F, C);
    b.linear("linear2", l.ffn.fc2, C, F);
    b.layer_norm("norm1", l.self_attn_norm, C);
    b.layer_norm("norm2", l.cross_attn_norm, C);
    b.layer_norm("norm3", l.ffn_norm, C);
  }
  b.layer_norm("transformer.decoder.norm", w.decoder_norm, C);
  b.linear("generator", w.generator, c.tgt_vocab_size, C);
}

template <typename W>
void seq2seq_tutorial_names(SlotBuilder<W>& b, const Config& c, W& w) {
  const int64_t C = c.d_model, F = c.d_ff;
  b.mat("encoder.tok_embedding.weight", w.src_embedding, c.src_vocab_size, C);
  b.mat("encoder.pos_embedding.weight", w.src_positions, c.max_positions, C);
  for (size_t i = 0; i < w.encoder_layers.size(); ++i) {
    auto s = b.scope("encoder.layers." + std::to_string(i) + ".");
    auto& l = w.encoder_layers[i];
    b.attention("self_attention", l.self_attn, C, "fc_q", "fc_k", "fc_v", "fc_o");
    b.layer_norm("self_attn_layer_norm", l.self_attn_norm, C);
    b.linear("positionwise_feedforward.fc_1", l.ffn.fc1, F, C);
    b.linear("positionwise_feedforward.fc_2", l.ffn.fc2, C, F);
    b.layer_norm("ff_layer_norm", l.ffn_norm, C);
  }
  b.mat("decoder.tok_embedding.weight", w.tgt_embedding, c.tgt_vocab_size, C);
  b.mat("decoder.pos_embedding.weight", w.tgt_positions, c.max_positions, C);
  for (size_t i = 0; i < w.decoder_layers.size(); ++i) {
    auto s = b.scope("decoder.layers." + std::to_string(i) + ".");
    auto& l = w.decoder_layers[i];
    b.attention("self_attention", l.self_attn, C, "fc_q", "fc_k", "fc_v", "fc_o");
    b.layer_norm("self_attn_layer_norm", l.self_attn_norm, C);
    b.attention("encoder_attention", l.cross_attn, C, "fc_q", "fc_k", "fc_v", "fc_o");
    b.layer_norm("enc_attn_layer_norm", l.cross_attn_norm, C);
    b.linear("positionwise_feedforward.fc_1", l.ffn.fc1, F, C);
    b.linear("positionwise_feedforward.fc_2", l.ffn.fc2, C, F);
    b.layer_norm("ff_layer_norm", l.ffn_norm, C);
  }
  b.linear("decoder.fc_out", w.generator, c.tgt_vocab_size, C);
}

template <typename W>
auto build_slots(const std::string& family, const Config& config, W& weights, const std::string& where,
                 bool check_shapes) {
  check_family_config(family, config, where);
  SlotBuilder<W> b(where, check_shapes, config.bias);
  if (check_shapes) {
    // The layer lists must match the config before the tables walk them.
    if (weights.encoder_layers.size() != static_cast<size_t>(config.n_encoder_layers) ||
        weights.decoder_layers.size() != static_cast<size_t>(config.n_decoder_layers))
      fail(ErrorKind::Shape, where,
           "weights hold " + std::to_string(weights.encoder_layers.size()) + " encoder and " +
               std::to_string(weights.decoder_layers.size()) + " decoder layers, the config says " +
               std::to_string(config.n_encoder_layers) + " and " + std::to_string(config.n_decoder_layers));
  }
  if (family == kFamilyPytorchTutorial) pytorch_tutorial_names(b, config, weights);
  else if (family == kFamilySeq2SeqTutorial) seq2seq_tutorial_names(b, config, weights);
  else stepformer_names(b, config, weights);
  return std::move(b.slots);
}

}  // namespace

std::vector<TensorSpec> weight_layout(const std::string& family, const Config& config) {
  // Walk the table over empty weights with the right number of layers: names and shapes, no allocation.
  ModelWeights empty;
  empty.encoder_layers.resize(static_cast<size_t>(std::max(config.n_encoder_layers, 0)));
  empty.decoder_layers.resize(static_cast<size_t>(std::max(config.n_decoder_layers, 0)));
  std::vector<TensorSpec> specs;
  for (auto& slot : build_slots(family, config, empty, "weight_layout", false))
    specs.push_back({std::move(slot.name), std::move(slot.shape)});
  return specs;
}

std::vector<WeightSlot> weight_slots(const std::string& family, const Config& config, ModelWeights& weights,
                                     const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

std::vector<ConstWeightSlot> weight_slots(const std::string& family, const Config& config,
                                          const ModelWeights& weights, const std::string& where) {
  return build_slots(family, config, weights, where, true);
}

ModelWeights allocate_weights(const Config& c) {
  const int C = c.d_model, F = c.d_ff;
  const int bias_width = c.bias ? 1 : 0;
  auto linear = [&](int out, int in) {
    LinearWeights l;
    l.weight = Mat::Zero(out, in);
    l.bias = RowVec::Zero(out * bias_width);
    return l;
  };
  auto norm = [&] { return LayerNormWeights{RowVec::Ones(C), RowVec::Zero(C)}; };
  auto attention = [&] { return AttentionWeights{linear(C, C), linear(C, C), linear(C, C), linear(C, C)}; };
  ModelWeights w;
  w.src_embedding = Mat::Zero(c.src_vocab_size, C);
  w.tgt_embedding = Mat::Zero(c.tgt_vocab_size, C);
  if (c.positional_encoding == PositionalEncoding::Learned) {
    w.src_positions = Mat::Zero(c.max_positions, C);
    w.tgt_positions = Mat::Zero(c.max_positions, C);
  }
  for (int i = 0; i < c.n_encoder_layers; ++i)
    w.encoder_layers.push_back({attention(), norm(), {linear(F, C), linear(C, F)}, norm()});
  for (int i = 0; i < c.n_decoder_layers; ++i)
    w.decoder_layers.push_back({attention(), norm(), attention(), norm(), {linear(F, C), linear(C, F)}, norm()});
  if (c.encoder_final_norm) w.encoder_norm = norm();
  if (c.decoder_final_norm) w.decoder_norm = norm();
  w.generator = linear(c.tgt_vocab_size, C);
  return w;
}

void complete_shared_weights(const Config& config, ModelWeights& weights) {
  if (config.share_embeddings) weights.tgt_embedding = weights.src_embedding;
  if (config.tie_output_embedding) weights.generator.weight = weights.tgt_embedding;
}

}  // namespace sf
