// Finite-difference checks of the training pass's gradients: every layer (linear, layer norm, activations,
// the loss) on its own, and the whole model in each configuration the config can describe, dropout included
// (its masks are fixed by seed and step, so the loss is a smooth function of the weights).
//   dL/dw ~ (L(w + h) - L(w - h)) / 2h
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "model/name_tables.h"
#include "nn/backward.h"
#include "nn/feed_forward.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "train/batched_model.h"
#include "train/init.h"
#include "train/loss.h"
#include "train/parameters.h"
#include "transformer/passes.h"

namespace sf {
namespace {

Mat random_mat(Eigen::Index rows, Eigen::Index cols, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> n(0.0f, scale);
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
  return m;
}

// Checks analytic gradient `grad` of scalar f at `x` (modified in place and restored) on every element.
void expect_gradient(const std::function<double()>& f, float* x, const float* grad, Eigen::Index n,
                     const std::string& what, double h = 1e-2, double tolerance = 2e-3) {
  for (Eigen::Index i = 0; i < n; ++i) {
    const float saved = x[i];
    x[i] = static_cast<float>(saved + h);
    const double up = f();
    x[i] = static_cast<float>(saved - h);
    const double down = f();
    x[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, tolerance + 2e-2 * std::abs(numeric)) << what << " element " << i;
  }
}

TEST(LayerGradients, Linear) {
  std::mt19937 rng(1);
  LinearWeights w{random_mat(4, 5, rng), random_mat(1, 4, rng), {}, nullptr};
  Mat x = random_mat(3, 5, rng), r = random_mat(3, 4, rng);  // L = sum(y * r)
  auto loss = [&] {
    Mat y;
    linear_forward(x, w, y);
    return static_cast<double>((y.array() * r.array()).sum());
  };
  LinearWeights g{Mat::Zero(4, 5), RowVec::Zero(4), {}, nullptr};
  Mat dx;
  linear_backward(x, w, r, g, &dx);
  expect_gradient(loss, w.weight.data(), g.weight.data(), w.weight.size(), "W");
  expect_gradient(loss, w.bias.data(), g.bias.data(), w.bias.size(), "b");
  expect_gradient(loss, x.data(), dx.data(), x.size(), "x");
}

TEST(LayerGradients, LayerNorm) {
  std::mt19937 rng(2);
  LayerNormWeights w{random_mat(1, 6, rng), random_mat(1, 6, rng)};
  Mat x = random_mat(4, 6, rng, 2.0f), r = random_mat(4, 6, rng);
  auto loss = [&] {
    LayerNormTrace t;
    layer_norm_forward(x, w, 1e-5f, t);
    return static_cast<double>((t.out.array() * r.array()).sum());
  };
  LayerNormTrace t;
  layer_norm_forward(x, w, 1e-5f, t);
  LayerNormWeights g{RowVec::Zero(6), RowVec::Zero(6)};
  Mat dx;
  layer_norm_backward(x, t, w, r, g, dx);
  expect_gradient(loss, w.gamma.data(), g.gamma.data(), 6, "gamma");
  expect_gradient(loss, w.beta.data(), g.beta.data(), 6, "beta");
  expect_gradient(loss, x.data(), dx.data(), x.size(), "x", 1e-3);
}

TEST(LayerGradients, Activations) {
  std::mt19937 rng(3);
  for (Activation act : {Activation::ReLU, Activation::GELU, Activation::SiLU, Activation::GELUTanh}) {
    Mat x = random_mat(5, 7, rng), r = random_mat(5, 7, rng);
    auto loss = [&] {
      Mat y = x;
      apply_activation(act, y);
      return static_cast<double>((y.array() * r.array()).sum());
    };
    Mat d = r;
    activation_backward(act, x, d);
    expect_gradient(loss, x.data(), d.data(), x.size(), to_string(act), 1e-3);
  }
}

TEST(LayerGradients, LabelSmoothedCrossEntropy) {
  std::mt19937 rng(4);
  Mat z = random_mat(5, 9, rng, 2.0f);
  const std::vector<int> targets = {3, 1, 8, 0, 1};  // pad = 1 twice: ignored
  Mat dz;
  const LossResult r = label_smoothed_cross_entropy(z, targets, 1, 0.1f, &dz);
  EXPECT_EQ(r.tokens, 3);
  auto loss = [&] { return label_smoothed_cross_entropy(z, targets, 1, 0.1f, nullptr).loss; };
  expect_gradient(loss, z.data(), dz.data(), z.size(), "logits", 1e-3);
  EXPECT_TRUE(dz.row(1).isZero());
  // PyTorch's definition, in double here: the target distribution q = (1 - eps) onehot(y) + eps / V, loss =
  // mean over non-pad rows of -sum_v q_v log p_v, and dL/dz = (p - q) / tokens. The finite differences above
  // cannot tell eps / V from eps / (V - 1) (a 5e-4 difference); these can.
  const double eps = 0.1, V = 9;
  double want_loss = 0;
  for (int i = 0; i < 5; ++i) {
    const int y = targets[static_cast<size_t>(i)];
    double sum = 0;
    for (int v = 0; v < 9; ++v) sum += std::exp(static_cast<double>(z(i, v)));
    for (int v = 0; v < 9; ++v) {
      const double p = std::exp(static_cast<double>(z(i, v))) / sum;
      const double q = (v == y ? 1 - eps : 0.0) + eps / V;
      if (y != 1) {
        want_loss -= q * std::log(p) / 3;
        EXPECT_NEAR(dz(i, v), (p - q) / 3, 1e-6) << "row " << i << ", column " << v;
      }
    }
  }
  EXPECT_NEAR(r.loss, want_loss, 1e-6);
  // Without smoothing the loss is the negative log-likelihood.
  const LossResult plain = label_smoothed_cross_entropy(z, targets, 1, 0.0f, nullptr);
  EXPECT_NEAR(plain.loss, plain.nll, 1e-9);
}

struct ModelCase {
  const char* name;
  NormPlacement norm = NormPlacement::Post;
  PositionalEncoding positions = PositionalEncoding::Sinusoidal;
  Activation activation = Activation::GELU;
  bool final_norms = false;
  bool bias = true;
  float dropout = 0.0f;
  bool tie = false;
  bool marian = false;  // SinusoidLayout::Halves and a decoder that starts with <pad> (no decoder padding mask)
};

class WholeModelGradients : public ::testing::TestWithParam<ModelCase> {};

TEST_P(WholeModelGradients, MatchFiniteDifferences) {
  const ModelCase& mc = GetParam();
  Config c;
  c.d_model = 8;
  c.n_heads = 2;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 2;
  c.d_ff = 12;
  c.src_vocab_size = 13;
  c.tgt_vocab_size = 11;
  c.max_positions = 16;
  c.norm_placement = mc.norm;
  c.positional_encoding = mc.positions;
  c.activation = mc.activation;
  c.encoder_final_norm = c.decoder_final_norm = mc.final_norms;
  c.bias = mc.bias;
  c.tie_output_embedding = mc.tie;
  if (mc.marian) {
    c.sinusoid_layout = SinusoidLayout::Halves;
    c.bos_id = c.pad_id;
  }
  ModelWeights w = initialize_weights(c, 42);
  // Make biases and norms non-trivial so their gradients are tested too.
  std::mt19937 rng(5);
  for (ParameterView& p : parameter_views(w))
    for (Eigen::Index i = 0; i < p.size; ++i) p.data[i] += std::normal_distribution<float>(0.0f, 0.1f)(rng);
  complete_shared_weights(c, w);

  std::vector<Example> examples = {{{5, 6, 7, 8}, {4, 5, 6}}, {{9, 10}, {7, 8, 9, 10, 4}}, {{11, 12, 4}, {5}}};
  const Batch batch = make_batch(examples, {0, 1, 2}, SpecialIds{1, c.bos_id, 3, 0}, 16);
  const DropoutSettings dropout{mc.dropout, 99, 7};

  BatchTrace trace;
  Mat dlogits;
  batch_forward(c, w, batch, dropout, 0.1f, trace, &dlogits);
  ModelWeights g = zeros_like(w);
  batch_backward(c, w, batch, trace, dlogits, g);
  tie_gradients(c, g);

  auto loss = [&] {
    if (c.tie_output_embedding) w.generator.weight = w.tgt_embedding;  // a tied matrix moves as one
    BatchTrace t;
    return batch_forward(c, w, batch, dropout, 0.1f, t, nullptr).loss;
  };
  auto weights = parameter_views(w);
  auto grads = parameter_views(g);
  ASSERT_EQ(weights.size(), grads.size());
  std::mt19937 pick(6);
  for (size_t p = 0; p < weights.size(); ++p) {
    if (c.tie_output_embedding && weights[p].name == "generator.weight") continue;  // checked via tgt_embedding
    // Three entries of each parameter (all of a small one), including rows of the embeddings that are used.
    for (int k = 0; k < 3; ++k) {
      Eigen::Index i = std::uniform_int_distribution<Eigen::Index>(0, weights[p].size - 1)(pick);
      if (weights[p].name.find("embedding") != std::string::npos) i = (4 + k) * c.d_model + k;  // ids 4..6
      // ReLU has kinks: a smaller step keeps pre-activations from crossing zero.
      const double h = c.activation == Activation::ReLU ? 1e-3 : 1e-2;
      expect_gradient(loss, weights[p].data + i, grads[p].data + i, 1, std::string(mc.name) + " " + weights[p].name,
                      h, c.activation == Activation::ReLU ? 4e-3 : 2e-3);
    }
  }
}

// The backward of a pass run without positional encoding (the intervention): the learned position tables took no
// part, so they get no gradient, while the token embeddings still do.
TEST(WholeModelGradients, PositionsOffGiveThePositionTablesNoGradient) {
  Config c;
  c.d_model = 8;
  c.n_heads = 2;
  c.n_encoder_layers = 1;
  c.n_decoder_layers = 1;
  c.d_ff = 12;
  c.src_vocab_size = 13;
  c.tgt_vocab_size = 11;
  c.max_positions = 16;
  c.positional_encoding = PositionalEncoding::Learned;
  const ModelWeights w = initialize_weights(c, 42);
  Trace t;
  t.sequences = 1;
  t.interventions.positional_encoding = false;
  t.src.ids = {5, 6, 7, 4};
  encoder_pass(c, w, 1, -1, Record::Backward, nullptr, t);
  DecoderPass pass;
  pass.rows = DecoderRows::one_sequence({3, 5, 6});
  pass.output_rows = {0, 1, 2};
  pass.record = Record::Backward;
  pass.trace = &t;
  decoder_pass(c, w, t, nullptr, pass);
  const Mat d_logits = Mat::Ones(3, c.tgt_vocab_size);
  ModelWeights g = zeros_like(w);
  model_backward(c, w, 1, t, d_logits, g);
  EXPECT_TRUE(g.src_positions.isZero());
  EXPECT_TRUE(g.tgt_positions.isZero());
  EXPECT_FALSE(g.src_embedding.isZero());
  EXPECT_FALSE(g.tgt_embedding.isZero());
}

// BERT's parts (config.h) through the one backward: the token-type table's row 0, the embedding norm, and the
// masked-LM head's dense layer, activation and norm, in an encoder-only model with learned positions, post-norm
// and the output tied to the word embeddings (bert-base's choices at a tiny size); dropout on, so the embedding
// norm's output dropout is crossed too. Every parameter against finite differences of the loss.
TEST(WholeModelGradients, BertsPartsMatchFiniteDifferences) {
  for (const Activation act : {Activation::GELU, Activation::GELUTanh}) {
    Config c;
    c.stacks = ModelStacks::EncoderOnly;
    c.d_model = 8;
    c.n_heads = 2;
    c.n_encoder_layers = 2;
    c.n_decoder_layers = 0;
    c.d_ff = 12;
    c.src_vocab_size = 13;
    c.tgt_vocab_size = 0;
    c.max_positions = 16;
    c.pad_id = 0, c.unk_id = 1, c.bos_id = 2, c.eos_id = 3, c.mask_id = 4;
    c.positional_encoding = PositionalEncoding::Learned;
    c.activation = act;
    c.type_vocab_size = 2;
    c.embedding_norm = true;
    c.output_head = OutputHead::MaskedLM;
    c.tie_output_embedding = true;
    c.validate();
    ModelWeights w = initialize_weights(c, 42);
    std::mt19937 rng(5);
    for (ParameterView& p : parameter_views(w))
      for (Eigen::Index i = 0; i < p.size; ++i) p.data[i] += std::normal_distribution<float>(0.0f, 0.1f)(rng);
    complete_shared_weights(c, w);
    ASSERT_EQ(w.src_token_types.rows(), 2);
    ASSERT_EQ(w.head_transform.weight.rows(), c.d_model);

    // Two sentences of 5 (the second padded): targets at a few positions only, as masked-LM batches have them.
    Batch batch;
    batch.size = 2;
    batch.source_length = batch.target_length = 5;
    batch.source = {2, 5, 4, 7, 3, 2, 8, 4, 3, 0};
    batch.target_out = {0, 0, 6, 0, 0, 0, 0, 9, 0, 0};
    batch.target_tokens = 2;
    const DropoutSettings dropout{0.2f, 99, 7};
    BatchTrace trace;
    Mat dlogits;
    batch_forward(c, w, batch, dropout, 0.1f, trace, &dlogits);
    ModelWeights g = zeros_like(w);
    batch_backward(c, w, batch, trace, dlogits, g);
    tie_gradients(c, g);
    auto loss = [&] {
      w.generator.weight = w.src_embedding;  // a tied matrix moves as one
      BatchTrace t;
      return batch_forward(c, w, batch, dropout, 0.1f, t, nullptr).loss;
    };
    auto weights = parameter_views(w);
    auto grads = parameter_views(g);
    ASSERT_EQ(weights.size(), grads.size());
    std::mt19937 pick(6);
    int checked_parts = 0;
    for (size_t p = 0; p < weights.size(); ++p) {
      if (weights[p].name == "generator.weight") continue;  // checked via src_embedding
      const std::string& name = weights[p].name;
      if (name.find("token_types") != std::string::npos || name.find("embedding_norm") != std::string::npos ||
          name.find("head_") != std::string::npos)
        ++checked_parts;
      for (int k = 0; k < 3; ++k) {
        Eigen::Index i = std::uniform_int_distribution<Eigen::Index>(0, weights[p].size - 1)(pick);
        if (name == "src_embedding.weight") i = (4 + k) * c.d_model + k;     // ids 4..6, read by the batch
        if (name == "src_token_types.weight") i = k;                         // row 0: every token's type
        expect_gradient(loss, weights[p].data + i, grads[p].data + i, 1, std::string(to_string(act)) + " " + name,
                        1e-2, 2e-3);
      }
    }
    EXPECT_GE(checked_parts, 6) << "token types, the embedding norm (2), the head's dense (2) and norm (2)";
    // The token-type table's row 1 is never read: no gradient.
    EXPECT_TRUE(g.src_token_types.row(1).isZero());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs, WholeModelGradients,
    ::testing::Values(ModelCase{"post_norm"}, ModelCase{"pre_norm_final_norms", NormPlacement::Pre,
                                                        PositionalEncoding::Sinusoidal, Activation::GELU, true},
                      ModelCase{"learned_positions_relu", NormPlacement::Post, PositionalEncoding::Learned,
                                Activation::ReLU},
                      ModelCase{"dropout", NormPlacement::Post, PositionalEncoding::Sinusoidal, Activation::GELU,
                                false, true, 0.2f},
                      ModelCase{"no_bias_tied", NormPlacement::Pre, PositionalEncoding::Learned, Activation::GELU,
                                true, false, 0.0f, true},
                      ModelCase{"marian_silu_halves_pad_start", NormPlacement::Post, PositionalEncoding::Sinusoidal,
                                Activation::SiLU, false, true, 0.0f, true, true}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sf
