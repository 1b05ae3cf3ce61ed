// BERT's config keys (model/config.h): type_vocab_size, embedding_norm and output_head "masked_lm". Each is read
// from JSON and written back only where it says something (every older model file stays byte-identical), and
// validate() refuses them on a shape that has no place for them, with a message naming the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "model/config.h"
#include "model/name_tables.h"
#include "model/weights.h"
#include "util/error.h"

namespace sf {
namespace {

// A small BERT-shaped config: encoder_only, token types, the embedding norm and the masked-LM head.
Config bert_config() {
  Config c;
  c.stacks = ModelStacks::EncoderOnly;
  c.d_model = 16;
  c.n_heads = 4;
  c.n_encoder_layers = 2;
  c.n_decoder_layers = 0;
  c.d_ff = 32;
  c.src_vocab_size = 40;
  c.tgt_vocab_size = 0;
  c.pad_id = 0, c.unk_id = 1, c.bos_id = 2, c.eos_id = 3, c.mask_id = 4;
  c.type_vocab_size = 2;
  c.embedding_norm = true;
  c.output_head = OutputHead::MaskedLM;
  c.tie_output_embedding = true;
  return c;
}

std::string validate_error(const Config& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Config) << e.what();
    return e.what();
  }
  return "";
}

TEST(BertConfig, TheKeysAreReadAndWrittenBack) {
  const Config c = bert_config();
  EXPECT_EQ(validate_error(c), "");
  const nlohmann::json j = config_to_json(c);
  EXPECT_EQ(j.at("type_vocab_size"), 2);
  EXPECT_EQ(j.at("embedding_norm"), true);
  EXPECT_EQ(j.at("output_head"), "masked_lm");
  const Config back = config_from_json(j);
  EXPECT_EQ(back.type_vocab_size, 2);
  EXPECT_TRUE(back.embedding_norm);
  EXPECT_EQ(back.output_head, OutputHead::MaskedLM);
  EXPECT_EQ(config_to_json(back), j);
  EXPECT_STREQ(to_string(OutputHead::MaskedLM), "masked_lm");
  EXPECT_STREQ(to_string(OutputHead::Linear), "linear");
}

TEST(BertConfig, TheKeysAreWrittenOnlyOffTheirDefaults) {
  // Every older file: none of the three keys appears (its bytes stay as they were).
  for (const ModelStacks stacks : {ModelStacks::EncoderDecoder, ModelStacks::DecoderOnly, ModelStacks::EncoderOnly}) {
    Config c;
    c.stacks = stacks;
    const nlohmann::json j = config_to_json(c);
    EXPECT_FALSE(j.contains("type_vocab_size")) << to_string(stacks);
    EXPECT_FALSE(j.contains("embedding_norm")) << to_string(stacks);
    EXPECT_FALSE(j.contains("output_head")) << to_string(stacks);
  }
  // Absent keys read as the defaults.
  const Config plain = config_from_json(nlohmann::json{{"d_model", 16}, {"n_heads", 4}, {"d_ff", 32},
                                                       {"n_encoder_layers", 1}, {"n_decoder_layers", 1},
                                                       {"src_vocab_size", 10}, {"tgt_vocab_size", 10}});
  EXPECT_EQ(plain.type_vocab_size, 0);
  EXPECT_FALSE(plain.embedding_norm);
  EXPECT_EQ(plain.output_head, OutputHead::Linear);
}

TEST(BertConfig, WrongTypesAndUnknownHeadsAreNamed) {
  nlohmann::json j = config_to_json(bert_config());
  j["output_head"] = "pooler";
  try {
    config_from_json(j);
    FAIL() << "an unknown output head was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("linear, masked_lm"), std::string::npos) << e.what();
  }
  j = config_to_json(bert_config());
  j["embedding_norm"] = 1;
  EXPECT_THROW(config_from_json(j), Error);
  j = config_to_json(bert_config());
  j["type_vocab_size"] = "two";
  EXPECT_THROW(config_from_json(j), Error);
}

TEST(BertConfig, ValidateRefusesTheKeysWhereTheyHaveNoPlace) {
  {
    Config c = bert_config();
    c.type_vocab_size = -1;
    EXPECT_NE(validate_error(c).find("type_vocab_size must be from 0"), std::string::npos);
    c.type_vocab_size = 5000;
    EXPECT_NE(validate_error(c).find("type_vocab_size must be from 0"), std::string::npos);
  }
  // On a translator or a GPT: each key named.
  for (const ModelStacks stacks : {ModelStacks::EncoderDecoder, ModelStacks::DecoderOnly}) {
    Config base;
    base.stacks = stacks;
    base.src_vocab_size = stacks == ModelStacks::DecoderOnly ? 0 : 40;
    base.n_encoder_layers = stacks == ModelStacks::DecoderOnly ? 0 : 2;
    base.tgt_vocab_size = 40;
    ASSERT_EQ(validate_error(base), "") << to_string(stacks);
    Config types = base;
    types.type_vocab_size = 2;
    EXPECT_NE(validate_error(types).find("type_vocab_size (token-type embeddings) is for encoder_only"),
              std::string::npos) << to_string(stacks);
    Config norm = base;
    norm.embedding_norm = true;
    EXPECT_NE(validate_error(norm).find("embedding_norm is for encoder_only"), std::string::npos);
    Config head = base;
    head.output_head = OutputHead::MaskedLM;
    EXPECT_NE(validate_error(head).find("output_head \"masked_lm\" is for encoder_only"), std::string::npos);
  }
}

// The weights the keys bring, in our own file's order and names (for_each_weight), and none without them.
TEST(BertConfig, TheWeightsFollowTheKeys) {
  const Config c = bert_config();
  std::vector<std::string> names;
  for (const TensorSpec& s : weight_layout("stepformer", c)) names.push_back(s.name);
  auto has = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("src_token_types.weight"));
  EXPECT_TRUE(has("embedding_norm.weight"));
  EXPECT_TRUE(has("embedding_norm.bias"));
  EXPECT_TRUE(has("head_transform.weight"));
  EXPECT_TRUE(has("head_transform.bias"));
  EXPECT_TRUE(has("head_norm.weight"));
  EXPECT_TRUE(has("head_norm.bias"));
  EXPECT_TRUE(has("generator.bias"));
  EXPECT_FALSE(has("generator.weight"));  // tied to the word embedding
  for (const TensorSpec& s : weight_layout("stepformer", c)) {
    if (s.name == "src_token_types.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 16}));
    } else if (s.name == "head_transform.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{16, 16}));
    } else if (s.name == "head_norm.weight") {
      EXPECT_EQ(s.shape, (std::vector<int64_t>{16}));
    }
  }
  const ModelWeights w = allocate_weights(c);
  EXPECT_EQ(w.src_token_types.rows(), 2);
  EXPECT_EQ(w.embedding_norm.gamma.size(), 16);
  EXPECT_EQ(w.head_norm.gamma.size(), 16);
  EXPECT_EQ(w.head_transform.weight.rows(), 16);

  Config plain = c;
  plain.type_vocab_size = 0;
  plain.embedding_norm = false;
  plain.output_head = OutputHead::Linear;
  for (const TensorSpec& s : weight_layout("stepformer", plain)) {
    EXPECT_EQ(s.name.find("token_types"), std::string::npos) << s.name;
    EXPECT_EQ(s.name.find("embedding_norm"), std::string::npos) << s.name;
    EXPECT_EQ(s.name.find("head_"), std::string::npos) << s.name;
  }
}

}  // namespace
}  // namespace sf
