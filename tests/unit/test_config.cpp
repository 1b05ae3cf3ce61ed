#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "model/config.h"
#include "nn/positional_encoding.h"
#include "util/error.h"

namespace sf {
namespace {

Config small_config() {
  Config c;
  c.src_vocab_size = 100;
  c.tgt_vocab_size = 120;
  return c;
}

// Every key with a value other than its default, as a user writes it (docs/model-files.md's key names), so that a key
// that is not read, or read into the wrong field, shows.
const char* kEveryKey = R"({
  "d_model": 48, "n_heads": 6, "n_encoder_layers": 2, "n_decoder_layers": 5, "d_ff": 96,
  "src_vocab_size": 100, "tgt_vocab_size": 100, "max_positions": 77,
  "positional_encoding": "learned", "sinusoid_layout": "halves", "embedding_scale": "one", "norm_placement": "pre",
  "encoder_final_norm": true, "decoder_final_norm": true, "activation": "gelu", "attention": "reshape_heads",
  "layer_norm_eps": 1e-6,
  "bias": false, "tie_output_embedding": true, "share_embeddings": true,
  "pad_id": 4, "bos_id": 5, "eos_id": 6, "unk_id": 7
})";

void expect_every_key(const Config& c) {
  EXPECT_EQ(c.d_model, 48);
  EXPECT_EQ(c.n_heads, 6);
  EXPECT_EQ(c.n_encoder_layers, 2);
  EXPECT_EQ(c.n_decoder_layers, 5);
  EXPECT_EQ(c.d_ff, 96);
  EXPECT_EQ(c.src_vocab_size, 100);
  EXPECT_EQ(c.tgt_vocab_size, 100);
  EXPECT_EQ(c.max_positions, 77);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(c.sinusoid_layout, SinusoidLayout::Halves);
  EXPECT_EQ(c.embedding_scale, EmbeddingScale::One);
  EXPECT_EQ(c.norm_placement, NormPlacement::Pre);
  EXPECT_TRUE(c.encoder_final_norm);
  EXPECT_TRUE(c.decoder_final_norm);
  EXPECT_EQ(c.activation, Activation::GELU);
  EXPECT_EQ(c.attention, AttentionStyle::ReshapeHeads);
  EXPECT_EQ(c.layer_norm_eps, 1e-6f);
  EXPECT_FALSE(c.bias);
  EXPECT_TRUE(c.tie_output_embedding);
  EXPECT_TRUE(c.share_embeddings);
  EXPECT_EQ(c.pad_id, 4);
  EXPECT_EQ(c.bos_id, 5);
  EXPECT_EQ(c.eos_id, 6);
  EXPECT_EQ(c.unk_id, 7);
}

TEST(Config, EveryKeyIsReadAndWrittenBack) {
  const Config c = config_from_json(nlohmann::json::parse(kEveryKey));
  expect_every_key(c);
  EXPECT_NO_THROW(c.validate());
  // Written out and read back: the same values, under the same names.
  const nlohmann::json written = config_to_json(c);
  EXPECT_EQ(written, nlohmann::json::parse(kEveryKey));
  expect_every_key(config_from_json(written));
}

TEST(Config, AbsentKeysTakeTheDefaults) {
  const Config c = config_from_json({{"d_model", 32}, {"n_heads", 4}, {"n_encoder_layers", 1}, {"n_decoder_layers", 1},
                                     {"d_ff", 64}, {"src_vocab_size", 10}, {"tgt_vocab_size", 12}});
  Config want;  // the defaults, with the required keys as given
  want.d_model = 32, want.n_heads = 4, want.n_encoder_layers = 1, want.n_decoder_layers = 1, want.d_ff = 64;
  want.src_vocab_size = 10, want.tgt_vocab_size = 12;
  EXPECT_EQ(config_to_json(c), config_to_json(want));
  EXPECT_EQ(c.max_positions, 256);
  EXPECT_EQ(c.embedding_scale, EmbeddingScale::SqrtDModel);
  EXPECT_TRUE(c.bias);
  EXPECT_EQ(c.layer_norm_eps, 1e-5f);
  EXPECT_EQ(c.pad_id, 1);
  EXPECT_EQ(c.unk_id, 0);
}

TEST(Config, RejectsHeadsNotDividingWidth) {
  Config c = small_config();
  c.n_heads = 7;
  try {
    c.validate();
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config);
    EXPECT_NE(std::string(e.what()).find("does not divide d_model"), std::string::npos) << e.what();
  }
}

TEST(Config, RejectsZeroLayersAndSpecialIdsOutsideVocabulary) {
  Config c = small_config();
  c.n_decoder_layers = 0;
  EXPECT_THROW(c.validate(), Error);
  c = small_config();
  c.eos_id = 100;
  try {
    c.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("eos_id (100) is outside the vocabulary"), std::string::npos) << e.what();
  }
}

TEST(Config, RejectsSpecialIdsThatCoincide) {
  for (auto [pad, bos, eos] : {std::tuple{1, 2, 2}, std::tuple{3, 2, 3}, std::tuple{2, 2, 2}}) {
    Config c = small_config();
    c.pad_id = pad, c.bos_id = bos, c.eos_id = eos;
    try {
      c.validate();
      ADD_FAILURE() << "pad " << pad << ", bos " << bos << ", eos " << eos << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Config);
      EXPECT_NE(std::string(e.what()).find("eos_id must differ from pad_id and bos_id"), std::string::npos)
          << e.what();
    }
  }
  // Marian starts the decoder with <pad>: bos may be the pad id.
  Config marian = small_config();
  marian.pad_id = marian.bos_id = 1;
  EXPECT_NO_THROW(marian.validate());
}

TEST(Config, RejectsWhatNoModelCanBe) {
  // Each rule of validate() on its own, named in the message.
  const std::vector<std::pair<std::function<void(Config&)>, std::string>> cases = {
      {[](Config& c) { c.share_embeddings = true; }, "share_embeddings needs equal vocabulary sizes"},
      {[](Config& c) { c.layer_norm_eps = 0.0f; }, "layer_norm_eps must be a positive finite number"},
      {[](Config& c) { c.layer_norm_eps = std::numeric_limits<float>::infinity(); }, "layer_norm_eps"},
      {[](Config& c) { c.d_model = 65536 * 2, c.n_heads = 1; }, "implausibly large"},
      {[](Config& c) { c.n_encoder_layers = 257; }, "implausibly large"},
      {[](Config& c) { c.max_positions = 0; }, "max_positions"},
      {[](Config& c) { c.unk_id = -1; }, "unk_id (-1) is outside the vocabulary"},
  };
  for (const auto& [change, message] : cases) {
    Config c = small_config();
    change(c);
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Config);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(small_config().validate());
}

// A masked language model's [MASK]: only on an encoder_only model, inside its vocabulary, apart from the other
// special tokens; written to the file only where it is set, and read back.
TEST(Config, MaskIdBelongsToAnEncoderOnlyModel) {
  Config bert = small_config();
  bert.stacks = ModelStacks::EncoderOnly;
  bert.n_decoder_layers = 0;
  bert.tgt_vocab_size = 0;
  EXPECT_FALSE(bert.has_mask_token());
  EXPECT_FALSE(config_to_json(bert).contains("mask_id"));
  bert.mask_id = 9;
  EXPECT_NO_THROW(bert.validate());
  EXPECT_TRUE(bert.has_mask_token());
  const nlohmann::json written = config_to_json(bert);
  ASSERT_TRUE(written.contains("mask_id"));
  EXPECT_EQ(config_from_json(written).mask_id, 9);
  const std::vector<std::pair<std::function<void(Config&)>, std::string>> cases = {
      {[](Config& c) { c.mask_id = 100; }, "mask_id (100) is outside the vocabulary"},
      {[](Config& c) { c.mask_id = -2; }, "mask_id (-2) is outside the vocabulary"},
      {[](Config& c) { c.mask_id = c.unk_id; }, "mask_id must differ"},
      {[](Config& c) { c.mask_id = c.pad_id; }, "mask_id must differ"},
      {[](Config& c) {
         c.stacks = ModelStacks::EncoderDecoder, c.n_decoder_layers = 1, c.tgt_vocab_size = 100;
       },
       "mask_id is for encoder_only"},
  };
  for (const auto& [change, message] : cases) {
    Config c = bert;
    change(c);
    try {
      c.validate();
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Config);
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

TEST(Config, FromJsonNamesBadKeys) {
  nlohmann::json j = config_to_json(small_config());
  j["activation"] = "swish";
  try {
    config_from_json(j);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'activation'"), std::string::npos) << e.what();
  }
  j = config_to_json(small_config());
  j["d_model"] = "256";
  EXPECT_THROW(config_from_json(j), Error);
  j.erase("d_model");
  EXPECT_THROW(config_from_json(j), Error);
}

TEST(PositionalEncoding, MatchesThePaperFormula) {
  const Mat pe = sinusoidal_positional_encoding(50, 16);
  ASSERT_EQ(pe.rows(), 50);
  ASSERT_EQ(pe.cols(), 16);
  for (int pos : {0, 1, 7, 49})
    for (int i = 0; i < 8; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / 16);
      EXPECT_NEAR(pe(pos, 2 * i), std::sin(angle), 1e-6);
      EXPECT_NEAR(pe(pos, 2 * i + 1), std::cos(angle), 1e-6);
    }
}

}  // namespace
}  // namespace sf

namespace sf {
namespace {

TEST(Config, MarianValues) {
  // Marian's activation and sinusoid layout, written and read back by name; an unknown name is refused.
  Config c = small_config();
  c.activation = Activation::SiLU;
  c.sinusoid_layout = SinusoidLayout::Halves;
  const nlohmann::json j = config_to_json(c);
  EXPECT_EQ(j.at("activation"), "silu");
  EXPECT_EQ(j.at("sinusoid_layout"), "halves");
  const Config back = config_from_json(j);
  EXPECT_EQ(back.activation, Activation::SiLU);
  EXPECT_EQ(back.sinusoid_layout, SinusoidLayout::Halves);
  nlohmann::json bad = j;
  bad["sinusoid_layout"] = "sines_first";
  EXPECT_THROW(config_from_json(bad), Error);
  EXPECT_EQ(config_from_json(nlohmann::json{{"d_model", 8}, {"n_heads", 2}, {"n_encoder_layers", 1},
                                            {"n_decoder_layers", 1}, {"d_ff", 8}, {"src_vocab_size", 9},
                                            {"tgt_vocab_size", 9}})
                .sinusoid_layout,
            SinusoidLayout::Interleaved);
}

}  // namespace
}  // namespace sf
