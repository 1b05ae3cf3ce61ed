// The batched training pass computes the same function as the traced forward the app shows: for every
// sentence of a padded batch, its rows of the logits equal forward()'s logits for that sentence alone.
#include <gtest/gtest.h>

#include "train/batched_model.h"
#include "train/init.h"
#include "transformer/forward.h"

namespace sf {
namespace {

void expect_same_logits(const Config& c) {
  const ModelWeights w = initialize_weights(c, 3);
  const std::vector<Example> examples = {{{5, 6, 7, 8, 9}, {4, 5, 6}}, {{9, 10}, {7, 8, 9, 10, 4, 6}}, {{11}, {5}}};
  const Batch batch = make_batch(examples, {0, 1, 2}, SpecialIds{1, 2, 3, 0}, 32);
  BatchTrace bt;
  batch_forward(c, w, batch, {}, 0.0f, bt, nullptr);
  for (int b = 0; b < batch.size; ++b) {
    std::vector<int> src, tgt;
    for (int i = 0; i < batch.source_length; ++i)
      if (batch.source[b * batch.source_length + i] != c.pad_id) src.push_back(batch.source[b * batch.source_length + i]);
    for (int i = 0; i < batch.target_length; ++i)
      if (batch.target_in[b * batch.target_length + i] != c.pad_id) tgt.push_back(batch.target_in[b * batch.target_length + i]);
    const Trace t = forward(c, w, src, tgt);
    const Mat rows = bt.logits.block(b * batch.target_length, 0, static_cast<Eigen::Index>(tgt.size()), c.tgt_vocab_size);
    EXPECT_LT((rows - t.logits).cwiseAbs().maxCoeff(), 1e-4f) << "sentence " << b;
  }
}

TEST(TrainingConsistency, BatchedPassEqualsTracedForward) {
  Config c;
  c.d_model = 16;
  c.n_heads = 4;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 2;
  c.d_ff = 24;
  c.src_vocab_size = 13;
  c.tgt_vocab_size = 11;
  c.max_positions = 32;
  expect_same_logits(c);
  c.norm_placement = NormPlacement::Pre;
  c.encoder_final_norm = c.decoder_final_norm = true;
  c.positional_encoding = PositionalEncoding::Learned;
  c.activation = Activation::GELU;
  c.embedding_scale = EmbeddingScale::One;
  expect_same_logits(c);
}

}  // namespace
}  // namespace sf
