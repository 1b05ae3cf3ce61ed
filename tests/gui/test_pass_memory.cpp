// A sentence whose pass would not fit in memory, in the app: version 0.1 ended with std::bad_alloc (a 2,000-token
// sentence on a model within every documented limit: d_model 1024 with 1024 heads needs tens of gigabytes for
// its attention maps). The pass is estimated first (transformer/pass_memory.h): the sentence is refused with the
// numbers, and what was shown (model, sentence, translation) stays.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#ifndef STEPFORMER_FIXTURE_DIR  // (the fixture helpers name the committed fixtures' folder; unused here)
#define STEPFORMER_FIXTURE_DIR STEPFORMER_SOURCE_DIR "/tests/fixtures"
#endif
#include "../unit/forward_fixture.h"
#include "gui/app_state.h"

namespace sf {
namespace {

TEST(PassMemory, ASentenceTooLongForMemoryIsRefusedAndWhatWasShownStays) {
  auto wide = std::make_shared<Model>();
  wide->config = testing::small_config();
  wide->config.d_model = 1024;
  wide->config.n_heads = 1024;
  wide->config.d_ff = 64;
  wide->config.n_encoder_layers = wide->config.n_decoder_layers = 1;
  wide->config.max_positions = 65536;
  wide->config.src_vocab_size = 12;
  wide->config.tgt_vocab_size = 10;
  const auto vocab = [](int n) {
    std::vector<std::string> t = {"<unk>", "<pad>", "<bos>", "<eos>", "ein", "mann"};
    for (int i = static_cast<int>(t.size()); i < n; ++i) t.push_back(std::string("w").append(std::to_string(i)));
    return Vocabulary(t, SpecialIds{});
  };
  wide->src_vocab = vocab(12);
  wide->tgt_vocab = vocab(10);
  wide->weights = testing::random_weights(wide->config, 3);
  gui::AppState state;
  ASSERT_TRUE(state.use_model(wide, "wide.safetensors")) << state.error();
  ASSERT_TRUE(state.set_sentence("ein mann")) << state.error();
  state.finish_background();
  const std::vector<int> translation = state.translation();
  std::string long_sentence = "ein";
  for (int i = 1; i < 4000; ++i) long_sentence += " ein";
  EXPECT_FALSE(state.set_sentence(long_sentence));
  state.finish_background();
  EXPECT_NE(state.error().find("a pass over 4002 source tokens needs about"), std::string::npos) << state.error();
  EXPECT_NE(state.error().find("tokens fit"), std::string::npos) << state.error();
  EXPECT_EQ(state.sentence(), "ein mann");
  EXPECT_EQ(state.translation(), translation);
  EXPECT_TRUE(state.ready());
}

}  // namespace
}  // namespace sf
