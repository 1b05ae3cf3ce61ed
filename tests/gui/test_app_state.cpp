// The app state on the shipped model: every intervention and decoding action recomputes the translation and
// the trace at once, as the mathematics says, and a refused change leaves everything as it was.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/backend.h"
#include "gui/app_state.h"
#include "gui/panels/interventions_panel.h"
#include "util/parallel.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

// The word model (de-en): the words these tests force, feed and look for are its tokens.
class ShippedModel : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(state.load_model(shipped_model_path("de-en"))) << state.error();
    ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
    baseline = state.translation();
  }
  int id(const char* word) const { return *state.model()->tgt_vocab.find(word); }
  AppState state;
  std::vector<int> baseline;
};

TEST_F(ShippedModel, TranslatesTheExampleSentence) {
  EXPECT_EQ(state.translation_text(), "a man in an orange shirt is standing on the street.");
  EXPECT_TRUE(state.decoding_finished());
  EXPECT_EQ(state.trace().tgt.ids.size(), state.translation().size());  // <bos> + all but the last token
  // Stored as F16, its linear layers hold halves (read where the build has the vector kernel); the floats
  // and the halves give the same translation and the same output probabilities (to the last bit).
  EXPECT_TRUE(has_half_weights(state.model()->weights.generator));
  EXPECT_TRUE(has_half_weights(state.model()->weights.decoder_layers[2].ffn.fc1));
  const ModelWeights floats = state.model()->weights;  // a copy reads its floats
  EXPECT_FALSE(has_half_weights(floats.generator));
  Decoder decoder(state.model()->config, floats, state.decoder()->encoded().src.ids, {}, state.decoder()->options());
  decoder.run();
  EXPECT_EQ(decoder.generated(), state.translation());
  EXPECT_EQ(decoder.trace().probs, state.trace().probs);
}

TEST_F(ShippedModel, HeadOffZeroesItAndResetRestoresTheTranslationExactly) {
  Interventions iv;
  iv.heads_off.push_back({AttentionKind::Cross, 1, 3});
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  EXPECT_EQ(state.trace().decoder[1].cross_attn.head_out[3].cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_GT(state.trace().decoder[1].cross_attn.head_out[2].cwiseAbs().maxCoeff(), 0.0f);
  ASSERT_TRUE(state.set_interventions(Interventions{}));
  EXPECT_EQ(state.translation(), baseline);
}

TEST_F(ShippedModel, SwitchingBackAndForthRedecodesFromTheTranslationItHad) {
  // Decoder head 1.2 off drops "is" ("... orange shirt standing on ..."). The first time, the new translation is
  // guessed from the old one and part of it is decoded afresh; back as trained, and off again, the translation
  // those very interventions gave is remembered, so every token comes from the guess, checked in one pass.
  Interventions off;
  off.heads_off.push_back({AttentionKind::Decoder, 1, 2});
  ASSERT_TRUE(state.set_interventions(off)) << state.error();
  const std::vector<int> changed = state.translation();
  ASSERT_NE(changed, baseline);
  EXPECT_LT(state.last_guessed(), static_cast<int>(changed.size()));
  ASSERT_TRUE(state.set_interventions(Interventions{}));
  EXPECT_EQ(state.translation(), baseline);
  EXPECT_EQ(state.last_guessed(), static_cast<int>(baseline.size()));
  ASSERT_TRUE(state.set_interventions(off));
  EXPECT_EQ(state.translation(), changed);
  EXPECT_EQ(state.last_guessed(), static_cast<int>(changed.size()));
  // What decoding from scratch gives, trace included.
  Decoder fresh(state.model()->config, state.model()->weights, state.decoder()->encoded().src.ids, off,
                state.decoder()->options());
  fresh.run();
  EXPECT_EQ(fresh.generated(), changed);
  EXPECT_LT((fresh.trace().probs - state.trace().probs).cwiseAbs().maxCoeff(), 1e-5f);
}

TEST_F(ShippedModel, EveryCrossAttentionHeadOffLosesTheSource) {
  // Without cross-attention the decoder never reads the German sentence: the output cannot depend on it.
  Interventions iv;
  for (int l = 0; l < state.model()->config.n_decoder_layers; ++l)
    for (int h = 0; h < state.model()->config.n_heads; ++h) iv.heads_off.push_back({AttentionKind::Cross, l, h});
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  const std::vector<int> blind = state.translation();
  EXPECT_NE(blind, baseline);
  ASSERT_TRUE(state.set_sentence("Zwei Hunde spielen im Schnee.")) << state.error();
  EXPECT_EQ(state.translation(), blind);
}

TEST_F(ShippedModel, CausalMaskOffLetsThePastSeeTheFuture) {
  Interventions iv;
  iv.causal_mask = false;
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  const Mat& p = state.trace().decoder[0].self_attn.probs[0];
  ASSERT_GT(p.cols(), 2);
  EXPECT_GT(p.topRightCorner(1, p.cols() - 1).sum(), 0.0f);  // <bos> attends to later positions
  EXPECT_FALSE(state.decoder()->uses_kv_cache());
}

TEST_F(ShippedModel, PaintedMaskCellBlocksExactlyThatCell) {
  // One cell, (3, 1) of encoder layer 1, head 1: that cell becomes 0 and the rest of its row is the row renormalised
  // without it (softmax with one score at -inf); every other row of the head and every other head of the layer
  // are as they were (the layer's input is the same; later layers read the changed output and may change).
  const Trace before = state.trace();
  {
    Interventions one = state.interventions();
    ASSERT_TRUE(toggle_mask_cell(state.trace(), one, {AttentionKind::Encoder, 0, 0}, 3, 1));
    ASSERT_TRUE(state.set_interventions(one)) << state.error();
    const std::vector<Mat>& was = before.encoder[0].self_attn.probs;
    const std::vector<Mat>& now = state.trace().encoder[0].self_attn.probs;
    ASSERT_EQ(now.size(), was.size());
    const Mat& p0 = was[0];
    const Mat& p1 = now[0];
    EXPECT_EQ(p1(3, 1), 0.0f);
    for (Eigen::Index j = 0; j < p0.cols(); ++j)
      if (j != 1) {
        EXPECT_NEAR(p1(3, j), p0(3, j) / (1.0f - p0(3, 1)), 1e-5f) << "column " << j;
      }
    for (Eigen::Index i = 0; i < p0.rows(); ++i)
      if (i != 3) {
        EXPECT_LE((p1.row(i) - p0.row(i)).cwiseAbs().maxCoeff(), 1e-6f) << "row " << i;
      }
    for (size_t h = 1; h < now.size(); ++h)
      EXPECT_LE((now[h] - was[h]).cwiseAbs().maxCoeff(), 1e-6f) << "head " << h + 1 << " changed";
    ASSERT_TRUE(state.set_interventions(Interventions{})) << state.error();
  }
  Interventions iv = state.interventions();
  const HeadRef head{AttentionKind::Encoder, 0, 0};
  // Block every key but <bos> for query 3: its whole row of probability moves onto column 0.
  const int cols = static_cast<int>(state.trace().encoder[0].self_attn.probs[0].cols());
  for (int j = 1; j < cols; ++j) ASSERT_TRUE(toggle_mask_cell(state.trace(), iv, head, 3, j));
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  const Mat& p = state.trace().encoder[0].self_attn.probs[0];
  EXPECT_NEAR(p(3, 0), 1.0f, 1e-6f);
  EXPECT_LE((p.row(2) - before.encoder[0].self_attn.probs[0].row(2)).cwiseAbs().maxCoeff(), 1e-6f) << "other rows untouched";
  EXPECT_FALSE(toggle_mask_cell(state.trace(), iv, head, 99, 0));
}

TEST_F(ShippedModel, ANewSentenceDropsWhatBelongedToTheOldOnesPositions) {
  // Painted cells, forced tokens and the reference belong to the old sentence; switched-off heads and masks do
  // not, and stay.
  Interventions iv = state.interventions();
  ASSERT_TRUE(toggle_mask_cell(state.trace(), iv, {AttentionKind::Encoder, 0, 0}, 3, 1));
  iv.heads_off.push_back({AttentionKind::Cross, 2, 0});
  iv.causal_mask = false;
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  ASSERT_TRUE(state.force_token(1, id("woman"))) << state.error();
  ASSERT_FALSE(state.interventions().custom_masks.empty());
  ASSERT_FALSE(state.interventions().forced_prefix.empty());
  ASSERT_TRUE(state.set_sentence("Zwei Hunde spielen im Schnee.")) << state.error();
  EXPECT_TRUE(state.interventions().custom_masks.empty());
  EXPECT_TRUE(state.interventions().forced_prefix.empty());
  EXPECT_EQ(state.interventions().heads_off.size(), 1u);
  EXPECT_FALSE(state.interventions().causal_mask);
  EXPECT_GT(state.trace().encoder[0].self_attn.probs[0](3, 1), 0.0f) << "the painted cell no longer blocks";
  EXPECT_EQ(state.trace().interventions.custom_masks.size(), 0u);
}

TEST_F(ShippedModel, DecoderMaskPaintedOnTheFullPassKeepsWorkingWhileStepping) {
  Interventions iv = state.interventions();
  const HeadRef head{AttentionKind::Decoder, 0, 2};
  ASSERT_TRUE(toggle_mask_cell(state.trace(), iv, head, 3, 0));
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  ASSERT_TRUE(state.restart()) << state.error();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(state.step()) << state.error();
  EXPECT_EQ(state.trace().decoder[0].self_attn.probs[2](3, 0), 0.0f);
}

TEST_F(ShippedModel, PositionalEncodingOffMakesTheEncoderBlindToOrder) {
  Interventions iv;
  iv.positional_encoding = false;
  ASSERT_TRUE(state.set_interventions(iv)) << state.error();
  EXPECT_EQ(state.trace().src.pos.cwiseAbs().maxCoeff(), 0.0f);
  const Mat enc = state.trace().enc_out;
  // Swapping two source words swaps their encoder outputs and nothing else.
  ASSERT_TRUE(state.set_sentence("Mann Ein in einem orangefarbenen Hemd steht auf der Straße.")) << state.error();
  EXPECT_LT((state.trace().enc_out.row(1) - enc.row(2)).cwiseAbs().maxCoeff(), 1e-4f);
  EXPECT_LT((state.trace().enc_out.row(5) - enc.row(5)).cwiseAbs().maxCoeff(), 1e-4f);
}

TEST_F(ShippedModel, ForcingACandidateKeepsThePrefixAndContinues) {
  ASSERT_TRUE(state.force_token(1, id("woman"))) << state.error();
  ASSERT_GE(state.translation().size(), 3u);
  EXPECT_EQ(state.translation()[0], baseline[0]);
  EXPECT_EQ(state.translation()[1], id("woman"));
  EXPECT_TRUE(state.decoding_finished());
  EXPECT_EQ(state.translation().back(), state.model()->config.eos_id);
  EXPECT_NE(state.translation_text().find("woman"), std::string::npos) << state.translation_text();
}

TEST_F(ShippedModel, TeacherForcingFeedsTheReference) {
  ASSERT_TRUE(state.set_reference("a man in a red shirt stands on the road .")) << state.error();
  EXPECT_EQ(state.translation_text(), "a man in a red shirt stands on the road.");
  // The model's own prediction at the forced "red" (position 4) is still "orange".
  EXPECT_EQ(state.translation()[4], id("red"));
  int best = 0;
  state.trace().probs.row(4).maxCoeff(&best);
  EXPECT_EQ(best, id("orange"));
  ASSERT_TRUE(state.set_reference(""));
  EXPECT_EQ(state.translation(), baseline);
}

TEST_F(ShippedModel, StepBackAndForwardAndStrategies) {
  ASSERT_TRUE(state.restart());
  EXPECT_TRUE(state.translation().empty());
  EXPECT_EQ(state.trace().tgt.ids.size(), 1u);  // <bos> only: the pass that chooses the first token
  ASSERT_TRUE(state.step());
  ASSERT_TRUE(state.step());
  EXPECT_EQ(state.translation(), std::vector<int>(baseline.begin(), baseline.begin() + 2));
  ASSERT_TRUE(state.step_back());
  EXPECT_EQ(state.translation().size(), 1u);
  ASSERT_TRUE(state.run_to_end());
  EXPECT_EQ(state.translation(), baseline);
  DecodeOptions beam = state.decode_options();
  beam.strategy = DecodeStrategy::Beam;
  beam.beam_width = 4;
  ASSERT_TRUE(state.set_decode_options(beam)) << state.error();
  EXPECT_GT(state.decoder()->tree().size(), 10u);
  EXPECT_EQ(state.translation().back(), state.model()->config.eos_id);
  DecodeOptions bad = beam;
  bad.beam_width = 0;
  EXPECT_FALSE(state.set_decode_options(bad));
  EXPECT_NE(state.error().find("beam width"), std::string::npos) << state.error();
  EXPECT_EQ(state.decode_options().beam_width, 4);  // the previous options and result stay
}

TEST_F(ShippedModel, BadInterventionIsRefusedAndNothingChanges) {
  const int version = state.version();
  Interventions iv;
  iv.heads_off.push_back({AttentionKind::Encoder, 7, 0});  // the model has 3 layers
  EXPECT_FALSE(state.set_interventions(iv));
  EXPECT_NE(state.error().find("layer 8"), std::string::npos) << state.error();  // index 7: layer 8, numbered from 1
  EXPECT_TRUE(state.interventions().heads_off.empty());
  EXPECT_EQ(state.version(), version);
  EXPECT_EQ(state.translation(), baseline);
}

}  // namespace
}  // namespace sf::gui

namespace sf::gui {
namespace {

// --device for the views (gui/view_device.h): cpu computes there, saying nothing; cuda where no GPU can take
// the model still translates, on the CPU, and says why; with a GPU, cuda and auto decode and trace there, and a
// painted mask keeps a decoding on the CPU, saying so.
TEST(ViewDevice, TheViewsComputeWhereTheDeviceSaysAndSayWhyNot) {
  const std::string cpu = "CPU, " + std::to_string(parallel_threads()) + " threads";
  for (DeviceRequest request : {DeviceRequest::Cpu, DeviceRequest::Auto, DeviceRequest::Cuda}) {
    const std::string what = to_string(request);
    AppState state;
    state.set_device(std::make_shared<ViewDevice>(request));
    ASSERT_TRUE(state.load_model(shipped_model_path("de-en"))) << state.error();
    ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << what << ": " << state.error();
    EXPECT_EQ(state.translation_text(), "a man in an orange shirt is standing on the street.") << what;
    const bool gpu = backend_info().cuda_available && request != DeviceRequest::Cpu;
    if (gpu) {
      EXPECT_EQ(state.shown_device(), "GPU " + backend_info().cuda_device_name) << what;
      EXPECT_TRUE(state.decoder()->on_gpu()) << what;
      EXPECT_EQ(state.device_why(), "") << what;
      Interventions painted;
      painted.custom_masks.push_back({{AttentionKind::Cross, 0, 1}, Mat::Zero(state.trace().tgt.ids.size(), state.source_tokens().size())});
      ASSERT_TRUE(state.set_interventions(painted)) << what << ": " << state.error();
      EXPECT_EQ(state.shown_device(), cpu) << what;
      EXPECT_EQ(state.device_why(), "painted masks compute on the CPU") << what;
      continue;
    }
    EXPECT_EQ(state.shown_device(), cpu) << what;
    EXPECT_FALSE(state.decoder()->on_gpu()) << what;
    if (request == DeviceRequest::Cuda) {  // asked for, not there: the reason, and the work goes on
      EXPECT_NE(state.device_why().find("--device cuda"), std::string::npos) << state.device_why();
      EXPECT_GT(state.device_why().size(), std::string("--device cuda: ; the views compute on the CPU").size() + 10)
          << state.device_why() << ": no reason given";
      EXPECT_NE(state.device_why().find("the views compute on the CPU"), std::string::npos) << state.device_why();
    } else {
      EXPECT_EQ(state.device_why(), "") << what << ": nothing to say";
    }
    ASSERT_TRUE(state.step_back(3)) << what;  // stepping stays where it was computed
    EXPECT_EQ(state.shown_device(), cpu) << what;
  }
}

TEST(ShippedFrenchModel, TranslatesTheIssuesSentence) {
  AppState state;
  ASSERT_TRUE(state.load_model(shipped_model_path("fr-en"))) << state.error();
  ASSERT_TRUE(state.set_sentence("Un homme en uniforme orange pose au milieu d'une rue.")) << state.error();
  EXPECT_EQ(state.translation_text(), "a man in an orange uniform poses in the middle of a street.");
}

}  // namespace
}  // namespace sf::gui
