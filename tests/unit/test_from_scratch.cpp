// The from-scratch family (the study note's "Transformer from scratch", config attention reshape_heads) against
// the note's own modules: every traced tensor of every committed fixture (tests/reference/
// make_from_scratch_fixtures.py, the note's state_dict loaded through load_model under its own names) within
// 1e-5, with a padded source and target and with interventions; greedy decoding gives the tokens the note's way
// of decoding gives; the reshape of the heads on a matrix small enough to check by hand.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "decode/decoder.h"
#include "decode/guided.h"
#include "forward_fixture.h"
#include "model/name_tables.h"
#include "transformer/forward.h"
#include "transformer/layers.h"
#include "transformer/passes.h"
#include "transformer/trace.h"
#include "train/trainer.h"
#include "renaming_corpus.h"
#include "util/error.h"

namespace sf {
namespace {

namespace fs = std::filesystem;

constexpr float kTolerance = 1e-5f;

std::vector<std::string> fixture_paths() { return testing::fixture_paths("from_scratch"); }

std::map<std::string, std::string> metadata_of(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  return {file.metadata().begin(), file.metadata().end()};
}

class FromScratchPytorch : public ::testing::TestWithParam<std::string> {};

TEST_P(FromScratchPytorch, EveryTracedTensorMatches) {
  const testing::ForwardFixture f = testing::load_forward_fixture(GetParam());
  ASSERT_EQ(f.family, kFamilyFromScratch);
  ASSERT_EQ(f.model.config.attention, AttentionStyle::ReshapeHeads);
  const std::map<std::string, Tensor> ours =
      testing::tensors_by_name(forward(f.model.config, f.model.weights, f.src, f.tgt, f.interventions));
  int compared = 0;
  ASSERT_NO_FATAL_FAILURE(testing::expect_tensors_match(f.expected, ours, kTolerance, "the note's", compared));
  // Everything our trace holds is in the fixture (nothing left unchecked), and the other way round.
  for (const auto& [name, tensor] : ours) {
    if (tensor.numel() > 0) {
      EXPECT_TRUE(f.expected.count(name)) << "the fixture lacks '" << name << "'";
    }
  }
  EXPECT_GE(compared, 99);  // 99 tensors with one encoder and two decoder layers, 120 with two and two
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FromScratchPytorch, ::testing::ValuesIn(fixture_paths()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           const std::string file = std::filesystem::path(info.param).filename().string();
                           return file.substr(0, file.find('.'));
                         });

TEST(FromScratchFixtures, CoverTwoSizesPaddingAndInterventions) {
  std::set<int> widths;
  bool padded_source = false, padded_target = false, heads_off = false, no_masks = false, no_positions = false,
       painted = false;
  int uniform_rows = 0;
  for (const auto& path : fixture_paths()) {
    const testing::ForwardFixture f = testing::load_forward_fixture(path);
    widths.insert(f.model.config.d_model);
    for (int id : f.src) padded_source |= id == f.model.config.pad_id;
    for (int id : f.tgt) padded_target |= id == f.model.config.pad_id;
    heads_off |= !f.interventions.heads_off.empty();
    no_masks |= !f.interventions.padding_mask && !f.interventions.causal_mask;
    no_positions |= !f.interventions.positional_encoding;
    painted |= f.interventions.custom_masks.size() == 3;
    // A padded query's row in the note's softmax: every cell 1/Tk (masked_fill -1e20, not -inf).
    const Tensor& probs = f.expected.at("enc.0.self_attn.probs");  // (H, S, S)
    const int64_t s = probs.shape[1];
    for (int64_t row = 0; row < probs.shape[0] * s; ++row)
      if (std::abs(probs.data[static_cast<size_t>(row * s)] - 1.0f / static_cast<float>(s)) < 1e-7f &&
          std::abs(probs.data[static_cast<size_t>(row * s + s - 1)] - 1.0f / static_cast<float>(s)) < 1e-7f)
        ++uniform_rows;
  }
  EXPECT_EQ(widths.size(), 2u);
  EXPECT_TRUE(padded_source && padded_target && heads_off && no_masks && no_positions && painted);
  EXPECT_GT(uniform_rows, 0) << "no fixture has a padded query row";
}

TEST(FromScratch, GreedyDecodingGivesTheNotesTokens) {
  int checked = 0;
  for (const auto& path : fixture_paths()) {
    const auto meta = metadata_of(path);
    const std::vector<int> expected = nlohmann::json::parse(meta.at("greedy")).get<std::vector<int>>();
    if (expected.empty()) continue;  // cases with interventions carry none
    const testing::ForwardFixture f = testing::load_forward_fixture(path);
    DecodeOptions options;
    options.max_length = std::stoi(meta.at("greedy_steps"));
    Decoder d(f.model.config, f.model.weights, f.src, Interventions{}, options);
    EXPECT_FALSE(d.uses_kv_cache()) << "reshaped heads mix every token: no KV cache";
    d.run();
    EXPECT_EQ(d.generated(), expected) << f.case_name;
    // A beam of one is greedy; the guided re-decoder (from a wrong guess) decodes the same.
    DecodeOptions beam = options;
    beam.strategy = DecodeStrategy::Beam;
    beam.beam_width = 1;
    Decoder b(f.model.config, f.model.weights, f.src, Interventions{}, beam);
    b.run();
    EXPECT_EQ(b.path(b.best_node()), expected) << f.case_name;
    Decoder g(f.model.config, f.model.weights, f.src, Interventions{}, options);
    std::vector<int> guess = expected;
    std::reverse(guess.begin(), guess.end());
    GuidedRedecoder(g).run(guess);
    EXPECT_EQ(g.generated(), expected) << f.case_name;
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

// The summed log-probability of `tokens` after <bos>, one forward pass of the note's model per prefix (its
// reshaped heads mix positions, so a row of one pass over the whole sentence also read the tokens after it):
// the independent account of what a decoder says it chose.
double sum_logprob(const testing::ForwardFixture& f, const std::vector<int>& tokens) {
  std::vector<int> input = {f.model.config.bos_id};
  double sum = 0;
  for (const int token : tokens) {
    const Trace t = forward(f.model.config, f.model.weights, f.src, input);
    sum += std::log(static_cast<double>(t.probs(t.probs.rows() - 1, token)));
    input.push_back(token);
  }
  return sum;
}

// Beam search and sampling on reshaped heads (no KV cache: every step recomputes the prefix): what they report is
// what a full pass says of the tokens they chose.
TEST(FromScratch, AWiderBeamAndSamplingRun) {
  const testing::ForwardFixture f = testing::load_forward_fixture(fixture_paths().front());
  DecodeOptions beam;
  beam.strategy = DecodeStrategy::Beam;
  beam.beam_width = 4;
  beam.max_length = 8;
  Decoder b(f.model.config, f.model.weights, f.src, Interventions{}, beam);
  b.run();
  const BeamNode& best = b.tree()[static_cast<size_t>(b.best_node())];
  const std::vector<int> best_path = b.path(b.best_node());
  ASSERT_FALSE(best_path.empty());
  EXPECT_EQ(static_cast<int>(best_path.size()), best.length);
  EXPECT_NEAR(best.sum_logprob, sum_logprob(f, best_path), 1e-3) << "the beam's log p against a full pass";
  EXPECT_NEAR(best.score, best.sum_logprob / std::pow((5.0 + best.length) / 6.0, beam.length_penalty), 1e-4);
  // Every finished hypothesis scores no better than the best (the best is the best).
  for (const int node : b.finished_beams()) EXPECT_LE(b.tree()[static_cast<size_t>(node)].score, best.score + 1e-6f);
  EXPECT_GE(b.finished_beams().size(), 2u) << "a beam of 4 finishes more than one hypothesis";
  // Past the widest beam without a cache: refused with the reason.
  beam.beam_width = kMaxBeamWidthWithoutCache + 1;
  try {
    Decoder wide(f.model.config, f.model.weights, f.src, Interventions{}, beam);
    FAIL() << "a beam of " << beam.beam_width << " was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reshaped heads"), std::string::npos) << e.what();
  }
  // Sampling: the same seed draws the same tokens, each with its probability in the full pass above zero; top_k 1
  // leaves only the likeliest token, so it draws what greedy decoding chooses.
  DecodeOptions sample;
  sample.strategy = DecodeStrategy::Sample;
  sample.seed = 7;
  sample.max_length = 8;
  Decoder s1(f.model.config, f.model.weights, f.src, Interventions{}, sample);
  Decoder s2(f.model.config, f.model.weights, f.src, Interventions{}, sample);
  s1.run();
  s2.run();
  ASSERT_FALSE(s1.generated().empty());
  EXPECT_EQ(s1.generated(), s2.generated());
  EXPECT_TRUE(std::isfinite(sum_logprob(f, s1.generated())));
  sample.sampling.top_k = 1;
  Decoder top1(f.model.config, f.model.weights, f.src, Interventions{}, sample);
  top1.run();
  DecodeOptions greedy;
  greedy.max_length = 8;
  Decoder g(f.model.config, f.model.weights, f.src, Interventions{}, greedy);
  g.run();
  EXPECT_EQ(top1.generated(), g.generated());
}

TEST(FromScratch, ReshapeHeadsByHand) {
  // x (T=3, C=4), H=2, D=2; flat 0..11. Read as (H, T, D): head 0 rows = pieces 0,1,2 = {0,1},{2,3},{4,5};
  // head 1 = pieces 3,4,5 = {6,7},{8,9},{10,11}. In columns: row i = [head0 row i | head1 row i].
  Mat x(3, 4);
  for (int i = 0; i < 12; ++i) x.data()[i] = static_cast<float>(i);
  Mat expected(3, 4);
  expected << 0, 1, 6, 7,  //
      2, 3, 8, 9,          //
      4, 5, 10, 11;
  const Mat columns = reshape_heads_to_columns(x, 2);
  EXPECT_EQ(columns, expected);
  EXPECT_EQ(columns_to_reshape_heads(columns, 2), x);
}

TEST(FromScratch, NoKvCacheAndNoTraining) {
  Config c;
  c.attention = AttentionStyle::ReshapeHeads;
  EXPECT_FALSE(kv_cache_exact(c, Interventions{}));
  EXPECT_TRUE(kv_cache_exact(Config{}, Interventions{}));
  // The family needs the note's attention: a from-scratch file that says split_heads is refused.
  Config wrong;
  wrong.embedding_scale = EmbeddingScale::One;
  try {
    check_family_config(kFamilyFromScratch, wrong, "test");
    FAIL() << "split_heads accepted for from-scratch";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("reshape_heads"), std::string::npos) << e.what();
  }
  // Fine-tuning a from-scratch model is refused, naming why, before a step or a file: the trainer has no
  // backward pass for reshaped heads.
  const fs::path dir = fs::temp_directory_path() / ("stepformer-from-scratch-train-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  testing::write_renaming_corpus(dir, "de", "en", 40, 8, 8, 3);
  TrainOptions o;
  o.from_model = std::string(STEPFORMER_FIXTURE_DIR) + "/from_scratch/fs_small.model.safetensors";
  o.data_dir = dir.string();
  o.out_path = (dir / "tuned.safetensors").string();
  o.epochs = 1;
  o.threads = 1;
  try {
    train_model(o);
    FAIL() << "a from-scratch model was trained";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("no backward pass"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(o.out_path));
  EXPECT_FALSE(fs::exists(o.out_path + ".checkpoint"));
  fs::remove_all(dir);
}

TEST(FromScratch, TheModelFileHasTheNotesNamesAndNothingElse) {
  const std::string path = std::string(STEPFORMER_FIXTURE_DIR) + "/from_scratch/fs_small.model.safetensors";
  std::vector<std::string> warnings;
  const Model m = load_model(path, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();  // every tensor of the state_dict is read
  const std::vector<TensorSpec> layout = weight_layout(kFamilyFromScratch, m.config);
  const SafetensorsFile file = SafetensorsFile::open(path);
  EXPECT_EQ(layout.size(), file.tensors().size());
  bool shared_projection = false, misspelled = false;
  for (const TensorSpec& t : layout) {
    shared_projection |= t.name == "Encoder.layers.0.attention.query.weight" &&
                         t.shape == std::vector<int64_t>{m.config.head_dim(), m.config.head_dim()};
    misspelled |= t.name == "Decoder.layers.1.encoder_block.feed_forawrd.2.bias";
  }
  EXPECT_TRUE(shared_projection && misspelled);
  // Parameters: embeddings, per attention 3 D^2 + C^2 + C, and the rest as any post-norm model.
  const int64_t C = m.config.d_model, D = m.config.head_dim(), F = m.config.d_ff;
  const int64_t attention = 3 * D * D + C * C + C, ffn = 2 * C * F + F + C, norm = 2 * C;
  const int64_t expected = (m.config.src_vocab_size + m.config.tgt_vocab_size) * C +
                           m.config.n_encoder_layers * (attention + ffn + 2 * norm) +
                           m.config.n_decoder_layers * (2 * attention + ffn + 3 * norm) +
                           m.config.tgt_vocab_size * (C + 1);
  EXPECT_EQ(m.parameter_count(), expected);
}

}  // namespace
}  // namespace sf
