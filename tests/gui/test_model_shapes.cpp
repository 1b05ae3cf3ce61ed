// A model of another shape (config.stacks: decoder-only, encoder-only) opened in the app: the core runs it
// (tests/unit/test_shapes_pytorch.cpp), the views do not yet, and say so by name; the model on show stays, with its
// sentence and translation. (The CLI's translate: tests/unit/test_shapes_pytorch.cpp.)
#include <gtest/gtest.h>

#include <string>

#include "gui/app_state.h"
#include "gui/model_loader.h"
#include "model/model.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

const std::string kShapes = std::string(STEPFORMER_SOURCE_DIR) + "/tests/fixtures/shapes/";

TEST(ModelShapes, TheAppRefusesADecoderOnlyOrEncoderOnlyModelAndKeepsItsOwn) {
  AppState state;
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  ASSERT_TRUE(state.ready()) << state.error();
  const std::vector<int> translation = state.translation();
  ASSERT_FALSE(translation.empty());
  for (const char* file : {"gpt_pre.model.safetensors", "bert_post.model.safetensors"}) {
    SCOPED_TRACE(file);
    EXPECT_FALSE(state.load_model(kShapes + file));
    EXPECT_NE(state.error().find(std::string(file)[0] == 'g' ? "decoder_only" : "encoder_only"), std::string::npos)
        << state.error();
    EXPECT_NE(state.error().find("encoder-decoder"), std::string::npos) << state.error();
    ASSERT_TRUE(state.model());
    EXPECT_EQ(state.model()->config.stacks, ModelStacks::EncoderDecoder);
    EXPECT_TRUE(state.ready());
    EXPECT_EQ(state.translation(), translation);
  }
}

TEST(ModelShapes, TheBackgroundLoaderSaysTheShapeNotThatTheSentenceDoesNotFit) {
  // The file the Open dialog or a dropped file reads: refused as a file the views cannot show, before the app
  // tries the sentence on it (which would say the sentence does not fit).
  const LoadedModel r = read_model_file(kShapes + "gpt_pre.model.safetensors", nullptr);
  EXPECT_EQ(r.model, nullptr);
  EXPECT_EQ(r.error_kind, ErrorKind::Unsupported);
  EXPECT_NE(r.error.find("decoder_only"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace sf::gui
