#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

TEST(Config, JsonRoundTrip) {
  Config c = small_config();
  c.positional_encoding = PositionalEncoding::Learned;
  c.norm_placement = NormPlacement::Pre;
  c.activation = Activation::GELU;
  c.layer_norm_eps = 1e-6f;
  const Config back = config_from_json(config_to_json(c));
  EXPECT_EQ(config_to_json(back), config_to_json(c));
  EXPECT_NO_THROW(back.validate());
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
