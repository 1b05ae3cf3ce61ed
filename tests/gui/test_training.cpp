// Watching a model learn (gui/training.h, the Training stage): a snapshot of the shipped classroom timeline
// shown in the app is the very model of that step (every traced tensor equals a fresh forward pass with the
// snapshot's weights, the user's interventions kept); the last snapshot's cross-attention is more peaked than the
// first's, in the state and on screen; and a live run started by a script shows its weights in the Training
// stage while it trains.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "../unit/renaming_corpus.h"
#include "app_under_xvfb.h"
#include "export_readers.h"
#include "gui/app_state.h"
#include "gui/training.h"
#include "transformer/forward.h"
#include "util/paths.h"

namespace sf::gui {
namespace {

namespace fs = std::filesystem;
using testing::fresh_output_dir;
using testing::headless_app_command;

float max_difference(const Mat& a, const Mat& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  return a.size() == 0 ? 0.0f : (a - b).cwiseAbs().maxCoeff();
}

// The mean row entropy of every cross-attention head of the last decoder layer, averaged.
double last_layer_cross_entropy(const Trace& trace, int heads) {
  double sum = 0;
  for (int h = 0; h < heads; ++h) sum += mean_row_entropy(trace.decoder.back().cross_attn.probs[static_cast<size_t>(h)]);
  return sum / heads;
}

class ShippedTimeline : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
    ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
    training.set_file_model(state.model(), state.model_path());
    training.want_shipped_timeline();
    training.finish_loading();
    training.poll(state);
    ASSERT_NE(training.timeline(), nullptr) << training.timeline_error();
  }
  AppState state;
  Training training;
};

TEST_F(ShippedTimeline, HasTenSnapshotsFromStepZeroToTheEndStoredAsEightBitRows) {
  const TrainingTimeline& t = *training.timeline();
  ASSERT_GE(t.snapshots.size(), 10u);
  EXPECT_EQ(t.snapshots.front().step, 0);
  EXPECT_EQ(t.snapshots.front().epoch, 0);
  EXPECT_GT(t.snapshots.back().step, 900);
  EXPECT_GT(t.snapshots.back().valid_bleu, 30.0);
  EXPECT_EQ(t.storage, SnapshotStorage::Int8Rows);
  EXPECT_EQ(t.model.config.d_model, 128);
  EXPECT_LE(fs::file_size(shipped_model_path("classroom-de-en.timeline")), 30u * 1000 * 1000);
}

TEST_F(ShippedTimeline, ASnapshotShownIsTheModelOfThatStepWithTheInterventionsKept) {
  const TrainingTimeline& t = *training.timeline();
  const int last = static_cast<int>(t.snapshots.size()) - 1;
  ASSERT_TRUE(training.show_snapshot(state, last)) << state.error();  // a new model: the interventions start afresh
  Interventions off;
  off.heads_off.push_back({AttentionKind::Cross, 1, 2});
  ASSERT_TRUE(state.set_interventions(off)) << state.error();
  for (int index : {0, 4, last}) {
    ASSERT_TRUE(training.show_snapshot(state, index)) << state.error();
    EXPECT_EQ(training.shown_snapshot(), index);
    EXPECT_EQ(state.interventions(), off) << "scrubbing kept the head switched off";
    const Model model = snapshot_model(t, static_cast<size_t>(index));
    EXPECT_EQ(state.model()->weights.decoder_layers[0].cross_attn.q.weight, model.weights.decoder_layers[0].cross_attn.q.weight);
    const Trace fresh = forward(model.config, model.weights, state.trace().src.ids, state.trace().tgt.ids, off);
    EXPECT_LT(max_difference(fresh.logits, state.trace().logits), 1e-4f) << "snapshot " << index;
    for (size_t l = 0; l < fresh.decoder.size(); ++l)
      for (int h = 0; h < model.config.n_heads; ++h)
        EXPECT_LT(max_difference(fresh.decoder[l].cross_attn.probs[static_cast<size_t>(h)],
                                 state.trace().decoder[l].cross_attn.probs[static_cast<size_t>(h)]), 1e-5f)
            << "snapshot " << index << " layer " << l << " head " << h;
    EXPECT_NE(training.shown_label(state).find("step " + std::to_string(t.snapshots[static_cast<size_t>(index)].step)),
              std::string::npos) << training.shown_label(state);
  }
  EXPECT_NE(training.weights_note(state).find("8-bit integers"), std::string::npos) << training.weights_note(state);
  // Back to the file: its own translation, and the label gone.
  ASSERT_TRUE(training.show_file_model(state)) << state.error();
  EXPECT_EQ(training.shown_snapshot(), -1);
  EXPECT_EQ(training.shown_label(state), "");
  ASSERT_TRUE(state.set_interventions(Interventions{}));
  EXPECT_EQ(state.translation_text(), "a man in an orange shirt is standing on the street.");
}

TEST_F(ShippedTimeline, TheTranslationGoesFromRepeatedWordsToTheSentenceAndAttentionSharpens) {
  const int last = static_cast<int>(training.timeline()->snapshots.size()) - 1;
  ASSERT_TRUE(training.show_snapshot(state, 0)) << state.error();
  const std::string before = state.translation_text();
  const double entropy_before = last_layer_cross_entropy(state.trace(), state.model()->config.n_heads);
  ASSERT_TRUE(training.show_snapshot(state, last)) << state.error();
  EXPECT_EQ(state.translation_text(), "a man in an orange shirt stands on the street.");
  EXPECT_NE(before, state.translation_text());
  const double entropy_after = last_layer_cross_entropy(state.trace(), state.model()->config.n_heads);
  EXPECT_LT(entropy_after, entropy_before - 0.2) << "before " << entropy_before << ", after " << entropy_after;
}

TEST_F(ShippedTimeline, ABadSnapshotNumberIsRefusedAndWhatIsShownStays) {
  const std::vector<int> shown = state.translation();
  EXPECT_FALSE(training.show_snapshot(state, 10000));
  EXPECT_NE(state.error().find("0 to"), std::string::npos) << state.error();
  EXPECT_FALSE(training.show_snapshot(state, -1));
  EXPECT_EQ(state.translation(), shown);
  EXPECT_EQ(training.shown_snapshot(), -1);
}

TEST(MeanRowEntropy, IsLnNForEvenRowsAndZeroForOneHot) {
  Mat even = Mat::Constant(3, 4, 0.25f);
  EXPECT_NEAR(mean_row_entropy(even), std::log(4.0), 1e-6);
  Mat one = Mat::Zero(2, 5);
  one(0, 1) = one(1, 4) = 1.0f;
  EXPECT_NEAR(mean_row_entropy(one), 0.0, 1e-9);
  one(1, 0) = NAN;  // a blocked cell counts as zero
  EXPECT_NEAR(mean_row_entropy(one), 0.0, 1e-9);
}

// The renaming corpus (renaming_corpus.h) under the file names live training reads (de, en).
fs::path tiny_corpus(const fs::path& dir) {
  sf::testing::write_renaming_corpus(dir, "de", "en", 120, 12, 8, 5);
  return dir;
}

TEST(LiveTraining, RefusesAnUnknownRecipeMissingDataAndASecondRun) {
  Training training;
  std::string error;
  EXPECT_FALSE(training.start("huge", "/nonexistent", 1, &error));
  EXPECT_NE(error.find("classroom"), std::string::npos) << error;
  EXPECT_FALSE(training.start("classroom", "/nonexistent", 1, &error));
  EXPECT_NE(error.find("train.lc.norm.tok.de"), std::string::npos) << error;
  EXPECT_FALSE(training.start("classroom", "", 1, &error));
  EXPECT_NE(error.find("--data"), std::string::npos) << error;
  EXPECT_FALSE(training.running());
  // A run going (a minute or more of data): a second is refused, and the first goes on, its timeline kept.
  const fs::path data = fresh_output_dir("live_training_second_run") / "data";
  sf::testing::write_renaming_corpus(data, "de", "en", 200000, 12, 8, 5);
  ASSERT_TRUE(training.start("classroom", data.string(), 1, &error)) << error;
  ASSERT_TRUE(training.running());
  const TrainingTimeline* first = training.timeline();
  error.clear();
  EXPECT_FALSE(training.start("classroom", data.string(), 1, &error));
  EXPECT_EQ(error, "a training run is going: stop it first");
  EXPECT_TRUE(training.running()) << "the first run goes on";
  EXPECT_EQ(training.timeline(), first) << "and keeps its timeline";
  training.stop();
}

// The recipes: the two translators as they were, and a GPT (decoder-only) of the English captions with the options
// `stepformer-cli train --shape decoder-only` sets (learned positions, pre-norm and a final norm, GELU, tied output).
TEST(TrainingRecipes, TheTranslatorsAsTheyWereAndADecoderOnlyGpt) {
  ASSERT_EQ(training_recipe_ids(), "classroom, de-en, gpt-classroom, bert-classroom");
  const TrainingRecipe* classroom = find_training_recipe("classroom");
  const TrainingRecipe* shipped = find_training_recipe("de-en");
  const TrainingRecipe* gpt = find_training_recipe("gpt-classroom");
  ASSERT_TRUE(classroom && shipped && gpt);
  for (const TrainingRecipe* translator : {classroom, shipped}) {
    EXPECT_EQ(translator->options.model.stacks, ModelStacks::EncoderDecoder);
    EXPECT_EQ(translator->options.source_language, "de");
    EXPECT_EQ(translator->options.target_language, "en");
  }
  EXPECT_EQ(classroom->options.model.d_model, 128);
  EXPECT_EQ(classroom->options.model.n_encoder_layers, 2);
  EXPECT_EQ(classroom->options.epochs, 6);
  EXPECT_EQ(shipped->options.model.d_model, 256);
  EXPECT_EQ(shipped->options.epochs, 18);
  const TrainOptions& o = gpt->options;
  EXPECT_EQ(o.model.stacks, ModelStacks::DecoderOnly);
  EXPECT_EQ(o.source_language, "");
  EXPECT_EQ(o.target_language, "en");
  EXPECT_EQ(o.model.n_encoder_layers, 0);
  EXPECT_EQ(o.model.n_decoder_layers, 2);
  EXPECT_EQ(o.model.d_model, 128);
  EXPECT_EQ(o.model.n_heads, 4);
  EXPECT_EQ(o.model.d_ff, 512);
  EXPECT_EQ(o.model.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(o.model.norm_placement, NormPlacement::Pre);
  EXPECT_TRUE(o.model.decoder_final_norm);
  EXPECT_FALSE(o.model.encoder_final_norm);
  EXPECT_EQ(o.model.activation, Activation::GELU);
  EXPECT_TRUE(o.model.tie_output_embedding);
  EXPECT_GE(o.model.max_positions, o.max_length);
  EXPECT_NE(std::string(tr(gpt->about)).find("decoder-only"), std::string::npos);
  // A language model reads one language's file: the message names it.
  Training training;
  std::string error;
  EXPECT_FALSE(training.start("gpt-classroom", "/nonexistent", 1, &error));
  EXPECT_NE(error.find("train.lc.norm.tok.en"), std::string::npos) << error;
}

// A GPT run replacing the translator on show: the views follow its weights as a GPT (decoder-only, the prompt
// kTrainingPrompt), its decoder self-attention is causal (nothing above the diagonal), it continues the prompt, and
// each epoch's validation is a perplexity (BLEU 0), kept in the timeline's epoch-end snapshots.
TEST(LiveTraining, AGptRunShowsCausalSelfAttentionAndAContinuation) {
  const fs::path data = tiny_corpus(fresh_output_dir("live_training_gpt") / "data");
  AppState state;
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  state.finish_background();
  ASSERT_FALSE(state.decoder_only());
  Training training;
  training.set_file_model(state.model(), state.model_path());
  std::string error;
  ASSERT_TRUE(training.start("gpt-classroom", data.string(), 1, &error)) << error;
  for (int i = 0; i < 6000 && training.running(); ++i) {
    training.poll(state);
    state.poll_background();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(training.running()) << "the run did not end in 60 s";
  training.refresh_now();  // (its polls also read the run's last status)
  for (int i = 0; i < 1000 && training.refresh_pending(); ++i) {
    training.poll(state);
    state.poll_background();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  state.finish_background();
  EXPECT_FALSE(training.refresh_pending());
  ASSERT_EQ(training.status().state, TrainingSession::State::Finished) << training.status().message;
  EXPECT_GT(training.status().step, 0);
  EXPECT_EQ(training.live_step_shown(), training.status().step);
  ASSERT_TRUE(state.model()) << state.error();
  EXPECT_TRUE(state.decoder_only());
  EXPECT_EQ(state.model()->config.n_encoder_layers, 0);
  EXPECT_EQ(state.model()->config.n_decoder_layers, 2);
  EXPECT_EQ(state.sentence(), kTrainingPrompt);
  ASSERT_TRUE(state.ready()) << state.error();
  EXPECT_FALSE(state.translation().empty()) << "a continuation: at least its <eos>";
  // Causal: row i of every head sees keys 0..i only (the triangle the panel shows).
  const Trace& trace = state.trace();
  ASSERT_EQ(trace.decoder.size(), 2u);
  for (const auto& layer : trace.decoder)
    for (const Mat& p : layer.self_attn.probs) {
      ASSERT_EQ(p.rows(), p.cols());
      ASSERT_GE(p.rows(), 6) << "<bos> a man in an orange";
      for (Eigen::Index i = 0; i < p.rows(); ++i)
        for (Eigen::Index j = i + 1; j < p.cols(); ++j) EXPECT_EQ(p(i, j), 0.0f) << i << "," << j;
    }
  ASSERT_EQ(training.status().history.size(), 6u);
  for (const EpochRecord& e : training.status().history) {
    EXPECT_GT(e.valid_nll, 0.0);
    EXPECT_EQ(e.valid_bleu, 0.0);
  }
  ASSERT_NE(training.timeline(), nullptr);
  const TimelineSnapshot& last = training.timeline()->snapshots.back();
  EXPECT_GE(last.valid_perplexity, 1.0);
  EXPECT_LT(last.valid_bleu, 0.0);
  // A snapshot of the run is a GPT too; the model file (the translator) comes back with its sentence.
  ASSERT_TRUE(training.show_snapshot(state, 0)) << state.error();
  state.finish_background();
  EXPECT_TRUE(state.decoder_only());
  EXPECT_EQ(state.sentence(), kTrainingPrompt);
  ASSERT_TRUE(training.show_file_model(state));
  state.finish_background();
  EXPECT_FALSE(state.decoder_only());
  EXPECT_EQ(state.sentence(), kDefaultSentence);
}

// The fourth recipe: a BERT (encoder-only masked language model) of the English captions with the choices the
// shipped bert-en was trained with (`stepformer-cli train --shape encoder-only`: learned positions, post-norm and
// no final norm, GELU, tied output, no label smoothing), at the classroom's size.
TEST(TrainingRecipes, AnEncoderOnlyBertAsBertEnWasTrained) {
  const TrainingRecipe* bert = find_training_recipe("bert-classroom");
  ASSERT_TRUE(bert);
  const TrainOptions& o = bert->options;
  EXPECT_EQ(o.model.stacks, ModelStacks::EncoderOnly);
  EXPECT_EQ(o.source_language, "");
  EXPECT_EQ(o.target_language, "en");
  EXPECT_EQ(o.model.n_encoder_layers, 2);
  EXPECT_EQ(o.model.n_decoder_layers, 0);
  EXPECT_EQ(o.model.d_model, 128);
  EXPECT_EQ(o.model.n_heads, 4);
  EXPECT_EQ(o.model.d_ff, 512);
  EXPECT_EQ(o.model.positional_encoding, PositionalEncoding::Learned);
  EXPECT_EQ(o.model.norm_placement, NormPlacement::Post);
  EXPECT_FALSE(o.model.encoder_final_norm);
  EXPECT_FALSE(o.model.decoder_final_norm);
  EXPECT_EQ(o.model.activation, Activation::GELU);
  EXPECT_TRUE(o.model.tie_output_embedding);
  EXPECT_EQ(o.label_smoothing, 0.0f);
  EXPECT_GE(o.model.max_positions, o.max_length);
  EXPECT_NE(std::string(tr(bert->about)).find("[MASK]"), std::string::npos);
  Training training;
  std::string error;
  EXPECT_FALSE(training.start("bert-classroom", "/nonexistent", 1, &error));
  EXPECT_NE(error.find("train.lc.norm.tok.en"), std::string::npos) << error;
}

// A BERT run replacing the translator on show: the views follow its weights as a BERT (encoder-only) reading
// kTrainingBlankSentence, whose [MASK] is filled in; its self-attention sees both sides (every cell of every row
// open, above the diagonal too); each epoch's validation is a masked-word perplexity and accuracy (BLEU 0). A
// snapshot is a BERT too, and the model file comes back with its German sentence.
TEST(LiveTraining, ABertRunShowsBothSidesAndFillsTheBlank) {
  const fs::path data = tiny_corpus(fresh_output_dir("live_training_bert") / "data");
  AppState state;
  ASSERT_TRUE(state.load_model(default_model_path())) << state.error();
  ASSERT_TRUE(state.set_sentence(kDefaultSentence)) << state.error();
  state.finish_background();
  Training training;
  training.set_file_model(state.model(), state.model_path());
  std::string error;
  ASSERT_TRUE(training.start("bert-classroom", data.string(), 1, &error)) << error;
  for (int i = 0; i < 6000 && training.running(); ++i) {
    training.poll(state);
    state.poll_background();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(training.running()) << "the run did not end in 60 s";
  training.refresh_now();
  for (int i = 0; i < 1000 && training.refresh_pending(); ++i) {
    training.poll(state);
    state.poll_background();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  state.finish_background();
  ASSERT_EQ(training.status().state, TrainingSession::State::Finished) << training.status().message;
  EXPECT_EQ(training.live_step_shown(), training.status().step);
  ASSERT_TRUE(state.model()) << state.error();
  EXPECT_TRUE(state.encoder_only());
  EXPECT_EQ(state.model()->config.n_encoder_layers, 2);
  EXPECT_EQ(state.model()->config.n_decoder_layers, 0);
  EXPECT_GE(state.model()->config.mask_id, 0);
  EXPECT_EQ(state.sentence(), kTrainingBlankSentence);
  ASSERT_TRUE(state.ready()) << state.error();
  // [CLS] a man in an orange [MASK] ...: position 6 reads the mask id, and the filled-in text brackets a word there
  const std::vector<Token>& tokens = state.source_tokens();
  ASSERT_GE(tokens.size(), 8u);
  EXPECT_EQ(tokens[6].id, state.model()->config.mask_id);
  const std::string filled = state.filled_in_text();
  EXPECT_EQ(filled.rfind("[CLS] a man in an orange [", 0), 0u) << "the blank in brackets: " << filled;
  EXPECT_NE(filled.find("] is standing on the street . [SEP]"), std::string::npos) << filled;
  const Trace& trace = state.trace();
  ASSERT_EQ(trace.encoder.size(), 2u);
  for (const auto& layer : trace.encoder)
    for (const Mat& p : layer.self_attn.probs) {
      ASSERT_EQ(p.rows(), p.cols());
      ASSERT_EQ(p.rows(), static_cast<Eigen::Index>(tokens.size()));
      EXPECT_GT(p(0, p.cols() - 1), 0.0f) << "[CLS] sees [SEP], after it";
      EXPECT_GT(p.minCoeff(), 0.0f) << "no cell blocked";
    }
  ASSERT_EQ(training.status().history.size(), 8u);
  for (const EpochRecord& e : training.status().history) {
    EXPECT_GT(e.valid_nll, 0.0);
    EXPECT_EQ(e.valid_bleu, 0.0);
    EXPECT_GE(e.valid_masked_accuracy, 0.0);
    EXPECT_LE(e.valid_masked_accuracy, 1.0);
  }
  ASSERT_NE(training.timeline(), nullptr);
  EXPECT_GE(training.timeline()->snapshots.back().valid_perplexity, 1.0);
  ASSERT_TRUE(training.show_snapshot(state, 0)) << state.error();
  state.finish_background();
  EXPECT_TRUE(state.encoder_only());
  EXPECT_EQ(state.sentence(), kTrainingBlankSentence);
  ASSERT_TRUE(training.show_file_model(state));
  state.finish_background();
  EXPECT_FALSE(state.encoder_only());
  EXPECT_EQ(state.sentence(), kDefaultSentence);
}

// A model file with a timeline beside it (MODEL.timeline.safetensors) opens that timeline; without one there is
// none (until the shipped one is asked for). Saving the timeline never writes over the open model nor over the
// timeline file it came from, even when told to replace.
TEST(TrainingFiles, TheTimelineBesideAModelOpensAndSavingItNeverOverwritesTheModel) {
  const fs::path dir = fresh_output_dir("training_timeline_beside");
  const fs::path model = dir / "m.safetensors", beside = dir / "m.timeline.safetensors";
  fs::copy_file(default_model_path(), model);
  AppState state;
  ASSERT_TRUE(state.load_model(model.string())) << state.error();
  {
    Training without;
    without.set_file_model(state.model(), state.model_path());
    without.finish_loading();
    without.poll(state);
    EXPECT_EQ(without.timeline(), nullptr) << "no timeline beside it";
  }
  fs::copy_file(shipped_model_path("classroom-de-en.timeline"), beside);
  Training training;
  training.set_file_model(state.model(), state.model_path());
  training.finish_loading();
  training.poll(state);
  ASSERT_NE(training.timeline(), nullptr) << training.timeline_error();
  EXPECT_EQ(training.timeline_source(), beside.string());
  EXPECT_GE(training.timeline()->snapshots.size(), 10u);

  const std::string model_bytes = test::read_bytes(model.string()), timeline_bytes = test::read_bytes(beside.string());
  for (const fs::path& target : {model, beside}) {
    const std::string refused = training.save_timeline_to(target.string(), /*replace=*/true);
    EXPECT_NE(refused, "") << target;
    EXPECT_NE(refused.find(std::string(1, '\'').append(target.string()).append(1, '\'')), std::string::npos) << refused;
  }
  EXPECT_EQ(test::read_bytes(model.string()), model_bytes) << "the open model is untouched";
  EXPECT_EQ(test::read_bytes(beside.string()), timeline_bytes);
  const fs::path copy = dir / "copy.timeline.safetensors";
  EXPECT_EQ(training.save_timeline_to(copy.string(), false), "");
  EXPECT_EQ(load_timeline(copy.string()).snapshots.size(), training.timeline()->snapshots.size());
  EXPECT_NE(training.save_timeline_to(copy.string(), false), "") << "an existing file is not replaced unasked";
}

TEST(LiveTraining, AppStateFollowsTheRunsWeightsAndItsTimelineGrows) {
  const fs::path data = tiny_corpus(fresh_output_dir("live_training_state") / "data");
  AppState state;
  state.keep_sentence("w1 w2 w3");
  Training training;
  std::string error;
  ASSERT_TRUE(training.start("classroom", data.string(), 1, &error)) << error;
  // Poll as the frames do until the run ends; the views then show the weights of its last step.
  for (int i = 0; i < 6000 && training.running(); ++i) {
    training.poll(state);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(training.running()) << "the run did not end in 60 s";
  training.refresh_now();  // the weights of the last step, as a script's wait-train asks
  for (int i = 0; i < 1000 && training.refresh_pending(); ++i) {
    training.poll(state);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(training.refresh_pending());
  ASSERT_EQ(training.status().state, TrainingSession::State::Finished) << training.status().message;
  ASSERT_TRUE(state.model()) << state.error();
  EXPECT_EQ(state.model()->config.d_model, 128);
  EXPECT_EQ(training.live_step_shown(), training.status().step);
  EXPECT_EQ(training.losses().size(), static_cast<size_t>(training.status().step));
  EXPECT_EQ(training.status().history.size(), 6u);
  ASSERT_NE(training.timeline(), nullptr);
  EXPECT_EQ(training.timeline()->snapshots.front().step, 0);
  EXPECT_EQ(training.timeline()->snapshots.back().step, training.status().step);
  EXPECT_TRUE(state.ready());
  EXPECT_NE(training.shown_label(state).find("live training"), std::string::npos);
  // The timeline of the run can be saved, never over an existing file unless asked, and reads back.
  const fs::path saved = data.parent_path() / "run.timeline.safetensors";
  EXPECT_EQ(training.save_timeline_to(saved.string(), false), "");
  EXPECT_NE(training.save_timeline_to(saved.string(), false), "") << "replaced an existing file";
  EXPECT_EQ(load_timeline(saved.string()).snapshots.size(), training.timeline()->snapshots.size());
}

// Views that decode slower than the live refresh interval, as a beam of 64 does under a sanitizer: a sentence, the
// app's frame budget (decodings run off the frame thread), and every decoding held longer than kRefreshSeconds.
// Returns how long each is held.
double hold_every_decoding(AppState& state) {
  state.keep_sentence("w1 w2 w3");
  state.set_step_budget_ms(1);
  const double hold_seconds = Training::kRefreshSeconds + 0.5;
  state.set_worker_start_hook([hold_seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(hold_seconds));
  });
  return hold_seconds;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A decoding slower than the refresh interval (a beam of 64 on a long sentence does that, under a sanitizer most
// of all) must not be restarted by the next weights the moment it ends: the result stays on show kRefreshSeconds
// with nothing decoding, and a script waiting for the views to settle (busy() false) gets its turn. Before, the
// frame that took the finished decoding also showed the next weights, so busy() never fell: the monkey test's
// script waited for ever behind a live run.
TEST(LiveTraining, ASlowDecodingSettlesBeforeTheNextWeightsAreShown) {
  // A run of a minute or more: it is still training when the views settle, so newer weights always come, and
  // the interval before them is always checked.
  const fs::path data = fresh_output_dir("live_training_slow_views") / "data";
  sf::testing::write_renaming_corpus(data, "de", "en", 200000, 12, 8, 5);
  AppState state;
  hold_every_decoding(state);
  Training training;
  std::string error;
  ASSERT_TRUE(training.start("classroom", data.string(), 1, &error)) << error;
  int64_t first_step = -1;
  bool was_busy = false;
  std::optional<Clock::time_point> settled_at;  // the first frame after the first decoding with none in flight
  double settled_for = -1;
  const auto start = Clock::now();
  while (seconds_since(start) < 60) {  // frames, as the app's loop runs them
    state.poll_background();
    training.poll(state);
    const bool busy = state.busy();
    if (first_step < 0) first_step = training.live_step_shown();
    if (!settled_at) {
      if (busy) was_busy = true;
      if (!busy && was_busy) {
        settled_at = Clock::now();
        ASSERT_EQ(training.live_step_shown(), first_step) << "the next weights came in the frame the decoding ended";
        ASSERT_TRUE(training.running()) << "the run ended before the views settled: this test needs a longer one";
      }
    } else if (busy || training.live_step_shown() != first_step) {
      settled_for = seconds_since(*settled_at);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  state.set_worker_start_hook(nullptr);
  training.stop();
  ASSERT_TRUE(settled_at) << "the views never settled in 60 s";
  ASSERT_GE(first_step, 0);
  // The run went on, so newer weights came (or a decoding started): a whole interval after the views settled.
  ASSERT_GE(settled_for, 0) << "nothing new came in 60 s after the views settled";
  EXPECT_GE(settled_for, Training::kRefreshSeconds - 0.1);
  state.finish_background();
}

// wait-train's own refresh (refresh_now) ends once its weights are on show and decoded, even while the run goes
// on and the regular refreshes keep coming: before, refresh_pending() also counted those, so with decodings slower
// than the interval a script's wait-train never ended.
TEST(LiveTraining, ARefreshAskedForEndsWhileTheRunGoesOn) {
  const fs::path data = fresh_output_dir("live_training_refresh_asked") / "data";
  sf::testing::write_renaming_corpus(data, "de", "en", 200000, 12, 8, 5);  // a run of a minute or more
  AppState state;
  const double hold_seconds = hold_every_decoding(state);
  Training training;
  std::string error;
  ASSERT_TRUE(training.start("classroom", data.string(), 1, &error)) << error;
  const auto frame = [&] {
    state.poll_background();
    training.poll(state);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const auto start = Clock::now();
  while (seconds_since(start) < 30 && (training.live_step_shown() < 0 || state.busy())) frame();
  ASSERT_GE(training.live_step_shown(), 0) << "no weights shown in 30 s";
  ASSERT_TRUE(training.running()) << "the run ended too soon for this test";
  training.refresh_now();  // as wait-train does once its step is reached
  const auto asked = Clock::now();
  // As the script waits: until no decoding is in flight and the refresh asked for is done.
  while (seconds_since(asked) < 20 && (state.busy() || training.refresh_pending())) frame();
  const double waited = seconds_since(asked);
  EXPECT_TRUE(training.running()) << "the run ended: the regular refreshes stopped, so this proves nothing";
  state.set_worker_start_hook(nullptr);
  training.stop();
  state.finish_background();
  EXPECT_LT(waited, hold_seconds + 2.5) << "the refresh asked for was still pending after " << waited << " s";
}

// Saved to a model file, a run writes the model and its checkpoint after every epoch; started again with the same
// name it resumes from the checkpoint (here: after its last epoch, so it has nothing left to train) and ends
// with the same weights. A user's file without a checkpoint, or the open model file, is refused.
TEST(LiveTraining, ASavedRunResumesFromItsCheckpoint) {
  const fs::path dir = fresh_output_dir("live_training_saved");
  const fs::path data = tiny_corpus(dir / "data");
  const fs::path model = dir / "run.safetensors";
  const auto run_to_end = [&](Training& training) {
    for (int i = 0; i < 6000 && training.running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    AppState state;
    training.poll(state);
    return training.status();
  };
  Training first;
  std::string error;
  ASSERT_TRUE(first.start("classroom", data.string(), 1, &error, model.string())) << error;
  EXPECT_FALSE(first.resumed());
  const TrainingSession::Status done = run_to_end(first);
  ASSERT_EQ(done.state, TrainingSession::State::Finished) << done.message;
  ASSERT_TRUE(fs::exists(model));
  ASSERT_TRUE(fs::exists(model.string() + ".checkpoint"));
  Training again;
  ASSERT_TRUE(again.start("classroom", data.string(), 1, &error, model.string())) << error;
  EXPECT_TRUE(again.resumed());
  const TrainingSession::Status resumed = run_to_end(again);
  ASSERT_EQ(resumed.state, TrainingSession::State::Finished) << resumed.message;
  EXPECT_EQ(resumed.step, done.step) << "the resumed run starts where the first ended";
  EXPECT_TRUE(again.losses().empty()) << "no step was trained again";
  ASSERT_NE(again.timeline(), nullptr);
  EXPECT_EQ(again.timeline()->snapshots.back().step, done.step);
  EXPECT_TRUE(again.timeline()->snapshots.back().weights.tgt_embedding ==
              first.timeline()->snapshots.back().weights.tgt_embedding);
  // Refused: a file of the user's (no checkpoint beside it), and the open model file.
  std::ofstream(dir / "mine.safetensors") << "my work";
  Training refused;
  EXPECT_FALSE(refused.start("classroom", data.string(), 1, &error, (dir / "mine.safetensors").string()));
  EXPECT_NE(error.find("has no checkpoint beside it"), std::string::npos) << error;
  EXPECT_EQ(test::read_bytes((dir / "mine.safetensors").string()), "my work");
  // The open model, even with a checkpoint beside it (it looks like a run to resume): never written over.
  fs::copy_file(model, dir / "open.safetensors");
  fs::copy_file(model.string() + ".checkpoint", dir / "open.safetensors.checkpoint");
  refused.set_file_model(nullptr, (dir / "open.safetensors").string());
  EXPECT_FALSE(refused.start("classroom", data.string(), 1, &error, (dir / "open.safetensors").string()));
  EXPECT_NE(error.find("is the same file as the input"), std::string::npos) << error;
  EXPECT_FALSE(refused.running());
}

// On screen: the Training stage at the first and the last snapshot of the shipped run. The large map's exported
// values are the snapshot's cross-attention: the last is more peaked.
TEST(TrainingScreen, TimelineFirstAndLastSnapshot) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_timeline_screen");
  std::ofstream(dir / "timeline.script") << "stage training\n"
                                            "snapshot 0\nexport-csv first.csv\nscreenshot first.png\n"
                                            "snapshot latest\nexport-csv last.csv\nscreenshot last.png\n"
                                            "layout last.json\nquit\n";
  const std::string cmd = "cd '" + dir.string() + "' && " +
                          headless_app_command("--no-settings --script timeline.script") + " > log.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test::read_bytes((dir / "log.txt").string());
  const std::string log = test::read_bytes((dir / "log.txt").string());
  EXPECT_EQ(log.find("script line"), std::string::npos) << log;
  const test::Csv first = test::parse_csv(test::read_bytes((dir / "first.csv").string()));
  const test::Csv last = test::parse_csv(test::read_bytes((dir / "last.csv").string()));
  ASSERT_GT(first.rows, 0);
  ASSERT_GT(last.rows, 0);
  EXPECT_EQ(first.cols, 13);  // <bos> ein mann in einem orangefarbenen hemd steht auf der straße . <eos>
  const auto entropy = [](const test::Csv& csv) {
    return mean_row_entropy(Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                                csv.values.data(), csv.rows, csv.cols).cast<float>());
  };
  EXPECT_LT(entropy(last), entropy(first) - 0.2) << "first " << entropy(first) << ", last " << entropy(last);
  const testing::Image a = testing::load_png(dir / "first.png"), b = testing::load_png(dir / "last.png");
  ASSERT_GT(a.width, 0);
  ASSERT_GT(b.width, 0);
  const nlohmann::json layout = testing::load_json(dir / "last.json");
  bool head_map = false;
  for (const auto& h : layout["heatmaps"]) head_map = head_map || h["name"] == "training_cross_head";
  EXPECT_TRUE(head_map) << layout.dump();
}

// Runs the app headless from `dir` on the script `name` (its `text` written there first) with --data `data`, at
// most 120 s: the exit status as std::system gives it, and the app's output.
struct ScriptRun {
  int status = -1;
  std::string log;
};
ScriptRun run_training_script(const fs::path& dir, const fs::path& data, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  const std::string cmd = "cd '" + dir.string() + "' && timeout 120 " +
                          headless_app_command("--no-settings --data '" + data.string() + "' --script " + name) +
                          " > log.txt 2>&1";
  ScriptRun r;
  r.status = std::system(cmd.c_str());
  r.log = test::read_bytes((dir / "log.txt").string());
  return r;
}

// On screen during a run: a script starts the classroom recipe on a tiny corpus, waits for a few steps and
// takes a screenshot of the Training stage with its curves and the live cross-attention.
TEST(TrainingScreen, DuringAShortLiveRun) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_live_screen");
  const fs::path data = tiny_corpus(dir / "data");
  const ScriptRun run = run_training_script(dir, data, "live.script",
                                            "sentence w1 w2 w3 w4\nstage training\ntrain start classroom saved.safetensors\n"
                                            "wait-train 3\nscreenshot during.png\nlayout during.json\n"
                                            "train stop\nwait-train 100\nquit\n");
  ASSERT_EQ(run.status, 0) << run.log;
  const std::string& log = run.log;
  EXPECT_EQ(log.find("script line"), std::string::npos) << log;
  // Saved where the script may write: the model and its checkpoint after every epoch (one batch each here).
  EXPECT_TRUE(fs::exists(dir / "saved.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "saved.safetensors.checkpoint"));
  const testing::Image shot = testing::load_png(dir / "during.png");
  ASSERT_GT(shot.width, 0);
  const nlohmann::json layout = testing::load_json(dir / "during.json");
  bool head_map = false;
  for (const auto& h : layout["heatmaps"])
    if (h["name"] == "training_cross_head") head_map = h["cols"] == 6;  // <bos> w1 w2 w3 w4 <eos>
  EXPECT_TRUE(head_map) << layout.dump();
  // The curves: the training loss has a point per step taken (3 or more), its last value a loss a model of this
  // corpus can have (between 0 and a few nats); the validation loss a point per finished epoch (one batch each).
  std::optional<nlohmann::json> loss, valid;
  for (const auto& item : layout["items"]) {
    if (item["name"] == "training.loss_curve") loss = item;
    if (item["name"] == "training.valid_curve") valid = item;
  }
  ASSERT_TRUE(loss && valid) << layout.dump();
  EXPECT_GE(loss->at("index").get<int>(), 3) << loss->dump();
  EXPECT_GT(loss->at("x1").get<float>() - loss->at("x0").get<float>(), 100.0f) << "drawn wide enough to read";
  float value = -1;
  long long step = -1;
  ASSERT_EQ(std::sscanf(loss->at("text").get<std::string>().c_str(), "training loss %f (step %lld)", &value, &step), 2)
      << loss->dump();
  EXPECT_GT(value, 0.0f);
  EXPECT_LT(value, 6.0f);
  EXPECT_GE(step, 3);
  int epochs = -1;
  ASSERT_EQ(std::sscanf(valid->at("text").get<std::string>().c_str(), "validation loss %f (epoch %d)", &value, &epochs), 2)
      << valid->dump();
  EXPECT_GE(epochs, 1);
  EXPECT_EQ(valid->at("index").get<int>(), epochs) << "one point per finished epoch";
  EXPECT_GT(value, 0.0f);
  EXPECT_LT(value, 6.0f);
}

// On screen during a GPT run started over the translator: the causal self-attention map of the live weights
// (<bos> + the prompt and its continuation), the continuation, and the validation perplexity per epoch.
TEST(TrainingScreen, DuringAShortGptRun) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_gpt_screen");
  const fs::path data = tiny_corpus(dir / "data");
  const ScriptRun run = run_training_script(dir, data, "gpt.script",
                                            "stage training\ntrain start gpt-classroom\n"
                                            "wait-train 3\nscreenshot during.png\nlayout during.json\n"
                                            "train stop\nwait-train 100\nquit\n");
  ASSERT_EQ(run.status, 0) << run.log;
  EXPECT_EQ(run.log.find("script line"), std::string::npos) << run.log;
  const nlohmann::json layout = testing::load_json(dir / "during.json");
  bool self_map = false, cross_map = false;
  for (const auto& h : layout["heatmaps"]) {
    if (h["name"] == "training_self_head") self_map = h["cols"] == h["rows"] && h["cols"].get<int>() >= 6;
    if (h["name"] == "training_cross_head") cross_map = true;
  }
  EXPECT_TRUE(self_map) << layout.dump();
  EXPECT_FALSE(cross_map) << "a GPT has no cross-attention";
  std::optional<nlohmann::json> continuation, valid;
  for (const auto& item : layout["items"]) {
    if (item["name"] == "training.continuation") continuation = item;
    if (item["name"] == "training.valid_curve") valid = item;
  }
  ASSERT_TRUE(continuation && valid) << layout.dump();
  EXPECT_EQ(continuation->at("text").get<std::string>().rfind("-> ", 0), 0u) << continuation->dump();
  EXPECT_NE(valid->at("text").get<std::string>().find("perplexity"), std::string::npos) << valid->dump();
}

// On screen during a BERT run started over the translator: the encoder's self-attention of the live weights, a
// full square over [CLS] .. [SEP] (no training_self_head, no cross-attention), the sentence with its blank
// filled in, and the validation perplexity per epoch. The stage is the Training stage still (a BERT has one).
TEST(TrainingScreen, DuringAShortBertRun) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_bert_screen");
  const fs::path data = tiny_corpus(dir / "data");
  const ScriptRun run = run_training_script(dir, data, "bert.script",
                                            "stage training\ntrain start bert-classroom\n"
                                            "wait-train 3\nscreenshot during.png\nlayout during.json\n"
                                            "train stop\nwait-train 100\nquit\n");
  ASSERT_EQ(run.status, 0) << run.log;
  EXPECT_EQ(run.log.find("script line"), std::string::npos) << run.log;
  const nlohmann::json layout = testing::load_json(dir / "during.json");
  bool encoder_map = false, other_map = false;
  for (const auto& h : layout["heatmaps"]) {
    if (h["name"] == "training_encoder_head") encoder_map = h["cols"] == h["rows"] && h["cols"].get<int>() >= 12;
    if (h["name"] == "training_self_head" || h["name"] == "training_cross_head") other_map = true;
  }
  EXPECT_TRUE(encoder_map) << "[CLS] a man in an orange [MASK] is standing on the street . [SEP]: " << layout.dump();
  EXPECT_FALSE(other_map) << "a BERT has neither a causal self-attention nor cross-attention";
  std::optional<nlohmann::json> filled, valid;
  for (const auto& item : layout["items"]) {
    if (item["name"] == "training.filled") filled = item;
    if (item["name"] == "training.valid_curve") valid = item;
  }
  ASSERT_TRUE(filled && valid) << layout.dump();
  const std::string text = filled->at("text").get<std::string>();
  EXPECT_EQ(text.rfind("-> [CLS] a man in an orange [", 0), 0u) << text;
  EXPECT_NE(valid->at("text").get<std::string>().find("perplexity"), std::string::npos) << valid->dump();
  EXPECT_TRUE(fs::is_regular_file(dir / "during.png"));
}

// wait-train on a paused run: a paused run takes no steps, so the wait would never end (it did: the app waited
// for ever, frames going on). The script says so against its line and goes on.
TEST(TrainingScreen, WaitTrainOnAPausedRunGoesOn) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_paused_wait");
  const fs::path data = tiny_corpus(dir / "data");
  const ScriptRun run =
      run_training_script(dir, data, "paused.script", "train start classroom\ntrain pause\nwait-train 100000\nquit\n");
  ASSERT_EQ(run.status, 0) << run.log;
  const std::string& log = run.log;
  EXPECT_NE(log.find("script line 3: wait-train 100000: the run is paused at step"), std::string::npos) << log;
}

// `train stop` then `train start` at once: the stop lets the step in progress finish, and the start waits for
// that (version 0.1 refused it: "a training run is going").
TEST(TrainingScreen, AStartRightAfterAStopWaitsForTheStop) {
  const std::string app = headless_app_command("");
  if (app.empty()) GTEST_SKIP() << "xvfb-run is not installed";
  const fs::path dir = fresh_output_dir("training_stop_start");
  const fs::path data = tiny_corpus(dir / "data");
  const ScriptRun run = run_training_script(dir, data, "again.script",
                                            "train start classroom\nwait-train 2\ntrain stop\ntrain start classroom\n"
                                            "wait-train 2\nlayout again.json\nquit\n");
  ASSERT_EQ(run.status, 0) << run.log;
  const std::string& log = run.log;
  EXPECT_EQ(log.find("a training run is going"), std::string::npos) << log;
  EXPECT_EQ(log.find("script line"), std::string::npos) << log;
  EXPECT_TRUE(fs::exists(dir / "again.json")) << log;
}

}  // namespace
}  // namespace sf::gui
